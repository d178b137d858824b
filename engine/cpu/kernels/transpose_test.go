package kernels

import (
	"math/rand/v2"
	"testing"
)

// TransposeAdd8 adds src's transpose into dst as the element-by-element loop does, bit for bit,
// on every kernel path, with strides wider than the block and every element outside the blocks
// left as it was.
func TestTransposeAdd8(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	const ldd, lds = 13, 11
	src := make([]float32, 7*lds+8)
	dst := make([]float32, 7*ldd+8+3)
	for i := range src {
		src[i] = float32(r.NormFloat64())
	}
	for i := range dst {
		dst[i] = float32(r.NormFloat64())
	}
	want := append([]float32(nil), dst...)
	for i := range 8 {
		for j := range 8 {
			want[j*ldd+i] += src[i*lds+j]
		}
	}
	saved := Path()
	defer SetPath(saved)
	for _, p := range Paths() {
		if SetPath(p) != nil {
			continue
		}
		got := append([]float32(nil), dst...)
		TransposeAdd8(got, ldd, src, lds)
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s: element %d (row %d, column %d): %g, want %g", p, i, i/ldd, i%ldd, got[i], want[i])
			}
		}
	}
}
