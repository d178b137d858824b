package train

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/posformer/posformer/engine"
	"github.com/posformer/posformer/engine/train/tasks"
	"github.com/posformer/posformer/positional"
)

// RopeFlags registers the commands' --rope-* flags on a flag set and returns the edit they make
// to a positional block (cmd/internal/ropeflags: Register(fs).Apply). They are passed in because
// that package is the commands' own.
type RopeFlags func(fs *flag.FlagSet) func(pe map[string]any) error

// ErrArgument is ParseArgs' error for an argument that is not a flag.
var ErrArgument = errors.New("unexpected argument")

// ParseArgs reads cmd/train's command line (flags only) into Options, with Args set to args,
// the command train.json records. A bad flag is a one-line error; -h is flag.ErrHelp.
func ParseArgs(args []string, rope RopeFlags) (Options, error) {
	fs, o := newFlagSet(rope)
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return Options{}, err
		}
		return Options{}, fmt.Errorf("%v (run with -h for the flags)", err)
	}
	if fs.NArg() > 0 {
		return Options{}, fmt.Errorf("%w %q; flags only (see -h)", ErrArgument, fs.Arg(0))
	}
	kindSet := false
	fs.Visit(func(f *flag.Flag) { kindSet = kindSet || f.Name == "kind" })
	if !kindSet {
		o.Kind = "" // the task's, or a decoder: Run checks a given -kind against -task
	}
	o.Args = args
	return *o, nil
}

// PrintDefaults writes the flags and their defaults, for -h.
func PrintDefaults(w io.Writer, rope RopeFlags) {
	fs, _ := newFlagSet(rope)
	fs.SetOutput(w)
	fs.PrintDefaults()
}

