// Package train trains a toy decoder or encoder, byte level, on the Go standard library's
// source (package corpus) or on a synthetic task's generator (package tasks), for one named
// positional scheme; a decoder also on BPE tokens (tokens.go: -bpe, -tokenizer). Run owns the
// training loop: the learning-rate schedule (cosine, or the plateau rule's
// warmup-stable-decay), checkpoints (config.json + model.safetensors, plus
// train_state.safetensors for the optimizer) every SaveEvery steps and at the end, resuming
// from one (checkpoint.go: the files' steps must agree), the loss curve (loss.csv) and the
// summary (train.json).
//
// cmd/train is its command line (ParseArgs reads the same flags); the benchmark's grid
// (benchmarks/grid) calls Run for each of its models, several at once in one process: a run
// keeps all its state in its own values, so concurrent runs share nothing but the machine.
package train

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
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

	"github.com/gomlx/gomlx/backends"
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/posformer/posformer/engine"
	"github.com/posformer/posformer/engine/train/corpus"
	"github.com/posformer/posformer/engine/train/tasks"
	"github.com/posformer/posformer/models"
	"github.com/posformer/posformer/models/atomicfile"
	"github.com/posformer/posformer/positional"
	"github.com/posformer/posformer/tokenizer"
)

// Options are a run's settings: cmd/train's flags (ParseArgs), plus how the run reports.
type Options struct {
	Kind, Scheme, Out, Backend string
	// Task is the benchmark task (tasks.Names), recorded in train.json; it sets Kind, which must
	// then be "" or the task's. Empty: plain LM/MLM by Kind ("" is a decoder).
	Task                   string
	PE                     map[string]any // the scheme's options (-pe key=value)
	Dim, Layers, Heads, KV int
	Hidden, Ctx            int
	Steps, Batch, Seq      int
	MicroBatch             int
	LR, Warmup, WD         float64
	Seed                   int64
	EvalEvery, SaveEvery   int
	EvalWindows, MaxBytes  int
	MaskRate               float64
	Resume                 bool
	Force                  bool // without Resume: replace the checkpoint in Out, which is otherwise refused
	RandomPositions        int
	BOS                    bool // every sequence starts with the BOS token at position 0 (tasks.PrependBOS)
	PoSE                   int  // positional skip-wise training: positions reach up to this length (0: off)
	NoPELayers             string
	Plateau                int     // evaluations without improvement that end the run (0: cosine schedule over Steps)
	PlateauTol             float64 // relative improvement that counts
	PlateauMin             int
	Init                   string // start from this checkpoint's weights (a fine-tune)
	// KeepDiverged: a run whose loss stops being finite ends there, finished, with train.json
	// saying so (diverged_at, null losses), instead of failing: a learning-rate sweep needs
	// every rate's outcome. Off (cmd/train), the run fails and its last checkpoint stays.
	KeepDiverged bool
	// Data names the text to train on (corpus.LoadText: a file, a directory, a glob); empty:
	// the Go standard library's source.
	Data string
	// SkipGenerated leaves out the Go tree's generated files (corpus.LoadWritten).
	SkipGenerated bool
	// BPE > 0 trains a decoder on a byte-level BPE vocabulary of that many tokens, learned from
	// the train split (tokens.go); Tokenizer trains on the vocabulary of that tokenizer.json
	// instead. Neither: bytes.
	BPE       int
	Tokenizer string
	// Rope edits the positional options after PE: the commands' --rope-* flags (nil: none).
	Rope func(pe map[string]any) error

	// Args is the command line recorded in train.json ("go run ./cmd/train" and these, without
	// -resume): what the benchmark compares to know a checkpoint's recipe.
	Args []string
	// Cores is how many cores the run is given: the cpu backend's threads (unless Backend sets
	// threads=N) and train.json's gomaxprocs. 0: GOMAXPROCS, as a process of its own has.
	Cores int
	// Log receives the run's few lines (what it trains on, when it is done); nil discards them.
	Log io.Writer
	// Bar starts the progress display of the steps this run does (nil: none).
	Bar func(what string, total int) Bar
}

// Bar shows a run's progress (cmd/internal/progress's bar has these methods).
type Bar interface {
	Set(done int, status string)
	Finish()
}

