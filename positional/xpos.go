package positional

// xPos (Sun et al. 2022, "A Length-Extrapolatable Transformer"): RoPE whose rotary pairs also
// decay with distance.
//
//	ζ_i = (2i/d + γ) / (1 + γ)                 γ = 0.4, pair i in [0, d/2), d = head dim
//	q'_m = ζ^(m/B) ⊙ RoPE(q, m)                queries at position m
//	k'_n = ζ^(-n/B) ⊙ RoPE(k, n)               keys at position n, B = scale_base = 512
//	q'_m · k'_n = Σ_i ζ_i^((m-n)/B) · (pair i's RoPE score)
//
// Every ζ_i < 1, so each pair's contribution shrinks as the key gets further behind the query,
// fastest for the high-frequency pairs (small i), whose rotation is the least reliable signal
// at long range. This is the paper's "attention resolution" fix for RoPE's oscillating scores.
//
// The decay needs m >= n: in an encoder, keys after the query would be amplified by
// ζ^((m-n)/B) > 1, so xpos refuses encoders (the paper is about causal LMs).
//
// Queries and keys are scaled separately, so the key's factor is fixed when it enters the KV
// cache. The price is range: ζ_0^(-n/B) = exp(1.25·n/B) overflows float32 for n past about
// 70·B (some 36,000 positions at B = 512). The paper's code centres positions on each
// sequence's middle to halve the exponents; with absolute positions and a cache the offset
// would have to be a constant, and 0 is kept here.

import (
	"fmt"
	"math"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/ml/context"
)

// xposGamma is the paper's γ.
const xposGamma = 0.4

func init() {
	Register("xpos", func(opts *Options, arch Arch) (Scheme, error) {
		x := &XPos{
			RoPE: &RoPE{
				Base:           opts.Float("base", 10000),
				Layout:         opts.String("layout", "half", "half", "interleaved"),
				RotaryFraction: 1,
				HeadDim:        arch.HeadDim,
			},
			ScaleBase: opts.Float("scale_base", 512),
		}
		if !arch.Causal {
			return nil, fmt.Errorf("needs a decoder: its decay ζ^((m-n)/B) turns into growth for keys after the query in an encoder; use rope there")
		}
		if x.RoPE.Base <= 1 {
			return nil, fmt.Errorf("base must be > 1, got %g", x.RoPE.Base)
		}
		if !(x.ScaleBase > 0) || math.IsInf(x.ScaleBase, 0) {
			return nil, fmt.Errorf("scale_base must be a positive number, got %g", x.ScaleBase)
		}
		if arch.HeadDim%2 != 0 {
			return nil, fmt.Errorf("needs an even head dim to form rotary pairs, got %d", arch.HeadDim)
		}
		return x, nil
	})
}

// XPos is RoPE plus a per-pair exponential decay.
type XPos struct {
	RoPE      *RoPE   // the rotation (base, layout); all dims rotate
	ScaleBase float64 // B: the decay ζ^(Δ/B) is per B positions of distance
}

// Name implements Scheme.
func (*XPos) Name() string { return "xpos" }

// Zeta returns ζ_i for the d/2 rotary pairs.
func (x *XPos) Zeta() []float64 {
	d := x.RoPE.RotaryDims()
	z := make([]float64, d/2)
	for i := range z {
		z[i] = (float64(2*i)/float64(d) + xposGamma) / (1 + xposGamma)
	}
	return z
}

// QueryKey implements the QueryKey hook.
func (x *XPos) QueryKey(ctx *context.Context, layer int, q, k, qPos, kPos *Node) (*Node, *Node) {
	return x.Scale(x.RoPE.Rotate(q, qPos), qPos, 1), x.Scale(x.RoPE.Rotate(k, kPos), kPos, -1)
}

// Scale multiplies v [batch, heads, seq, headDim] by ζ^(sign·pos/B), pair i's ζ_i on both of
// its dimensions (so it commutes with the rotation). sign is +1 for queries, -1 for keys.
func (x *XPos) Scale(v, pos *Node, sign float64) *Node {
	hd := x.RoPE.HeadDim
	// The exponent is pos · (sign·log ζ_i / B), computed as one product per element.
	rate := make([]float64, hd)
	for i, z := range x.Zeta() {
		a, b := x.RoPE.Pair(i)
		rate[a] = sign * math.Log(z) / x.ScaleBase
		rate[b] = rate[a]
	}
	g := v.Graph()
	expo := Mul(ExpandAxes(ConvertDType(pos, dtypes.Float32), 1, -1), Reshape(Const(g, toFloat32(rate)), 1, 1, 1, hd)) // [b, 1, s, hd]
	return Mul(v, ConvertDType(Exp(expo), v.DType()))
}

// Limit implements Limited. Keys are scaled by ζ^(-n/B) before they are cached, and the
// smallest ζ (0.4/1.4) makes that overflow float32 near n = 70·B; 64·B keeps a margin.
func (x *XPos) Limit() int { return int(64 * x.ScaleBase) }

// LimitFix implements Limited.
func (x *XPos) LimitFix() string {
	return fmt.Sprintf("xPos's key scale ζ^(-n/B) overflows float32 past about 64·scale_base = %d positions; shorten the input or raise scale_base", x.Limit())
}