func newFlagSet(rope RopeFlags) (*flag.FlagSet, *Options) {
	o := Defaults()
	fs := flag.NewFlagSet("train", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.Kind, "kind", "decoder", "decoder (causal LM) or encoder (masked LM)")
	fs.StringVar(&o.Task, "task", o.Task, "benchmark task (sets -kind, recorded in train.json): "+strings.Join(tasks.Names(), ", ")+"; empty: plain LM/MLM by -kind")
	fs.StringVar(&o.Scheme, "scheme", o.Scheme, "positional scheme: "+strings.Join(positional.Names(), ", "))
	fs.Var(positional.OptionFlag(o.PE), "pe", "scheme option key=value (repeatable), e.g. -pe base=10000 -pe layout=interleaved")
	fs.StringVar(&o.Out, "o", o.Out, "checkpoint directory to write (required)")
	fs.StringVar(&o.Backend, "backend", o.Backend, engine.BackendUsage)
	fs.IntVar(&o.Dim, "dim", o.Dim, "model width")
	fs.IntVar(&o.Layers, "layers", o.Layers, "transformer blocks")
	fs.IntVar(&o.Heads, "heads", o.Heads, "attention heads")
	fs.IntVar(&o.KV, "kv-heads", o.KV, "key/value heads (grouped-query attention)")
	fs.IntVar(&o.Hidden, "hidden", o.Hidden, "feed-forward width")
	fs.IntVar(&o.Ctx, "ctx", o.Ctx, "max_seq_len written to the config: the default context size at inference")
	fs.IntVar(&o.Steps, "steps", o.Steps, "optimizer steps in total (a resumed run continues up to this)")
	fs.IntVar(&o.Batch, "batch", o.Batch, "sequences per step")
	fs.IntVar(&o.MicroBatch, "micro-batch", o.MicroBatch, "sequences per forward/backward pass, their gradients summed into one step (0: as many as make 512 tokens; the same step up to float rounding, faster on large batches)")
	fs.IntVar(&o.Seq, "seq", o.Seq, "training sequence length L")
	fs.Float64Var(&o.LR, "lr", o.LR, "peak learning rate (linear warm-up, cosine decay to 10%)")
	fs.Float64Var(&o.Warmup, "warmup", o.Warmup, "warm-up steps")
	fs.Float64Var(&o.WD, "wd", o.WD, "AdamW weight decay")
	fs.Int64Var(&o.Seed, "seed", o.Seed, "seed of the initial weights, data sampling and masking: the same seed, machine and thread count train the same model")
	fs.IntVar(&o.EvalEvery, "eval-every", o.EvalEvery, "evaluate every N steps")
	fs.IntVar(&o.SaveEvery, "save-every", o.SaveEvery, "save a checkpoint every N steps")
	fs.IntVar(&o.EvalWindows, "eval-windows", o.EvalWindows, "held-out windows of length L, spread evenly over the validation text, that the eval loss averages")
	fs.StringVar(&o.Data, "data", o.Data, "train on this text instead of Go's source: a file, a directory (read recursively, binary and hidden files skipped) or a glob; 5% is held out (docs/commands.md)")
	fs.BoolVar(&o.SkipGenerated, "skip-generated", o.SkipGenerated, "Go's source: leave out the files marked generated (\"// Code generated ... DO NOT EDIT.\"), two fifths of its bytes, as the validation text does")
	fs.IntVar(&o.BPE, "bpe", o.BPE, "decoder: train on a byte-level BPE vocabulary of N tokens (GPT-2's pre-tokenizer, <|endoftext|> included) learned from the train split's first 48 MiB and saved as tokenizer.json in -o; 0: bytes")
	fs.StringVar(&o.Tokenizer, "tokenizer", o.Tokenizer, "decoder: train on the tokens of this Hugging Face tokenizer.json (copied into -o) instead of bytes")
	fs.IntVar(&o.MaxBytes, "max-bytes", o.MaxBytes, "cap on each corpus split in bytes (0: all of it)")
	fs.Float64Var(&o.MaskRate, "mask-rate", o.MaskRate, "encoder: fraction of bytes masked")
	fs.BoolVar(&o.Resume, "resume", o.Resume, "continue from the checkpoint in -o")
	fs.BoolVar(&o.Force, "force", o.Force, "replace the checkpoint in -o (without -resume or -force, a folder holding one is refused)")
	fs.IntVar(&o.PoSE, "pose", o.PoSE, "positional skip-wise training (PoSE, Zhu et al. 2023): each training window's second chunk skips ahead so positions reach this length; 0 is off")
	fs.BoolVar(&o.BOS, "bos", o.BOS, "start every training sequence with the BOS token at position 0 (the others at 1..L), as Kazemnejad et al. 2023 do; recorded in train.json, and the benchmark scores the model with it")
	fs.IntVar(&o.RandomPositions, "random-positions", o.RandomPositions, "randomized positions (Ruoss et al. 2023): each training sequence gets a sorted random subset of [0, N); 0 is off")
	fs.StringVar(&o.NoPELayers, "nope-layers", o.NoPELayers, "comma-separated blocks (from 0) that skip the scheme's attention hooks, e.g. 1,3")
	fs.IntVar(&o.Plateau, "plateau", o.Plateau, "train until the eval loss has not improved for N evaluations, then cool down (warmup-stable-decay); -steps is the cap. 0: cosine decay over -steps")
	fs.Float64Var(&o.PlateauTol, "plateau-tol", o.PlateauTol, "with -plateau: relative eval-loss improvement that counts as progress")
	fs.IntVar(&o.PlateauMin, "plateau-min", o.PlateauMin, "with -plateau: no plateau before this step (a model that sits on an early plateau, as encoders do before they use positions, keeps training)")
	fs.StringVar(&o.Init, "init", o.Init, "start from this checkpoint's weights with a fresh optimizer (a fine-tune); -seq, -pe and the --rope-* flags edit its config, the shape flags are ignored")
	if rope != nil {
		o.Rope = rope(fs)
	}
	return fs, &o
}

// WithoutResume is a cmd/train command line without -resume and -force (in any of their flag
// forms), which say what to do with the folder's checkpoint: what is left trains the model, the
// same for a resumed or replacing run as for an uninterrupted one. train.json records the
// command so, and the benchmark compares commands so.
func WithoutResume(args []string) []string {
	var out []string
	for _, a := range args {
		if f := strings.TrimLeft(a, "-"); strings.HasPrefix(a, "-") && (isFlag(f, "resume") || isFlag(f, "force")) {
			continue
		}
		out = append(out, a)
	}
	return out
}

// isFlag reports whether f (an argument without its dashes) is the boolean flag name.
func isFlag(f, name string) bool { return f == name || strings.HasPrefix(f, name+"=") }
