package positional

// Rotary position embedding, RoPE (Su et al. 2021, "RoFormer: Enhanced Transformer with
// Rotary Position Embedding"):
//
//	θ_i = base^(-2i/r)                 i in [0, r/2), r = rotary dims = head_dim·rotary_fraction
//	[q'_a, q'_b] = [q_a cos(mθ_i) - q_b sin(mθ_i),  q_a sin(mθ_i) + q_b cos(mθ_i)]   at position m
//
// and the same for keys at position n, so that q'_m · k'_n depends on m and n only through m-n.
// Which two dimensions (a, b) form pair i is a layout choice that checkpoints disagree on:
//
//	interleaved  a = 2i,  b = 2i+1      llama2.c, GPT-J, Meta's original Llama
//	half         a = i,   b = i + r/2   Hugging Face Llama, GPT-NeoX
//
// Dimensions past r (partial rotary, as in GPT-NeoX / Phi) pass through unchanged.
// Written as x' = x·cos + (x·P)·sin with P a fixed signed permutation, so the graph needs no
// slicing (whose gradient the pure-Go backend lacks).

import (
	"fmt"
	"math"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/ml/context"
)

func init() {
	Register("rope", func(opts *Options, arch Arch) (Scheme, error) {
		r := &RoPE{
			Base:           opts.Float("base", 10000),
			Layout:         opts.String("layout", "half", "half", "interleaved"),
			RotaryFraction: opts.Float("rotary_fraction", 1),
			HeadDim:        arch.HeadDim,
		}
		if r.Base <= 1 {
			return nil, fmt.Errorf("base must be > 1, got %g", r.Base)
		}
		if r.RotaryFraction <= 0 || r.RotaryFraction > 1 {
			return nil, fmt.Errorf("rotary_fraction must be in (0, 1], got %g", r.RotaryFraction)
		}
		if r.RotaryDims() < 2 {
			return nil, fmt.Errorf("rotary_fraction %g of head dim %d leaves no pair to rotate", r.RotaryFraction, r.HeadDim)
		}
		return r, nil
	})
}

// RoPE rotates query and key pairs by angles proportional to their positions.
type RoPE struct {
	Base           float64
	Layout         string // "half" or "interleaved"
	RotaryFraction float64
	HeadDim        int
}

// Name implements Scheme.
func (*RoPE) Name() string { return "rope" }

// RotaryDims is r: the number of rotated dimensions of a head (even).
func (r *RoPE) RotaryDims() int {
	return int(math.Round(float64(r.HeadDim)*r.RotaryFraction)) / 2 * 2
}

// InvFreq returns θ_i for the r/2 pairs.
func (r *RoPE) InvFreq() []float64 { return Frequencies(r.RotaryDims(), r.Base) }

// AttentionFactor scales the logits; 1 for plain RoPE (context-extension methods change it).
func (r *RoPE) AttentionFactor() float64 { return 1 }

// Pair returns the dimensions (a, b) rotated together by pair i.
func (r *RoPE) Pair(i int) (a, b int) {
	if r.Layout == "interleaved" {
		return 2 * i, 2*i + 1
	}
	return i, i + r.RotaryDims()/2
}

// QueryKey implements the QueryKey hook.
func (r *RoPE) QueryKey(ctx *context.Context, layer int, q, k, qPos, kPos *Node) (*Node, *Node) {
	return r.Rotate(q, qPos), r.Rotate(k, kPos)
}

// Rotate applies the rotation to x [batch, heads, seq, headDim] at positions pos [batch, seq].
func (r *RoPE) Rotate(x, pos *Node) *Node {
	g := x.Graph()
	hd := r.HeadDim
	// Per-dimension frequency (0 for pass-through dims, so cos = 1 and sin = 0 there) and the
	// signed permutation P with (x·P)_a = -x_b, (x·P)_b = x_a.
	freq := make([]float32, hd)
	perm := make([]float32, hd*hd)
	for i, f := range r.InvFreq() {
		a, b := r.Pair(i)
		freq[a], freq[b] = float32(f), float32(f)
		perm[b*hd+a] = -1
		perm[a*hd+b] = 1
	}
	angles := Mul(ExpandAxes(ConvertDType(pos, dtypes.Float32), 1, -1), Reshape(Const(g, freq), 1, 1, 1, hd)) // [b, 1, s, hd]
	cos := ConvertDType(Cos(angles), x.DType())
	sin := ConvertDType(Sin(angles), x.DType())
	p := ConvertDType(Reshape(Const(g, perm), hd, hd), x.DType())
	swapped := DotGeneral(x, []int{3}, nil, p, []int{0}, nil)
	return Add(Mul(x, cos), Mul(swapped, sin))
}
