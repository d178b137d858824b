// Command serve runs a posformer model behind an OpenAI-compatible HTTP API, as llama.cpp's
// llama-server does; `posformer serve` is the same command. Its body is the package
// cmd/serve/server.
//
//	go run ./cmd/serve                                   # the shipped decoder on 127.0.0.1:8080
//	go run ./cmd/serve -m weights/sinusoidal-encoder     # embeddings
package main

import (
	"os"

	"github.com/posformer/posformer/cmd/serve/server"

	_ "github.com/posformer/posformer/engine/xla" // the XLA backend (needs cgo)
)

func main() { os.Exit(server.Main(os.Args[1:])) }
