package positional

// KERPLE (Chi et al. 2022, "KERPLE: Kernelized Relative Positional Embedding for Length
// Extrapolation"): the bias is a conditionally positive definite kernel of the distance, with
// two learned parameters per head:
//
//	log    (default)  b_h(i, j) = -r1_h · log(1 + r2_h·|i - j|)
//	power             b_h(i, j) = -r1_h · |i - j|^r2_h            r2 <= 2
//
// r1, r2 > 0. ALiBi is the power kernel with r2 = 1 and fixed r1; the log kernel decays
// more slowly far away, which is what the paper finds extrapolates best.
//
// As in the paper's code, the parameters are kept in range by clamping (r >= 0.01, and
// r2 <= 2 for power) and start uniform: log r1 in [0, 2), r2 in [0, 1); power r1 in [0, 1),
// r2 in [0, 2). The paper's code clamps the stored values after each step; here the clamp is in
// the graph with a straight-through gradient, so a parameter pushed past its bound still gets
// gradients and can come back (a plain clamp would freeze it there).
//
// The paper's code (GPT-NeoX) shares one kernel across layers; here each layer learns its own
// unless shared is true. Causal form: keys j <= i, distance i - j. Encoders: |i - j|.

import (
	"fmt"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/gomlx/pkg/ml/context/initializers"
)

// kerpleEps is the paper's lower bound on r1 and r2.
const kerpleEps = 1e-2

func init() {
	Register("kerple", func(opts *Options, arch Arch) (Scheme, error) {
		k := &Kerple{
			Variant: opts.String("variant", "log", "log", "power"),
			Shared:  opts.Bool("shared", false),
		}
		if arch.NumHeads < 1 {
			return nil, fmt.Errorf("needs at least one head, got %d", arch.NumHeads)
		}
		return k, nil
	})
}

// Kerple adds a learned log or power kernel of the distance to the logits.
type Kerple struct {
	Variant string // "log" or "power"
	Shared  bool   // one (r1, r2) per head for all layers instead of per layer
}

// Name implements Scheme.
func (*Kerple) Name() string { return "kerple" }

// Params returns r1 and r2 [numHeads] as used in the bias (after clamping).
func (k *Kerple) Params(ctx *context.Context, layer int, g *Graph, numHeads int) (r1, r2 *Node) {
	if !k.Shared {
		ctx = LayerScope(ctx, layer)
	}
	// Initial ranges [0, hi) and r2's upper bound (0: none), from the paper's code.
	r1Hi, r2Hi, r2Max := 2.0, 1.0, 0.0
	if k.Variant == "power" {
		r1Hi, r2Hi, r2Max = 1, 2, 2
	}
	param := func(name string, hi, max float64) *Node {
		v := ctx.WithInitializer(initializers.RandomUniformFn(ctx, 0, hi)).
			VariableWithShape(name, shapes.Make(dtypes.Float32, numHeads)).ValueGraph(g)
		return kerpleClamp(v, kerpleEps, max)
	}
	return param("r1", r1Hi, 0), param("r2", r2Hi, r2Max)
}

// kerpleClamp clamps v to [lo, up] (up = 0: no upper bound) in the forward pass and lets the
// gradient through unchanged.
func kerpleClamp(v *Node, lo, up float64) *Node {
	c := MaxScalar(v, lo)
	if up > 0 {
		c = MinScalar(c, up)
	}
	return Add(v, StopGradient(Sub(c, v)))
}

// Bias implements the Bias hook.
func (k *Kerple) Bias(ctx *context.Context, layer int, qPos, kPos *Node, numHeads int) *Node {
	g := qPos.Graph()
	r1, r2 := k.Params(ctx, layer, g, numHeads)
	r1 = Reshape(r1, 1, numHeads, 1, 1)
	r2 = Reshape(r2, 1, numHeads, 1, 1)
	qp := ExpandAxes(ConvertDType(qPos, dtypes.Float32), 1, -1) // [b, 1, s, 1]
	kp := ExpandAxes(ConvertDType(kPos, dtypes.Float32), 1, 2)  // [b, 1, 1, t]
	dist := Abs(Sub(qp, kp))
	if k.Variant == "log" {
		return Neg(Mul(r1, Log1p(Mul(r2, dist))))
	}
	// |i-j|^r2 as exp(r2·log|i-j|), zeroed at distance 0: Pow(0, r2) has the right value but its
	// gradient with respect to r2, 0^r2·log 0, is NaN.
	nonzero := GreaterThan(dist, ZerosLike(dist))
	logDist := Log(Where(nonzero, dist, OnesLike(dist)))
	power := Mul(Exp(Mul(r2, logDist)), ConvertDType(nonzero, dtypes.Float32))
	return Neg(Mul(r1, power))
}
