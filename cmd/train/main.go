// Command train trains a toy decoder or encoder, byte level, on the Go standard library's
// source (the text every Go user has), for one named positional scheme. It shows a progress bar,
// saves a checkpoint (config.json + model.safetensors, plus train_state.safetensors for the
// optimizer) every -save-every steps and at the end, and resumes from one with -resume. A folder
// that holds a checkpoint is refused without -resume (continue it) or -force (replace it).
//
//	go run ./cmd/train -scheme rope -o weights/rope-decoder
//	go run ./cmd/train -kind encoder -scheme sinusoidal -o weights/sinusoidal-encoder
//
// The training itself is package engine/train; this command reads its flags (train.ParseArgs)
// and draws its progress bar.
package main

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

func main() {
	o, err := train.ParseArgs(os.Args[1:], ropeFlags)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "usage: train -o DIR [-kind decoder|encoder] [-scheme NAME] [-pe key=value ...] [flags]")
		train.PrintDefaults(os.Stderr, ropeFlags)
		return
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "train: %v\n", err)
		if errors.Is(err, train.ErrArgument) {
			os.Exit(1) // a stray argument has always been a run error (exit 1), a bad flag a usage error (2)
		}
		os.Exit(2)
	}
	o.Log = os.Stderr
	o.Bar = func(what string, total int) train.Bar { return progress.New(os.Stderr, what, total) }
	if _, err := train.Run(context.Background(), o); err != nil {
		fmt.Fprintln(os.Stderr, "train:", err)
		os.Exit(1)
	}
}

// ropeFlags are the --rope-* flags that cmd/infer, cmd/bench and cmd/pe share: with -init they
// turn a RoPE checkpoint into a context-extension fine-tune.
func ropeFlags(fs *flag.FlagSet) func(pe map[string]any) error { return ropeflags.Register(fs).Apply }
