package positional

// FLOATER (Liu, Yu, Dhillon & Hsieh 2020, "Learning to Encode Position for Transformer with
// Continuous Dynamical Model"): the position code is the state of a learned ODE, a continuous
// version of a recurrent position generator:
//
//	dp/dτ = h(τ, p) = W2·tanh(W1·p + u·τ + b1) + b2       a small network, `hidden` wide
//	τ = t / time_scale                                     t the token's integer position
//	p(0) = 0, or a learned vector (learned_p0)
//	x' = x + p(t / time_scale)
//
// Solver: each token integrates its own p from τ = 0 to its τ with `steps` classic RK4 steps of
// size τ/steps. Cost per token is constant, positions may be any int32 in any order, and a token's
// code does not depend on the other tokens, which a KV cache needs. The paper instead solves one
// trajectory along the sequence with a black-box solver and reads p_i at each position's time,
// which costs O(length) and ties p_i to the positions before it. The price of a fixed step count:
// far past the trained length the steps are coarse, so p(t) drifts from the exact flow; it stays
// a smooth function of t with |p(τ) − p(0)| ≤ |τ|·sup|h| (h is bounded by tanh), never a blow-up.
//
// Cost: 4·steps evaluations of h per token, 8·steps·dim·hidden multiply-adds (with the defaults
// about two transformer layers of the shipped models); decoding one token costs one token's worth.
//
// The paper adds p to the input of every block, the dynamics shared by all blocks; here p is
// added once to the embeddings, because the Input hook runs before the first block only.
// With p(0) = 0, h ≡ 0 is no positional encoding at all: a small h starts near a plain model.

import (
	"fmt"
	"math"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/gomlx/pkg/ml/context/initializers"
)

func init() {
	Register("floater", func(opts *Options, arch Arch) (Scheme, error) {
		f := &Floater{
			Steps:     opts.Int("steps", 8),
			TimeScale: opts.Float("time_scale", 32),
			Hidden:    opts.Int("hidden", 32),
			LearnedP0: opts.Bool("learned_p0", false),
		}
		switch {
		case f.Steps < 1:
			return nil, fmt.Errorf("steps must be >= 1, got %d", f.Steps)
		case f.TimeScale <= 0:
			return nil, fmt.Errorf("time_scale must be > 0, got %g", f.TimeScale)
		case f.Hidden < 1:
			return nil, fmt.Errorf("hidden must be >= 1, got %d", f.Hidden)
		}
		return f, nil
	})
}

// Floater adds p(t), the RK4 solution of a learned ODE, to the token embeddings.
type Floater struct {
	Steps     int     // RK4 steps from τ = 0 to the token's τ
	TimeScale float64 // τ = t / TimeScale
	Hidden    int     // width of h's hidden layer
	LearnedP0 bool    // p(0) is a trainable vector instead of 0
}

// Name implements Scheme.
func (*Floater) Name() string { return "floater" }

// Input implements the Input hook.
func (f *Floater) Input(ctx *context.Context, x, pos *Node) *Node {
	return Add(x, ConvertDType(f.Code(ctx, pos, x.Shape().Dim(-1)), x.DType()))
}

// floaterDynamics holds h's weights, broadcast once to [batch, seq, ·]: h runs 4·steps times,
// and a broadcast built once is shared by all of them.
type floaterDynamics struct {
	w1, w2 *Node // [hidden, dim], [dim, hidden]: stored [out, in]
	tu, b1 *Node // τ·u and b1, [b, s, hidden]: the time term at stage time f·τ is f·τu + b1
	b2     *Node // [b, s, dim]
	time   map[float64]*Node
}

// h evaluates the dynamics at stage time frac·τ (frac in [0, 1]) and states p [b, s, dim].
// RK4 visits 2·steps+1 distinct times in 4·steps evaluations, so time terms are built once each.
func (d *floaterDynamics) h(frac float64, p *Node) *Node {
	c, ok := d.time[frac]
	if !ok {
		c = Add(MulScalar(d.tu, frac), d.b1)
		d.time[frac] = c
	}
	z := Add(DotGeneral(p, []int{2}, nil, d.w1, []int{1}, nil), c)
	return Add(DotGeneral(Tanh(z), []int{2}, nil, d.w2, []int{1}, nil), d.b2)
}

// Code implements Absolute: p(t / time_scale) for positions pos [batch, seq], as [batch, seq, dim].
func (f *Floater) Code(ctx *context.Context, pos *Node, dim int) *Node {
	g := pos.Graph()
	b, s, hid := pos.Shape().Dim(0), pos.Shape().Dim(1), f.Hidden
	v := func(name string, init initializers.VariableInitializer, dims ...int) *Node {
		return ctx.WithInitializer(init).VariableWithShape(name, shapes.Make(dtypes.Float32, dims...)).ValueGraph(g)
	}
	spread := func(x *Node, n int) *Node { return BroadcastToDims(Reshape(x, 1, 1, n), b, s, n) }
	// W1 keeps W1·p of the order of p; u and b1 of order 1 spread the units' tanh kinks
	// (τ = −b1/u) over the first few units of τ, so p(τ) bends there instead of being a line.
	// Past the kinks h is nearly constant and p grows linearly; W2 at 0.005 makes that about
	// 0.08 rms at t = 128 with the defaults, a few times the token embeddings (0.02), so
	// position does not drown the tokens at the start of training.
	tau := MulScalar(ConvertDType(pos, dtypes.Float32), 1/f.TimeScale) // [b, s]
	dyn := &floaterDynamics{
		w1:   v("w1", initializers.RandomNormalFn(ctx, 1/math.Sqrt(float64(dim))), hid, dim),
		w2:   v("w2", initializers.RandomNormalFn(ctx, 0.005), dim, hid),
		tu:   Mul(BroadcastToDims(ExpandAxes(tau, -1), b, s, hid), spread(v("u", initializers.RandomNormalFn(ctx, 1), hid), hid)),
		b1:   spread(v("b1", initializers.RandomNormalFn(ctx, 1), hid), hid),
		b2:   spread(v("b2", initializers.Zero, dim), dim),
		time: map[float64]*Node{},
	}

	p := Zeros(g, shapes.Make(dtypes.Float32, b, s, dim))
	if f.LearnedP0 {
		p = spread(v("p0", initializers.Zero, dim), dim)
	}
	n := float64(f.Steps)
	dt := BroadcastToDims(ExpandAxes(MulScalar(tau, 1/n), -1), b, s, dim)
	half, sixth := MulScalar(dt, 0.5), MulScalar(dt, 1.0/6)
	at := func(halfSteps int) float64 { return float64(halfSteps) / (2 * n) } // a fraction of τ
	for i := range f.Steps {
		k1 := dyn.h(at(2*i), p)
		k2 := dyn.h(at(2*i+1), Add(p, Mul(half, k1)))
		k3 := dyn.h(at(2*i+1), Add(p, Mul(half, k2)))
		k4 := dyn.h(at(2*i+2), Add(p, Mul(dt, k3)))
		p = Add(p, Mul(sixth, Add(Add(k1, k4), MulScalar(Add(k2, k3), 2))))
	}
	return p
}
