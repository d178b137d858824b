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

// The Go kernel and the AVX512_BF16 kernel agree up to the order of the float32 sums; the
// AVX2 and AVX-512F kernels, which widen the pairs and add each pair's high product and then
// its low one, give the AVX512_BF16 kernel's results to the bit (the operands here have no
// subnormals).
func TestSgemmBF16GoVsAsm(t *testing.T) {
	const avx512F = "avx512 without AVX512_BF16"
	saved := Path()
	defer SetPath(saved)
	if SetPath(AVX512) != nil || !HasBF16() {
		t.Skip("no AVX512_BF16")
	}
	defer SetAMX(HasAMX())
	SetAMX(false) // the AVX512_BF16 kernel; TestSgemmAMX compares the tiles with it
	r := rand.New(rand.NewPCG(33, 34))
	for _, d := range []struct{ m, n, k int }{{8, 32, 2}, {33, 100, 301}, {130, 700, 1030}, {200, 64, 77}} {
		for tr := range 4 {
			ta, tb := tr&1 != 0, tr&2 != 0
			lda, ldb := d.k, d.n
			if ta {
				lda = d.m
			}
			if tb {
				ldb = d.k
			}
			a, b := guarded(r, d.m*d.k, 0), guarded(r, d.k*d.n, 0)
			out := map[string][]float32{}
			for _, p := range []string{AVX512, AVX2, Generic, avx512F} {
				if p == avx512F {
					// An AVX-512 CPU without AVX512_BF16: gemm8x32BF16AVX512F.
					hasBF16 = false
					p = AVX512
				}
				if err := SetPath(p); err != nil {
					t.Fatal(err)
				}
				c := make([]float32, d.m*d.n)
				SgemmBF16(ta, tb, d.m, d.n, d.k, 1, a, lda, b, ldb, 0, c, d.n)
				if !hasBF16 {
					hasBF16, p = true, avx512F
				}
				out[p] = c
			}
			for i, want := range out[AVX512] {
				// |terms| add up to at most k (operands in [-1, 1]).
				if gen := out[Generic][i]; math.Abs(float64(want-gen)) > 1e-5*float64(d.k) {
					t.Fatalf("%v %v %dx%dx%d: C[%d] = %g (avx512), %g (generic)", ta, tb, d.m, d.n, d.k, i, want, gen)
				}
				for _, p := range []string{AVX2, avx512F} {
					if emu := out[p][i]; emu != want {
						t.Fatalf("%v %v %dx%dx%d: C[%d] = %g (avx512), %g (%s, widened pairs)", ta, tb, d.m, d.n, d.k, i, want, emu, p)
					}
				}
			}
		}
	}
}

// BenchmarkSgemmBF16AVX512F: SgemmBF16 as an AVX-512 CPU without AVX512_BF16 runs it (the
// pairs widened to floats, gemm8x32BF16AVX512F), on the training step's products.
func BenchmarkSgemmBF16AVX512F(b *testing.B) {
	saved, savedPath := hasBF16, Path()
	defer func() { hasBF16 = saved; SetPath(savedPath) }()
	if SetPath(AVX512) != nil {
		b.Skip("no AVX-512")
	}
	hasBF16 = false
	benchTrainShapes(b, SgemmBF16)
}
