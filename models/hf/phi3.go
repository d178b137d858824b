package hf

// Phi-3 (transformers' modeling_phi3.py) is a Llama with q, k and v fused in one qkv_proj and
// gate and up in one gate_up_proj (gate first, as Phi3MLP's chunk(2) reads them), and the
// LongRoPE scaling of its long-context checkpoints, written in config.json as
//
//	"max_position_embeddings": 131072, "original_max_position_embeddings": 4096,
//	"rope_scaling": {"type": "longrope", "short_factor": [...], "long_factor": [...]}
//
// with the original context at the top level and no factor: s = max_position_embeddings /
// original_max_position_embeddings, and the attention factor √(1 + ln s / ln L) unless the
// block gives attention_factor (transformers' _compute_longrope_parameters, llama.cpp's
// convert_hf_to_gguf.py Phi3MiniModel). longRoPEBlock fills those in for any family that reads
// a rope_scaling block.

import (
	"fmt"
	"maps"

	m "github.com/posformer/posformer/models"
	"github.com/posformer/posformer/models/families"
)

// longRoPEBlock is block with a longrope (or its older name, su) scaling completed as
// transformers completes it: rope_type longrope; when config.json has a top-level
// original_max_position_embeddings (Phi-3), that is L and s = max_position_embeddings / L,
// whatever the block says; otherwise L is the block's (else max_position_embeddings) and s the
// block's factor (else max_position_embeddings / L). Other blocks are returned as they are.
func longRoPEBlock(r *rawConfig, block map[string]any, maxPos int) map[string]any {
	typ, _ := block["rope_type"].(string)
	if typ == "" {
		typ, _ = block["type"].(string)
	}
	if typ != "longrope" && typ != "su" {
		return block
	}
	out := maps.Clone(block)
	delete(out, "type")
	out["rope_type"] = "longrope"
	if r.has("original_max_position_embeddings") {
		orig := r.Int("original_max_position_embeddings", 0)
		out["original_max_position_embeddings"] = float64(orig)
		if orig > 0 {
			out["factor"] = max(float64(maxPos)/float64(orig), 1)
		}
		return out
	}
	orig, ok := out["original_max_position_embeddings"].(float64)
	if !ok {
		orig = float64(maxPos)
		out["original_max_position_embeddings"] = orig
	}
	if _, ok := out["factor"]; !ok && orig > 0 {
		out["factor"] = max(float64(maxPos)/orig, 1)
	}
	return out
}

// phi3Tensors is Phi-3's layout: the Llama names but for the fused projections. Fused tensors
// are split in equal parts, so q, k and v must be the same size (n_kv_heads = n_heads, as in
// Phi-3-mini and Phi-3.5-mini).
var phi3Tensors = &families.Family{
	Name:    "Phi-3",
	HFLayer: "model.layers.%d.",
	Global: []families.Tensor{
		{Ours: m.TokEmbeddings, HF: "model.embed_tokens.weight", Shape: []families.Dim{families.Vocab, families.Model}},
		{Ours: m.NormWeight, HF: "model.norm.weight", Shape: []families.Dim{families.Model}},
		{Ours: m.OutputWeight, HF: "lm_head.weight", HFHead: true, Shape: []families.Dim{families.Vocab, families.Model},
			When: func(c m.Config) bool { return !c.TieEmbeddings }},
	},
	Layer: []families.Tensor{
		{Ours: m.AttnNormWeight, HF: "input_layernorm.weight", Shape: []families.Dim{families.Model}},
		{Ours: m.FFNNormWeight, HF: "post_attention_layernorm.weight", Shape: []families.Dim{families.Model}},
		{Ours: m.AttnQWeight, HF: "self_attn.qkv_proj.weight", Shape: []families.Dim{families.QDim, families.Model}, Part: 0, Parts: 3},
		{Ours: m.AttnKWeight, HF: "self_attn.qkv_proj.weight", Shape: []families.Dim{families.KVDim, families.Model}, Part: 1, Parts: 3},
		{Ours: m.AttnVWeight, HF: "self_attn.qkv_proj.weight", Shape: []families.Dim{families.KVDim, families.Model}, Part: 2, Parts: 3},
		{Ours: m.AttnOutWeight, HF: "self_attn.o_proj.weight", Shape: []families.Dim{families.Model, families.QDim}},
		{Ours: m.FFNGateWeight, HF: "mlp.gate_up_proj.weight", Shape: []families.Dim{families.Hidden, families.Model}, Part: 0, Parts: 2},
		{Ours: m.FFNUpWeight, HF: "mlp.gate_up_proj.weight", Shape: []families.Dim{families.Hidden, families.Model}, Part: 1, Parts: 2},
		{Ours: m.FFNDownWeight, HF: "mlp.down_proj.weight", Shape: []families.Dim{families.Model, families.Hidden}},
	},
}

var phi3 = &family{
	name:    "Phi3ForCausalLM",
	types:   []string{"phi3"},
	archs:   []string{"Phi3ForCausalLM"},
	tensors: phi3Tensors,
	config: func(r *rawConfig) (m.Config, error) {
		// The Llama translation reads every field the two share (sizes, norm, rope_theta,
		// rope_scaling through longRoPEBlock); Phi-3 adds partial rotary and a sliding window.
		c, err := llama.config(r)
		if err != nil {
			return c, err
		}
		if c.NumKVHeads != c.NumHeads {
			r.Errorf("num_key_value_heads %d differs from num_attention_heads %d: posformer splits qkv_proj in equal parts", c.NumKVHeads, c.NumHeads)
		}
		if f := r.Float("partial_rotary_factor", 1); f != 1 {
			c.Positional["rotary_fraction"] = f
		}
		// As for Mistral: attention past the window differs, so the window is the default
		// context.
		if w := r.Int("sliding_window", 0); w > 0 && w < c.MaxSeqLen {
			c.MaxSeqLen = w
		}
		return c, nil
	},
	prefix: func(*checkpoint) string { return "" },
	unused: func(c m.Config, name string) bool { return c.TieEmbeddings && name == "lm_head.weight" },
	export: func(m.Config) (map[string]any, error) {
		return nil, fmt.Errorf("Phi-3 checkpoints are read, not written: a RoPE model exports as Llama")
	},
}
