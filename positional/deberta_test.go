package positional

// DeBERTa (He et al. 2021), checked against the paper's formulas written out in plain Go.

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

var _ interface {
	Relative
	Bucketed
	LogitScale
} = (*DeBERTa)(nil)

// debertaPaperDelta is δ(i, j) exactly as the paper defines it (eq. 3).
func debertaPaperDelta(i, j, k int) int {
	switch {
	case i-j <= -k:
		return 0
	case i-j >= k:
		return 2*k - 1
	default:
		return i - j + k
	}
}

// debertaFixture is a DeBERTa scheme whose P and layer-1 projections are set to random values,
// with Q^r and K^r computed from them in float64.
type debertaFixture struct {
	s      *DeBERTa
	ctx    *context.Context
	be     backends.Backend
	qr, kr [][][]float64 // [2k][heads][hd]
}

func newDeBERTaFixture(t *testing.T, r *rand.Rand, k, heads, hd int) debertaFixture {
	t.Helper()
	const dim = 12
	s, err := New("deberta", map[string]any{"max_distance": float64(k)}, Arch{Dim: dim, NumHeads: heads, NumKVHeads: heads, HeadDim: hd, Causal: true})
	if err != nil {
		t.Fatal(err)
	}
	f := debertaFixture{s: s.(*DeBERTa), ctx: context.New().Checked(false), be: backend(t)}
	p := shawRandom(r, 2*k*dim)
	wq, wk := shawRandom(r, dim*heads*hd), shawRandom(r, dim*heads*hd)
	f.ctx.VariableWithValue("p", tensors.FromFlatDataAndDimensions(p, 2*k, dim))
	lctx := LayerScope(f.ctx, 1)
	lctx.VariableWithValue("wq_r", tensors.FromFlatDataAndDimensions(wq, heads*hd, dim))
	lctx.VariableWithValue("wk_r", tensors.FromFlatDataAndDimensions(wk, heads*hd, dim))
	project := func(w []float32) [][][]float64 { // P·Wᵀ (W stored [out, in]), split into heads
		out := make([][][]float64, 2*k)
		for row := range out {
			out[row] = make([][]float64, heads)
			for h := range heads {
				out[row][h] = make([]float64, hd)
				for d := range hd {
					for c := range dim {
						out[row][h][d] += float64(p[row*dim+c]) * float64(w[(h*hd+d)*dim+c])
					}
				}
			}
		}
		return out
	}
	f.qr, f.kr = project(wq), project(wk)
	return f
}

func (f debertaFixture) logits(t *testing.T, q, k []float32, b, h, hd int, qPos, kPos [][]int32) []float32 {
	t.Helper()
	s, tk := len(qPos[0]), len(kPos[0])
	out := context.MustExecOnce(f.be, f.ctx, func(ctx *context.Context, q, k, qp, kp *Node) *Node {
		return f.s.RelativeLogits(ctx, 1, q, k, qp, kp)
	}, tensors.FromFlatDataAndDimensions(q, b, h, s, hd), tensors.FromFlatDataAndDimensions(k, b, h, tk, hd), qPos, kPos)
	return tensors.MustCopyFlatData[float32](out)
}

