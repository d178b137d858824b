// Command tokenize turns text into token ids and back, like llama.cpp's llama-tokenize.
// `posformer tokenize` is the same command; its body, and its documentation, is the package
// cmd/internal/app/tokenize.
package main

import (
	"os"

	"github.com/posformer/posformer/cmd/internal/app/tokenize"
)

func main() { os.Exit(tokenize.Main(os.Args[1:])) }
