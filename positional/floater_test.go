package positional

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/backends"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
)

var (
	_ Input    = (*Floater)(nil)
	_ Absolute = (*Floater)(nil)
)

func newFloater(t *testing.T, opts map[string]any) *Floater {
	t.Helper()
	s, err := New("floater", opts, Arch{Dim: 8, Causal: true})
	if err != nil {
		t.Fatal(err)
	}
	return s.(*Floater)
}

// floaterCodes runs Code on ctx with backend be (a context's variables stay bound to one backend) (creating h's variables on the first run) and returns one row of
// dim values per position.
func floaterCodes(t *testing.T, be backends.Backend, f *Floater, ctx *context.Context, pos [][]int32, dim int) [][]float32 {
	t.Helper()
	out := context.MustExecOnce(be, ctx, func(ctx *context.Context, p *Node) *Node {
		return f.Code(ctx, p, dim)
	}, pos)
	flat := tensors.MustCopyFlatData[float32](out)
	rows := make([][]float32, len(flat)/dim)
	for i := range rows {
		rows[i] = flat[i*dim : (i+1)*dim]
	}
	return rows
}

// floaterWeights are h's weights read back from the context, in float64.
type floaterWeights struct {
	w1, w2        [][]float64 // [hidden][dim], [dim][hidden]
	u, b1, b2, p0 []float64
}

func floaterVar(t *testing.T, ctx *context.Context, name string) []float64 {
	t.Helper()
	v := ctx.GetVariable(name)
	if v == nil {
		t.Fatalf("no variable %q in scope %s", name, ctx.Scope())
	}
	flat := tensors.MustCopyFlatData[float32](v.MustValue())
	out := make([]float64, len(flat))
	for i, x := range flat {
		out[i] = float64(x)
	}
	return out
}

func floaterReadWeights(t *testing.T, ctx *context.Context, f *Floater, dim int) floaterWeights {
	t.Helper()
	rows := func(flat []float64, n int) [][]float64 {
		out := make([][]float64, len(flat)/n)
		for i := range out {
			out[i] = flat[i*n : (i+1)*n]
		}
		return out
	}
	w := floaterWeights{
		w1: rows(floaterVar(t, ctx, "w1"), dim),
		w2: rows(floaterVar(t, ctx, "w2"), f.Hidden),
		u:  floaterVar(t, ctx, "u"),
		b1: floaterVar(t, ctx, "b1"),
		b2: floaterVar(t, ctx, "b2"),
		p0: make([]float64, dim),
	}
	if f.LearnedP0 {
		w.p0 = floaterVar(t, ctx, "p0")
	}
	return w
}

// floaterH is the paper's dynamics with this file's network: h(τ, p) = W2·tanh(W1·p + u·τ + b1) + b2.
func floaterH(w floaterWeights, tau float64, p []float64) []float64 {
	a := make([]float64, len(w.w1))
	for k := range a {
		z := w.u[k]*tau + w.b1[k]
		for i, x := range p {
			z += w.w1[k][i] * x
		}
		a[k] = math.Tanh(z)
	}
	out := make([]float64, len(w.w2))
	for j := range out {
		out[j] = w.b2[j]
		for k, x := range a {
			out[j] += w.w2[j][k] * x
		}
	}
	return out
}

// floaterRK4 integrates dp/dτ = h(τ, p) from p(0) = p0 to τ = pos/timeScale with n classic
// Runge–Kutta steps, in float64.
func floaterRK4(w floaterWeights, pos int32, timeScale float64, n int) []float64 {
	axpy := func(p []float64, a float64, k []float64) []float64 {
		out := make([]float64, len(p))
		for i := range p {
			out[i] = p[i] + a*k[i]
		}
		return out
	}
	tau := float64(pos) / timeScale
	dt := tau / float64(n)
	p := append([]float64{}, w.p0...)
	for i := range n {
		t0 := float64(i) * dt
		k1 := floaterH(w, t0, p)
		k2 := floaterH(w, t0+dt/2, axpy(p, dt/2, k1))
		k3 := floaterH(w, t0+dt/2, axpy(p, dt/2, k2))
		k4 := floaterH(w, t0+dt, axpy(p, dt, k3))
		for j := range p {
			p[j] += dt / 6 * (k1[j] + 2*k2[j] + 2*k3[j] + k4[j])
		}
	}
	return p
}

// floaterRandomize gives a variable random values, so that a test does not rest on its
// initialization (b2 and p0 start at zero).
func floaterRandomize(t *testing.T, ctx *context.Context, name string, r *rand.Rand, std float64) {
	t.Helper()
	v := ctx.GetVariable(name)
	vals := make([]float32, v.Shape().Size())
	for i := range vals {
		vals[i] = float32(std * r.NormFloat64())
	}
	if err := v.SetValue(tensors.FromFlatDataAndDimensions(vals, v.Shape().Dimensions...)); err != nil {
		t.Fatal(err)
	}
}

