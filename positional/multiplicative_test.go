package positional

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

var (
	_ Input    = (*Multiplicative)(nil)
	_ Absolute = (*Multiplicative)(nil)
)

func newMultiplicative(t *testing.T, opts map[string]any, dim int) *Multiplicative {
	t.Helper()
	s, err := New("multiplicative", opts, Arch{Dim: dim})
	if err != nil {
		t.Fatal(err)
	}
	return s.(*Multiplicative)
}

// multiplicativeFactor is the closed form m(pos)_k = 1 + α·(sin or cos)(pos / base^(2⌊k/2⌋/d)),
// written from the formula rather than from the package's sinusoidal helpers.
func multiplicativeFactor(pos, k, dim int, base, alpha float64) float64 {
	angle := float64(pos) / math.Pow(base, float64(k/2*2)/float64(dim))
	if k%2 == 0 {
		return 1 + alpha*math.Sin(angle)
	}
	return 1 + alpha*math.Cos(angle)
}

// multiplicativeCodes runs Code at positions pos and returns one row of dim values per position.
func multiplicativeCodes(t *testing.T, m *Multiplicative, pos [][]int32, dim int) [][]float32 {
	t.Helper()
	out := MustExecOnce(backend(t), func(g *Graph) *Node { return m.Code(nil, Const(g, pos), dim) })
	flat := tensors.MustCopyFlatData[float32](out)
	rows := make([][]float32, len(flat)/dim)
	for i := range rows {
		rows[i] = flat[i*dim : (i+1)*dim]
	}
	return rows
}

// The graph's factor equals 1 + α·PE at arbitrary, batched, unordered positions, and the Input
// hook multiplies the embeddings by it.
func TestMultiplicativeClosedForm(t *testing.T) {
	const dim = 16
	pos := [][]int32{{0, 7, 3, 2999, 41}, {41, 1000, 1, 0, 250}}
	r := rand.New(rand.NewPCG(21, 22))
	for _, c := range []struct {
		opts        map[string]any
		base, alpha float64
	}{
		{nil, 10000, 0.5},
		{map[string]any{"base": 500.0, "scale": 0.25}, 500, 0.25},
		{map[string]any{"scale": 0.9}, 10000, 0.9},
	} {
		m := newMultiplicative(t, c.opts, dim)
		codes := multiplicativeCodes(t, m, pos, dim)
		x := make([]float32, 2*5*dim)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		out := MustExecOnce(backend(t), func(g *Graph) *Node {
			return m.Input(nil, Reshape(Const(g, x), 2, 5, dim), Const(g, pos))
		})
		got := tensors.MustCopyFlatData[float32](out)
		worst := 0.0
		for b := range 2 {
			for i := range 5 {
				for k := range dim {
					want := multiplicativeFactor(int(pos[b][i]), k, dim, c.base, c.alpha)
					worst = max(worst, math.Abs(float64(codes[b*5+i][k])-want))
					idx := (b*5+i)*dim + k
					if e := math.Abs(float64(got[idx]) - float64(x[idx])*want); e > 1e-3*c.alpha*max(1, math.Abs(float64(x[idx]))) {
						t.Errorf("%v: Input[%d,%d,%d] = %g, want x·m = %g", c.opts, b, i, k, got[idx], float64(x[idx])*want)
					}
				}
			}
		}
		t.Logf("%v: max |graph − closed form| = %.3g", c.opts, worst)
		// Angles are float32 in the graph: at pos ≈ 3000 they carry ~1e-4 of rounding.
		if worst > 1e-3*c.alpha {
			t.Errorf("%v: factor differs from 1 + α·PE by %g", c.opts, worst)
		}
	}
}

// Positions 0..L-1 get pairwise distinct factors, far enough apart to be told apart in float32.
func TestMultiplicativeDistinctPositions(t *testing.T) {
	const dim, n = 32, 1024
	for _, opts := range []map[string]any{nil, {"scale": 0.1, "base": 100.0}} {
		m := newMultiplicative(t, opts, dim)
		codes := multiplicativeCodes(t, m, iotaPositions(n), dim)
		closest, pair := math.Inf(1), [2]int{}
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
		}
		t.Logf("%v: closest codes among positions 0..%d: %d and %d, %.4g apart (α = %g)", opts, n-1, pair[0], pair[1], closest, m.Scale)
		if closest < 0.1*m.Scale {
			t.Errorf("%v: positions %d and %d have codes only %g apart", opts, pair[0], pair[1], closest)
		}
	}
}

// The map x → x ⊙ m(pos) is invertible at every position: no factor comes near zero (each lies
// in [1−α, 1+α]), and dividing by the factor gives back the embedding.
func TestMultiplicativeContentRecoverable(t *testing.T) {
	const dim = 16
	var pos []int32
	for p := range 5000 {
		pos = append(pos, int32(p))
	}
	pos = append(pos, 65535, 1<<20, math.MaxInt32)
	for _, alpha := range []float64{0.5, 0.95} {
		m := newMultiplicative(t, map[string]any{"scale": alpha}, dim)
		codes := multiplicativeCodes(t, m, [][]int32{pos}, dim)
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, row := range codes {
			for _, v := range row {
				lo, hi = min(lo, float64(v)), max(hi, float64(v))
			}
		}
		t.Logf("α=%g: factors over %d positions lie in [%.6g, %.6g]", alpha, len(pos), lo, hi)
		if lo < 1-alpha-1e-6 || hi > 1+alpha+1e-6 || lo <= 0 {
			t.Errorf("α=%g: factors span [%g, %g], want within [%g, %g] and > 0", alpha, lo, hi, 1-alpha, 1+alpha)
		}

		r := rand.New(rand.NewPCG(23, 24))
		sample := []int32{0, 1, 2, 17, 4999, math.MaxInt32}
		x := make([]float32, len(sample)*dim)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		out := MustExecOnce(backend(t), func(g *Graph) *Node {
			p := Const(g, [][]int32{sample})
			xp := m.Input(nil, Reshape(Const(g, x), 1, len(sample), dim), p)
			return Div(xp, m.Code(nil, p, dim))
		})
		back := tensors.MustCopyFlatData[float32](out)
		for i := range x {
			if e := math.Abs(float64(back[i] - x[i])); e > 1e-6*max(1, math.Abs(float64(x[i]))) {
				t.Errorf("α=%g: position %d dim %d: x = %g, recovered %g", alpha, sample[i/dim], i%dim, x[i], back[i])
			}
		}
	}
}

func TestMultiplicativeOptions(t *testing.T) {
	if m := newMultiplicative(t, nil, 8); m.Base != 10000 || m.Scale != 0.5 {
		t.Errorf("defaults: base %g, scale %g; want 10000, 0.5", m.Base, m.Scale)
	}
	for _, c := range []struct {
		opts map[string]any
		dim  int
		want string
	}{
		{map[string]any{"scale": 0.0}, 8, "scale"},
		{map[string]any{"scale": 1.0}, 8, "scale"},
		{map[string]any{"scale": -0.5}, 8, "scale"},
		{map[string]any{"base": 1.0}, 8, "base"},
		{nil, 7, "even"},
		{map[string]any{"alpha": 0.3}, 8, "unknown option alpha"},
	} {
		_, err := New("multiplicative", c.opts, Arch{Dim: c.dim})
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v dim %d: error %v, want one line mentioning %q", c.opts, c.dim, err, c.want)
		}
	}
}
