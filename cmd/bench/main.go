// Command bench is the extrapolation benchmark (and, with -speed, the speed benchmark);
// `posformer bench` is the same command. Its body, and its documentation, is the package
// cmd/internal/app/bench.
//
//	go run ./cmd/bench --quick          # score the shipped checkpoints on fewer lengths, < 60 s
//	go run ./cmd/bench --full -plan     # the whole grid and its estimated wall time
package main

import (
	"os"

	"github.com/posformer/posformer/cmd/internal/app/bench"

	_ "github.com/posformer/posformer/engine/xla" // the XLA backend (needs cgo)
)

func main() { os.Exit(bench.Main(os.Args[1:])) }
