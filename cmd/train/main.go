// Command train trains a toy decoder or encoder, byte level, on the Go standard library's
// source (the text every Go user has), for one named positional scheme. It shows a progress bar,
// saves a checkpoint (config.json + model.safetensors, plus train_state.safetensors for the
// optimizer) every -save-every steps and at the end, and resumes from one with -resume.
//
//	go run ./cmd/train -scheme rope -o weights/rope-decoder
//	go run ./cmd/train -kind encoder -scheme sinusoidal -o weights/sinusoidal-encoder
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/posformer/posformer/benchmarks/corpus"
	"github.com/posformer/posformer/benchmarks/recipe"
	"github.com/posformer/posformer/benchmarks/tasks"
	"github.com/posformer/posformer/cmd/internal/peflag"
	"github.com/posformer/posformer/cmd/internal/progress"
	"github.com/posformer/posformer/cmd/internal/ropeflags"
	"github.com/posformer/posformer/engine"
	"github.com/posformer/posformer/models"
	"github.com/posformer/posformer/positional"
	"github.com/posformer/posformer/tokenizer"
)

type options struct {
	kind, scheme, out, backend string
	task                       string
	pe                         peflag.Options
	dim, layers, heads, kv     int
	hidden, ctxLen             int
	steps, batch, seq          int
	microBatch                 int
	lr, warmup, wd             float64
	seed                       int64
	evalEvery, saveEvery       int
	evalWindows, maxBytes      int
	maskRate                   float64
	resume                     bool
	randomPositions            int
	nopeLayers                 string
	plateau                    int     // evaluations without improvement that end the run (0: cosine schedule over -steps)
	plateauTol                 float64 // relative improvement that counts
	plateauMin                 int
	init                       string // start from this checkpoint's weights (a fine-tune)
	rope                       *ropeflags.Flags
}

