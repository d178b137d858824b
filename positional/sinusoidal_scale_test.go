package positional

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
)

// sinusoidalScaleRun runs the Input hook on x [2, 3, d] at pos and returns the output and
// d sum(output)/d α (nil without learn_scale); alpha, when not NaN, is stored as α first.
func sinusoidalScaleRun(t *testing.T, s *Sinusoidal, ctx *context.Context, alpha float64, x []float32, pos [][]int32, d int) ([]float32, []float32) {
	t.Helper()
	if !math.IsNaN(alpha) {
		ctx.VariableWithValue("scale", float32(alpha))
	}
	outs := context.MustExecOnceN(backend(t), ctx, func(ctx *context.Context, xn, pn *Node) []*Node {
		y := s.Input(ctx, xn, pn)
		if !s.LearnScale {
			return []*Node{y}
		}
		return append([]*Node{y}, Gradient(ReduceAllSum(y), ctx.GetVariable("scale").ValueGraph(y.Graph()))...)
	}, tensors.FromFlatDataAndDimensions(x, 2, 3, d), pos)
	if len(outs) == 1 {
		return tensors.MustCopyFlatData[float32](outs[0]), nil
	}
	return tensors.MustCopyFlatData[float32](outs[0]), []float32{tensors.ToScalar[float32](outs[1])}
}

// learn_scale: x' = x·embed_scale + α·PE(pos), α a learned scalar starting at 1 (so training
// starts from the fixed scheme), with gradient Σ PE for the loss Σ x'.
func TestSinusoidalLearnScale(t *testing.T) {
	const d = 8
	pos := [][]int32{{7, 0, 3}, {41, 41, 2}}
	x := make([]float32, 2*3*d)
	r := rand.New(rand.NewPCG(51, 52))
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	table := SinusoidalTable(42, d, 10000)
	newSin := func(opts map[string]any) *Sinusoidal {
		s, err := New("sinusoidal", opts, Arch{Dim: d})
		if err != nil {
			t.Fatal(err)
		}
		return s.(*Sinusoidal)
	}
	learned := newSin(map[string]any{"learn_scale": true})
	fixed := newSin(nil)

	// A given α.
	got, grad := sinusoidalScaleRun(t, learned, context.New().Checked(false), 0.37, x, pos, d)
	peSum := 0.0
	for b := range 2 {
		for i := range 3 {
			for k := range d {
				idx := (b*3+i)*d + k
				pe := table[pos[b][i]][k]
				peSum += pe
				want := float64(x[idx])*math.Sqrt(d) + 0.37*pe
				if !(math.Abs(float64(got[idx])-want) <= 1e-5) {
					t.Errorf("α = 0.37: out[%d,%d,%d] = %g, want %g", b, i, k, got[idx], want)
				}
			}
		}
	}
	if !(math.Abs(float64(grad[0])-peSum) <= 1e-4*max(1, math.Abs(peSum))) {
		t.Errorf("d Σx'/dα = %g, want Σ PE = %g", grad[0], peSum)
	}

	// A fresh α is 1: the same output as the fixed scheme.
	ctx := context.New().Checked(false)
	fresh, _ := sinusoidalScaleRun(t, learned, ctx, math.NaN(), x, pos, d)
	plain, _ := sinusoidalScaleRun(t, fixed, context.New(), math.NaN(), x, pos, d)
	for i := range fresh {
		if fresh[i] != plain[i] {
			t.Fatalf("initial α: out[%d] = %g, fixed scheme gives %g", i, fresh[i], plain[i])
		}
	}
	if v := ctx.InspectVariable("/", "scale"); v == nil || tensors.ToScalar[float32](v.MustValue()) != 1 {
		t.Errorf("variable /scale = %v, want a scalar 1", v)
	}
	if _, err := New("sinusoidal", map[string]any{"learn_scale": "yes"}, Arch{Dim: d}); err == nil ||
		!strings.Contains(err.Error(), `"learn_scale" must be true or false`) {
		t.Errorf("learn_scale \"yes\": error %v", err)
	}
}
