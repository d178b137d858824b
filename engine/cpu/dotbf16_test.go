package cpu

// The backend option bf16dot=true: products that reach the blocked GEMM give the float64
// product of the bf16-rounded operands (to float32 summation), which the float32 path would
// not (its error against that reference is the bf16 rounding, about 1e-3 of the magnitude).

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/posformer/posformer/engine/cpu/kernels"
)

func TestMatmulBF16(t *testing.T) {
	for _, config := range []string{"threads=1,bf16dot=true", "threads=2,bf16dot=true"} {
		be := mustBackend(t, config)
		if !strings.Contains(be.Summary(), "bf16 products") {
			t.Errorf("summary %q does not mention bf16", be.Summary())
		}
		for _, c := range []struct {
			name           string
			batch, m, n, k int
			transX, transW bool
		}{
			{"x·W", 1, 300, 200, 150, false, false},
			{"x·Wᵀ", 1, 300, 200, 101, false, true}, // K < minNTDepth: the blocked GEMM, not MatMulNT
			{"xᵀ·g", 1, 130, 96, 301, true, false},
			{"batched", 2, 70, 100, 33, false, false},
		} {
			op := must[backends.Op](t)
			bld := be.Builder("bf16")
			xDims, xc := []int{c.m, c.k}, 1
			if c.transX {
				xDims, xc = []int{c.k, c.m}, 0
			}
			wDims, wc := []int{c.k, c.n}, 0
			if c.transW {
				wDims, wc = []int{c.n, c.k}, 1
			}
			var batch []int
			if c.batch > 1 {
				xDims, wDims = append([]int{c.batch}, xDims...), append([]int{c.batch}, wDims...)
				xc, wc, batch = xc+1, wc+1, []int{0}
			}
			x := op(bld.Parameter("x", shapes.Make(dtypes.Float32, xDims...), nil))
			w := op(bld.Parameter("w", shapes.Make(dtypes.Float32, wDims...), nil))
			y := op(bld.DotGeneral(x, []int{xc}, batch, w, []int{wc}, batch))
			exe := must[backends.Executable](t)(bld.Compile([]backends.Op{y}, nil)).(*Executable)
			r := rand.New(rand.NewPCG(11, 12))
			xb, wb := randomBuffer(t, be, r, xDims...), randomBuffer(t, be, r, wDims...)
			xs, ws := append([]float32(nil), typed[float32](xb.data)...), append([]float32(nil), typed[float32](wb.data)...)
			outs := must[[]backends.Buffer](t)(exe.Execute([]backends.Buffer{xb, wb}, nil, 0))
			got := typed[float32](outs[0].(*Buffer).data)
			m, n, k := c.m, c.n, c.k
			for b := range c.batch {
				xo, wo, yo := b*m*k, b*k*n, b*m*n
				for i := range m {
					for j := range n {
						var want, mag float64
						for p := range k {
							xv, wv := xs[xo+i*k+p], ws[wo+p*n+j]
							if c.transX {
								xv = xs[xo+p*m+i]
							}
							if c.transW {
								wv = ws[wo+j*k+p]
							}
							v := float64(kernels.RoundBF16(xv)) * float64(kernels.RoundBF16(wv))
							want += v
							mag += math.Abs(v)
						}
						if g := float64(got[yo+i*n+j]); math.Abs(g-want) > 1e-5*mag {
							t.Fatalf("%s %s: y[%d][%d][%d] = %g, want %g (bf16 operands)", config, c.name, b, i, j, g, want)
						}
					}
				}
			}
		}
	}
}