func main() {
	o := options{pe: peflag.Options{}}
	flag.StringVar(&o.kind, "kind", "decoder", "decoder (causal LM) or encoder (masked LM)")
	flag.StringVar(&o.task, "task", "", "benchmark task (sets -kind, recorded in train.json): "+strings.Join(tasks.Names(), ", ")+"; empty: plain LM/MLM by -kind")
	flag.StringVar(&o.scheme, "scheme", "rope", "positional scheme: "+strings.Join(positional.Names(), ", "))
	flag.Var(o.pe, "pe", "scheme option key=value (repeatable), e.g. -pe base=10000 -pe layout=interleaved")
	flag.StringVar(&o.out, "o", "", "checkpoint directory to write (required)")
	flag.StringVar(&o.backend, "backend", "", "cpu (default, or $GOMLX_BACKEND; cpu:threads=N), go (GoMLX pure Go), xla:cpu or xla:cuda")
	flag.IntVar(&o.dim, "dim", 128, "model width")
	flag.IntVar(&o.layers, "layers", 4, "transformer blocks")
	flag.IntVar(&o.heads, "heads", 4, "attention heads")
	flag.IntVar(&o.kv, "kv-heads", 2, "key/value heads (grouped-query attention)")
	flag.IntVar(&o.hidden, "hidden", 384, "feed-forward width")
	flag.IntVar(&o.ctxLen, "ctx", 1024, "max_seq_len written to the config: the default context size at inference")
	flag.IntVar(&o.steps, "steps", 2000, "optimizer steps in total (a resumed run continues up to this)")
	flag.IntVar(&o.batch, "batch", 16, "sequences per step")
	flag.IntVar(&o.microBatch, "micro-batch", 0, "sequences per forward/backward pass, their gradients summed into one step (0: as many as make 512 tokens; the same step up to float rounding, faster on large batches)")
	flag.IntVar(&o.seq, "seq", 128, "training sequence length L")
	flag.Float64Var(&o.lr, "lr", 2e-3, "peak learning rate (linear warm-up, cosine decay to 10%)")
	flag.Float64Var(&o.warmup, "warmup", 100, "warm-up steps")
	flag.Float64Var(&o.wd, "wd", 0.01, "AdamW weight decay")
	flag.Int64Var(&o.seed, "seed", 1, "seed of the initial weights, data sampling and masking: the same seed, machine and thread count train the same model")
	flag.IntVar(&o.evalEvery, "eval-every", 250, "evaluate every N steps")
	flag.IntVar(&o.saveEvery, "save-every", 250, "save a checkpoint every N steps")
	flag.IntVar(&o.evalWindows, "eval-windows", 64, "held-out windows of length L used for eval loss")
	flag.IntVar(&o.maxBytes, "max-bytes", 0, "cap on each corpus split in bytes (0: all of $GOROOT/src)")
	flag.Float64Var(&o.maskRate, "mask-rate", 0.15, "encoder: fraction of bytes masked")
	flag.BoolVar(&o.resume, "resume", false, "continue from the checkpoint in -o")
	flag.IntVar(&o.randomPositions, "random-positions", 0, "randomized positions (Ruoss et al. 2023): each training sequence gets a sorted random subset of [0, N); 0 is off")
	flag.StringVar(&o.nopeLayers, "nope-layers", "", "comma-separated blocks (from 0) that skip the scheme's attention hooks, e.g. 1,3")
	flag.IntVar(&o.plateau, "plateau", 0, "train until the eval loss has not improved for N evaluations, then cool down (warmup-stable-decay); -steps is the cap. 0: cosine decay over -steps")
	flag.Float64Var(&o.plateauTol, "plateau-tol", 0.01, "with -plateau: relative eval-loss improvement that counts as progress")
	flag.IntVar(&o.plateauMin, "plateau-min", 0, "with -plateau: no plateau before this step (a model that sits on an early plateau, as encoders do before they use positions, keeps training)")
	flag.StringVar(&o.init, "init", "", "start from this checkpoint's weights with a fresh optimizer (a fine-tune); -seq, -pe and the --rope-* flags edit its config, the shape flags are ignored")
	o.rope = ropeflags.Register(flag.CommandLine)
	// One-line errors for bad flags, the full list only for -h.
	flag.CommandLine.Init("train", flag.ContinueOnError)
	flag.CommandLine.SetOutput(io.Discard)
	if err := flag.CommandLine.Parse(os.Args[1:]); err != nil {
		if err == flag.ErrHelp {
			flag.CommandLine.SetOutput(os.Stderr)
			fmt.Fprintln(os.Stderr, "usage: train -o DIR [-kind decoder|encoder] [-scheme NAME] [-pe key=value ...] [flags]")
			flag.PrintDefaults()
			return
		}
		fmt.Fprintf(os.Stderr, "train: %v (run with -h for the flags)\n", err)
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "train:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	switch {
	case o.out == "":
		return fmt.Errorf("-o DIR is required (where the checkpoint goes)")
	case flag.NArg() > 0:
		return fmt.Errorf("unexpected argument %q; flags only (see -h)", flag.Arg(0))
	case o.steps < 1 || o.batch < 1 || o.seq < 2:
		return fmt.Errorf("-steps, -batch must be >= 1 and -seq >= 2")
	case o.randomPositions != 0 && o.randomPositions < o.seq:
		return fmt.Errorf("-random-positions %d must be 0 (off) or >= -seq %d: it is the range the %d positions are drawn from", o.randomPositions, o.seq, o.seq)
	case o.plateau < 0 || o.plateauTol < 0 || o.plateauMin < 0:
		return fmt.Errorf("-plateau %d, -plateau-tol %g and -plateau-min %d must be >= 0 (-plateau 0 is off)", o.plateau, o.plateauTol, o.plateauMin)
	case o.evalEvery < 1 || o.saveEvery < 1:
		return fmt.Errorf("-eval-every and -save-every must be >= 1")
	}
	if _, err := microBatch(o.microBatch, o.batch, o.seq, false); err != nil {
		return err
	}
	if o.task != "" {
		if err := tasks.Check(o.task); err != nil {
			return fmt.Errorf("-task: %w", err)
		}
		if kindSet() && o.kind != tasks.Kind(o.task) {
			return fmt.Errorf("-task %s trains a%s %s, not -kind %s; drop -kind", o.task, map[bool]string{true: "n"}[tasks.Kind(o.task) == models.Encoder], tasks.Kind(o.task), o.kind)
		}
		o.kind = tasks.Kind(o.task)
	}
	nope, err := parseLayers(o.nopeLayers)
	if err != nil {
		return err
	}
	backend, err := engine.NewBackend(o.backend)
	if err != nil {
		return err
	}
	tok := tokenizer.NewByte()
	pe := map[string]any{"name": o.scheme}
	for k, v := range o.pe {
		pe[k] = v
	}
	if o.rope != nil && o.init == "" {
		if err := o.rope.Apply(pe); err != nil {
			return err
		}
	}
	cfg := models.Config{
		Kind: o.kind, VocabSize: tok.VocabSize(), Dim: o.dim, NumLayers: o.layers, NumHeads: o.heads,
		NumKVHeads: o.kv, HiddenDim: o.hidden, TieEmbeddings: true, MaxSeqLen: o.ctxLen, TrainSeqLen: o.seq,
		Tokenizer: "byte", Positional: pe, NoPELayers: nope,
	}
	ctx := context.New()
	var m *models.Model
	if o.resume {
		m, ctx, err = models.Load(o.out, backend)
		if err != nil {
			return fmt.Errorf("resuming: %w", err)
		}
		if _, err := os.Stat(filepath.Join(o.out, stateFile)); errors.Is(err, fs.ErrNotExist) {
			return finishedWithoutState(o)
		}
		if err := loadState(filepath.Join(o.out, stateFile), ctx); err != nil {
			return fmt.Errorf("resuming: %w", err)
		}
		cfg = m.Config
	} else if o.init != "" {
		if m, ctx, err = models.Load(o.init, backend, o.initEdit()); err != nil {
			return fmt.Errorf("-init: %w", err)
		}
		cfg = m.Config
	} else {
		if m, err = models.New(cfg); err != nil {
			return err
		}
		// The initial weights come from the context's generator: seeded, a run is repeatable.
		if err := ctx.SetRNGStateFromSeed(o.seed); err != nil {
			return fmt.Errorf("-seed: %w", err)
		}
		if err := os.MkdirAll(o.out, 0o755); err != nil {
			return err
		}
		js, _ := json.Marshal(map[string]int64{"weights_seed": o.seed})
		if err := models.WriteFileAtomic(filepath.Join(o.out, initFile), append(js, '\n')); err != nil {
			return err
		}
	}
	if l, ok := m.Scheme.(positional.Limited); ok && l.Limit() > 0 && max(o.randomPositions, cfg.TrainSeqLen) > l.Limit() {
		return fmt.Errorf("%s encodes positions below %d only (%s); lower -seq / -random-positions", cfg.SchemeName(), l.Limit(), l.LimitFix())
	}
	root, err := corpus.GoRoot()
	if err != nil {
		return err
	}
	maxBytes := o.maxBytes
	switch {
	case o.task == tasks.Passkey:
		maxBytes = 1 << 20 // the haystack's text: enough that windows rarely repeat
	case tasks.Synthetic(o.task):
		maxBytes = 1 << 16 // the corpus only feeds the unigram figure of train.json
	}
	data, err := corpus.Load(root, maxBytes)
	if err != nil {
		return err
	}
	tr, err := engine.NewTrainer(backend, m, ctx, o.wd)
	if err != nil {
		return err
	}
	shared := false
	if sw, ok := m.Scheme.(positional.SharedWork); ok && o.randomPositions == 0 {
		shared = sw.SharedWork() // rows share their positions only without -random-positions
	}
	if tr.MicroBatch, err = microBatch(o.microBatch, o.batch, cfg.TrainSeqLen, shared); err != nil {
		return err
	}
	first := tr.GlobalStep()
	// The loss curve so far; with -plateau its evaluations replay the plateau decisions.
	var curve []curvePoint
	if o.resume {
		if curve, err = readCurve(o.out, first); err != nil {
			return err
		}
	}
	var plat *plateau
	end := o.steps
	if o.plateau > 0 {
		plat = newPlateau(o.plateau, o.plateauTol, o.steps, o.evalEvery)
		plat.min = o.plateauMin
		for _, c := range curve {
			plat.observe(c.Step, c.EvalLoss)
		}
		end = plat.end
	}
	if o.resume && first >= end {
		// Nothing left to train: say so rather than run zero steps and report their NaN loss.
		why, fix := fmt.Sprintf("-steps %d", o.steps), "raise -steps"
		if plat != nil && plat.end < o.steps {
			why, fix = plat.stopReason(), "raise -plateau or lower -plateau-tol"
		}
		fmt.Fprintf(os.Stderr, "train: %s already finished at step %d (%s); nothing to do (%s to train further)\n", o.out, first, why, fix)
		return nil
	}
	sampler := corpus.NewSampler(data.Train, o.seed+int64(tr.GlobalStep()))
	maskRNG := rand.New(rand.NewPCG(uint64(o.seed), uint64(tr.GlobalStep())))
	posRNG := rand.New(rand.NewPCG(uint64(o.seed)+7, uint64(tr.GlobalStep())))
	evalIn, evalTgt := corpus.Windows(data.Eval, cfg.TrainSeqLen, o.evalWindows)
	evalBatch := makeBatch(cfg.Kind, evalIn, evalTgt, o.maskRate, rand.New(rand.NewPCG(99, 99)), tok.Special().MASK)
	// Synthetic tasks draw their batches from a seeded generator instead of the corpus.
	var gen *tasks.Generator
	if tasks.Synthetic(o.task) {
		if gen, err = tasks.NewGenerator(o.task, cfg.TrainSeqLen, o.seed, tr.GlobalStep(), tasks.Haystack(data.Train)); err != nil {
			return err
		}
		if evalBatch, err = tasks.EvalBatch(o.task, cfg.TrainSeqLen, o.evalWindows, tasks.Haystack(data.Eval)); err != nil {
			return err
		}
	}
	if o.randomPositions > 0 {
		// The held-out loss (and the plateau rule it feeds) is measured where the model is
		// trained: on sorted random positions, drawn once. On 0..n-1 a randomized-positions
		// model sees a placement it was never trained on (64 consecutive positions of 1,024).
		randomizePositions(evalBatch.Positions, o.randomPositions, rand.New(rand.NewPCG(99, 98)))
	}
	fmt.Fprintf(os.Stderr, "train: %s %s on %d train / %d eval files of %s/src (%.1f / %.1f MB), %d steps of %dx%d bytes (passes of %d), %s\n",
		cfg.SchemeName(), cfg.Kind, data.TrainFiles, data.EvalFiles, root, float64(len(data.Train))/1e6, float64(len(data.Eval))/1e6, o.steps, o.batch, cfg.TrainSeqLen,
		tr.MicroBatch, engine.BackendSummary(backend))

	start := time.Now()
	prevSeconds := 0.0
	if len(curve) > 0 {
		prevSeconds = curve[len(curve)-1].Seconds
	}
	bar := progress.New(os.Stderr, "train "+cfg.SchemeName()+" "+cfg.Kind, o.steps-first)
	var loss, evalLoss float64 = math.NaN(), math.NaN()
	lossSum, lossN := 0.0, 0
	for step := first; step < end; step++ {
		var b engine.Batch
		if gen != nil {
			b = gen.Batch(o.batch)
		} else {
			in, tgt := sampler.Batch(o.batch, cfg.TrainSeqLen)
			b = makeBatch(cfg.Kind, in, tgt, o.maskRate, maskRNG, tok.Special().MASK)
		}
		if o.randomPositions > 0 {
			randomizePositions(b.Positions, o.randomPositions, posRNG)
		}
		lr := schedule(step, o)
		if plat != nil {
			lr = plat.lr(step, o.lr, o.warmup)
			end = plat.end
		}
		if loss, err = tr.Step(b, lr); err != nil {
			return fmt.Errorf("step %d: %w", step, err)
		}
		lossSum, lossN = lossSum+loss, lossN+1
		done := step + 1
		if done%o.evalEvery == 0 || done == end {
			if evalLoss, err = tr.Eval(evalBatch); err != nil {
				return err
			}
			curve = append(curve, curvePoint{Step: done, TrainLoss: lossSum / float64(lossN), EvalLoss: evalLoss, LR: lr,
				Seconds: prevSeconds + time.Since(start).Seconds()})
			lossSum, lossN = 0, 0
			if plat != nil {
				plat.observe(done, evalLoss)
				end = plat.end
			}
			if err := writeCurve(o.out, curve); err != nil {
				return err
			}
		}
		if done%o.saveEvery == 0 || done == end {
			if err := save(o.out, cfg, ctx); err != nil {
				return err
			}
		}
		tokPerSec := float64((done-first)*o.batch*cfg.TrainSeqLen) / time.Since(start).Seconds()
		bar.Set(done-first, fmt.Sprintf("loss %.3f · eval %.3f · %.0f tok/s", loss, evalLoss, tokPerSec))
	}
	bar.Finish()
	// Over resumptions, as loss.csv counts it: the wall time of the steps this model kept.
	wall := prevSeconds + time.Since(start).Seconds()
	stop := fmt.Sprintf("-steps %d", o.steps)
	if plat != nil {
		stop = plat.stopReason()
	}
	taskVersion := 0
	if o.task != "" {
		taskVersion = tasks.Version(o.task)
	}
	summary := map[string]any{
		"command":            "go run ./cmd/train " + strings.Join(recipe.WithoutResume(os.Args[1:]), " "),
		"task":               o.task,
		"scheme":             cfg.SchemeName(),
		"kind":               cfg.Kind,
		"steps":              end,
		"step_cap":           o.steps,
		"stop":               stop,
		"task_version":       taskVersion,
		"init":               o.init,
		"batch":              o.batch,
		"micro_batch":        tr.MicroBatch, // this run's; a resumed model's earlier parts may have used another
		"seq_len":            cfg.TrainSeqLen,
		"seed":               o.seed,
		"weights_seed":       weightsSeed(o),
		"wall_seconds":       math.Round(wall),
		"gomaxprocs":         runtime.GOMAXPROCS(0), // wall_seconds is on this many cores
		"final_loss":         loss,
		"final_eval_loss":    evalLoss,
		"eval_bits_per_byte": evalLoss / math.Ln2,
		"unigram_eval_loss":  unigramLoss(data.Train, evalTgt), // of the corpus, whatever the task
		"positional":         cfg.Positional,
		"dim":                cfg.Dim,
		"layers":             cfg.NumLayers,
		"random_positions":   o.randomPositions,
		"nope_layers":        cfg.NoPELayers,
	}
	js, _ := json.MarshalIndent(summary, "", "  ")
	if err := models.WriteFileAtomic(filepath.Join(o.out, "train.json"), append(js, '\n')); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "train: done in %s: loss %.4f, eval loss %.4f nats (%.3f bits/byte); checkpoint in %s\n",
		time.Duration(wall*float64(time.Second)).Round(time.Second), loss, evalLoss, evalLoss/math.Ln2, o.out)
	return nil
}

