package positional

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

func backend(t *testing.T) backends.Backend {
	t.Helper()
	b, err := simplego.New("ops_sequential")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The graph's code equals the closed form sin(pos/10000^(2i/d)), cos(...).
func TestSinusoidalClosedForm(t *testing.T) {
	const n, d = 50, 16
	pos := make([][]int32, 1)
	for p := range n {
		pos[0] = append(pos[0], int32(p))
	}
	got := MustExecOnce(backend(t), func(g *Graph) *Node {
		return SinusoidalGraph(Const(g, pos), d, 10000, dtypes.Float32)
	})
	flat := tensors.MustCopyFlatData[float32](got)
	for p := range n {
		for i := range d / 2 {
			w := 1 / math.Pow(10000, float64(2*i)/d)
			if e := math.Abs(float64(flat[p*d+2*i]) - math.Sin(float64(p)*w)); e > 1e-5 {
				t.Fatalf("PE(%d, %d) off by %g", p, 2*i, e)
			}
			if e := math.Abs(float64(flat[p*d+2*i+1]) - math.Cos(float64(p)*w)); e > 1e-5 {
				t.Fatalf("PE(%d, %d) off by %g", p, 2*i+1, e)
			}
		}
	}
}

// For each k one matrix M_k, built from the frequencies alone and so independent of pos,
// maps PE(pos) to PE(pos+k): sin(a+b) = sin a cos b + cos a sin b, cos(a+b) = cos a cos b − sin a sin b.
func TestSinusoidalRotation(t *testing.T) {
	const d = 16
	table := SinusoidalTable(300, d, 10000)
	for _, k := range []int{1, 3, 10, 57} {
		m := make([][]float64, d)
		for i := range m {
			m[i] = make([]float64, d)
		}
		for i, w := range Frequencies(d, 10000) {
			c, s := math.Cos(float64(k)*w), math.Sin(float64(k)*w)
			m[2*i][2*i], m[2*i][2*i+1] = c, s
			m[2*i+1][2*i], m[2*i+1][2*i+1] = -s, c
		}
		worst := 0.0
		for pos := 0; pos+k < len(table); pos++ {
			for r := range d {
				v := 0.0
				for c := range d {
					v += m[r][c] * table[pos][c]
				}
				worst = max(worst, math.Abs(v-table[pos+k][r]))
			}
		}
		t.Logf("k=%d: max |PE(pos+k) - M_k PE(pos)| = %.3g", k, worst)
		if worst > 1e-9 {
			t.Errorf("k=%d: rotation property off by %g", k, worst)
		}
	}
}

// RoPE: the score of a query at m and a key at n depends only on m−n.
func TestRoPERelative(t *testing.T) {
	b := backend(t)
	r := rand.New(rand.NewPCG(1, 2))
	for _, opts := range []map[string]any{
		{}, {"layout": "interleaved"}, {"rotary_fraction": 0.5}, {"layout": "interleaved", "rotary_fraction": 0.5, "base": 500.0},
	} {
		s, err := New("rope", opts, Arch{Dim: 32, NumHeads: 2, NumKVHeads: 2, HeadDim: 16})
		if err != nil {
			t.Fatal(err)
		}
		rope := s.(*RoPE)
		q, k := make([]float32, 16), make([]float32, 16)
		for i := range q {
			q[i], k[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
		}
		score := func(m, n int) float64 {
			out := MustExecOnce(b, func(g *Graph) *Node {
				qn := Reshape(Const(g, q), 1, 1, 1, 16)
				kn := Reshape(Const(g, k), 1, 1, 1, 16)
				qr := rope.Rotate(qn, Const(g, [][]int32{{int32(m)}}))
				kr := rope.Rotate(kn, Const(g, [][]int32{{int32(n)}}))
				return ReduceAllSum(Mul(qr, kr))
			})
			return float64(tensors.ToScalar[float32](out))
		}
		for _, c := range [][3]int{{5, 2, 7}, {0, 9, 100}, {30, 30, 13}, {3, 40, 1000}} {
			a, b := score(c[0], c[1]), score(c[0]+c[2], c[1]+c[2])
			if math.Abs(a-b) > 1e-3*max(1, math.Abs(a)) {
				t.Errorf("%v: score(%d,%d)=%g but shifted by %d: %g", opts, c[0], c[1], a, c[2], b)
			}
		}
		if math.Abs(score(5, 2)-score(5, 3)) < 1e-4 {
			t.Errorf("%v: score does not depend on distance", opts)
		}
	}
}

// ALiBi's slopes for 8, 12 and 6 heads, written out from the paper's reference code.
func TestALiBiSlopes(t *testing.T) {
	p := func(e float64) float64 { return math.Pow(2, e) }
	want := map[int][]float64{
		8:  {p(-1), p(-2), p(-3), p(-4), p(-5), p(-6), p(-7), p(-8)},
		12: {p(-1), p(-2), p(-3), p(-4), p(-5), p(-6), p(-7), p(-8), p(-0.5), p(-1.5), p(-2.5), p(-3.5)},
		6:  {p(-2), p(-4), p(-6), p(-8), p(-1), p(-3)},
	}
	for n, w := range want {
		got := ALiBiSlopes(n)
		if len(got) != n {
			t.Fatalf("%d heads: %d slopes", n, len(got))
		}
		for i := range w {
			if math.Abs(got[i]-w[i]) > 1e-12 {
				t.Errorf("%d heads: slope %d = %g, want %g", n, i, got[i], w[i])
			}
		}
	}
}

// ALiBi's bias is −m_h·|i−j| at arbitrary explicit positions.
func TestALiBiBias(t *testing.T) {
	s, _ := New("alibi", nil, Arch{NumHeads: 4})
	qPos := [][]int32{{3, 10}}
	kPos := [][]int32{{0, 3, 7, 12}}
	out := MustExecOnce(backend(t), func(g *Graph) *Node {
		return s.(Bias).Bias(nil, 0, Const(g, qPos), Const(g, kPos), 4)
	})
	flat := tensors.MustCopyFlatData[float32](out)
	slopes := ALiBiSlopes(4)
	for h := range 4 {
		for i := range 2 {
			for j := range 4 {
				want := -slopes[h] * math.Abs(float64(qPos[0][i]-kPos[0][j]))
				if got := float64(flat[(h*2+i)*4+j]); math.Abs(got-want) > 1e-5 {
					t.Errorf("bias[%d,%d,%d] = %g, want %g", h, i, j, got, want)
				}
			}
		}
	}
}

func TestRegistryErrors(t *testing.T) {
	arch := Arch{Dim: 32, NumHeads: 2, NumKVHeads: 2, HeadDim: 16}
	for _, c := range []struct {
		name string
		opts map[string]any
		want []string
	}{
		{"nope", nil, []string{`"nope"`, "alibi", "learned", "none", "rope", "sinusoidal"}},
		{"rope", map[string]any{"bas": 1.0}, []string{"bas", "base"}},
		{"rope", map[string]any{"base": "x"}, []string{"base", "number"}},
		{"rope", map[string]any{"layout": "diagonal"}, []string{"half", "interleaved"}},
		{"learned", nil, []string{"max_positions"}},
		{"learned", map[string]any{"max_positions": 8.0, "beyond": "interpolate"}, []string{"interpolate_to"}},
	} {
		_, err := New(c.name, c.opts, arch)
		if err == nil {
			t.Errorf("%s %v: no error", c.name, c.opts)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s %v: error %q does not mention %q", c.name, c.opts, err, w)
			}
		}
	}
}
