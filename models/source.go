package models

import (
	"fmt"
	"slices"
)

// Source is where one of our tensors comes from in a checkpoint of another format: the
// checkpoint's name for it, its shape there, and how its layout differs from ours. Every
// format's mapping (models/families for Hugging Face and GGUF, llama2c's file order) is a
// map from our canonical names (names.go) to Sources, checked against the file before any
// data is read.
type Source struct {
	Name  string // tensor name in the checkpoint
	Shape []int  // its shape there, outermost first, as the configuration implies
	// Transpose marks a matrix stored [in, out] where ours is [out, in] (GPT-2's Conv1D).
	Transpose bool
	// Parts > 1: the stored tensor fuses Parts tensors along their output axis (GPT-2's
	// c_attn and attn_qkv hold q, k and v) and ours is part number Part.
	Part, Parts int
	// Aliases are older names of the same tensor (BERT's LayerNorm gamma and beta).
	Aliases []string
	// Rotary marks a query or key projection, whose rows RoPE rotates in pairs: a writer
	// whose format pairs them differently permutes them (gguf.PermuteHalfToInterleaved).
	Rotary bool
}

// OurShape is the shape of our tensor that s feeds.
func (s Source) OurShape() []int {
	parts := max(s.Parts, 1)
	if s.Transpose {
		return []int{s.Shape[1] / parts, s.Shape[0]}
	}
	out := slices.Clone(s.Shape)
	out[0] /= parts
	return out
}

// MatchParams checks that table maps exactly the tensors of params, each to a source of its
// shape: a drift between a format's mapping and the layers' scopes shows here, at load time,
// not as a variable initialized at random. format names the mapping for the message.
func MatchParams(format string, params []Param, table map[string]Source) error {
	for _, p := range params {
		src, ok := table[p.Name]
		if !ok {
			return fmt.Errorf("internal: %s has no tensor for our %s %v", format, p.Name, p.Shape)
		}
		if !slices.Equal(src.OurShape(), p.Shape) {
			return fmt.Errorf("internal: %s maps our %s %v to %s %v of the wrong size", format, p.Name, p.Shape, src.Name, src.Shape)
		}
	}
	if len(params) != len(table) {
		return fmt.Errorf("internal: the model has %d parameters but the %s mapping %d", len(params), format, len(table))
	}
	return nil
}