// initEdit turns the -init checkpoint's config into the fine-tune's: the training length -seq,
// the -pe options and the --rope-* flags. A rope_scaling block added here keeps the checkpoint's
// own training length as its original context, which is what it extends (the config's
// train_seq_len becomes -seq, the default original context otherwise).
func (o options) initEdit() models.Edit {
	return func(c *models.Config) error {
		orig := c.TrainSeqLen
		if c.Positional == nil {
			c.Positional = map[string]any{"name": "none"}
		}
		for k, v := range o.pe {
			c.Positional[k] = v
		}
		if o.rope != nil {
			if err := o.rope.Apply(c.Positional); err != nil {
				return err
			}
		}
		if block, ok := c.Positional["rope_scaling"].(map[string]any); ok {
			if _, set := block["original_max_position_embeddings"]; !set {
				block["original_max_position_embeddings"] = float64(orig)
			}
		}
		c.TrainSeqLen = o.seq
		c.MaxSeqLen = max(c.MaxSeqLen, o.seq)
		return nil
	}
}

// kindSet reports whether -kind was given on the command line.
func kindSet() bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "kind" })
	return set
}

// schedule is linear warm-up then cosine decay to 10% of the peak.
func schedule(step int, o options) float64 {
	if float64(step) < o.warmup {
		return o.lr * float64(step+1) / o.warmup
	}
	progress := (float64(step) - o.warmup) / math.Max(1, float64(o.steps)-o.warmup)
	return o.lr * (0.1 + 0.9*0.5*(1+math.Cos(math.Pi*math.Min(progress, 1))))
}