// The graph's p(t) is the RK4 solution of the same network with the same weights, at arbitrary,
// batched, unordered (and negative) positions; p at t = 0 is exactly p(0).
func TestFloaterMatchesRK4(t *testing.T) {
	be := backend(t)
	pos := [][]int32{{0, 1, 5, 63, 200, 1000}, {-7, 3, 0, 64, 4096, 100000}}
	r := rand.New(rand.NewPCG(31, 32))
	for _, c := range []struct {
		opts map[string]any
		dim  int
	}{
		{nil, 16},
		{map[string]any{"steps": 3, "time_scale": 10.0, "hidden": 5, "learned_p0": true}, 6},
		{map[string]any{"steps": 1, "time_scale": 200.0, "hidden": 3}, 4},
	} {
		f := newFloater(t, c.opts)
		ctx := context.New().Checked(false)
		ctx.SetRNGStateFromSeed(7)
		floaterCodes(t, be, f, ctx, pos, c.dim) // creates the variables
		floaterRandomize(t, ctx, "b2", r, 0.05)
		floaterRandomize(t, ctx, "w2", r, 0.3) // larger than at init, so the p-feedback matters
		if f.LearnedP0 {
			floaterRandomize(t, ctx, "p0", r, 0.5)
		}
		got := floaterCodes(t, be, f, ctx, pos, c.dim)
		w := floaterReadWeights(t, ctx, f, c.dim)
		worst := 0.0
		for b := range pos {
			for i, p := range pos[b] {
				want := floaterRK4(w, p, f.TimeScale, f.Steps)
				scale := 1.0
				for _, x := range want {
					scale = max(scale, math.Abs(x))
				}
				for j, x := range want {
					e := math.Abs(float64(got[b*len(pos[b])+i][j])-x) / scale
					worst = max(worst, e)
					if e > 1e-4 {
						t.Errorf("%v: p(%d)[%d] = %g, RK4 gives %g", c.opts, p, j, got[b*len(pos[b])+i][j], x)
					}
				}
				if p == 0 {
					for j, x := range got[b*len(pos[b])+i] {
						if float64(x) != float64(float32(w.p0[j])) {
							t.Errorf("%v: p(0)[%d] = %g, want p0 = %g", c.opts, j, x, w.p0[j])
						}
					}
				}
			}
		}
		t.Logf("%v: max relative |graph − RK4| = %.3g", c.opts, worst)
	}
}

// With the default options and fresh weights, positions 0..L-1 get codes that are pairwise far
// apart compared with float32 rounding of the codes.
func TestFloaterDistinctPositions(t *testing.T) {
	be := backend(t)
	const dim, n = 32, 512
	f := newFloater(t, nil)
	for seed := range int64(3) {
		ctx := context.New().Checked(false)
		ctx.SetRNGStateFromSeed(seed)
		codes := floaterCodes(t, be, f, ctx, iotaPositions(n), dim)
		closest, pair, largest := math.Inf(1), [2]int{}, 0.0
		for i := range n {
			for j := i + 1; j < n; j++ {
				d := 0.0
				for k := range dim {
					x := float64(codes[i][k] - codes[j][k])
					d += x * x
				}
				if d = math.Sqrt(d); d < closest {
					closest, pair = d, [2]int{i, j}
				}
			}
			for _, x := range codes[i] {
				largest = max(largest, math.Abs(float64(x)))
			}
		}
		// float32 resolves about 6e-8 of the largest coordinate.
		resolution := 6e-8 * largest * math.Sqrt(dim)
		t.Logf("seed %d: closest codes among positions 0..%d: %d and %d, %.3g apart (largest |p| %.3g, float32 resolution %.2g)",
			seed, n-1, pair[0], pair[1], closest, largest, resolution)
		if closest < 1e-3 || closest < 1e3*resolution {
			t.Errorf("seed %d: positions %d and %d have codes only %g apart", seed, pair[0], pair[1], closest)
		}
	}
}

