// Command infer runs a posformer checkpoint: a decoder continues the prompt, an encoder fills masks.
// `posformer infer` is the same command; its body, and its documentation, is the package
// cmd/internal/app/infer.
package main

import (
	"os"

	"github.com/posformer/posformer/cmd/internal/app/infer"

	_ "github.com/posformer/posformer/engine/xla" // the XLA backend (needs cgo)
)

func main() { os.Exit(infer.Main(os.Args[1:])) }
