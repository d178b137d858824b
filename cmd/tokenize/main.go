// Command tokenize turns text into token ids and back, like llama.cpp's llama-tokenize.
// `posformer tokenize` is the same command; its body, and its documentation, is the package
// cmd/internal/app/tokenize.
package main

import (
	"os"

	"github.com/posformer/posformer/cmd/internal/app/tokenize"

	_ "github.com/posformer/posformer/engine/xla" // the XLA backend (needs cgo)
)

func main() { os.Exit(tokenize.Main(os.Args[1:])) }
