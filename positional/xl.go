package positional

// Transformer-XL relative attention (Dai et al. 2019, "Transformer-XL: Attentive Language
// Models Beyond a Fixed-Length Context", §3.3; XLNet uses the same form):
//
//	A_ij = q_i·k_j + q_i·W_{k,R} R_{i-j} + u·k_j + v·W_{k,R} R_{i-j}
//	       (a)       (b)                   (c)     (d)
//
//	R_δ = [sin ω_m δ | cos ω_m δ],  ω_m = base^(-2m/d_R), m in [0, d_R/2)
//
// R is the sinusoidal code of the distance δ = i-j, d_R = rel_dim wide (the model dim, as in
// the paper). W_{k,R} (rel_dim → heads·headDim, the reference code's r_net) is learned per
// layer; u and v (r_w_bias, r_r_bias) are learned per head. Values get no position term. This
// scheme returns (b)+(c)+(d); attention adds (a) and scales the sum by 1/sqrt(headDim), as the
// reference code does. u and v are shared by all layers, the reference code's default
// (untie_r=false); untie_r=true gives each layer its own pair, as XLNet's released models do.
//
// Cost. Written as the paper writes it, (b)+(d) = (q_i+v)·W_{k,R}R_{i-j} needs W_{k,R}R_{i-j}
// for every pair: a [seq, keys, heads·headDim] tensor. The reference code computes it for
// the contiguous distances only and realigns it with its "relative shift" trick, which
// assumes iota positions. Here the distance is split instead. With a_i = W_{k,R}ᵀ(q_i + v)
// (per head, rel_dim wide: a_s multiplies the sines of R, a_c the cosines), one frequency ω
// contributes, by sin(x-y) = sin x cos y − cos x sin y and cos(x-y) = cos x cos y + sin x sin y,
//
//	a_s sin ω(i-j) + a_c cos ω(i-j) = cos ωj·(a_s sin ωi + a_c cos ωi) + sin ωj·(a_c sin ωi − a_s cos ωi)
//
// so (b)+(d) = Q̃_i·K̃_j, with Q̃_i = [a_s sin ωi + a_c cos ωi | a_c sin ωi − a_s cos ωi] built
// from the queries and their positions, and K̃_j = [cos ωj | sin ωj] from the key positions
// alone. That is O(seq·keys·rel_dim) per head, valid for any explicit positions, and a cached
// key needs nothing but its position. With the default rel_dim (model dim) it costs heads
// times q·k; rel_dim = head dim brings it down to the cost of q·k, with fewer frequencies.
//
// Options: base (10000), rel_dim (model dim), untie_r (false). The layout of R ([sin | cos]
// as in the reference code, not interleaved) is immaterial: W_{k,R} is learned.

import (
	"fmt"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/gomlx/pkg/ml/context/initializers"
)

func init() {
	Register("xl", func(opts *Options, arch Arch) (Scheme, error) {
		x := &XL{
			Base:   opts.Float("base", 10000),
			RelDim: opts.Int("rel_dim", arch.Dim),
			UntieR: opts.Bool("untie_r", false),
		}
		if x.Base <= 1 {
			return nil, fmt.Errorf("base must be > 1, got %g", x.Base)
		}
		if x.RelDim < 2 || x.RelDim%2 != 0 {
			return nil, fmt.Errorf("rel_dim must be even and >= 2 (sin/cos pairs), got %d", x.RelDim)
		}
		return x, nil
	})
}

// xlInitStd is the reference code's init_std for W_{k,R}, u and v.
const xlInitStd = 0.02

// XL adds Transformer-XL's content-position, global-content and global-position terms.
type XL struct {
	Base   float64 // the 10000 of the sinusoids
	RelDim int     // width of R, d_R
	UntieR bool    // u and v per layer instead of shared
}

// Name implements Scheme.
func (*XL) Name() string { return "xl" }

