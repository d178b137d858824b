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
//
// p-RoPE (Barbero et al. 2024, "Round and Round We Go! What makes Rotary Positional Encodings
// useful?"), option p in [0, 1]: only the fastest floor(p·r/2) pairs keep rotating; the slower
// ones get θ_i = 0, so they carry content alone (semantic channels no distance can rotate
// away). p = 1 is RoPE, p = 0 is NoPE. Unlike rotary_fraction, which keeps the first
// dimensions whatever their frequency, p removes the lowest frequencies.
// Written as x' = x·cos + (x·P)·sin with P a fixed signed permutation, so the graph needs no
// slicing (see layers/portable.go).

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
		p := opts.Float("p", 1)
		if r.Base <= 1 {
			return nil, fmt.Errorf("base must be > 1, got %g", r.Base)
		}
		if r.RotaryFraction <= 0 || r.RotaryFraction > 1 {
			return nil, fmt.Errorf("rotary_fraction must be in (0, 1], got %g", r.RotaryFraction)
		}
		if r.RotaryDims() < 2 {
			return nil, fmt.Errorf("rotary_fraction %g of head dim %d leaves no pair to rotate", r.RotaryFraction, r.HeadDim)
		}
		if p < 0 || p > 1 {
			return nil, fmt.Errorf("p (the fraction of pairs that keep rotating, p-RoPE) must be in [0, 1], got %g", p)
		}
		r.FrozenPairs = r.RotaryDims()/2 - int(p*float64(r.RotaryDims()/2))
		sc, err := parseScaling(opts.Sub("rope_scaling"), arch.TrainLen, r.RotaryDims()/2)
		if err != nil {
			return nil, err
		}
		r.Scaling = sc
		if err := r.checkFrequencies(); err != nil {
			return nil, err
		}
		se, err := parseSelfExtend(opts.Sub("self_extend"), r)
		if err != nil {
			return nil, err
		}
		if se != nil {
			return se, nil
		}
		if sc != nil && sc.Type == "longrope" {
			return &LongRoPE{RoPE: r}, nil
		}
		if sc != nil && sc.Type == "dynamic" {
			if r.RotaryDims() < 4 {
				return nil, fmt.Errorf("dynamic NTK needs at least 4 rotary dims, got %d", r.RotaryDims())
			}
			return &DynamicNTK{RoPE: r}, nil
		}
		if sc != nil && sc.Type == "ntk" && r.RotaryDims() < 4 {
			return nil, fmt.Errorf("NTK scaling needs at least 4 rotary dims, got %d", r.RotaryDims())
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
	Scaling        *Scaling // context extension (rope_scaling.go); nil for none
	FrozenPairs    int      // p-RoPE: the slowest pairs, this many, get frequency 0 (1-p of them)
}

// Name implements Scheme.
func (*RoPE) Name() string { return "rope" }

// RotaryDims is r: the number of rotated dimensions of a head (even).
func (r *RoPE) RotaryDims() int {
	return int(math.Round(float64(r.HeadDim)*r.RotaryFraction)) / 2 * 2
}

// InvFreq returns θ_i for the r/2 pairs, scaled when a context extension is configured.
func (r *RoPE) InvFreq() []float64 { return r.InvFreqAt(0) }

// InvFreqAt returns the frequencies at sequence length n, which only dynamic NTK and LongRoPE
// depend on; pairs past p-RoPE's fraction get 0.
func (r *RoPE) InvFreqAt(n int) []float64 {
	f := Frequencies(r.RotaryDims(), r.Base)
	if r.Scaling != nil {
		f = r.Scaling.InvFreq(r.RotaryDims(), r.Base, n)
	}
	for i := len(f) - r.FrozenPairs; i < len(f); i++ {
		f[i] = 0
	}
	return f
}

// minFreq is the smallest normal float32: a frequency below it rounds to zero or loses its
// precision where the graph computes angles in float32.
const minFreq = 0x1p-126

// checkFrequencies refuses settings whose frequencies float32 cannot hold (a base or a factor
// of 1e308 gives frequencies of 1e-300, zero in float32) and attention factors that are not
// finite and positive.
func (r *RoPE) checkFrequencies() error {
	lengths := []int{0}
	if r.Scaling != nil && r.Scaling.OrigLen > 0 {
		lengths = append(lengths, r.Scaling.OrigLen, r.Scaling.OrigLen+1, 64*r.Scaling.OrigLen)
	}
	for _, n := range lengths {
		for i, f := range r.InvFreqAt(n) {
			if f == 0 && i >= r.RotaryDims()/2-r.FrozenPairs {
				continue // p-RoPE's removed pairs
			}
			if math.IsNaN(f) || math.IsInf(f, 0) || f < minFreq {
				return fmt.Errorf("base %g%s gives pair %d the frequency %g, which float32 cannot hold: use a smaller base or factor", r.Base, r.Scaling.describe(), i, f)
			}
		}
	}
	if m := r.AttentionFactor(); math.IsNaN(m) || math.IsInf(m, 0) || m <= 0 {
		return fmt.Errorf("rope_scaling gives the attention factor %g; it must be finite and > 0", m)
	}
	return nil
}

