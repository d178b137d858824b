// Package weights carries the shipped default decoder (go-rope-7m/, 14 MB: a 6-layer RoPE
// model of 7 M parameters trained on Go source with a 4,096-token BPE vocabulary, stored as
// float16, weights/README.md) inside the programs that import it, so that an installed
// posformer runs with no file beside it. Only that model is embedded: the small byte-level
// models the tests use (rope-decoder, sinusoidal-encoder) and the benchmark's checkpoints
// (weights/bench, 65 MB) stay in the repository.
package weights

import (
	"embed"
	"io/fs"
)

// DefaultName is the embedded model's name: what -m takes when no file or folder of that name
// exists.
const DefaultName = "go-rope-7m"

// The weights are named: a train_state.safetensors left by retraining the model in place (git
// ignores it) must not grow every binary by the optimizer's state. The JSON files go by
// pattern: config.json and tokenizer.json.
//
//go:embed go-rope-7m/*.json go-rope-7m/model.safetensors
var files embed.FS

// Default is the embedded checkpoint folder, a Hugging Face directory: config.json,
// model.safetensors and tokenizer.json.
func Default() fs.FS {
	sub, err := fs.Sub(files, DefaultName)
	if err != nil {
		panic(err) // DefaultName is a constant directory of files: it cannot fail
	}
	return sub
}