// RelativeLogits implements Relative: terms (b), (c) and (d), [batch, heads, seq_q, seq_k].
func (x *XL) RelativeLogits(ctx *context.Context, layer int, q, k, qPos, kPos *Node) *Node {
	g := q.Graph()
	dims := q.Shape().Dimensions // [b, h, s, hd]
	h, hd, d := dims[1], dims[3], x.RelDim
	variable := func(c *context.Context, name string, dims ...int) *Node {
		v := c.WithInitializer(initializers.RandomNormalFn(c, xlInitStd)).
			VariableWithShape(name, shapes.Make(dtypes.Float32, dims...)).ValueGraph(g)
		return ConvertDType(v, q.DType())
	}
	// Shared u and v are read by every layer of one graph: unchecked, later layers reuse what
	// the first created instead of failing in a checked context.
	biases := ctx.Checked(false)
	if x.UntieR {
		biases = LayerScope(ctx, layer)
	}
	// W_{k,R} stored [heads, headDim, rel_dim]: r_net's PyTorch [out, in] weight, out split by head.
	w := variable(LayerScope(ctx, layer), "w_kr", h, hd, d)
	u := variable(biases, "u", h, hd)
	v := variable(biases, "v", h, hd)

	uk := ExpandAxes(Einsum("bhtd,hd->bht", k, u), 2) // (c), the same for every query: [b, h, 1, t]

	a := Einsum("bhsd,hdm->bhsm", Add(q, Reshape(v, 1, h, 1, hd)), w) // [a_s | a_c]: [b, h, s, d]
	sinQ, cosQ := x.queryAngles(qPos, q.DType())
	qt := Add(Mul(a, sinQ), Mul(xlSwapHalves(a), cosQ))            // Q̃
	bd := Einsum("bhsm,btm->bhst", qt, x.keyCode(kPos, q.DType())) // (b) + (d)
	return Add(bd, uk)
}

// RelativeValues implements Relative: Transformer-XL has no position term on values.
func (*XL) RelativeValues(ctx *context.Context, layer int, probs, qPos, kPos *Node) *Node {
	return nil
}

// Angles are formed in float64: sin ωi and cos ωj must each be accurate at large positions, or
// their product would not reproduce sin ω(i-j) and scores would drift with absolute position.

// queryAngles returns sin ωi and cos ωi, each [b, 1, s, d] with the frequencies repeated for
// both halves.
func (x *XL) queryAngles(pos *Node, dtype dtypes.DType) (sin, cos *Node) {
	freqs := Frequencies(x.RelDim, x.Base)
	freqs = append(freqs, freqs...)
	angles := Mul(ExpandAxes(ConvertDType(pos, dtypes.Float64), 1, -1), Reshape(Const(pos.Graph(), freqs), 1, 1, 1, x.RelDim))
	return ConvertDType(Sin(angles), dtype), ConvertDType(Cos(angles), dtype)
}

// keyCode returns K̃_j = [cos ωj | sin ωj], [b, t, d].
func (x *XL) keyCode(pos *Node, dtype dtypes.DType) *Node {
	freqs := Frequencies(x.RelDim, x.Base)
	angles := Mul(ExpandAxes(ConvertDType(pos, dtypes.Float64), -1), Reshape(Const(pos.Graph(), freqs), 1, 1, x.RelDim/2))
	return ConvertDType(Concatenate([]*Node{Cos(angles), Sin(angles)}, -1), dtype)
}

// xlSwapHalves maps a = [a_s | a_c] to [a_c | −a_s] along the last axis of a [b, h, s, d], with a
// 2x2 contraction rather than slices (see layers/portable.go).
func xlSwapHalves(a *Node) *Node {
	dims := a.Shape().Dimensions
	b, h, s, d := dims[0], dims[1], dims[2], dims[3]
	j := ConvertDType(Const(a.Graph(), [][]float32{{0, -1}, {1, 0}}), a.DType()) // out[y] = Σ_x in[x]·j[x][y]
	swapped := Einsum("bhsxm,xy->bhsym", Reshape(a, b, h, s, 2, d/2), j)
	return Reshape(swapped, b, h, s, d)
}
