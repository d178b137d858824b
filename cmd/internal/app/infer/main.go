// Package infer is the infer command (cmd/infer, posformer infer). It runs a posformer checkpoint:
// a decoder continues the prompt, streaming tokens; an encoder fills each <mask> in the prompt and
// prints the top candidates. Flags follow llama.cpp's llama-cli. The last line on stderr reports
// prefill and decode tokens per second. A llama2.c .bin checkpoint runs as llama2.c's run.c runs
// it (see llama2c.go), a GGUF file as llama.cpp's llama-cli with the file's own tokenizer (see
// gguf.go). With -cnv (posformer chat) it is a conversation that keeps the KV cache (chat.go).
// Open (open.go) loads a model and its tokenizer as run does, for posformer perplexity.
//
//	go run ./cmd/infer -p "func main() {"
//	go run ./cmd/infer -m weights/sinusoidal-encoder -p "for i := 0; i < n; i<mask><mask> {"
//	go run ./cmd/infer -m stories15M.bin -z tokenizer.bin --temp 0 -p "Once upon a time"
//	go run ./cmd/infer -m model.gguf -p "Once upon a time"
//	go run ./cmd/infer -cnv -m model.gguf
package infer

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"time"

	"github.com/posformer/posformer/cmd/internal/backendflag"
	"github.com/posformer/posformer/cmd/internal/cacheflag"
	"github.com/posformer/posformer/cmd/internal/flaghelp"
	"github.com/posformer/posformer/cmd/internal/memlimit"
	"github.com/posformer/posformer/cmd/internal/modelhome"
	"github.com/posformer/posformer/cmd/internal/ropeflags"
	"github.com/posformer/posformer/cmd/internal/sampleflag"
	"github.com/posformer/posformer/cmd/internal/version"
	"github.com/posformer/posformer/cmd/internal/weightflag"
	"github.com/posformer/posformer/engine"
	"github.com/posformer/posformer/layers"
	"github.com/posformer/posformer/layers/quant"
	"github.com/posformer/posformer/models"
	"github.com/posformer/posformer/models/gguf"
	"github.com/posformer/posformer/positional"
	"github.com/posformer/posformer/tokenizer"
	"github.com/posformer/posformer/weights"
)

// DefaultModel is -m's default: the shipped RoPE decoder, built into the binary (package
// weights; cmd/internal/modelhome finds it).
const DefaultModel = weights.DefaultName

// maxCtx is the largest -c (cmd/serve's bound too): past it a typing slip would ask for a
// cache no machine holds; the memory check after loading (checkContext) is the finer bound.
const maxCtx = 1 << 24

type options struct {
	model, prompt, backend, cpuprofile string
	weights                            string // f32, bf16, q8_0 or q4_0: the weights' type in memory
	n, ctxSize                         int
	sampling                           engine.Sampling // its Seed comes from seed
	ignoreEOS                          bool
	contextShift                       bool // --context-shift: past -c, drop old tokens (StreamingLLM)
	keep                               int  // --keep: the tokens a context shift never drops
	seed                               int64
	rope                               *ropeflags.Flags
	pe                                 positional.OptionFlag // --pe key=value: the scheme's options, over the checkpoint's
	// llama2.c models: its tokenizer.bin (-z, as run.c), or the prompt as token ids.
	tokenizer, promptIDs string
	// set records the flags given on the command line, so that llama2.c models can take
	// run.c's defaults for the others.
	set map[string]bool
	// -f, -t, -cnv and --version.
	name       string // -m as given (a name, where model is the path it names)
	promptFile string
	threads    int
	cache      *cacheflag.Types // --cache-type-k, --cache-type-v
	chat       bool
	version    bool
}

// Main runs the command with args (the arguments after its name) and returns its exit
// status: 2 for a bad flag, 1 for a failure.
func Main(args []string) int { return Run(args, os.Stdin, os.Stdout, os.Stderr) }

// ChatMain is `posformer chat`: Main in conversation mode (-cnv).
func ChatMain(args []string) int {
	return Run(append([]string{"-cnv"}, args...), os.Stdin, os.Stdout, os.Stderr)
}

// Run is Main reading a prompt given as "-" and a conversation's turns from stdin, and
// writing the conversation to stdout and errors to stderr. (A one-shot generation streams to
// the process's standard output.)
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	o, help, err := parse(args, stderr)
	if help {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "infer: %v (run with -h for the flags)\n", err)
		return 2
	}
	if o.version {
		fmt.Fprintln(stdout, version.String())
		return 0
	}
	if err := o.resolve(stdin); err != nil {
		fmt.Fprintln(stderr, "infer:", err)
		return 1
	}
	if o.chat {
		err = runChat(o, stdin, stdout, stderr)
	} else {
		err = run(o, nil)
	}
	if err != nil {
		fmt.Fprintln(stderr, "infer:", err)
		if errors.As(err, new(flagError)) {
			return 2
		}
		return 1
	}
	return 0
}