// Result is what a run ends with.
type Result struct {
	Steps           int     // the step the model is at (the plateau rule's end, or the cap)
	Loss, EvalLoss  float64 // the last step's training loss and the last evaluation's
	Stop            string  // why it stopped, as train.json says
	WallSeconds     float64 // training wall time over resumptions
	AlreadyFinished bool    // a resumed run that had nothing left to do
	DivergedAt      int     // the step whose loss was NaN or infinite, where the run stopped (0: none)
}

// Defaults are cmd/train's defaults (the flags' values when not given; Kind "" is a decoder,
// or the task's kind).
func Defaults() Options {
	return Options{Scheme: "rope", PE: map[string]any{}, Dim: 128, Layers: 4, Heads: 4, KV: 2, Hidden: 384, Ctx: 1024,
		Steps: 2000, Batch: 16, Seq: 128, LR: 2e-3, Warmup: 100, WD: 0.01, Seed: 1, EvalEvery: 250, SaveEvery: 250,
		EvalWindows: 64, MaskRate: 0.15, PlateauTol: 0.01}
}

// Run trains (or, with Resume, continues training) the model in o.Out. A cancelled ctx stops
// it between steps with ctx's error; the last checkpoint saved stays resumable.
func Run(ctx context.Context, o Options) (Result, error) {
	logw := o.Log
	if logw == nil {
		logw = io.Discard
	}
	switch {
	case o.Out == "":
		return Result{}, fmt.Errorf("-o DIR is required (where the checkpoint goes)")
	case o.Steps < 1 || o.Batch < 1 || o.Seq < 2:
		return Result{}, fmt.Errorf("-steps, -batch must be >= 1 and -seq >= 2")
	case o.RandomPositions != 0 && o.RandomPositions < o.Seq:
		return Result{}, fmt.Errorf("-random-positions %d must be 0 (off) or >= -seq %d: it is the range the %d positions are drawn from", o.RandomPositions, o.Seq, o.Seq)
	case o.PoSE != 0 && o.PoSE <= o.Seq:
		return Result{}, fmt.Errorf("-pose %d must be 0 (off) or > -seq %d: it is the length the skipped positions reach", o.PoSE, o.Seq)
	case o.PoSE != 0 && o.RandomPositions != 0:
		return Result{}, fmt.Errorf("-pose and -random-positions both place the training positions; give one")
	case o.Plateau < 0 || o.PlateauTol < 0 || o.PlateauMin < 0:
		return Result{}, fmt.Errorf("-plateau %d, -plateau-tol %g and -plateau-min %d must be >= 0 (-plateau 0 is off)", o.Plateau, o.PlateauTol, o.PlateauMin)
	case o.EvalEvery < 1 || o.SaveEvery < 1:
		return Result{}, fmt.Errorf("-eval-every and -save-every must be >= 1")
	}
	if _, err := microBatch(o.MicroBatch, o.Batch, o.Seq, false); err != nil {
		return Result{}, err
	}
	held := ""
	if !o.Resume {
		if held = heldCheckpoint(o.Out); held != "" && !o.Force {
			return Result{}, fmt.Errorf("-o %s holds a checkpoint (%s): add -resume to continue training it, or -force to replace it", o.Out, held)
		}
	}
	if o.Task != "" {
		if err := tasks.Check(o.Task); err != nil {
			return Result{}, fmt.Errorf("-task: %w", err)
		}
		if o.Kind != "" && o.Kind != tasks.Kind(o.Task) {
			return Result{}, fmt.Errorf("-task %s trains a%s %s, not -kind %s; drop -kind", o.Task, map[bool]string{true: "n"}[tasks.Kind(o.Task) == models.Encoder], tasks.Kind(o.Task), o.Kind)
		}
		o.Kind = tasks.Kind(o.Task)
	}
	if o.Kind == "" {
		o.Kind = models.Decoder
	}
	if err := checkTokenFlags(o); err != nil {
		return Result{}, err
	}
	nope, err := parseLayers(o.NoPELayers)
	if err != nil {
		return Result{}, err
	}
	backend, err := engine.NewBackend(withThreads(o.Backend, o.Cores))
	if err != nil {
		return Result{}, err
	}
	defer backend.Finalize() // a run of the grid's: its worker pool goes with it
	maxBytes := o.MaxBytes
	switch {
	case o.Task == tasks.Passkey:
		maxBytes = 1 << 20 // the haystack's text: enough that windows rarely repeat
	case tasks.Synthetic(o.Task):
		maxBytes = 1 << 16 // the corpus only feeds the unigram figure of train.json
	}
	data, source, err := loadCorpus(o.Data, maxBytes, o.Out, o.SkipGenerated)
	if err != nil {
		return Result{}, err
	}
	// The vocabulary of a fresh BPE run, written into o.Out once the folder is cleared.
	var tokJSON []byte
	if !o.Resume {
		if tokJSON, err = newVocabulary(o, data.Train, logw); err != nil {
			return Result{}, err
		}
	}
	var tok tokenizer.Tokenizer = tokenizer.NewByte()
	if tokJSON != nil {
		if tok, err = tokenizer.ParseHF(tokJSON); err != nil {
			return Result{}, err
		}
	}
	pe := map[string]any{"name": o.Scheme}
	for k, v := range o.PE {
		pe[k] = v
	}
	if o.Rope != nil && o.Init == "" {
		if err := o.Rope(pe); err != nil {
			return Result{}, err
		}
	}
	cfg := models.Config{
		Kind: o.Kind, VocabSize: tok.VocabSize(), Dim: o.Dim, NumLayers: o.Layers, NumHeads: o.Heads,
		NumKVHeads: o.KV, HiddenDim: o.Hidden, TieEmbeddings: true, MaxSeqLen: o.Ctx, TrainSeqLen: o.Seq,
		Tokenizer: "byte", Positional: pe, NoPELayers: nope,
	}
	if tokJSON != nil {
		cfg.Tokenizer = TokenizerFile
	}
	mctx := mlctx.New()
	var m *models.Model
	if o.Resume {
		if _, err := atomicfile.RemoveOrphans(o.Out, runFiles...); err != nil {
			return Result{}, fmt.Errorf("resuming: %w", err)
		}
		m, mctx, err = models.Load(o.Out, backend)
		if err != nil {
			return Result{}, fmt.Errorf("resuming: %w", err)
		}
		if _, err := os.Stat(filepath.Join(o.Out, StateFile)); errors.Is(err, fs.ErrNotExist) {
			return finishedWithoutState(o, logw)
		}
		if err := checkSet(o.Out); err != nil {
			return Result{}, err
		}
		if err := loadState(filepath.Join(o.Out, StateFile), mctx); err != nil {
			return Result{}, fmt.Errorf("resuming: %w", err)
		}
		cfg = m.Config
		resumed, err := resumedVocabulary(o, cfg)
		if err != nil {
			return Result{}, err
		}
		if resumed != nil {
			if tok, err = tokenizer.ParseHF(resumed); err != nil {
				return Result{}, err
			}
		}
	} else if o.Init != "" {
		if m, mctx, err = models.Load(o.Init, backend, o.initEdit()); err != nil {
			return Result{}, fmt.Errorf("-init: %w", err)
		}
		cfg = m.Config
		if cfg.Tokenizer != "byte" {
			// The fine-tune keeps the vocabulary its embeddings were trained on: -o gets its
			// own copy, so the new checkpoint stands alone.
			if tokJSON, err = initVocabulary(o.Init, cfg); err != nil {
				return Result{}, err
			}
			if tok, err = tokenizer.ParseHF(tokJSON); err != nil {
				return Result{}, fmt.Errorf("-init %s: %w", o.Init, err)
			}
			if tok.VocabSize() != cfg.VocabSize {
				return Result{}, fmt.Errorf("-init %s: its tokenizer has %d tokens but its config says vocab_size %d: the tokenizer file is not the one these weights were trained with", o.Init, tok.VocabSize(), cfg.VocabSize)
			}
			cfg.Tokenizer = TokenizerFile
			m.Config.Tokenizer = TokenizerFile
		}
	} else {
		if m, err = models.New(cfg); err != nil {
			return Result{}, err
		}
		// The initial weights come from the context's generator: seeded, a run is repeatable.
		if err := mctx.SetRNGStateFromSeed(o.Seed); err != nil {
			return Result{}, fmt.Errorf("-seed: %w", err)
		}
		if err := os.MkdirAll(o.Out, 0o755); err != nil {
			return Result{}, err
		}
		js, _ := json.Marshal(map[string]int64{"weights_seed": o.Seed})
		if err := models.WriteFileAtomic(filepath.Join(o.Out, initFile), append(js, '\n')); err != nil {
			return Result{}, err
		}
	}
	if held != "" {
		// After -init has read its weights: they may be the very checkpoint replaced.
		if err := clearRun(o.Out); err != nil {
			return Result{}, err
		}
	}
	if tokJSON != nil {
		if err := os.MkdirAll(o.Out, 0o755); err != nil {
			return Result{}, err
		}
		if err := models.WriteFileAtomic(filepath.Join(o.Out, TokenizerFile), tokJSON); err != nil {
			return Result{}, err
		}
	}
	if l, ok := m.Scheme.(positional.Limited); ok && l.Limit() > 0 && max(o.RandomPositions, o.PoSE, cfg.TrainSeqLen)+boolInt(o.BOS) > l.Limit() {
		return Result{}, fmt.Errorf("%s encodes positions below %d only (%s); lower -seq / -random-positions / -pose", cfg.SchemeName(), l.Limit(), l.LimitFix())
	}
	bpe := cfg.Tokenizer != "byte"
	if o.Data != "" && !tasks.Synthetic(o.Task) && !bpe {
		// The sampler draws windows of L+1 bytes, and the held-out loss needs one at least.
		if need := cfg.TrainSeqLen + 1; len(data.Train) < need || len(data.Eval) < need {
			return Result{}, fmt.Errorf("-data %s: %d bytes to train on and %d held out, but -seq %d needs %d in each; give more text or lower -seq", o.Data, len(data.Train), len(data.Eval), cfg.TrainSeqLen, need)
		}
	}
	val, err := validationText(o.Data, data)
	if err != nil {
		return Result{}, err
	}
	tr, err := engine.NewTrainer(backend, m, mctx, o.WD)
	if err != nil {
		return Result{}, err
	}
	shared := false
	if sw, ok := m.Scheme.(positional.SharedWork); ok && o.RandomPositions == 0 && o.PoSE == 0 {
		shared = sw.SharedWork() // rows share their positions only without -random-positions or -pose
	}
	if tr.MicroBatch, err = microBatch(o.MicroBatch, o.Batch, cfg.TrainSeqLen, shared); err != nil {
		return Result{}, err
	}
	first := tr.GlobalStep()
	// The loss curve so far; with -plateau its evaluations replay the plateau decisions.
	var curve []CurvePoint
	if o.Resume {
		if curve, err = ReadCurve(o.Out, first); err != nil {
			return Result{}, err
		}
	}
	var plat *plateau
	end := o.Steps
	if o.Plateau > 0 {
		plat = newPlateau(o.Plateau, o.PlateauTol, o.Steps, o.EvalEvery)
		plat.min = o.PlateauMin
		for _, c := range curve {
			plat.observe(c.Step, c.EvalLoss)
		}
		end = plat.end
	}
	if o.Resume && first >= end {
		// Nothing left to train: say so rather than run zero steps and report their NaN loss.
		why, fix := fmt.Sprintf("-steps %d", o.Steps), "raise -steps"
		if plat != nil && plat.end < o.Steps {
			why, fix = plat.stopReason(), "raise -plateau or lower -plateau-tol"
		}
		fmt.Fprintf(logw, "train: %s already finished at step %d (%s); nothing to do (%s to train further)\n", o.Out, first, why, fix)
		return Result{Steps: first, Stop: why, AlreadyFinished: true}, nil
	}
	var text *tokenText // the splits as tokens (nil: bytes), encoded once there is work to do
	if bpe {
		if text, err = encodeSplits(tok, data.Train, val.text, logw); err != nil {
			return Result{}, err
		}
		if need := cfg.TrainSeqLen + 1; len(text.train) < need || len(text.eval) < need {
			return Result{}, fmt.Errorf("%d tokens to train on and %d held out, but -seq %d needs %d in each; give more text or lower -seq", len(text.train), len(text.eval), cfg.TrainSeqLen, need)
		}
	}
	var sampler interface {
		Batch(batch, seqLen int) (inputs, targets [][]int32)
	} = corpus.NewSampler(data.Train, o.Seed+int64(tr.GlobalStep()))
	maskRNG := rand.New(rand.NewPCG(uint64(o.Seed), uint64(tr.GlobalStep())))
	posRNG := rand.New(rand.NewPCG(uint64(o.Seed)+7, uint64(tr.GlobalStep())))
	evalIn, evalTgt := corpus.Windows(val.text, cfg.TrainSeqLen, o.EvalWindows)
	// bitsPerByte turns the eval loss (nats per token) into bits per byte.
	bitsPerByte, unit := func(nats float64) float64 { return nats / math.Ln2 }, "bytes"
	if text != nil {
		sampler = corpus.NewTokenSampler(text.train, o.Seed+int64(tr.GlobalStep()))
		evalIn, evalTgt = corpus.TokenWindows(text.eval, cfg.TrainSeqLen, o.EvalWindows)
		perNat := text.bitsPerByte(evalTgt)
		bitsPerByte, unit = func(nats float64) float64 { return nats * perNat }, "tokens"
	}
	evalBatch := makeBatch(cfg.Kind, evalIn, evalTgt, o.MaskRate, rand.New(rand.NewPCG(99, 99)), tok.Special().MASK)
	// Synthetic tasks draw their batches from a seeded generator instead of the corpus.
	var gen *tasks.Generator
	if tasks.Synthetic(o.Task) {
		if gen, err = tasks.NewGenerator(o.Task, cfg.TrainSeqLen, o.Seed, tr.GlobalStep(), tasks.Haystack(data.Train)); err != nil {
			return Result{}, err
		}
		if evalBatch, err = tasks.EvalBatch(o.Task, cfg.TrainSeqLen, o.EvalWindows, tasks.Haystack(val.text)); err != nil {
			return Result{}, err
		}
	}
	if o.RandomPositions > 0 {
		// The held-out loss (and the plateau rule it feeds) is measured where the model is
		// trained: on sorted random positions, drawn once. On 0..n-1 a randomized-positions
		// model sees a placement it was never trained on (64 consecutive positions of 1,024).
		randomizePositions(evalBatch.Positions, o.RandomPositions, rand.New(rand.NewPCG(99, 98)))
	}
	if o.BOS {
		evalBatch = tasks.PrependBOS(evalBatch)
	}
	fmt.Fprintf(logw, "train: %s %s on %d train / %d eval files of %s (%.1f / %.1f MB), %d steps of %dx%d %s (passes of %d), %s\n",
		cfg.SchemeName(), cfg.Kind, data.TrainFiles, data.EvalFiles, source, float64(len(data.Train))/1e6, float64(len(data.Eval))/1e6, o.Steps, o.Batch, cfg.TrainSeqLen,
		unit, tr.MicroBatch, engine.BackendSummary(backend))

	start := time.Now()
	prevSeconds := 0.0
	if len(curve) > 0 {
		prevSeconds = curve[len(curve)-1].Seconds
	}
	// The training thread's CPU time, which unlike the wall clock does not count the time the
	// process waited (stopped, or its cores busy with other work): with one backend thread, what
	// the model cost. The steps run on this goroutine, locked to its thread meanwhile.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpuStart, cpuKnown := ThreadCPU()
	prevCPU := 0.0
	if o.Resume {
		// The checkpoint's own record, when it has one: the steps after the last evaluation
		// took time too.
		state := filepath.Join(o.Out, StateFile)
		if s, ok, err := savedSeconds(state); err != nil {
			return Result{}, err
		} else if ok {
			prevSeconds = s
		}
		s, ok, err := savedCPUSeconds(state)
		if err != nil {
			return Result{}, err
		}
		prevCPU, cpuKnown = s, cpuKnown && ok // an earlier part not measured: the total unknown
	}
	// cpuSeconds is the CPU time over resumptions so far, -1 where unknown.
	cpuSeconds := func() float64 {
		now, ok := ThreadCPU()
		if !cpuKnown || !ok {
			return -1
		}
		return prevCPU + (now - cpuStart).Seconds()
	}
	var bar Bar = noBar{}
	if o.Bar != nil {
		bar = o.Bar("train "+cfg.SchemeName()+" "+cfg.Kind, o.Steps-first)
	}
	var loss, evalLoss float64 = math.NaN(), math.NaN()
	if len(curve) > 0 {
		evalLoss = curve[len(curve)-1].EvalLoss // a resumed run's latest evaluation, until the next
	}
	lossSum, lossN := 0.0, 0
	divergedAt := 0 // the step whose loss was not finite (0: none)
	for step := first; step < end; step++ {
		if err := ctx.Err(); err != nil {
			return Result{}, fmt.Errorf("stopped at step %d (resumable from the last checkpoint): %w", step, err)
		}
		var b engine.Batch
		if gen != nil {
			b = gen.Batch(o.Batch)
		} else {
			in, tgt := sampler.Batch(o.Batch, cfg.TrainSeqLen)
			b = makeBatch(cfg.Kind, in, tgt, o.MaskRate, maskRNG, tok.Special().MASK)
		}
		if o.RandomPositions > 0 {
			randomizePositions(b.Positions, o.RandomPositions, posRNG)
		}
		if o.PoSE > 0 {
			skipPositions(b.Positions, o.PoSE, posRNG)
		}
		if o.BOS {
			b = tasks.PrependBOS(b)
		}
		lr := schedule(step, o)
		if plat != nil {
			lr = plat.lr(step, o.LR, o.Warmup)
			end = plat.end
		}
		done := step + 1
		if loss, err = tr.Step(b, lr); err != nil {
			if !(o.KeepDiverged && errors.As(err, new(engine.DivergedError))) {
				return Result{}, fmt.Errorf("step %d: %w", step, err)
			}
			// The run ends here, finished: its weights as they are (not finite), its losses
			// null in train.json, the step in diverged_at.
			divergedAt, end = done, done
		}
		lossSum, lossN = lossSum+loss, lossN+1
		if done%o.EvalEvery == 0 || done == end {
			if evalLoss, err = tr.Eval(evalBatch); err != nil {
				return Result{}, err
			}
			curve = append(curve, CurvePoint{Step: done, TrainLoss: lossSum / float64(lossN), EvalLoss: evalLoss, LR: lr,
				Seconds: prevSeconds + time.Since(start).Seconds()})
			if text != nil {
				curve[len(curve)-1].BitsPerByte = bitsPerByte(evalLoss)
			}
			lossSum, lossN = 0, 0
			if plat != nil {
				plat.observe(done, evalLoss)
				end = plat.end
			}
			if divergedAt > 0 {
				end = done
			}
			if err := writeCurve(o.Out, curve, text != nil); err != nil {
				return Result{}, err
			}
		}
		if done%o.SaveEvery == 0 || done == end {
			if err := save(o.Out, cfg, mctx, done, prevSeconds+time.Since(start).Seconds(), cpuSeconds()); err != nil {
				return Result{}, err
			}
		}
		tokPerSec := float64((done-first)*o.Batch*cfg.TrainSeqLen) / time.Since(start).Seconds()
		eval := "eval –" // before the first evaluation
		if !math.IsNaN(evalLoss) {
			eval = fmt.Sprintf("eval %.3f", evalLoss)
			if text != nil {
				eval += fmt.Sprintf(" (%.3f bits/byte)", bitsPerByte(evalLoss))
			}
		}
		status := fmt.Sprintf("loss %.3f · %s · %.0f tok/s", loss, eval, tokPerSec)
		bar.Set(done-first, status)
	}
	bar.Finish()
	// Over resumptions, as loss.csv counts it: the wall time of the steps this model kept.
	wall := prevSeconds + time.Since(start).Seconds()
	cpu := cpuSeconds()
	stop := fmt.Sprintf("-steps %d", o.Steps)
	if plat != nil {
		stop = plat.stopReason()
	}
	if divergedAt > 0 {
		stop = fmt.Sprintf("diverged at step %d (loss %v)", divergedAt, loss)
	}
	taskVersion := 0
	if o.Task != "" {
		taskVersion = tasks.Version(o.Task)
	}
	cores := o.Cores
	if cores <= 0 {
		cores = runtime.GOMAXPROCS(0)
	}
	summary := map[string]any{
		"command":            "go run ./cmd/train " + strings.Join(WithoutResume(o.Args), " "),
		"task":               o.Task,
		"scheme":             cfg.SchemeName(),
		"kind":               cfg.Kind,
		"steps":              end,
		"step_cap":           o.Steps,
		"stop":               stop,
		"task_version":       taskVersion,
		"init":               o.Init,
		"batch":              o.Batch,
		"micro_batch":        tr.MicroBatch, // this run's; a resumed model's earlier parts may have used another
		"seq_len":            cfg.TrainSeqLen,
		"seed":               o.Seed,
		"weights_seed":       weightsSeed(o),
		"wall_seconds":       math.Round(wall),
		"gomaxprocs":         cores, // wall_seconds is on this many cores
		"final_loss":         finite(loss),
		"final_eval_loss":    finite(evalLoss),
		"eval_bits_per_byte": finite(bitsPerByte(evalLoss)),
		"diverged_at":        divergedAt,
		"unigram_eval_loss":  unigramLoss(data.Train, evalTgt), // of the corpus, whatever the task
		"positional":         cfg.Positional,
		"dim":                cfg.Dim,
		"layers":             cfg.NumLayers,
		"random_positions":   o.RandomPositions,
		"pose":               o.PoSE,
		"bos":                o.BOS,
		"go_version":         val.goVersion, // the standard library the texts come from ("" with -data)
		"validation_sha256":  val.sha256,
		"nope_layers":        cfg.NoPELayers,
	}
	if cpu >= 0 {
		summary["thread_cpu_seconds"] = math.Round(cpu) // the training thread's, over resumptions
	}
	if text != nil {
		// Only for token runs: a byte run's train.json stays as it was.
		summary["tokenizer"] = cfg.Tokenizer
		summary["vocab_size"] = cfg.VocabSize
		summary["eval_bytes_per_token"] = float64(text.evalBytes) / float64(len(text.eval))
		summary["unigram_eval_loss"] = unigramTokenLoss(text.train, cfg.VocabSize, evalTgt)
	}
	js, err := json.MarshalIndent(summary, "", "  ")
	if err != nil {
		return Result{}, fmt.Errorf("writing %s: %w", InfoFile, err)
	}
	if err := models.WriteFileAtomic(filepath.Join(o.Out, InfoFile), append(js, '\n')); err != nil {
		return Result{}, err
	}
	per := ""
	if text != nil {
		per = "/token"
	}
	fmt.Fprintf(logw, "train: done in %s: loss %.4f, eval loss %.4f nats%s (%.3f bits/byte); checkpoint in %s\n",
		time.Duration(wall*float64(time.Second)).Round(time.Second), loss, evalLoss, per, bitsPerByte(evalLoss), o.Out)
	return Result{Steps: end, Loss: loss, EvalLoss: evalLoss, Stop: stop, WallSeconds: wall, DivergedAt: divergedAt}, nil
}

