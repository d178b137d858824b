// Command infer runs a posformer checkpoint: a decoder continues the prompt, an encoder fills masks.
// `posformer infer` is the same command; its body, and its documentation, is the package
// cmd/internal/app/infer.
package main

import (
	"os"

	"github.com/posformer/posformer/cmd/internal/app/infer"
)

func main() { os.Exit(infer.Main(os.Args[1:])) }
