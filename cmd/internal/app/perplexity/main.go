// Package perplexity is the perplexity command (posformer perplexity), llama.cpp's
// llama-perplexity for posformer's models: it tokenizes a text file, cuts it into chunks of -c
// tokens, runs each chunk in one forward pass and scores the second half of each chunk, so
// that every scored token sees at least c/2 tokens of context. It prints llama.cpp's running
// [i]ppl line and final estimate, and bits per byte so that byte-level and BPE models compare.
//
//	posformer perplexity -f engine/engine.go
//	posformer perplexity -m model.gguf -f wiki.test.raw -c 512 --chunks 20
package perplexity

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/posformer/posformer/cmd/internal/app/infer"
	"github.com/posformer/posformer/cmd/internal/backendflag"
	"github.com/posformer/posformer/cmd/internal/flaghelp"
	"github.com/posformer/posformer/cmd/internal/modelhome"
	"github.com/posformer/posformer/engine"
	"github.com/posformer/posformer/models"
	"github.com/posformer/posformer/models/gguf"
)

// defaultCtx is -c for a model whose config names no training length (llama-perplexity's
// usual -c).
const defaultCtx = 512

type options struct {
	model, file, backend, tokenizer string
	ctx, chunks, threads            int
}

// Main runs the command with args (the arguments after its name) and returns its exit
// status: 2 for a bad flag, 1 for a failure.
func Main(args []string) int { return Run(args, os.Stdin, os.Stdout, os.Stderr) }

// Run is Main reading -f - from stdin, the result to stdout and progress to stderr.
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	o, help, err := parse(args, stderr)
	if help {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "perplexity: %v (run with -h for the flags)\n", err)
		return 2
	}
	if err := run(o, stdin, stdout, stderr); err != nil {
		fmt.Fprintln(stderr, "perplexity:", err)
		if infer.IsFlagError(err) || errors.As(err, new(flagError)) {
			return 2
		}
		return 1
	}
	return 0
}

type flagError struct{ error }

func (e flagError) Unwrap() error { return e.error }

func parse(args []string, stderr io.Writer) (o options, help bool, err error) {
	fs := flag.NewFlagSet("perplexity", flag.ContinueOnError)
	for _, name := range []string{"m", "model"} {
		fs.StringVar(&o.model, name, infer.DefaultModel, "checkpoint directory, a GGUF file, a llama2.c .bin (with -z), or the name of a model in $POSFORMER_HOME (posformer list)")
	}
	for _, name := range []string{"f", "file"} {
		fs.StringVar(&o.file, name, "", "the text to score (-: standard input); required")
	}
	for _, name := range []string{"c", "ctx-size"} {
		fs.IntVar(&o.ctx, name, 0, "tokens per chunk (0: the model's train_seq_len, else 512 or its max_seq_len if smaller)")
	}
	fs.IntVar(&o.chunks, "chunks", -1, "score at most this many chunks (-1: all)")
	for _, name := range []string{"t", "threads"} {
		fs.IntVar(&o.threads, name, 0, "threads of the cpu backend's worker pool (0: one per core)")
	}
	backendflag.Var(fs, &o.backend, backendflag.Usage)
	fs.StringVar(&o.tokenizer, "z", "", "llama2.c models: the tokenizer.bin (as run.c's -z); GGUF models: a tokenizer replacing the file's")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: perplexity -f FILE [-m DIR|FILE|NAME] [-c N] [--chunks N] [-t THREADS] [--backend B]")
		flaghelp.PrintDefaults(fs)
	}
	fs.SetOutput(io.Discard) // one-line errors instead of the usage dump
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			fs.SetOutput(stderr)
			fs.Usage()
			return o, true, nil
		}
		return o, false, err
	}
	switch {
	case fs.NArg() > 0:
		return o, false, fmt.Errorf("unexpected argument %q; pass the text with -f FILE", fs.Arg(0))
	case o.file == "":
		return o, false, fmt.Errorf("-f FILE is required: the text to score (-: standard input)")
	case o.ctx < 0 || o.ctx == 1:
		return o, false, fmt.Errorf("-c must be at least 2 tokens (0: the model's default), got %d", o.ctx)
	case o.chunks < -1 || o.chunks == 0:
		return o, false, fmt.Errorf("--chunks must be positive (-1: all), got %d", o.chunks)
	}
	if o.backend, err = backendflag.WithThreads(o.backend, o.threads); err != nil {
		return o, false, err
	}
	return o, false, nil
}

func run(o options, stdin io.Reader, stdout, stderr io.Writer) error {
	text, err := infer.ReadText(o.file, stdin, "the text")
	if err != nil {
		return err
	}
	path, err := modelhome.Resolve(o.model)
	if err != nil {
		return err
	}
	defaulted := o.ctx == 0
	if defaulted {
		o.ctx = defaultContext(path)
	}
	start := time.Now()
	m, err := infer.Open(path, o.backend, o.tokenizer, o.ctx)
	if err != nil {
		return err
	}
	if cfg := m.Engine.Model.Config; defaulted && cfg.MaxSeqLen < o.ctx {
		o.ctx = cfg.MaxSeqLen // a llama2.c model's seq_len, say 256: no chunk past what it was built for
	}
	if !m.Engine.Model.Config.Causal() {
		return fmt.Errorf("%s is an encoder: perplexity scores next-token prediction, which needs a decoder", o.model)
	}
	tokens, err := m.Tok.Encode(text)
	if err != nil {
		return fmt.Errorf("tokenizing %s: %w", o.file, err)
	}
	if m.BOS >= 0 {
		tokens = append([]int{m.BOS}, tokens...)
	}
	if len(tokens) < o.ctx {
		name := o.file
		if name == "-" {
			name = "standard input"
		}
		return flagError{fmt.Errorf("%s is %d tokens, shorter than one chunk of -c %d; give a longer text or a smaller -c", name, len(tokens), o.ctx)}
	}
	load := time.Since(start)
	fmt.Fprintf(stderr, "perplexity: %d tokens, %d chunks of %d; scoring the last %d tokens of each\n",
		len(tokens), numChunks(len(tokens), o.ctx, o.chunks), o.ctx, o.ctx-1-o.ctx/2)
	start = time.Now()
	s, err := Score(m.Engine, tokens, o.ctx, o.chunks, m.BOS, func(i int, s Scores) {
		fmt.Fprintf(stderr, "[%d]%.4f,", i+1, s.PPL())
	}, m.Tok.Decode)
	fmt.Fprintln(stderr)
	if err != nil {
		return err
	}
	ppl, se := s.Estimate()
	fmt.Fprintf(stdout, "Final estimate: PPL = %.4f +/- %.5f\n", ppl, se)
	fmt.Fprintf(stdout, "bits per byte = %.4f (%d tokens scored, %d bytes)\n", s.BitsPerByte(), s.Tokens, s.Bytes)
	fmt.Fprintf(stderr, "perplexity: load %.2f s · scoring %.2f s · %s\n", load.Seconds(), time.Since(start).Seconds(), engine.BackendSummary(m.Engine.Backend))
	return nil
}

// defaultContext is -c's default: the training length a checkpoint's config records, else
// defaultCtx (a GGUF file records none).
func defaultContext(path string) int {
	if gguf.IsFile(path) {
		return defaultCtx
	}
	if cfg, err := models.ReadConfig(path); err == nil && cfg.TrainSeqLen > 1 {
		return cfg.TrainSeqLen
	}
	return defaultCtx
}
