// Command export writes any model posformer loads as a GGUF file or a Hugging Face directory.
// `posformer export` is the same command; its body, and its documentation, is the package
// cmd/internal/app/export.
package main

import (
	"os"

	"github.com/posformer/posformer/cmd/internal/app/export"

	_ "github.com/posformer/posformer/engine/xla" // the XLA backend (needs cgo)
)

func main() { os.Exit(export.Main(os.Args[1:])) }
