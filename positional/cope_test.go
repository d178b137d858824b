package positional

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// CoPE's term against the paper's formula in float64: p_ij = Σ_{t=j..i} g_it clamped to P−1,
// q_i·e interpolated between ⌊p⌋ and ⌈p⌉. With every gate at 1 (the first case) p_ij = i−j+1:
// CoPE is then a relative scheme on i − j.
func TestCoPEFromGates(t *testing.T) {
	const hd, s, P = 4, 9, 6
	c := &CoPE{MaxPositions: P, HeadDim: hd}
	r := rand.New(rand.NewPCG(71, 72))
	random := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		return v
	}
	qv, ev := random(2*s*hd), random(hd*P)
	for _, ones := range []bool{true, false} {
		gates := make([]float32, 2*s*s)
		for h := range 2 {
			for i := range s {
				for j := 0; j <= i; j++ {
					gates[(h*s+i)*s+j] = 1
					if !ones {
						gates[(h*s+i)*s+j] = r.Float32()
					}
				}
			}
		}
		out := MustExecOnce(backend(t), func(qn, gn, en *Node) *Node { return c.fromGates(qn, gn, en) },
			tensors.FromFlatDataAndDimensions(qv, 1, 2, s, hd), tensors.FromFlatDataAndDimensions(gates, 1, 2, s, s),
			tensors.FromFlatDataAndDimensions(ev, hd, P))
		got := tensors.MustCopyFlatData[float32](out)
		for h := range 2 {
			for i := range s {
				qe := func(m int) float64 { // q_i·e[m]
					d := 0.0
					for k := range hd {
						d += float64(qv[(h*s+i)*hd+k]) * float64(ev[k*P+m])
					}
					return d
				}
				for j := range s {
					p := 0.0
					for t := j; t <= i; t++ {
						p += float64(gates[(h*s+i)*s+t])
					}
					if ones && j <= i && p != float64(i-j+1) {
						t.Fatalf("gates at 1: p_%d%d = %g, want i−j+1", i, j, p)
					}
					p = math.Min(p, P-1)
					lo := math.Floor(p)
					want := (1-(p-lo))*qe(int(lo)) + (p-lo)*qe(int(math.Min(lo+1, P-1)))
					if g := float64(got[(h*s+i)*s+j]); math.Abs(g-want) > 1e-4*max(1, math.Abs(want)) {
						t.Errorf("gates at 1 %v, head %d, (i, j) = (%d, %d): %g, want %g", ones, h, i, j, g, want)
					}
				}
			}
		}
	}
	arch := Arch{Dim: 16, NumHeads: 2, NumKVHeads: 2, HeadDim: 8, Causal: true}
	if _, err := New("cope", map[string]any{"max_positions": 1}, arch); err == nil || !strings.Contains(err.Error(), "max_positions") {
		t.Errorf("max_positions 1: %v", err)
	}
	arch.Causal = false
	if _, err := New("cope", nil, arch); err == nil || !strings.Contains(err.Error(), "decoder") {
		t.Errorf("an encoder: %v", err)
	}
}
