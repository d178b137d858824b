// Command pe shows what a positional scheme does, as JSON, CSV or a PNG figure.
// `posformer pe` is the same command; its body, and its documentation, is the package
// cmd/internal/app/pe.
package main

import (
	"os"

	"github.com/posformer/posformer/cmd/internal/app/pe"

	_ "github.com/posformer/posformer/engine/xla" // the XLA backend (needs cgo)
)

func main() { os.Exit(pe.Main(os.Args[1:])) }
