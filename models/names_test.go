package models

import (
	"slices"
	"testing"

	"github.com/gomlx/gomlx/backends/simplego"
)

// TestCanonicalNames checks names.go against the graph: every tensor a model creates is one of
// the canonical names (LayerTensor of a block's name within its block), and every canonical
// name is created by some configuration.
func TestCanonicalNames(t *testing.T) {
	backend, err := simplego.New("ops_sequential")
	if err != nil {
		t.Fatal(err)
	}
	global := []string{TokEmbeddings, PositionTable, TokenTypes, EmbedNormWeight, EmbedNormBias, NormWeight, NormBias,
		HeadDenseWeight, HeadDenseBias, HeadNormWeight, HeadNormBias, OutputWeight, OutputBias}
	block := []string{AttnNormWeight, AttnNormBias, AttnQWeight, AttnQBias, AttnKWeight, AttnKBias, AttnVWeight, AttnVBias,
		AttnOutWeight, AttnOutBias, FFNNormWeight, FFNNormBias, FFNGateWeight, FFNGateBias, FFNDownWeight, FFNDownBias,
		FFNUpWeight, FFNUpBias}
	const layers = 2
	canonical := map[string]bool{}
	for _, n := range global {
		canonical[n] = true
	}
	for i := range layers {
		for _, n := range block {
			canonical[LayerTensor(i, n)] = true
		}
	}
	if LayerTensor(1, AttnQWeight) != "layer_1.attn.wq.weight" {
		t.Errorf("LayerTensor(1, AttnQWeight) = %q, want layer_1.attn.wq.weight", LayerTensor(1, AttnQWeight))
	}
	learned := map[string]any{"name": "learned", "max_positions": 8}
	configs := []Config{
		// Llama: RMSNorm, SwiGLU, biases on every projection, an untied head.
		{Kind: Decoder, VocabSize: 16, Dim: 8, NumLayers: layers, NumHeads: 2, NumKVHeads: 1, HiddenDim: 12, MaxSeqLen: 8,
			FFN: "swiglu", Norm: "rmsnorm", Bias: true, Positional: map[string]any{"name": "rope"}},
		// GPT-2: LayerNorm, GELU, biases, a learned table.
		{Kind: Decoder, VocabSize: 16, Dim: 8, NumLayers: layers, NumHeads: 2, HiddenDim: 12, MaxSeqLen: 8,
			FFN: "gelu_tanh", Norm: "layernorm", Bias: true, TieEmbeddings: true, Positional: learned},
		// BERT: post-norm, token types, embedding norm, head transform and bias.
		{Kind: Encoder, VocabSize: 16, Dim: 8, NumLayers: layers, NumHeads: 2, HiddenDim: 12, MaxSeqLen: 8,
			FFN: "gelu", Norm: "layernorm", NormPosition: "post", Bias: true, TokenTypes: 2, EmbedNorm: true,
			HeadTransform: true, HeadBias: true, Positional: learned},
	}
	made := map[string]bool{}
	for _, cfg := range configs {
		m, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		params, err := m.Params(backend)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range params {
			if !canonical[p.Name] {
				t.Errorf("%s model: tensor %s is not a canonical name of names.go", cfg.Kind, p.Name)
			}
			made[p.Name] = true
		}
	}
	for _, n := range slices.Sorted(func(yield func(string) bool) {
		for n := range canonical {
			if !yield(n) {
				return
			}
		}
	}) {
		if !made[n] {
			t.Errorf("canonical name %s is made by none of the test's configurations", n)
		}
	}
}
