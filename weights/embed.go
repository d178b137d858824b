// Package weights carries the shipped default decoder (rope-decoder/, 1.3 MB: a 3-layer
// byte-level RoPE model trained on Go source, weights/README.md) inside the programs that
// import it, so that an installed posformer runs with no file beside it. Only that model is
// embedded: the benchmark's checkpoints (weights/bench, 65 MB) stay in the repository.
package weights

import (
	"embed"
	"io/fs"
)

// DefaultName is the embedded model's name: what -m takes when no file or folder of that name
// exists.
const DefaultName = "rope-decoder"

// The weights are named: a train_state.safetensors left by retraining the model in place (git
// ignores it) must not grow every binary by the optimizer's state. The JSON files go by pattern,
// so that a model trained on BPE tokens brings its tokenizer.json.
//
//go:embed rope-decoder/*.json rope-decoder/model.safetensors
var files embed.FS

// Default is the embedded checkpoint folder: config.json, model.safetensors, train.json, and
// tokenizer.json when the model has one.
func Default() fs.FS {
	sub, err := fs.Sub(files, DefaultName)
	if err != nil {
		panic(err) // DefaultName is a constant directory of files: it cannot fail
	}
	return sub
}