// InfoFile is the run's summary, written when it finishes: the benchmark reads it to know a
// checkpoint is trained, and by what command.
const InfoFile = "train.json"

// noBar is the progress display of a run without one.
type noBar struct{}

func (noBar) Set(int, string) {}
func (noBar) Finish()         {}

// withThreads is the backend name with threads=cores added for the cpu backend (the default
// one included) when cores > 0 and the name sets no threads of its own. Other backends keep
// their own parallelism (GoMLX's pure-Go backend: GOMAXPROCS).
func withThreads(name string, cores int) string {
	if name == "" {
		name = os.Getenv(backends.ConfigEnvVar)
	}
	if name == "" {
		name = engine.DefaultBackend
	}
	kind, config, _ := strings.Cut(name, ":")
	if cores <= 0 || kind != "cpu" || strings.Contains(config, "threads=") {
		return name
	}
	if config != "" {
		config += ","
	}
	return kind + ":" + config + "threads=" + strconv.Itoa(cores)
}

// initEdit turns the -init checkpoint's config into the fine-tune's: the training length -seq,
// the -pe options and the --rope-* flags. A rope_scaling block added here keeps the checkpoint's
// own training length as its original context, which is what it extends (the config's
// train_seq_len becomes -seq, the default original context otherwise).
func (o Options) initEdit() models.Edit {
	return func(c *models.Config) error {
		orig := c.TrainSeqLen
		if c.Positional == nil {
			c.Positional = map[string]any{"name": "none"}
		}
		for k, v := range o.PE {
			c.Positional[k] = v
		}
		if o.Rope != nil {
			if err := o.Rope(c.Positional); err != nil {
				return err
			}
		}
		if block, ok := c.Positional["rope_scaling"].(map[string]any); ok {
			if _, set := block["original_max_position_embeddings"]; !set {
				block["original_max_position_embeddings"] = float64(orig)
			}
		}
		c.TrainSeqLen = o.Seq
		c.MaxSeqLen = max(c.MaxSeqLen, o.Seq)
		return nil
	}
}

