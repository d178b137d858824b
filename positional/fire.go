package positional

// FIRE, functional interpolation for relative positions (Li et al. 2023, "Functional
// Interpolation for Relative Positions Improves Long Context Transformers"):
//
//	b(i, j) = f_θ( ψ(i - j) / ψ(max(L, i)) )        one output per head
//	ψ(x)    = log(c·x + 1)
//	f_θ     = MLP 1 → 32 → heads, ReLU
//
// c > 0 and the threshold L are learned along with f_θ. Dividing by ψ of the query position
// is the "progressive interpolation": for every key j <= i the input lies in [0, 1], whatever
// the length, so a long sequence is squeezed into the range seen in training instead of
// running past it. FIRE is therefore not shift-invariant: the bias depends on i, not only on
// i - j. Below the threshold (i <= L) the normaliser is the constant ψ(L) and the bias is purely
// relative: without L, a query near the start would spread its few keys over all of [0, 1].
// The log ψ spends more of [0, 1] on near neighbours than on far ones.
//
// Details follow the paper's reference code: ψ(|c·x|), L = |ℓ·init_l| with ℓ learned from 1
// and init_l = 512, c from 0.1, ε = 1e-6 added to the normaliser, PyTorch's default
// (uniform ±1/sqrt(fan_in)) initialisation of the MLP. Each layer learns its own FIRE unless
// shared is true (one FIRE for all layers, cheaper).
//
// norm_max (0: off; not in the paper) caps the query position the normaliser sees:
// ψ(max(L, min(i, norm_max))). Set to the training length at evaluation, it keeps every query's
// normaliser at the largest one training used, so a key past the trained distances gets an input
// above 1 (f_θ extrapolates) instead of every key's input shrinking (f_θ interpolates): the
// benchmark's ablation of progressive interpolation on a trained model, which it leaves
// unchanged up to norm_max. On the benchmark's lm (4-layer models trained at 128 bytes, three
// seeds, benchmarks/RESULTS.md) plain FIRE's loss rises from 4L to 16L while with the cap it
// falls, as ALiBi's does: at that size f_θ extrapolates, and the interpolation is what fails.
//
// FIRE is defined for causal attention. In an encoder keys after the query use |i - j|,
// as the absolute value in ψ(|c·x|) already implies.

import (
	"fmt"
	"math"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/gomlx/pkg/ml/context/initializers"
)

// fireEps keeps the normaliser away from 0 when c·max(L, i) is 0.
const fireEps = 1e-6

func init() {
	Register("fire", func(opts *Options, arch Arch) (Scheme, error) {
		f := &FIRE{
			MLPWidth: opts.Int("mlp_width", 32),
			InitC:    opts.Float("init_c", 0.1),
			InitL:    opts.Float("init_l", 512),
			Shared:   opts.Bool("shared", false),
			NormMax:  opts.Float("norm_max", 0),
		}
		switch {
		case f.MLPWidth < 1:
			return nil, fmt.Errorf("mlp_width must be >= 1, got %d", f.MLPWidth)
		case !(f.InitC > 0) || math.IsInf(f.InitC, 0):
			return nil, fmt.Errorf("init_c must be a positive number, got %g", f.InitC)
		case !(f.InitL > 0) || math.IsInf(f.InitL, 0):
			return nil, fmt.Errorf("init_l must be a positive number, got %g", f.InitL)
		case !(f.NormMax >= 0) || math.IsInf(f.NormMax, 0):
			return nil, fmt.Errorf("norm_max must be 0 (off) or a positive position, got %g", f.NormMax)
		case arch.NumHeads < 1:
			return nil, fmt.Errorf("needs at least one head, got %d", arch.NumHeads)
		}
		return f, nil
	})
}

// FIRE adds a learned function of the normalised log-distance to the logits.
type FIRE struct {
	MLPWidth int     // hidden width of f_θ
	InitC    float64 // initial c of ψ
	InitL    float64 // L = |ℓ·InitL|, ℓ learned from 1
	Shared   bool    // one FIRE for all layers instead of one per layer
	NormMax  float64 // > 0: the normaliser's query position is capped here (an ablation)
}

// Name implements Scheme.
func (*FIRE) Name() string { return "fire" }

// SharedWork implements SharedWork: f_θ runs on every (query, key) pair of every layer.
func (*FIRE) SharedWork() bool { return true }

func (f *FIRE) scope(ctx *context.Context, layer int) *context.Context {
	if f.Shared {
		return ctx
	}
	return LayerScope(ctx, layer)
}

// Normalized returns f_θ's input ψ(|i-j|) / (ψ(max(L, i)) + ε), [batch, seq_q, seq_k]
// (i capped at NormMax when that is set).
func (f *FIRE) Normalized(ctx *context.Context, layer int, qPos, kPos *Node) *Node {
	ctx = f.scope(ctx, layer)
	g := qPos.Graph()
	scalar := func(name string, init float64) *Node {
		constant := func(g *Graph, s shapes.Shape) *Node { return Scalar(g, s.DType, init) }
		v := ctx.WithInitializer(constant).VariableWithShape(name, shapes.Make(dtypes.Float32)).ValueGraph(g)
		return Reshape(v, 1, 1, 1)
	}
	c := Abs(scalar("c", f.InitC))
	threshold := Abs(MulScalar(scalar("l_multiplier", 1), f.InitL))
	qp := ExpandAxes(ConvertDType(qPos, dtypes.Float32), -1) // [b, s, 1]
	kp := ExpandAxes(ConvertDType(kPos, dtypes.Float32), 1)  // [b, 1, t]
	num := Log1p(Mul(c, Abs(Sub(qp, kp))))
	np := qp
	if f.NormMax > 0 {
		np = MinScalar(qp, f.NormMax)
	}
	den := AddScalar(Log1p(Mul(c, Max(np, threshold))), fireEps)
	return Div(num, den)
}

// Bias implements the Bias hook.
func (f *FIRE) Bias(ctx *context.Context, layer int, qPos, kPos *Node, numHeads int) *Node {
	x := ExpandAxes(f.Normalized(ctx, layer, qPos, kPos), -1) // [b, s, t, 1]
	mlp := f.scope(ctx, layer).In("mlp")
	g := qPos.Graph()
	w := f.MLPWidth
	// PyTorch's nn.Linear initialisation, as in the paper's code: uniform ±1/sqrt(fan_in).
	param := func(name string, fanIn int, dims ...int) *Node {
		r := 1 / math.Sqrt(float64(fanIn))
		return mlp.WithInitializer(initializers.RandomUniformFn(mlp, -r, r)).
			VariableWithShape(name, shapes.Make(dtypes.Float32, dims...)).ValueGraph(g)
	}
	w1, b1 := param("w1", 1, w), param("b1", 1, w)
	w2, b2 := param("w2", w, w, numHeads), param("b2", w, numHeads)
	hidden := MaxScalar(Add(Mul(x, Reshape(w1, 1, 1, 1, w)), Reshape(b1, 1, 1, 1, w)), 0) // [b, s, t, w]
	out := DotGeneral(hidden, []int{3}, nil, w2, []int{0}, nil)                           // [b, s, t, h]
	out = Add(out, Reshape(b2, 1, 1, 1, numHeads))
	return TransposeAllAxes(out, 0, 3, 1, 2)
}
