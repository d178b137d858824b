package positional

// Shaw et al. 2018, checked against the paper's formulas written out in plain Go.

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
} = (*Shaw)(nil)

// shawPaperBucket is the row of w^K/w^V for a query at i and a key at j, from the paper's
// clip(j-i, -k, k) with rows numbered from -k.
func shawPaperBucket(i, j, k int) int {
	switch d := j - i; {
	case d <= -k:
		return 0
	case d >= k:
		return 2 * k
	default:
		return d + k
	}
}

func shawRandom(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	return x
}

// shawFixture is a Shaw scheme whose layer-1 tables are set to random values.
type shawFixture struct {
	s      *Shaw
	ctx    *context.Context
	be     backends.Backend // one per fixture: its variables stay on the backend they were sent to
	wk, wv []float32        // [2k+1, hd]
}

func newShawFixture(t *testing.T, r *rand.Rand, k, hd int) shawFixture {
	t.Helper()
	s, err := New("shaw", map[string]any{"max_distance": float64(k)}, Arch{Dim: 4 * hd, NumHeads: 4, NumKVHeads: 4, HeadDim: hd, Causal: true})
	if err != nil {
		t.Fatal(err)
	}
	f := shawFixture{s: s.(*Shaw), ctx: context.New().Checked(false), be: backend(t), wk: shawRandom(r, (2*k+1)*hd), wv: shawRandom(r, (2*k+1)*hd)}
	lctx := LayerScope(f.ctx, 1)
	lctx.VariableWithValue("wk", tensors.FromFlatDataAndDimensions(f.wk, 2*k+1, hd))
	lctx.VariableWithValue("wv", tensors.FromFlatDataAndDimensions(f.wv, 2*k+1, hd))
	return f
}

// run returns RelativeLogits(q) [b, h, s, t] and RelativeValues(probs) [b, h, s, hd], flat.
func (f shawFixture) run(t *testing.T, q []float32, probs []float32, b, h, hd int, qPos, kPos [][]int32) (logits, values []float32) {
	t.Helper()
	s, tk := len(qPos[0]), len(kPos[0])
	outs := context.MustExecOnceN(f.be, f.ctx, func(ctx *context.Context, q, probs, qp, kp *Node) []*Node {
		// The keys' content is not used by Shaw's relative terms; zeros stand in for them.
		k := Zeros(q.Graph(), q.Shape())
		return []*Node{f.s.RelativeLogits(ctx, 1, q, k, qp, kp), f.s.RelativeValues(ctx, 1, probs, qp, kp)}
	}, tensors.FromFlatDataAndDimensions(q, b, h, s, hd), tensors.FromFlatDataAndDimensions(probs, b, h, s, tk), qPos, kPos)
	return tensors.MustCopyFlatData[float32](outs[0]), tensors.MustCopyFlatData[float32](outs[1])
}

// Graph = the paper's q_i·a^K_ij and Σ_j α_ij a^V_ij, at arbitrary batched positions with more
// keys than queries (as against a KV cache), with distances past k on both sides.
func TestShawClosedForm(t *testing.T) {
	const b, h, hd, k = 2, 3, 5, 2
	r := rand.New(rand.NewPCG(21, 22))
	f := newShawFixture(t, r, k, hd)
	qPos := [][]int32{{7, 8, 9, 10}, {0, 2, 4, 40}}
	kPos := [][]int32{{3, 5, 7, 8, 9, 10}, {40, 0, 1, 2, 4, 60}}
	s, tk := len(qPos[0]), len(kPos[0])
	q := shawRandom(r, b*h*s*hd)
	probs := shawRandom(r, b*h*s*tk)
	logits, values := f.run(t, q, probs, b, h, hd, qPos, kPos)

	worst := 0.0
	for bi := range b {
		for hi := range h {
			for i := range s {
				row := (bi*h+hi)*s + i
				z := make([]float64, hd)
				for j := range tk {
					bucket := shawPaperBucket(int(qPos[bi][i]), int(kPos[bi][j]), k)
					e, p := 0.0, float64(probs[row*tk+j])
					for d := range hd {
						e += float64(q[row*hd+d]) * float64(f.wk[bucket*hd+d])
						z[d] += p * float64(f.wv[bucket*hd+d])
					}
					worst = max(worst, math.Abs(e-float64(logits[row*tk+j])))
				}
				for d := range hd {
					worst = max(worst, math.Abs(z[d]-float64(values[row*hd+d])))
				}
			}
		}
	}
	t.Logf("max |graph - closed form| = %.3g", worst)
	if worst > 1e-4 {
		t.Errorf("graph differs from the closed form by %g", worst)
	}
}