// randomizePositions replaces each row's positions 0..n-1 by a sorted random subset of [0, n):
// Ruoss et al. 2023, "Randomized Positional Encodings Boost Length Generalization of
// Transformers". The model sees large positions (and gaps) in training; its held-out loss and
// the benchmark score it on positions drawn the same way (benchmarks/eval).
func randomizePositions(pos [][]int32, n int, r *rand.Rand) {
	for _, row := range pos {
		picked := r.Perm(n)[:len(row)]
		slices.Sort(picked)
		for j, p := range picked {
			row[j] = int32(p)
		}
	}
}

// unigramLoss is the cross-entropy (nats per byte) of the eval targets under the training
// split's byte frequencies (add-one smoothed): the loss of a model that ignores context.
func unigramLoss(train []byte, eval [][]int32) float64 {
	var counts [256]float64
	for _, b := range train {
		counts[b]++
	}
	total := float64(len(train)) + 256
	sum, n := 0.0, 0
	for _, row := range eval {
		for _, b := range row {
			if b >= 0 && b < 256 {
				sum -= math.Log((counts[b] + 1) / total)
				n++
			}
		}
	}
	return sum / float64(max(n, 1))
}

// parseLayers reads the -nope-layers list.
func parseLayers(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		l, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("-nope-layers %q: want comma-separated layer numbers, e.g. 1,3", s)
		}
		out = append(out, l)
	}
	return out, nil
}

