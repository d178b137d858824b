package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The AVX2 packers round as toBF16 does, bit for bit, on the values where rounding is
// delicate: ties (to even), carries into the exponent and into Inf, NaNs (made quiet, never
// Inf), infinities, zeros of both signs and subnormals, among random values.
func TestPackBF16AVX2(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2")
	}
	special := []uint32{
		0x7fc00000, 0x7f800001, 0xff800001, 0x7fffffff, 0x7f80ffff, // NaNs, signaling ones too
		0x7f800000, 0xff800000, 0x7f7fffff, 0xff7fffff, // ±Inf, ±max (rounds to Inf)
		0x3f808000, 0x3f818000, 0x3f80ffff, 0x3fffffff, 0xbf808000, // ties, carries
		0x00000000, 0x80000000, 0x00000001, 0x007fffff, 0x80400000, // zeros, subnormals
	}
	r := rand.New(rand.NewPCG(5, 6))
	vals := make([]float32, 4096)
	for i := range vals {
		if r.IntN(3) == 0 {
			vals[i] = math.Float32frombits(special[r.IntN(len(special))])
		} else {
			vals[i] = math.Float32frombits(r.Uint32())
		}
	}
	same := func(name string, got, want uint32, i int) {
		t.Helper()
		if got != want {
			t.Fatalf("%s: word %d = %#08x, want %#08x", name, i, got, want)
		}
	}
	for _, width := range []int{4, 16} {
		const kp, lda = 37, 40
		dst := make([]uint32, kp*width)
		packPairsAVX2(vals, lda, dst, width, kp)
		for tt := range kp {
			for j := range width {
				same("packPairsAVX2", dst[tt*width+j], pairBF16(vals[2*tt*lda+j], vals[(2*tt+1)*lda+j]), tt*width+j)
			}
		}
	}
	for _, stride := range []int{4, 16} {
		const n8, lda = 3, 53
		dst := make([]uint32, (8*n8-1)*stride+4)
		packRows4AVX2(vals, lda, dst, stride, n8)
		for tt := range 8 * n8 {
			for i := range 4 {
				same("packRows4AVX2", dst[tt*stride+i], pairBF16(vals[i*lda+2*tt], vals[i*lda+2*tt+1]), tt*stride+i)
			}
		}
	}
}