// parse reads the command line; help is true for -h, whose text goes to stderr.
func parse(args []string, stderr io.Writer) (o options, help bool, err error) {
	fs := flag.NewFlagSet("infer", flag.ContinueOnError)
	for _, name := range []string{"m", "model"} {
		fs.StringVar(&o.model, name, DefaultModel, "checkpoint directory (config.json + model.safetensors), a llama2.c .bin file, a GGUF file, or the name of a model in $POSFORMER_HOME (posformer list)")
	}
	for _, name := range []string{"p", "prompt"} {
		fs.StringVar(&o.prompt, name, "func main() {", "prompt (-: read it from standard input); for an encoder, mark tokens to fill with "+tokenizer.MaskLiteral)
	}
	for _, name := range []string{"f", "file"} {
		fs.StringVar(&o.promptFile, name, "", "read the prompt from this file (-: standard input)")
	}
	for _, name := range []string{"n", "n-predict"} {
		fs.IntVar(&o.n, name, 128, "tokens to generate (-1: until the context is full; in a conversation, per reply); llama2.c models: run.c's steps, prompt included (256; 0: seq_len)")
	}
	for _, name := range []string{"c", "ctx-size"} {
		fs.IntVar(&o.ctxSize, name, 0, "context size, the KV-cache capacity (0: the model's max_seq_len)")
	}
	for _, name := range []string{"t", "threads"} {
		fs.IntVar(&o.threads, name, 0, "threads of the cpu backend's worker pool (0: one per core)")
	}
	for _, name := range []string{"cnv", "conversation", "i", "interactive"} {
		fs.BoolVar(&o.chat, name, false, "chat: read turns from standard input, keeping the KV cache between them (/exit or Ctrl-D ends)")
	}
	fs.BoolVar(&o.version, "version", false, "print the build's version and exit")
	sampleflag.Register(fs, &o.sampling, "")
	fs.BoolVar(&o.contextShift, "context-shift", false, "generate past -c: when the KV cache is full, drop half of the tokens after the first --keep and go on, positions counted in the cache (StreamingLLM attention sinks)")
	fs.IntVar(&o.keep, "keep", 0, "with --context-shift: the first tokens never dropped, the attention sinks (-1: the whole prompt)")
	fs.BoolVar(&o.ignoreEOS, "ignore-eos", false, "do not stop at the end-of-text token (BOS for llama2.c models): generate -n tokens, for benchmarks")
	fs.Int64Var(&o.seed, "seed", -1, "random seed (-1: from the clock)")
	backendflag.Var(fs, &o.backend, backendflag.Usage)
	fs.StringVar(&o.cpuprofile, "cpuprofile", "", "write a CPU profile to this file")
	weightflag.Var(fs, &o.weights, "type of the weight matrices in memory, converted at load: "+layers.WeightTypes+" (default: as stored; q8_0 for llama2.c version-2 files)")
	o.cache = cacheflag.Register(fs)
	fs.StringVar(&o.tokenizer, "z", "", "llama2.c models: the tokenizer.bin (as run.c's -z); GGUF models: a tokenizer replacing the file's")
	fs.StringVar(&o.promptIDs, "prompt-ids", "", "llama2.c and GGUF models: the prompt as comma-separated token ids after BOS (no tokenizer needed)")
	o.rope = ropeflags.Register(fs)
	o.pe = positional.OptionFlag{}
	fs.Var(o.pe, "pe", "positional scheme option key=value over the checkpoint's (repeatable), e.g. --pe norm_max=128 for FIRE")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: infer [-m DIR|FILE|NAME] [-p PROMPT | -f FILE | --prompt-ids 1,2] [-n N] [-t THREADS] [-cnv] [--temp T] [--top-k K] [--top-p P] [--seed S] [-c N] [--backend B] [--rope-scaling T --rope-scale S] [--pe KEY=VALUE] [--context-shift --keep K]")
		flaghelp.PrintDefaults(fs)
	}
	fs.SetOutput(io.Discard) // one-line errors below instead of the usage dump
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			fs.SetOutput(stderr)
			fs.Usage()
			return o, true, nil
		}
		return o, false, err
	}
	if fs.NArg() > 0 {
		return o, false, fmt.Errorf("unexpected argument %q; pass the prompt with -p", fs.Arg(0))
	}
	o.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { o.set[f.Name] = true })
	if o.promptFile != "" && (o.set["p"] || o.set["prompt"]) {
		return o, false, fmt.Errorf("-p and -f both give the prompt; give one")
	}
	if o.chat && (o.promptFile != "" || o.promptIDs != "" || o.prompt == "-" && (o.set["p"] || o.set["prompt"])) {
		return o, false, fmt.Errorf("-cnv reads its turns from standard input; drop -f, -p - and --prompt-ids (-p TEXT is the system message)")
	}
	if o.backend, err = backendflag.WithThreads(o.backend, o.threads); err != nil {
		return o, false, err
	}
	return o, false, nil
}