// makeBatch turns byte windows into a training batch: next-byte prediction for a decoder;
// for an encoder, BERT's masking (of the chosen bytes, 80% become <mask>, 10% a random byte,
// 10% stay) with the loss on the chosen bytes only.
func makeBatch(kind string, in, tgt [][]int32, maskRate float64, r *rand.Rand, maskID int) engine.Batch {
	b := engine.Batch{Inputs: in, Targets: tgt}
	for i := range in {
		pos := make([]int32, len(in[i]))
		w := make([]float32, len(in[i]))
		for j := range pos {
			pos[j] = int32(j)
			w[j] = 1
		}
		b.Positions = append(b.Positions, pos)
		b.Weights = append(b.Weights, w)
	}
	if kind != models.Encoder {
		return b
	}
	b.Targets = in
	b.Inputs = make([][]int32, len(in))
	for i, row := range in {
		masked := append([]int32(nil), row...)
		for j := range masked {
			b.Weights[i][j] = 0
			if r.Float64() >= maskRate {
				continue
			}
			b.Weights[i][j] = 1
			switch u := r.Float64(); {
			case u < 0.8:
				masked[j] = int32(maskID)
			case u < 0.9:
				masked[j] = int32(r.IntN(256))
			}
		}
		b.Inputs[i] = masked
	}
	return b
}

