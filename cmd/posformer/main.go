// Command posformer is every posformer command in one program, as ollama and llama.cpp ship
// theirs:
//
//	go install github.com/posformer/posformer/cmd/posformer@latest
//	posformer run -p "func main() {"       # the built-in decoder, from any directory
//	posformer chat -m model.gguf           # a conversation that keeps its KV cache
//	posformer list                         # the models in $POSFORMER_HOME
//
// Each subcommand is the command of the same name under cmd/ (posformer run is cmd/infer):
// both call one Main in cmd/internal/app, so flags, output and exit statuses are the same
// either way (the table is cmd/internal/app/posformer, where its tests are). Programs, not
// libraries, import engine/xla, the XLA backend, which needs cgo.
package main

import (
	"os"

	"github.com/posformer/posformer/cmd/internal/app/posformer"

	_ "github.com/posformer/posformer/engine/xla" // the XLA backend (needs cgo)
)

func main() { os.Exit(posformer.Main(os.Args[1:], os.Stdout, os.Stderr)) }
