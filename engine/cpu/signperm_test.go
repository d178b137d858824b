package cpu

import (
	"math/rand/v2"
	"testing"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// A product with a constant signed permutation (RoPE's swap of each rotated pair) gives each
// output as the one input it selects, negated or not, as the product would for finite values:
// adjacent pairs and halves, partial rotations (outputs of zero), an arbitrary signed
// permutation, the transposed matrix (the rotation's gradient), small and thread-sized inputs.
// A matrix with another value or a second nonzero in a row stays a product.
func TestSignedPermutationProducts(t *testing.T) {
	be := mustBackend(t, "")
	r := rand.New(rand.NewPCG(11, 12))
	rotation := func(hd, rotary int, interleaved bool) []float32 {
		w := make([]float32, hd*hd) // W[i][k]: output i reads input k
		for p := range rotary / 2 {
			a, b := p, p+rotary/2
			if interleaved {
				a, b = 2*p, 2*p+1
			}
			w[a*hd+b], w[b*hd+a] = -1, 1
		}
		return w
	}
	shuffled := func(hd int) []float32 {
		w := make([]float32, hd*hd)
		for i, k := range r.Perm(hd) {
			w[i*hd+k] = float32(1 - 2*r.IntN(2))
		}
		return w
	}
	notPerm := rotation(8, 8, true)
	notPerm[3] = 2
	twice := rotation(8, 8, false)
	twice[1] = 1
	for _, c := range []struct {
		name      string
		hd, rows  int
		w         []float32
		trans     bool // the product contracts W's first axis: x·W, as a rotation's gradient reads it
		rewritten bool
	}{
		{"adjacent pairs", 8, 12, rotation(8, 8, true), false, true},
		{"adjacent pairs, threads", 48, 6 * 512, rotation(48, 48, true), false, true},
		{"halves", 8, 12, rotation(8, 8, false), false, true},
		{"halves, threads", 64, 12 * 300, rotation(64, 64, false), false, true},
		{"partial, adjacent pairs", 12, 10, rotation(12, 8, true), false, true},
		{"partial, halves", 12, 10, rotation(12, 6, false), false, true},
		{"shuffled", 10, 7, shuffled(10), false, true},
		{"transposed", 8, 12, rotation(8, 8, true), true, true},
		{"transposed halves", 16, 9, rotation(16, 16, false), true, true},
		{"a value not ±1", 8, 12, notPerm, false, false},
		{"two nonzeros in a row", 8, 12, twice, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			x := make([]float32, c.rows*c.hd)
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
			before := signPermsCompiled.Load()
			exe := MustNewExec(be, func(x *Node) *Node {
				w := Reshape(Const(x.Graph(), c.w), c.hd, c.hd)
				if c.trans {
					return DotGeneral(x, []int{2}, nil, w, []int{0}, nil)
				}
				return DotGeneral(x, []int{2}, nil, w, []int{1}, nil)
			})
			out := exe.MustExec(tensors.FromFlatDataAndDimensions(x, 1, c.rows, c.hd))
			got := tensors.MustCopyFlatData[float32](out[0])
			if n := signPermsCompiled.Load() - before; (n == 1) != c.rewritten {
				t.Fatalf("%d products rewritten, want rewritten=%v", n, c.rewritten)
			}
			for m := range c.rows {
				for i := range c.hd {
					var want float64
					for k := range c.hd {
						wik := c.w[i*c.hd+k]
						if c.trans {
							wik = c.w[k*c.hd+i]
						}
						want += float64(x[m*c.hd+k]) * float64(wik)
					}
					if g := got[m*c.hd+i]; float64(g) != float64(float32(want)) {
						t.Fatalf("row %d, output %d: %g, want %g", m, i, g, want)
					}
				}
			}
		})
	}
}