// AttentionFactor multiplies cos and sin (so the logits by its square): 1 for plain RoPE,
// 0.1·ln(s) + 1 for YaRN.
func (r *RoPE) AttentionFactor() float64 {
	if r.Scaling == nil {
		return 1
	}
	return r.Scaling.AttentionFactor()
}

// Pair returns the dimensions (a, b) rotated together by pair i.
func (r *RoPE) Pair(i int) (a, b int) {
	if r.Layout == "interleaved" {
		return 2 * i, 2*i + 1
	}
	return i, i + r.RotaryDims()/2
}

// QueryKey implements the QueryKey hook. Queries and keys at the same positions (every
// self-attention chunk) share one cos/sin table.
func (r *RoPE) QueryKey(ctx *context.Context, layer int, q, k, qPos, kPos *Node) (*Node, *Node) {
	qc, qs := r.CosSin(qPos, q.DType())
	kc, ks := qc, qs
	if kPos != qPos {
		kc, ks = r.CosSin(kPos, k.DType())
	}
	return r.RotateWith(q, qc, qs), r.RotateWith(k, kc, ks)
}

// Rotate applies the rotation to x [batch, heads, seq, headDim] at positions pos [batch, seq].
func (r *RoPE) Rotate(x, pos *Node) *Node {
	cos, sin := r.CosSin(pos, x.DType())
	return r.RotateWith(x, cos, sin)
}

// CosSin returns cos(pos·θ) and sin(pos·θ) per head dimension, [batch, 1, seq, headDim] for
// positions pos [batch, seq] (θ = 0 on pass-through dims, so cos = 1 and sin = 0 there), times
// the attention factor of a scaling that has one.
func (r *RoPE) CosSin(pos *Node, dtype dtypes.DType) (cos, sin *Node) {
	return r.cosSinOf(pos, dtype, r.InvFreq())
}

// cosSinOf is CosSin with the pairs' frequencies given.
func (r *RoPE) cosSinOf(pos *Node, dtype dtypes.DType, invFreq []float64) (cos, sin *Node) {
	g := pos.Graph()
	hd := r.HeadDim
	cos, sin = r.anglesCosSin(pos, dtype, invFreq)
	if m := r.AttentionFactor(); m != 1 {
		// Only rotated dims carry the factor; pass-through dims stay as they are, as in HF.
		scale := make([]float32, hd)
		for i := range scale {
			scale[i] = 1
		}
		for i := range r.RotaryDims() / 2 {
			a, b := r.Pair(i)
			scale[a], scale[b] = float32(m), float32(m)
		}
		s := ConvertDType(Reshape(Const(g, scale), 1, 1, 1, hd), dtype)
		cos, sin = Mul(cos, s), Mul(sin, s)
	}
	return cos, sin
}

// dimFreq is the frequency of each head dimension (both dims of a pair share one).
func (r *RoPE) dimFreq(invFreq []float64) []float32 {
	freq := make([]float32, r.HeadDim)
	for i, f := range invFreq {
		a, b := r.Pair(i)
		freq[a], freq[b] = float32(f), float32(f)
	}
	return freq
}

// RotateWith rotates x [batch, heads, seq, headDim] by the angles whose cos and sin CosSin gave.
func (r *RoPE) RotateWith(x, cos, sin *Node) *Node {
	g := x.Graph()
	hd := r.HeadDim
	// The signed permutation P with (x·P)_a = -x_b, (x·P)_b = x_a, stored transposed (Pᵀ[j][i] =
	// P[i][j]) so that the product contracts both operands' last axis, as x·Wᵀ does.
	permT := make([]float32, hd*hd)
	for i := range r.RotaryDims() / 2 {
		a, b := r.Pair(i)
		permT[a*hd+b] = -1
		permT[b*hd+a] = 1
	}
	pT := ConvertDType(Reshape(Const(g, permT), hd, hd), x.DType())
	swapped := DotGeneral(x, []int{3}, nil, pT, []int{1}, nil)
	return Add(Mul(x, cos), Mul(swapped, sin))
}
