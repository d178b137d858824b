// Package train is the train command (cmd/train, posformer train). It trains a toy decoder or
// encoder, byte level, on the Go standard library's source (the text every Go user has), or on
// your own text with -data, for one named positional scheme; a decoder also on BPE tokens
// (-bpe N learns the vocabulary, -tokenizer FILE takes one). It shows a progress bar, saves a
// checkpoint (config.json + model.safetensors, plus train_state.safetensors for the optimizer)
// every -save-every steps and at the end, and resumes from one with -resume. A folder that holds a checkpoint is refused
// without -resume (continue it) or -force (replace it).
//
//	go run ./cmd/train -scheme rope -o weights/rope-decoder
//	go run ./cmd/train -kind encoder -scheme sinusoidal -o weights/sinusoidal-encoder
//	go run ./cmd/train -data notes/ -o mymodel
//	go run ./cmd/train -bpe 4096 -seq 256 -o weights/bpe-decoder
//
// The training itself is package engine/train; this command reads its flags (train.ParseArgs)
// and draws its progress bar.
package train

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/posformer/posformer/cmd/internal/progress"
	"github.com/posformer/posformer/cmd/internal/ropeflags"
	"github.com/posformer/posformer/engine/train"
)

// Main runs the command with args (the arguments after its name) and returns its exit
// status: 2 for a bad flag, 1 for a failure.
func Main(args []string) int {
	o, err := train.ParseArgs(args, ropeFlags)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "usage: train -o DIR [-kind decoder|encoder] [-scheme NAME] [-pe key=value ...] [flags]")
		train.PrintDefaults(os.Stderr, ropeFlags)
		return 0
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "train: %v\n", err)
		if errors.Is(err, train.ErrArgument) {
			return 1 // a stray argument has always been a run error (exit 1), a bad flag a usage error (2)
		}
		return 2
	}
	o.Log = os.Stderr
	o.Bar = func(what string, total int) train.Bar { return progress.New(os.Stderr, what, total) }
	if _, err := train.Run(context.Background(), o); err != nil {
		fmt.Fprintln(os.Stderr, "train:", err)
		return 1
	}
	return 0
}

// ropeFlags are the --rope-* flags that cmd/infer, cmd/bench and cmd/pe share: with -init they
// turn a RoPE checkpoint into a context-extension fine-tune.
func ropeFlags(fs *flag.FlagSet) func(pe map[string]any) error { return ropeflags.Register(fs).Apply }