// A position's code does not depend on the other positions in the batch: alone, or inside a
// longer batch in any slot, it is the same, which is what makes KV-cache decoding exact.
func TestFloaterCodeIndependentOfBatch(t *testing.T) {
	be := backend(t)
	const dim = 16
	for _, opts := range []map[string]any{nil, {"learned_p0": true, "steps": 5}} {
		f := newFloater(t, opts)
		r := rand.New(rand.NewPCG(33, 34))
		batch := make([][]int32, 3)
		for b := range batch {
			for range 40 {
				batch[b] = append(batch[b], int32(r.IntN(2000)))
			}
		}
		probes := []int32{0, 3, 77, 500, 1999, 12345}
		slots := [][2]int{{0, 0}, {1, 17}, {2, 39}, {0, 5}, {1, 0}, {2, 20}}
		for i, p := range probes {
			batch[slots[i][0]][slots[i][1]] = p
		}
		ctx := context.New().Checked(false)
		full := floaterCodes(t, be, f, ctx, batch, dim)
		if f.LearnedP0 {
			floaterRandomize(t, ctx, "p0", r, 0.5)
			full = floaterCodes(t, be, f, ctx, batch, dim)
		}
		worst := 0.0
		for i, p := range probes {
			alone := floaterCodes(t, be, f, ctx, [][]int32{{p}}, dim)[0]
			inBatch := full[slots[i][0]*40+slots[i][1]]
			for j := range alone {
				e := math.Abs(float64(alone[j] - inBatch[j]))
				worst = max(worst, e)
				if e > 1e-6*max(1, math.Abs(float64(alone[j]))) {
					t.Errorf("%v: p(%d)[%d] is %g alone but %g in a batch", opts, p, j, alone[j], inBatch[j])
				}
			}
		}
		t.Logf("%v: max |alone − in batch| = %.3g", opts, worst)
	}
}

// The Input hook adds the code to the embeddings, and gradients reach every weight of h.
func TestFloaterInputAndGradients(t *testing.T) {
	be := backend(t)
	const dim = 8
	f := newFloater(t, map[string]any{"learned_p0": true, "hidden": 4, "steps": 2})
	pos := [][]int32{{0, 9, 2, 40}}
	r := rand.New(rand.NewPCG(35, 36))
	x := make([]float32, 4*dim)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	ctx := context.New().Checked(false)
	codes := floaterCodes(t, be, f, ctx, pos, dim)
	outs := context.MustExecOnceN(be, ctx, func(ctx *context.Context, xn, p *Node) []*Node {
		y := f.Input(ctx, xn, p)
		loss := ReduceAllSum(Square(y))
		return append([]*Node{y}, ctx.BuildTrainableVariablesGradientsGraph(loss)...)
	}, tensors.FromFlatDataAndDimensions(x, 1, 4, dim), pos)
	y := tensors.MustCopyFlatData[float32](outs[0])
	for i := range x {
		if want := x[i] + codes[i/dim][i%dim]; math.Abs(float64(y[i]-want)) > 1e-6 {
			t.Errorf("Input[%d] = %g, want x + p = %g", i, y[i], want)
		}
	}
	var names []string
	for v := range ctx.IterVariables() {
		if v.Trainable {
			names = append(names, v.Name())
		}
	}
	if len(outs)-1 != 6 || len(names) != 6 {
		t.Fatalf("%d gradients for variables %v, want 6 (w1 u b1 w2 b2 p0)", len(outs)-1, names)
	}
	for i, g := range outs[1:] {
		norm := 0.0
		for _, v := range tensors.MustCopyFlatData[float32](g) {
			norm += float64(v) * float64(v)
		}
		if norm == 0 || math.IsNaN(norm) || math.IsInf(norm, 0) {
			t.Errorf("gradient %d (of %v) has squared norm %g", i, names, norm)
		}
	}
}

func TestFloaterOptions(t *testing.T) {
	f := newFloater(t, nil)
	if f.Steps != 8 || f.TimeScale != 32 || f.Hidden != 32 || f.LearnedP0 {
		t.Errorf("defaults: %+v", *f)
	}
	for _, arch := range []Arch{{Dim: 8, Causal: true}, {Dim: 8}} {
		if _, err := New("floater", nil, arch); err != nil {
			t.Errorf("causal=%v: %v", arch.Causal, err)
		}
	}
	for _, c := range []struct {
		opts map[string]any
		want string
	}{
		{map[string]any{"steps": 0.0}, "steps"},
		{map[string]any{"steps": 2.5}, `"steps" must be an integer`},
		{map[string]any{"time_scale": 0.0}, "time_scale"},
		{map[string]any{"time_scale": -4.0}, "time_scale"},
		{map[string]any{"hidden": 0.0}, "hidden"},
		{map[string]any{"learned_p0": "yes"}, `"learned_p0" must be true or false`},
		{map[string]any{"solver": "euler"}, "unknown option solver"},
	} {
		_, err := New("floater", c.opts, Arch{Dim: 8})
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: error %v, want one line mentioning %q", c.opts, err, c.want)
		}
	}
}
