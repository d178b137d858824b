package families

import (
	"slices"
	"testing"

	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/posformer/posformer/models"
)

// TestTablesMatchTheModel checks every family's tables against the parameters the model's
// graph creates, for each format that carries the family, and that the Hugging Face and GGUF
// forms of a tensor feed the same tensor of ours.
func TestTablesMatchTheModel(t *testing.T) {
	backend, err := simplego.New("ops_sequential")
	if err != nil {
		t.Fatal(err)
	}
	learned := map[string]any{"name": "learned", "max_positions": 8.0}
	llama := models.Config{Kind: models.Decoder, VocabSize: 16, Dim: 8, NumLayers: 2, NumHeads: 2, NumKVHeads: 1, HiddenDim: 12,
		MaxSeqLen: 8, FFN: "swiglu", Norm: "rmsnorm", Positional: map[string]any{"name": "rope"}}
	qwen, biased, tied := llama, llama, llama
	qwen.QKVBias, biased.Bias, tied.TieEmbeddings = true, true, true
	gpt2 := models.Config{Kind: models.Decoder, VocabSize: 16, Dim: 8, NumLayers: 2, NumHeads: 2, HiddenDim: 12, MaxSeqLen: 8,
		FFN: "gelu_tanh", Norm: "layernorm", Bias: true, TieEmbeddings: true, Positional: learned}
	gpt2Untied := gpt2
	gpt2Untied.TieEmbeddings = false
	bert := models.Config{Kind: models.Encoder, VocabSize: 16, Dim: 8, NumLayers: 2, NumHeads: 2, HiddenDim: 12, MaxSeqLen: 8,
		FFN: "gelu", Norm: "layernorm", NormPosition: "post", Bias: true, TokenTypes: 2, EmbedNorm: true,
		HeadTransform: true, HeadBias: true, TieEmbeddings: true, Positional: learned}
	for _, c := range []struct {
		fam  *Family
		cfg  models.Config
		gguf bool
	}{
		{Llama, llama, true}, {Llama, qwen, true}, {Llama, biased, true}, {Llama, tied, true},
		{GPT2, gpt2, true}, {GPT2, gpt2Untied, true}, {BERT, bert, false},
	} {
		m, err := models.New(c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		params, err := m.Params(backend)
		if err != nil {
			t.Fatal(err)
		}
		hf := c.fam.HF(c.cfg, "")
		if err := models.MatchParams(c.fam.Name+" (Hugging Face)", params, hf); err != nil {
			t.Error(err)
		}
		if !c.gguf {
			continue
		}
		gguf := c.fam.GGUF(c.cfg)
		if err := models.MatchParams(c.fam.Name+" (GGUF)", params, gguf); err != nil {
			t.Error(err)
		}
		for name, src := range gguf {
			if !slices.Equal(src.OurShape(), hf[name].OurShape()) {
				t.Errorf("%s %s: GGUF %s %v and Hugging Face %s %v feed different shapes", c.fam.Name, name, src.Name, src.Shape, hf[name].Name, hf[name].Shape)
			}
		}
	}
}

// TestGPT2Layouts pins GPT-2's two stored forms of the fused q, k, v: Hugging Face's Conv1D
// [in, 3·out] with our part in columns, GGUF's [3·out, in] with our part in rows.
func TestGPT2Layouts(t *testing.T) {
	c := models.Config{VocabSize: 16, Dim: 8, NumLayers: 1, NumHeads: 2, HiddenDim: 12, Bias: true,
		Positional: map[string]any{"max_positions": 5}}
	hf := GPT2.HF(c, "transformer.")
	k := hf[models.LayerTensor(0, models.AttnKWeight)]
	if k.Name != "transformer.h.0.attn.c_attn.weight" || !slices.Equal(k.Shape, []int{8, 24}) || !k.Transpose || k.Part != 1 || k.Parts != 3 {
		t.Errorf("Hugging Face k: %+v", k)
	}
	if head := hf[models.OutputWeight]; head.Name != "lm_head.weight" {
		t.Errorf("Hugging Face head named %q, want lm_head.weight (outside the base model's prefix)", head.Name)
	}
	if pos := hf[models.PositionTable]; !slices.Equal(pos.Shape, []int{5, 8}) {
		t.Errorf("position table %v, want [5 8]", pos.Shape)
	}
	g := GPT2.GGUF(c)[models.LayerTensor(0, models.AttnKWeight)]
	if g.Name != "blk.0.attn_qkv.weight" || !slices.Equal(g.Shape, []int{24, 8}) || g.Transpose || g.Part != 1 {
		t.Errorf("GGUF k: %+v", g)
	}
	up := GPT2.HF(c, "")[models.LayerTensor(0, models.FFNGateWeight)]
	if up.Name != "h.0.mlp.c_fc.weight" || !slices.Equal(up.Shape, []int{8, 12}) || !slices.Equal(up.OurShape(), []int{12, 8}) {
		t.Errorf("Hugging Face c_fc: %+v (ours %v)", up, up.OurShape())
	}
}

// TestBERTAliases checks that aliases keep the checkpoint's prefix.
func TestBERTAliases(t *testing.T) {
	c := models.Config{VocabSize: 16, Dim: 8, NumLayers: 1, NumHeads: 2, HiddenDim: 12, TokenTypes: 2,
		Positional: map[string]any{"max_positions": 5}}
	hf := BERT.HF(c, "bert.")
	n := hf[models.LayerTensor(0, models.FFNNormBias)]
	if n.Name != "bert.encoder.layer.0.output.LayerNorm.bias" || !slices.Equal(n.Aliases, []string{"bert.encoder.layer.0.output.LayerNorm.beta"}) {
		t.Errorf("ffn norm bias: %+v", n)
	}
	if b := hf[models.OutputBias]; b.Name != "cls.predictions.bias" || !slices.Equal(b.Aliases, []string{"cls.predictions.decoder.bias"}) {
		t.Errorf("output bias: %+v", b)
	}
}

// TestRotaryRows checks that exactly Llama's query and key matrices are marked for llama.cpp's
// per-head row permutation, in both formats.
func TestRotaryRows(t *testing.T) {
	c := models.Config{VocabSize: 16, Dim: 8, NumLayers: 2, NumHeads: 2, NumKVHeads: 1, HiddenDim: 12, QKVBias: true}
	for format, table := range map[string]map[string]models.Source{"GGUF": Llama.GGUF(c), "Hugging Face": Llama.HF(c, "")} {
		var rotary []string
		for name, src := range table {
			if src.Rotary {
				rotary = append(rotary, name)
			}
		}
		slices.Sort(rotary)
		want := []string{"layer_0.attn.wk.weight", "layer_0.attn.wq.weight", "layer_1.attn.wk.weight", "layer_1.attn.wq.weight"}
		if !slices.Equal(rotary, want) {
			t.Errorf("%s: rotary tensors %v, want %v", format, rotary, want)
		}
	}
	for name, src := range GPT2.GGUF(c) {
		if src.Rotary {
			t.Errorf("GPT-2's %s is marked rotary; GPT-2 has no RoPE", name)
		}
	}
}
