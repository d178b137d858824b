package positional

import (
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
)

// Shifter is implemented by QueryKey schemes whose cached keys can be moved to other positions
// after they were written, as a context shift (StreamingLLM, llama.cpp's --context-shift) moves
// the entries it keeps to their new slots. A QueryKey scheme without it cannot shift: its keys
// carry their old positions for good. Schemes whose positions enter only at read time (Bias,
// Relative, Scores, Contextual, NoPE) need nothing: the cache's positions are simply rewritten.
type Shifter interface {
	Scheme
	// ShiftKeys returns keys k [batch, kvHeads, seq, headDim], written by QueryKey at positions
	// from [batch, seq], as QueryKey would have written them at positions to. It reads no
	// variables: it depends on positions alone.
	ShiftKeys(layer int, k, from, to *Node) *Node
}

// ShiftKeys implements Shifter. A rotation by angle a·θ followed by one by b·θ is a rotation by
// (a+b)·θ, so a key rotated at position from is rotated by (to - from) more: the K-shift of
// llama.cpp. The attention factor of a scaling was applied once when the key was written, and
// is not applied again.
func (r *RoPE) ShiftKeys(_ int, k, from, to *Node) *Node {
	delta := Sub(to, from)
	cos, sin := r.anglesCosSin(delta, k.DType(), r.InvFreq())
	return r.RotateWith(k, cos, sin)
}

// anglesCosSin is cos(pos·θ) and sin(pos·θ) per head dimension, [batch, 1, seq, headDim], with
// no attention factor.
func (r *RoPE) anglesCosSin(pos *Node, dtype dtypes.DType, invFreq []float64) (cos, sin *Node) {
	g := pos.Graph()
	hd := r.HeadDim
	angles := Mul(ExpandAxes(ConvertDType(pos, dtypes.Float32), 1, -1), Reshape(Const(g, r.dimFreq(invFreq)), 1, 1, 1, hd))
	return ConvertDType(Cos(angles), dtype), ConvertDType(Sin(angles), dtype)
}

// ShiftKeys implements Shifter. The rotation and the scale ζ^(-n/B) commute and both compose by
// adding positions, so a key written at from is rotated and scaled by (to - from) more.
func (x *XPos) ShiftKeys(layer int, k, from, to *Node) *Node {
	return x.Scale(x.RoPE.ShiftKeys(layer, k, from, to), Sub(to, from), -1)
}