// schedule is linear warm-up then cosine decay to 10% of the peak.
func schedule(step int, o Options) float64 {
	if float64(step) < o.Warmup {
		return o.LR * float64(step+1) / o.Warmup
	}
	progress := (float64(step) - o.Warmup) / math.Max(1, float64(o.Steps)-o.Warmup)
	return o.LR * (0.1 + 0.9*0.5*(1+math.Cos(math.Pi*math.Min(progress, 1))))
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

// skipPositions gives each row of positions PoSE's placement (Zhu et al. 2023, "PoSE: Efficient
// Context Window Extension of LLMs via Positional Skip-wise Training"): the window of L tokens
// is cut at a uniform point c in [1, L) into two chunks; the first keeps positions 0..c−1, the
// second skips ahead by u, uniform in [0, target − L], to c+u..L−1+u. Trained on L tokens, the
// model sees every distance up to target − 1, while each chunk stays contiguous (the paper's two
// chunks, the first anchored at 0). Held-out windows keep 0..L−1: PoSE is meant to be read on
// contiguous positions.
func skipPositions(pos [][]int32, target int, r *rand.Rand) {
	for _, row := range pos {
		l := len(row)
		c := 1 + r.IntN(l-1)
		u := r.IntN(target - l + 1)
		for j := range row {
			row[j] = int32(j)
			if j >= c {
				row[j] += int32(u)
			}
		}
	}
}

// loadCorpus reads the text named by -data (corpus.LoadText; never the run's own folder out,
// whose loss.csv grows as it trains), or else the Go standard library's source, and says what
// it read for the run's first line.
func loadCorpus(data string, maxBytes int, out string, skipGenerated bool) (*corpus.Corpus, string, error) {
	if data != "" {
		if skipGenerated {
			return nil, "", fmt.Errorf("-skip-generated leaves out the Go tree's generated files; with -data, leave them out of the text instead")
		}
		c, err := corpus.LoadText(data, maxBytes, out)
		return c, data, err
	}
	root, err := corpus.GoRoot()
	if err != nil {
		return nil, "", err
	}
	load, what := corpus.Load, ""
	if skipGenerated {
		load, what = corpus.LoadWritten, " (generated files left out)"
	}
	c, err := load(root, maxBytes)
	return c, filepath.Join(root, "src") + what, err
}

// heldOut is the text the held-out loss (and the plateau rule) reads.
type heldOut struct {
	text              []byte
	sha256, goVersion string
}

// validationText is the Go tree's validation text (corpus.LoadHeldOut), never the test text
// the benchmark scores; with -data, the user's held-out split.
func validationText(data string, c *corpus.Corpus) (heldOut, error) {
	if data != "" {
		sum := sha256.Sum256(c.Eval)
		return heldOut{text: c.Eval, sha256: hex.EncodeToString(sum[:])}, nil
	}
	root, err := corpus.GoRoot()
	if err != nil {
		return heldOut{}, err
	}
	val, _, err := corpus.LoadHeldOut(root)
	if err != nil {
		return heldOut{}, err
	}
	return heldOut{text: val.Text, sha256: val.SHA256(), goVersion: corpus.GoVersion(root)}, nil
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
func finishedWithoutState(o Options, logw io.Writer) (Result, error) {
	data, err := os.ReadFile(filepath.Join(o.Out, InfoFile))
	if errors.Is(err, fs.ErrNotExist) {
		return Result{}, fmt.Errorf("resuming %s: no %s to resume from; train it again with -force in place of -resume", o.Out, StateFile)
	}
	var info struct {
		Steps int    `json:"steps"`
		Stop  string `json:"stop"`
	}
	if err == nil {
		err = json.Unmarshal(data, &info)
	}
	if err != nil {
		return Result{}, fmt.Errorf("resuming: reading %s: %w", filepath.Join(o.Out, InfoFile), err)
	}
	if o.Steps <= info.Steps || Plateaued(info.Stop) {
		fmt.Fprintf(logw, "train: %s already finished at step %d (%s); nothing to do\n", o.Out, info.Steps, info.Stop)
		return Result{Steps: info.Steps, Stop: info.Stop, AlreadyFinished: true}, nil
	}
	return Result{}, fmt.Errorf("resuming %s: it finished at step %d (%s) and its optimizer state (%s) was removed, so it cannot go on to -steps %d; start a new run from its weights with -init %s -o <new folder>",
		o.Out, info.Steps, info.Stop, StateFile, o.Steps, o.Out)
}

// initFile records, in a fresh run's output folder, the seed its initial weights were drawn
// with, so that a resumed run can still say it in train.json.
const initFile = "init.json"

// weightsSeed is the seed of the run's initial weights, or nil where they were not seeded here:
// a fine-tune (-init: they are the checkpoint's), or a run begun before -seed seeded them
// (no init.json; such weights were drawn from an unseeded generator).
func weightsSeed(o Options) any {
	if o.Init != "" {
		return nil
	}
	data, err := os.ReadFile(filepath.Join(o.Out, initFile))
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

// boolInt is 1 for true: BOS takes one position more.
func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// finite is x, or nil (JSON's null) when x is NaN or infinite, which JSON cannot hold: a
// diverged run's losses. Readers take null back as NaN (recipe.ReadTrainInfo).
func finite(x float64) any {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return x
}
