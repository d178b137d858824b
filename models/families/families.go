// Package families holds, as data, how published model families name and lay out our
// tensors: for each of our canonical tensors (models' names.go), its name in a Hugging Face
// checkpoint and in a GGUF file, its shape, and how its layout differs from ours. One table per
// family serves every format that carries it (models/hf reads Hugging Face directories,
// models/gguf reads and writes GGUF files), so a family is mapped once.
//
// Names follow transformers' modeling files (modeling_llama.py, modeling_gpt2.py,
// modeling_bert.py) and llama.cpp's gguf-py TENSOR_NAMES:
//
//	Llama  HF model.embed_tokens, model.layers.N.{input_layernorm, self_attn.{q,k,v,o}_proj,
//	       post_attention_layernorm, mlp.{gate,up,down}_proj}, model.norm, lm_head;
//	       GGUF token_embd, blk.N.{attn_norm, attn_q, attn_k, attn_v, attn_output, ffn_norm,
//	       ffn_gate, ffn_up, ffn_down}, output_norm, output.
//	GPT-2  HF [transformer.]wte, wpe, h.N.{ln_1, attn.c_attn, attn.c_proj, ln_2, mlp.c_fc,
//	       mlp.c_proj}, ln_f, lm_head; Conv1D weights are [in, out] and c_attn's columns are
//	       q, then k, then v. GGUF token_embd, position_embd, blk.N.{attn_norm, attn_qkv
//	       (rows q, k, v), attn_output, ffn_norm, ffn_up, ffn_down}, output_norm, output.
//	BERT   HF only: [bert.]embeddings.{word,position,token_type}_embeddings,
//	       embeddings.LayerNorm, [bert.]encoder.layer.N.{attention.self.{query,key,value},
//	       attention.output.{dense, LayerNorm}, intermediate.dense, output.{dense, LayerNorm}},
//	       cls.predictions.{transform.dense, transform.LayerNorm, bias, decoder}.
package families

import (
	"fmt"

	"github.com/posformer/posformer/models"
)

// Family is one published architecture's names for our tensors.
type Family struct {
	Name string // for messages
	// HFLayer and GGUFLayer start the names of block N's tensors ("model.layers.%d.").
	HFLayer, GGUFLayer string
	Global             []Tensor // tensors outside the blocks
	Layer              []Tensor // tensors of every block
}

// Tensor is one row of a family's table.
type Tensor struct {
	Ours string // our name (models.TokEmbeddings, or within a block models.AttnQWeight, ...)
	// HF is the Hugging Face name, after the checkpoint's prefix of the base model
	// ("transformer.", "bert.") and, for a block's tensor, HFLayer.
	HF string
	// HFHead marks a tensor outside the base model, never prefixed (lm_head, cls.*).
	HFHead bool
	// HFAliases are older Hugging Face names (TensorFlow-era gamma and beta).
	HFAliases []string
	// GGUF is the name in a GGUF file, after GGUFLayer for a block's tensor ("" when the
	// family has no GGUF form).
	GGUF  string
	Shape []Dim // our shape
	// When, if not nil, says whether a configuration has the tensor (biases, an untied head).
	When func(c models.Config) bool
	// Conv1D: Hugging Face stores the matrix [in, out] (GPT-2's Conv1D).
	Conv1D bool
	// Parts > 1: the stored tensor fuses Parts tensors along their output axis (GPT-2's
	// c_attn and attn_qkv hold q, k and v) and ours is part number Part.
	Part, Parts int
	// Rotary marks the query and key projections of a RoPE family, whose rows llama.cpp's
	// convert permutes within each head (see models/gguf's export).
	Rotary bool
}

// Dim is one size of a tensor, as a configuration implies it.
type Dim func(c models.Config) int

// The sizes tensors are made of.
var (
	Vocab      Dim = func(c models.Config) int { return c.VocabSize }
	Model      Dim = func(c models.Config) int { return c.Dim }
	Hidden     Dim = func(c models.Config) int { return c.HiddenDim }
	QDim       Dim = func(c models.Config) int { return c.NumHeads * headDim(c) }
	KVDim      Dim = func(c models.Config) int { return c.NumKVHeads * headDim(c) }
	TokenTypes Dim = func(c models.Config) int { return c.TokenTypes }
	Positions  Dim = MaxPositions
)

func headDim(c models.Config) int { return c.Dim / max(c.NumHeads, 1) }

// MaxPositions is the length of a learned position table (the scheme's max_positions).
func MaxPositions(c models.Config) int {
	switch v := c.Positional["max_positions"].(type) {
	case int:
		return v
	case int64:
		return int(v)
	case float64:
		return int(v)
	}
	return 0
}

// HF maps each of our tensors of a model of configuration c to its source in a Hugging Face
// checkpoint whose base-model tensors start with prefix.
func (f *Family) HF(c models.Config, prefix string) map[string]models.Source {
	return f.table(c, func(t Tensor, layer int) models.Source {
		name := prefix + t.HF
		switch {
		case t.HFHead:
			name = t.HF
		case layer >= 0:
			name = prefix + fmt.Sprintf(f.HFLayer, layer) + t.HF
		}
		aliases := make([]string, len(t.HFAliases))
		for i, a := range t.HFAliases {
			aliases[i] = name[:len(name)-len(t.HF)] + a
		}
		if len(aliases) == 0 {
			aliases = nil
		}
		return models.Source{Name: name, Shape: stored(t, c, t.Conv1D), Transpose: t.Conv1D, Part: t.Part, Parts: t.Parts, Aliases: aliases, Rotary: t.Rotary}
	})
}

// GGUF maps each of our tensors of a model of configuration c to its source in a GGUF file.
func (f *Family) GGUF(c models.Config) map[string]models.Source {
	return f.table(c, func(t Tensor, layer int) models.Source {
		name := t.GGUF
		if layer >= 0 {
			name = fmt.Sprintf(f.GGUFLayer, layer) + t.GGUF
		}
		return models.Source{Name: name, Shape: stored(t, c, false), Part: t.Part, Parts: t.Parts, Rotary: t.Rotary}
	})
}

// table applies source to every tensor c has; layer is -1 outside the blocks.
func (f *Family) table(c models.Config, source func(t Tensor, layer int) models.Source) map[string]models.Source {
	out := map[string]models.Source{}
	for _, t := range f.Global {
		if t.When == nil || t.When(c) {
			out[t.Ours] = source(t, -1)
		}
	}
	for i := range c.NumLayers {
		for _, t := range f.Layer {
			if t.When == nil || t.When(c) {
				out[models.LayerTensor(i, t.Ours)] = source(t, i)
			}
		}
	}
	return out
}

// stored is the shape of the checkpoint tensor that holds t: ours, its output axis times the
// parts fused with it, reversed for a Conv1D matrix.
func stored(t Tensor, c models.Config, transpose bool) []int {
	shape := make([]int, len(t.Shape))
	for i, d := range t.Shape {
		shape[i] = d(c)
	}
	shape[0] *= max(t.Parts, 1)
	if transpose {
		shape[0], shape[1] = shape[1], shape[0]
	}
	return shape
}

func dims(d ...Dim) []Dim { return d }

// Conditions of Tensor.When.
func untied(c models.Config) bool    { return !c.TieEmbeddings }
func qkvBias(c models.Config) bool   { return c.Bias || c.QKVBias }
func otherBias(c models.Config) bool { return c.Bias }