// Clipping saturates: every key at distance >= k (or <= -k) gets the same term, and k-1 does
// not get the edge term yet.
func TestShawClipping(t *testing.T) {
	const hd, k = 4, 3
	r := rand.New(rand.NewPCG(23, 24))
	f := newShawFixture(t, r, k, hd)
	kRow := []int32{103, 104, 110, 1000, 97, 96, 90, 0, 102, 98}
	ahead, behind := []int{0, 1, 2, 3}, []int{4, 5, 6, 7}
	const nearAhead, nearBehind = 8, 9
	n := len(kRow)
	// n queries, all at position 100, the i-th attending only to key i: RelativeValues row i is
	// w^V of key i's bucket.
	qPos := [][]int32{make([]int32, n)}
	for i := range qPos[0] {
		qPos[0][i] = 100
	}
	probs := make([]float32, n*n)
	for i := range n {
		probs[i*n+i] = 1
	}
	q := shawRandom(r, hd)
	qs := make([]float32, 0, n*hd)
	for range n {
		qs = append(qs, q...)
	}
	logits, values := f.run(t, qs, probs, 1, 1, hd, qPos, [][]int32{kRow})
	same := func(a, b []float32) bool {
		for i := range a {
			if math.Abs(float64(a[i]-b[i])) > 1e-5 {
				return false
			}
		}
		return true
	}
	logit := func(j int) []float32 { return logits[j : j+1] }
	value := func(j int) []float32 { return values[j*hd : (j+1)*hd] }
	for _, group := range [][]int{ahead, behind} {
		for _, j := range group[1:] {
			if !same(logit(group[0]), logit(j)) {
				t.Errorf("logit for key at %d is %v, for key at %d %v: both are past k=%d", kRow[j], logit(j), kRow[group[0]], logit(group[0]), k)
			}
			if !same(value(group[0]), value(j)) {
				t.Errorf("value term for key at %d is %v, for key at %d %v: both are past k=%d", kRow[j], value(j), kRow[group[0]], value(group[0]), k)
			}
		}
	}
	if same(logit(ahead[0]), logit(nearAhead)) || same(value(ahead[0]), value(nearAhead)) {
		t.Errorf("distance k-1 gets the same terms as distance k")
	}
	if same(logit(behind[0]), logit(nearBehind)) || same(value(behind[0]), value(nearBehind)) {
		t.Errorf("distance -(k-1) gets the same terms as distance -k")
	}
	if same(logit(ahead[0]), logit(behind[0])) {
		t.Errorf("distances +k and -k share a row")
	}
}

// Shifting every position by a constant leaves both terms unchanged; moving the keys alone
// changes them.
func TestShawDependsOnOffsetOnly(t *testing.T) {
	const b, h, hd, k = 2, 2, 4, 4
	r := rand.New(rand.NewPCG(25, 26))
	f := newShawFixture(t, r, k, hd)
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
	q := shawRandom(r, b*h*5*hd)
	probs := shawRandom(r, b*h*5*7)
	l0, v0 := f.run(t, q, probs, b, h, hd, qPos, kPos)
	l1, v1 := f.run(t, q, probs, b, h, hd, add(qPos, 1000), add(kPos, 1000))
	l2, v2 := f.run(t, q, probs, b, h, hd, qPos, add(kPos, 1))
	diff := func(a, b []float32) float64 {
		worst := 0.0
		for i := range a {
			worst = max(worst, math.Abs(float64(a[i]-b[i])))
		}
		return worst
	}
	if d := max(diff(l0, l1), diff(v0, v1)); d > 1e-5 {
		t.Errorf("shifting all positions by 1000 changes the terms by %g", d)
	}
	if d := min(diff(l0, l2), diff(v0, v2)); d < 1e-3 {
		t.Errorf("moving the keys by one changes the terms by only %g", d)
	}
}

func TestShawBucketAndOptions(t *testing.T) {
	for _, k := range []int{1, 3, 16} {
		s, err := New("shaw", map[string]any{"max_distance": float64(k)}, Arch{HeadDim: 8})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 40; i += 7 {
			for j := range 60 {
				if got, want := s.(Bucketed).Bucket(i, j), shawPaperBucket(i, j, k); got != want {
					t.Errorf("k=%d: Bucket(%d, %d) = %d, want %d", k, i, j, got, want)
				}
			}
		}
	}
	for _, causal := range []bool{true, false} {
		s, err := New("shaw", nil, Arch{Dim: 32, NumHeads: 4, NumKVHeads: 2, HeadDim: 8, NumLayers: 2, Causal: causal})
		if err != nil {
			t.Fatalf("causal=%v, default options: %v", causal, err)
		}
		if s.(*Shaw).MaxDistance != 16 {
			t.Errorf("default max_distance %d, want 16", s.(*Shaw).MaxDistance)
		}
	}
	for _, bad := range []any{0.0, -3.0, 2.5, "8"} {
		_, err := New("shaw", map[string]any{"max_distance": bad}, Arch{HeadDim: 8})
		if err == nil || !strings.Contains(err.Error(), "max_distance") {
			t.Errorf("max_distance=%v: error %v", bad, err)
		}
	}
}