// resolve finds the model -m names (a path, a name in $POSFORMER_HOME or the built-in
// decoder) and reads a prompt given as a file or as "-" (standard input).
func (o *options) resolve(stdin io.Reader) error {
	var err error
	o.name = o.model
	if o.model, err = modelhome.Resolve(o.model); err != nil {
		return err
	}
	switch {
	case o.promptFile == "-" || (o.prompt == "-" && (o.set["p"] || o.set["prompt"])):
		o.prompt, err = ReadText("-", stdin, "the prompt")
	case o.promptFile != "":
		o.prompt, err = ReadText(o.promptFile, stdin, "the prompt")
	}
	return err
}

func run(o options, args []string) error {
	switch {
	case len(args) > 0:
		return fmt.Errorf("unexpected argument %q; pass the prompt with -p", args[0])
	case o.n < -1:
		return fmt.Errorf("-n must be >= -1, got %d", o.n)
	case o.keep < -1:
		return flagError{fmt.Errorf("--keep must be >= -1, got %d", o.keep)}
	case o.ctxSize < 0:
		return flagError{fmt.Errorf("-c must be >= 0, got %d", o.ctxSize)}
	case o.ctxSize > maxCtx:
		return flagError{fmt.Errorf("-c must be at most %d tokens, got %d", maxCtx, o.ctxSize)}
	}
	if err := sampleflag.Check(o.sampling); err != nil {
		return err
	}
	if _, err := o.weightType(); err != nil {
		return err
	}
	if o.cpuprofile != "" {
		f, err := os.Create(o.cpuprofile)
		if err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	if gguf.IsFile(o.model) {
		return runGGUF(o, os.Stdout)
	}
	if engine.IsLlama2C(o.model) {
		return runLlama2C(o, os.Stdout)
	}
	if o.tokenizer != "" || o.promptIDs != "" {
		return fmt.Errorf("-z and --prompt-ids are for llama2.c .bin and GGUF models; %s is a checkpoint directory with its own tokenizer", o.model)
	}
	if _, err := os.Stat(filepath.Join(o.model, models.ConfigFile)); err != nil {
		return fmt.Errorf("no model at %s (want a directory with %s and %s); pass -m DIR", o.model, models.ConfigFile, models.WeightsFile)
	}
	memlimit.ForLoading(engine.CheckpointBytes(o.model))
	start := time.Now()
	e, err := o.load()
	if err != nil {
		return err
	}
	tok, err := loadTokenizer(o.model, e.Model.Config)
	if err != nil {
		return err
	}
	load := time.Since(start)
	memlimit.Set(memlimit.Base(), e.SessionBytes(1))
	if !e.Model.Config.Causal() {
		return fillMask(e, tok, o.prompt)
	}
	ids, err := tok.Encode(o.prompt)
	if err != nil {
		return err
	}
	sm, err := o.sampler()
	if err != nil {
		return err
	}
	var stop []int
	if eos := tok.Special().EOS; eos >= 0 && !o.ignoreEOS {
		stop = append(stop, eos)
	}
	fmt.Print(o.prompt)
	st, err := o.generate(e, ids, o.n, sm, stop, printText(os.Stdout, tok, ids))
	fmt.Print("\n")
	if err != nil {
		return err
	}
	printStats(load, st, e)
	return nil
}

// generate is engine.Generate, or with --context-shift its shifting form.
func (o options) generate(e *engine.Engine, prompt []int, n int, sm *engine.Sampler, stop []int, emit func(int)) (engine.Stats, error) {
	if !o.contextShift {
		return e.Generate(prompt, n, sm, stop, emit)
	}
	return e.GenerateShifting(prompt, n, sm, stop, engine.ContextShift{Keep: o.keep}, emit)
}

// weightType parses --weights.
func (o options) weightType() (quant.Type, error) { return weightflag.Type(o.weights, o.model) }

// load opens the model with the flags' backend, context size, weight type and edits.
func (o options) load() (*engine.Engine, error) {
	t, err := o.weightType()
	if err != nil {
		return nil, err
	}
	e, err := engine.LoadAs(o.model, o.backend, o.ctxSize, t, o.edits()...)
	if err != nil {
		return nil, err
	}
	if err := o.cache.Apply(e); err != nil {
		return nil, flagError{err}
	}
	avail, ok := memlimit.Available()
	if !ok {
		avail = -1
	}
	if err := checkContext(e, o.ctxSize, avail); err != nil {
		return nil, flagError{err}
	}
	return e, nil
}

// checkContext bounds -c once the model is loaded, before its KV cache exists: by the
// positions the model's encoding reaches, and by avail, the memory available (< 0: unknown,
// no check). An encoder holds no cache.
func checkContext(e *engine.Engine, ctxSize int, avail int64) error {
	if lim := e.SequenceLimit(); ctxSize > lim {
		return fmt.Errorf("-c %d is past the %d positions this model's positional encoding reaches; use -c %d or less", ctxSize, lim, lim)
	}
	if !e.Model.Config.Causal() || avail < 0 {
		return nil
	}
	if need := e.SessionBytes(1) + memlimit.Slack; need > avail {
		return fmt.Errorf("a context of %d tokens (-c) needs %s for its KV cache but %s is available; lower -c", e.Capacity, memlimit.Size(need), memlimit.Size(avail))
	}
	return nil
}

// flagError is a flag the command refuses with exit 2, as the flag package's own errors.
type flagError struct{ error }

func (e flagError) Unwrap() error { return e.error }

// edits are the configuration changes the flags ask for (scheme options, RoPE scaling).
func (o options) edits() []models.Edit {
	var edits []models.Edit
	if len(o.pe) > 0 {
		edits = append(edits, func(c *models.Config) error {
			if _, ok := o.pe["name"]; ok {
				return fmt.Errorf("--pe name: a trained model keeps its scheme (%v); --pe sets that scheme's options", c.Positional["name"])
			}
			if c.Positional == nil {
				c.Positional = map[string]any{"name": "none"}
			}
			for k, v := range o.pe {
				c.Positional[k] = v
			}
			return nil
		})
	}
	if o.rope != nil && o.rope.Given() {
		edits = append(edits, o.rope.Edit())
	}
	return edits
}

// loadTokenizer loads the tokenizer cfg names for the checkpoint in dir.
func loadTokenizer(dir string, cfg models.Config) (tokenizer.Tokenizer, error) {
	return tokenizer.Load(cfg.TokenizerPath(dir))
}

func fillMask(e *engine.Engine, tok tokenizer.Tokenizer, prompt string) error {
	ids, maskAt, err := tokenizer.EncodeWithMask(tok, prompt)
	if err != nil {
		return err
	}
	if len(maskAt) == 0 {
		return fmt.Errorf("this model is an encoder: put %s in the prompt where a token should be filled", tokenizer.MaskLiteral)
	}
	start := time.Now()
	fills, err := e.FillMask(ids, maskAt, 5)
	if err != nil {
		return err
	}
	elapsed := time.Since(start)
	best := append([]int(nil), ids...)
	for i, at := range maskAt {
		fmt.Printf("mask %d (token %d):", i+1, at)
		for _, f := range fills[i] {
			fmt.Printf("  %q %.3f", tok.Decode([]int{f.Token}), f.Prob)
		}
		fmt.Println()
		best[at] = fills[i][0].Token
	}
	fmt.Printf("best: %s\n", tok.Decode(best))
	fmt.Fprintf(os.Stderr, "infer: prefill %.1f tok/s (%d tokens) · decode 0.0 tok/s (0 tokens, encoder) · %d graphs compiled · %s\n",
		float64(len(ids))/elapsed.Seconds(), len(ids), e.Compilations(), engine.BackendSummary(e.Backend))
	return nil
}

// sampler builds the sampler the flags describe (seed -1: from the clock).
func (o options) sampler() (*engine.Sampler, error) {
	seed := uint64(o.seed)
	if o.seed < 0 {
		seed = uint64(time.Now().UnixNano())
	}
	s := o.sampling
	s.Seed = seed
	return engine.NewSampler(s)
}

// printStats is the summary line every run ends with, on stderr: where the time went and the
// rates, which leave out compilation and the KV cache's allocation (as llama.cpp's leave out
// creating its context).
func printStats(load time.Duration, st engine.Stats, e *engine.Engine) {
	fmt.Fprintf(os.Stderr, "infer: load %.2f s · compile %.2f s · kv cache %.3f s · prefill %.1f tok/s (%d tokens) · decode %.1f tok/s (%d tokens, %s) · %d graphs compiled · %s\n",
		load.Seconds(), st.Compile.Seconds(), st.Cache.Seconds(), st.PrefillRate(), st.PromptTokens, st.DecodeRate(), st.Generated, st.StopReason, e.Compilations(), engine.BackendSummary(e.Backend))
	if st.Shifts > 0 {
		fmt.Fprintf(os.Stderr, "infer: %d context shifts\n", st.Shifts)
	}
}
