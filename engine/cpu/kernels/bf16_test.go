package kernels

// SgemmBF16 against a float64 reference computed from the bf16-rounded operands (so only the
// float32 summation can differ), against Sgemm on the unrounded operands (within bf16
// rounding), and the Go kernel against the AVX512_BF16 one; the same padding, NaN poison and
// canaries as the Sgemm tests, odd k (the zero half of the last pair), tile and block edges.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestToBF16(t *testing.T) {
	for _, c := range []struct {
		in   uint32
		want uint32
	}{
		{0x3f800000, 0x3f80}, // 1
		{0x3f808000, 0x3f80}, // tie, even below
		{0x3f818000, 0x3f82}, // tie, even above
		{0x3f808001, 0x3f81}, // above the tie
		{0x3f807fff, 0x3f80}, // below the tie
		{0xbf818000, 0xbf82}, // negative tie
		{0x7f7fffff, 0x7f80}, // largest float32 rounds to +Inf
		{0x7f800000, 0x7f80}, // +Inf
		{0xff800000, 0xff80}, // -Inf
		{0x7fc00000, 0x7fc0}, // quiet NaN
		{0x7f800001, 0x7fc0}, // signalling NaN whose payload would round into Inf
		{0xffffffff, 0xffff}, // NaN with all bits
		{0x00000000, 0x0000},
		{0x80000000, 0x8000},
	} {
		if got := toBF16(math.Float32frombits(c.in)); got != c.want {
			t.Errorf("toBF16(%#08x) = %#04x, want %#04x", c.in, got, c.want)
		}
	}
}

// runGemmBF16 runs one case of SgemmBF16 with random padding and offsets and checks it against
// the float64 product of the rounded operands and against Sgemm on the unrounded ones.
func runGemmBF16(t *testing.T, r *rand.Rand, c gemmCase) {
	t.Helper()
	o := newGemmOperands(r, c)
	a, b, lda, ldb := o.a, o.b, o.lda, o.ldb
	// Sgemm on the unrounded operands, for the bf16 error bound.
	full := make([]float32, len(o.c))
	copy(full, o.orig)
	if c.m > 0 && c.n > 0 {
		Sgemm(c.transA, c.transB, c.m, c.n, c.k, c.alpha, a, lda, b, ldb, c.beta, full, o.ldc)
	}
	SgemmBF16(c.transA, c.transB, c.m, c.n, c.k, c.alpha, a, lda, b, ldb, c.beta, o.c, o.ldc)
	at := func(i, p int) float64 {
		if c.transA {
			return float64(RoundBF16(c.alpha * a[p*lda+i]))
		}
		return float64(RoundBF16(c.alpha * a[i*lda+p]))
	}
	bt := func(p, j int) float64 {
		if c.transB {
			return float64(RoundBF16(b[j*ldb+p]))
		}
		return float64(RoundBF16(b[p*ldb+j]))
	}
	checkGemm(t, "SgemmBF16", " (rounded operands)", c, o, at, bt, func(i, j, idx int, mag float64) {
		// Each operand is within 2⁻⁹ of its rounding: each product within about 2⁻⁸.
		if math.Abs(float64(o.c[idx])-float64(full[idx])) > 1e-2*mag+1e-30 {
			t.Fatalf("SgemmBF16 %+v: C[%d,%d] = %g, Sgemm gives %g (magnitude %g)", c, i, j, o.c[idx], full[idx], mag)
		}
	})
}

func TestSgemmBF16(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skips 250 BF16 matrix shapes, four transpositions each, on every kernel path (about 10 s); run it with go test ./engine/cpu/kernels -run TestSgemmBF16")
	}
	forEachPath(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(31, 32))
		type dims struct{ m, n, k int }
		var ds []dims
		for k := 1; k <= 70; k++ {
			ds = append(ds, dims{1 + r.IntN(30), 1 + r.IntN(140), k})
		}
		for n := 1; n <= 140; n++ {
			ds = append(ds, dims{1 + r.IntN(30), n, 1 + r.IntN(70)})
		}
		for m := 1; m <= 30; m++ {
			ds = append(ds, dims{m, 1 + r.IntN(140), 1 + r.IntN(70)})
		}
		// Several K slices (512 values each, odd and even ends), N blocks and M blocks, and the
		// degenerate sizes.
		ds = append(ds, dims{257, 129, 600}, dims{97, 513, 513}, dims{100, 600, 20}, dims{13, 65, 1025},
			dims{25, 70, 512}, dims{25, 70, 511}, dims{33, 100, 301}, dims{16, 64, 96}, dims{9, 200, 64},
			dims{1, 1, 1}, dims{0, 5, 5}, dims{5, 0, 5}, dims{5, 5, 0}, dims{0, 0, 0})
		ab := [][2]float32{{1, 0}, {1, 1}, {0.5, -0.75}, {-2, 0}, {0, 0.5}, {0, 0}, {0.3, 1}}
		for i, d := range ds {
			for tr := range 4 {
				big := d.m*d.n*d.k > 1e6
				if big && (tr+i)%2 == 1 {
					continue // half the combinations for the big ones: time
				}
				v := ab[(i+tr)%len(ab)]
				runGemmBF16(t, r, gemmCase{d.m, d.n, d.k, tr&1 != 0, tr&2 != 0, v[0], v[1], false, 0})
			}
		}
	})
}

func TestSgemmBF16Bounds(t *testing.T) {
	x := make([]float32, 100)
	for _, c := range []struct {
		name string
		f    func()
	}{
		{"negative", func() { SgemmBF16(false, false, -1, 2, 2, 1, x, 2, x, 2, 0, x, 2) }},
		{"C", func() { SgemmBF16(false, false, 10, 11, 1, 1, x, 1, x, 11, 0, x, 11) }},
		{"A", func() { SgemmBF16(false, false, 10, 5, 11, 1, x, 11, x, 5, 0, x, 5) }},
		{"A^T", func() { SgemmBF16(true, false, 10, 5, 11, 1, x, 10, x, 5, 0, x, 5) }},
		{"B", func() { SgemmBF16(false, false, 5, 10, 11, 1, x, 11, x, 10, 0, x, 10) }},
		{"B^T", func() { SgemmBF16(false, true, 5, 10, 11, 1, x, 11, x, 11, 0, x, 10) }},
	} {
		func() {
			defer func() {
				if e := recover(); e == nil || !strings.Contains(fmt.Sprint(e), "SgemmBF16") {
					t.Errorf("%s: panic %v, want a SgemmBF16 message", c.name, e)
				}
			}()
			c.f()
		}()
	}
}

// BenchmarkGemmBF16Kernel: the micro-kernel alone on panels in L1/L2 (kp = 256 pairs).
func BenchmarkGemmBF16Kernel(b *testing.B) {
	if !HasBF16() {
		b.Skip("no AVX512_BF16")
	}
	const kp = 256
	mr, nr := tileBF16(lvAVX512)
	a, bb := make([]uint32, mr*kp), make([]uint32, nr*kp)
	for i := range a {
		a[i] = 0x3f803f80 // (1, 1)
	}
	for i := range bb {
		bb[i] = 0x3f803f80
	}
	c := make([]float32, mr*nr)
	for b.Loop() {
		microKernelBF16(lvAVX512, kp, a, bb, c, nr, false)
	}
	b.ReportMetric(4*float64(mr*nr*kp)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}