// The content→position term Q^c_i·K^r_δ(i,j) and the position→content term K^c_j·Q^r_δ(j,i),
// each alone (the other's content set to zero) and together, at arbitrary batched positions
// with more keys than queries and distances past k on both sides. With 4 queries, k = 2 takes
// the all-rows form of the position→content term and k = 3 the row-per-pair form.
func TestDeBERTaClosedForm(t *testing.T) {
	const b, h, hd = 2, 3, 4
	qPos := [][]int32{{7, 8, 9, 10}, {0, 2, 4, 40}}
	kPos := [][]int32{{1, 5, 7, 8, 9, 10, 12}, {40, 0, 1, 2, 4, 60, 3}}
	s, tk := len(qPos[0]), len(kPos[0])
	for _, maxDist := range []int{2, 3} {
		r := rand.New(rand.NewPCG(31, uint64(maxDist)))
		f := newDeBERTaFixture(t, r, maxDist, h, hd)
		q, k := shawRandom(r, b*h*s*hd), shawRandom(r, b*h*tk*hd)
		zq, zk := make([]float32, len(q)), make([]float32, len(k))

		ref := func(c2p, p2c bool) []float64 {
			out := make([]float64, b*h*s*tk)
			for bi := range b {
				for hi := range h {
					for i := range s {
						for j := range tk {
							qi, kj := int(qPos[bi][i]), int(kPos[bi][j])
							e := 0.0
							for d := range hd {
								if c2p {
									e += float64(q[((bi*h+hi)*s+i)*hd+d]) * f.kr[debertaPaperDelta(qi, kj, maxDist)][hi][d]
								}
								if p2c {
									e += float64(k[((bi*h+hi)*tk+j)*hd+d]) * f.qr[debertaPaperDelta(kj, qi, maxDist)][hi][d]
								}
							}
							out[((bi*h+hi)*s+i)*tk+j] = e
						}
					}
				}
			}
			return out
		}
		for _, c := range []struct {
			name     string
			q, k     []float32
			c2p, p2c bool
		}{
			{"content→position", q, zk, true, false},
			{"position→content", zq, k, false, true},
			{"both", q, k, true, true},
		} {
			got := f.logits(t, c.q, c.k, b, h, hd, qPos, kPos)
			want := ref(c.c2p, c.p2c)
			worst := 0.0
			for i := range want {
				worst = max(worst, math.Abs(float64(got[i])-want[i]))
			}
			t.Logf("k=%d %s: max |graph - closed form| = %.3g", maxDist, c.name, worst)
			if worst > 1e-4 {
				t.Errorf("k=%d %s: graph differs from the closed form by %g", maxDist, c.name, worst)
			}
		}
	}
}

// Saturation at the paper's exact bounds. δ(i,j) clips i-j to [-k, k-1], so the
// content→position term is already saturated at i-j = k-1 but not at -(k-1); the
// position→content term reads δ(j,i), the mirror image. Their sum saturates for |i-j| >= k.
func TestDeBERTaSaturation(t *testing.T) {
	const hd, k = 4, 3
	r := rand.New(rand.NewPCG(33, 34))
	f := newDeBERTaFixture(t, r, k, 1, hd)
	// One query at 100; keys with the same content at these offsets i-j.
	offsets := []int{k - 1, k, k + 1, k + 7, 100, -(k - 1), -k, -k - 1, -k - 20}
	kRow := make([]int32, len(offsets))
	for j, o := range offsets {
		kRow[j] = int32(100 - o)
	}
	q, kv := shawRandom(r, hd), shawRandom(r, hd)
	keys := make([]float32, 0, len(offsets)*hd)
	for range offsets {
		keys = append(keys, kv...)
	}
	zq, zk := make([]float32, hd), make([]float32, len(keys))
	run := func(q, k []float32) map[int]float32 {
		got := f.logits(t, q, k, 1, 1, hd, [][]int32{{100}}, [][]int32{kRow})
		m := map[int]float32{}
		for j, o := range offsets {
			m[o] = got[j]
		}
		return m
	}
	c2p, p2c, both := run(q, zk), run(zq, keys), run(q, keys)
	eq := func(a, b float32) bool { return math.Abs(float64(a-b)) < 1e-5 }
	check := func(name string, m map[int]float32, sameAs map[int][]int, differ [][2]int) {
		for o, others := range sameAs {
			for _, o2 := range others {
				if !eq(m[o], m[o2]) {
					t.Errorf("%s: i-j=%d gives %g, i-j=%d gives %g; want equal", name, o, m[o], o2, m[o2])
				}
			}
		}
		for _, d := range differ {
			if eq(m[d[0]], m[d[1]]) {
				t.Errorf("%s: i-j=%d and %d both give %g; want different", name, d[0], d[1], m[d[0]])
			}
		}
	}
	check("content→position", c2p,
		map[int][]int{k - 1: {k, k + 1, k + 7, 100}, -k: {-k - 1, -k - 20}},
		[][2]int{{-(k - 1), -k}, {k - 1, -k}})
	check("position→content", p2c,
		map[int][]int{k: {k + 1, k + 7, 100}, -(k - 1): {-k, -k - 1, -k - 20}},
		[][2]int{{k - 1, k}, {k, -k}})
	check("sum", both,
		map[int][]int{k: {k + 1, k + 7, 100}, -k: {-k - 1, -k - 20}},
		[][2]int{{k - 1, k}, {-(k - 1), -k}, {k, -k}})
}

