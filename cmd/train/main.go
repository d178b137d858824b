// Command train trains a toy byte-level decoder or encoder on Go source or on your own text.
// `posformer train` is the same command; its body, and its documentation, is the package
// cmd/internal/app/train.
package main

import (
	"os"

	"github.com/posformer/posformer/cmd/internal/app/train"

	_ "github.com/posformer/posformer/engine/xla" // the XLA backend (needs cgo)
)

func main() { os.Exit(train.Main(os.Args[1:])) }