// finishedWithoutState answers -resume on a checkpoint without its optimizer state (the
// benchmark grid removes it from finished models): a run that reached the asked -steps, or
// that its plateau ended, has nothing to do; one asked to go further cannot resume, but can
// start again from the weights.
func finishedWithoutState(o options) error {
	if _, err := os.Stat(filepath.Join(o.out, "train.json")); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("resuming %s: no %s to resume from; train it again without -resume", o.out, stateFile)
	}
	info, err := recipe.ReadTrainInfo(o.out)
	if err != nil {
		return fmt.Errorf("resuming: %w", err)
	}
	if o.steps <= info.Steps || info.Plateaued() {
		fmt.Fprintf(os.Stderr, "train: %s already finished at step %d (%s); nothing to do\n", o.out, info.Steps, info.Stop)
		return nil
	}
	return fmt.Errorf("resuming %s: it finished at step %d (%s) and its optimizer state (%s) was removed, so it cannot go on to -steps %d; start a new run from its weights with -init %s -o <new folder>",
		o.out, info.Steps, info.Stop, stateFile, o.steps, o.out)
}

// initFile records, in a fresh run's output folder, the seed its initial weights were drawn
// with, so that a resumed run can still say it in train.json.
const initFile = "init.json"

// weightsSeed is the seed of the run's initial weights, or nil where they were not seeded here:
// a fine-tune (-init: they are the checkpoint's), or a run begun before -seed seeded them
// (no init.json; such weights were drawn from an unseeded generator).
func weightsSeed(o options) any {
	if o.init != "" {
		return nil
	}
	data, err := os.ReadFile(filepath.Join(o.out, initFile))
	if err != nil {
		return nil
	}
	var v struct {
		WeightsSeed *int64 `json:"weights_seed"`
	}
	if json.Unmarshal(data, &v) != nil || v.WeightsSeed == nil {
		return nil
	}
	return *v.WeightsSeed
}

// microBatch is the sequences per pass: the flag's value (which must divide the batch), or by
// default engine.DefaultMicroBatch (passes of at most 512 tokens; the whole batch for a scheme
// whose positional work the batch's rows share).
func microBatch(flagValue, batch, seq int, sharedWork bool) (int, error) {
	switch {
	case flagValue < 0:
		return 0, fmt.Errorf("-micro-batch must be >= 0 (0: automatic), got %d", flagValue)
	case flagValue > 0 && batch%flagValue != 0:
		return 0, fmt.Errorf("-micro-batch %d must divide -batch %d", flagValue, batch)
	case flagValue > 0:
		return flagValue, nil
	}
	return engine.DefaultMicroBatch(batch, seq, sharedWork), nil
}