// Shifting every position by a constant leaves the logits unchanged; moving the keys alone
// changes them.
func TestDeBERTaDependsOnOffsetOnly(t *testing.T) {
	const b, h, hd, k = 2, 2, 4, 4
	r := rand.New(rand.NewPCG(35, 36))
	f := newDeBERTaFixture(t, r, k, h, hd)
	qPos := [][]int32{{0, 1, 2, 3, 9}, {4, 6, 8, 10, 12}}
	kPos := [][]int32{{0, 1, 2, 3, 9, 20, 30}, {11, 4, 6, 8, 10, 12, 2}}
	add := func(p [][]int32, c int32) [][]int32 {
		out := make([][]int32, len(p))
		for i := range p {
			for _, v := range p[i] {
				out[i] = append(out[i], v+c)
			}
		}
		return out
	}
	q, kc := shawRandom(r, b*h*5*hd), shawRandom(r, b*h*7*hd)
	l0 := f.logits(t, q, kc, b, h, hd, qPos, kPos)
	l1 := f.logits(t, q, kc, b, h, hd, add(qPos, 1000), add(kPos, 1000))
	l2 := f.logits(t, q, kc, b, h, hd, qPos, add(kPos, 1))
	diff := func(a, b []float32) float64 {
		worst := 0.0
		for i := range a {
			worst = max(worst, math.Abs(float64(a[i]-b[i])))
		}
		return worst
	}
	if d := diff(l0, l1); d > 1e-4 {
		t.Errorf("shifting all positions by 1000 changes the logits by %g", d)
	}
	if d := diff(l0, l2); d < 1e-3 {
		t.Errorf("moving the keys by one changes the logits by only %g", d)
	}
}

func TestDeBERTaScaleBucketAndOptions(t *testing.T) {
	for _, k := range []int{1, 3, 16} {
		s, err := New("deberta", map[string]any{"max_distance": float64(k)}, Arch{Dim: 16, NumHeads: 2, NumKVHeads: 2, HeadDim: 8})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 40; i += 7 {
			for j := range 60 {
				if got, want := s.(Bucketed).Bucket(i, j), debertaPaperDelta(i, j, k); got != want {
					t.Errorf("k=%d: Bucket(%d, %d) = %d, want δ = %d", k, i, j, got, want)
				}
			}
		}
		for _, hd := range []int{4, 8, 64} {
			if got, want := s.(LogitScale).LogitScale(hd), 1/math.Sqrt(3*float64(hd)); math.Abs(got-want) > 1e-15 {
				t.Errorf("LogitScale(%d) = %g, want 1/sqrt(3·%d) = %g", hd, got, hd, want)
			}
		}
	}
	for _, causal := range []bool{true, false} {
		s, err := New("deberta", nil, Arch{Dim: 32, NumHeads: 4, NumKVHeads: 2, HeadDim: 8, NumLayers: 2, Causal: causal})
		if err != nil {
			t.Fatalf("causal=%v, default options: %v", causal, err)
		}
		if s.(*DeBERTa).MaxDistance != 16 {
			t.Errorf("default max_distance %d, want 16", s.(*DeBERTa).MaxDistance)
		}
	}
	for _, bad := range []any{0.0, -3.0, 2.5, "8"} {
		_, err := New("deberta", map[string]any{"max_distance": bad}, Arch{Dim: 16, NumHeads: 2, NumKVHeads: 2, HeadDim: 8})
		if err == nil || !strings.Contains(err.Error(), "max_distance") {
			t.Errorf("max_distance=%v: error %v", bad, err)
		}
	}
}
