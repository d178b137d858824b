package benchmarks

import (
	"testing"

	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/posformer/posformer/engine"
	"github.com/posformer/posformer/models"
	"github.com/posformer/posformer/positional"
)

// schemeDecoder is a randomly initialized decoder of the shipped model's shape with the
// given scheme, so every scheme is timed on the same network.
func schemeDecoder(b *testing.B, name string) *engine.Engine {
	pe := map[string]any{"name": name}
	if name == "learned" {
		pe["max_positions"] = 512
	}
	m, err := models.New(models.Config{
		Kind: models.Decoder, VocabSize: 260, Dim: 96, NumLayers: 3, NumHeads: 4, NumKVHeads: 2,
		HiddenDim: 256, TieEmbeddings: true, MaxSeqLen: 512, Positional: pe,
	})
	if err != nil {
		b.Fatal(err)
	}
	backend, err := engine.NewBackend("")
	if err != nil {
		b.Fatal(err)
	}
	e, err := engine.New(backend, m, context.New(), 512)
	if err != nil {
		b.Fatal(err)
	}
	return e
}

// BenchmarkSchemes times every registered scheme on the same decoder: a 128-byte prefill and
// one-token decoding at positions 128..255. Compare each with "none" for the scheme's cost.
func BenchmarkSchemes(b *testing.B) {
	for _, name := range positional.Names() {
		b.Run(name+"/prefill128", func(b *testing.B) { benchPrefill(b, schemeDecoder(b, name), 128) })
		b.Run(name+"/decode", func(b *testing.B) { benchDecode(b, schemeDecoder(b, name), 128) })
	}
}
