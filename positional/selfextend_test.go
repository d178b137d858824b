package positional

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// Self-Extend's scores against the paper's positions computed in float64: the pair (i, j) keeps
// RoPE at (i, j) when i − j < W and uses (⌊i/G⌋ + W − ⌊W/G⌋, ⌊j/G⌋) otherwise; with W past
// every distance it is RoPE.
func TestSelfExtendScores(t *testing.T) {
	const hd, G, W = 8, 4, 6
	r := rand.New(rand.NewPCG(91, 92))
	qv, kv := make([]float32, 2*hd), make([]float32, 2*hd)
	for i := range qv {
		qv[i], kv[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
	}
	newSE := func(w int) Scheme {
		s, err := New("rope", map[string]any{"self_extend": map[string]any{"group": G, "window": w}}, Arch{Dim: 2 * hd, NumHeads: 2, NumKVHeads: 2, HeadDim: hd})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	se := newSE(W).(*SelfExtend)
	if _, isQK := Scheme(se).(QueryKey); isQK {
		t.Fatal("Self-Extend must not rotate keys before they are cached")
	}
	wide := newSE(1000).(*SelfExtend)
	plain := newScaledRoPE(t, hd, 0, nil).(*RoPE)
	be := backend(t)
	rope := func(qh, kh []float32, pi, pj int) float64 { // half layout: pair (i, i + hd/2)
		sum := 0.0
		for i := range hd / 2 {
			theta := 1 / math.Pow(10000, float64(2*i)/hd)
			d := float64(pi-pj) * theta
			qa, qb, ka, kb := float64(qh[i]), float64(qh[i+hd/2]), float64(kh[i]), float64(kh[i+hd/2])
			sum += math.Cos(d)*(qa*ka+qb*kb) + math.Sin(d)*(qa*kb-qb*ka)
		}
		return sum
	}
	for _, c := range [][2]int{{3, 1}, {5, 0}, {6, 0}, {13, 2}, {40, 39}, {40, 3}, {103, 50}} {
		args := []any{tensors.FromFlatDataAndDimensions(qv, 1, 2, 1, hd), tensors.FromFlatDataAndDimensions(kv, 1, 2, 1, hd),
			[][]int32{{int32(c[0])}}, [][]int32{{int32(c[1])}}}
		score := func(s Scores) []float32 {
			return tensors.MustCopyFlatData[float32](MustExecOnce(be, func(qn, kn, qp, kp *Node) *Node {
				return s.Scores(nil, 0, qn, kn, qp, kp)
			}, args...))
		}
		got, gotWide := score(se), score(wide)
		ref := tensors.MustCopyFlatData[float32](MustExecOnce(be, func(qn, kn, qp, kp *Node) *Node {
			return ReduceSum(Mul(plain.Rotate(qn, qp), plain.Rotate(kn, kp)), -1)
		}, args...))
		pi, pj := c[0], c[1]
		if pi-pj >= W {
			pi, pj = pi/G+W-W/G, pj/G
		}
		for h := range 2 {
			want := rope(qv[h*hd:(h+1)*hd], kv[h*hd:(h+1)*hd], pi, pj)
			if math.Abs(float64(got[h])-want) > 1e-4*max(1, math.Abs(want)) {
				t.Errorf("(i, j) = %v head %d: %g, want RoPE at (%d, %d) = %g", c, h, got[h], pi, pj, want)
			}
			if math.Abs(float64(gotWide[h]-ref[h])) > 1e-5*max(1, math.Abs(float64(ref[h]))) {
				t.Errorf("(i, j) = %v head %d, W past every distance: %g, plain RoPE %g", c, h, gotWide[h], ref[h])
			}
		}
	}
	arch := Arch{Dim: 2 * hd, NumHeads: 2, NumKVHeads: 2, HeadDim: hd}
	for _, c := range []struct {
		block map[string]any
		want  string
	}{
		{map[string]any{"group": 0, "window": 4}, "--grp-attn-n"},
		{map[string]any{"group": 2}, "--grp-attn-w"},
	} {
		if _, err := New("rope", map[string]any{"self_extend": c.block}, arch); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error naming %s", c.block, err, c.want)
		}
	}
}
