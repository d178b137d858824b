package kernels

// Sgemm against a float64 reference: sizes around every tile and block edge, all four
// transpose combinations, alpha/beta variants (beta == 0 with a NaN-filled C that must not be
// read), padded leading dimensions, unaligned starts, NaN poison around the inputs and
// canaries around C; and concurrent calls on disjoint blocks of one C.

import (
	"math"
	"math/rand/v2"
	"sync"
	"testing"
)

type gemmCase struct {
	m, n, k        int
	transA, transB bool
	alpha, beta    float32
	packed         bool // through PackA and SgemmPacked
	lda            int  // A's row stride; 0: op(A)'s width plus a random 0-2
}

// gemmOperands is one case's A, B and C with random padding and offsets: NaN poison around A
// and B, canaries around C and between its rows, and C NaN when beta == 0 (it must not be read).
type gemmOperands struct {
	a, b, c, orig []float32 // orig: C before the call
	lda, ldb, ldc int
	ok            func(t *testing.T) // nothing outside C was written
}

func newGemmOperands(r *rand.Rand, c gemmCase) gemmOperands {
	m, n, k := c.m, c.n, c.k
	aRows, aCols := m, k
	if c.transA {
		aRows, aCols = k, m
	}
	bRows, bCols := k, n
	if c.transB {
		bRows, bCols = n, k
	}
	var o gemmOperands
	o.lda, o.ldb, o.ldc = aCols+r.IntN(3), bCols+r.IntN(3), n+r.IntN(4)
	if c.lda > 0 {
		o.lda = c.lda
	}
	o.a = guarded(r, max(0, (aRows-1)*o.lda+aCols), r.IntN(5))
	o.b = guarded(r, max(0, (bRows-1)*o.ldb+bCols), r.IntN(5))
	o.c, o.ok = output(max(0, (m-1)*o.ldc+n), r.IntN(5))
	o.orig = make([]float32, len(o.c))
	for i := range o.c {
		if c.beta == 0 {
			o.c[i] = nan32 // must not be read
		} else {
			o.c[i] = r.Float32()*2 - 1
		}
		o.orig[i] = o.c[i]
	}
	// Elements between rows (j >= n) are canaries too.
	for i := range m {
		for j := n; j < o.ldc && i*o.ldc+j < len(o.c); j++ {
			o.c[i*o.ldc+j] = canary
			o.orig[i*o.ldc+j] = canary
		}
	}
	return o
}

// checkGemm holds C to Σ_p at(i, p)·bt(p, j) + beta·C (at, bt: the operands as the kernel
// multiplies them, alpha in at) in float64, within float32 rounding of the terms' magnitude,
// with the canaries between rows untouched; also, if not nil, checks each element further.
func checkGemm(t *testing.T, name, note string, c gemmCase, o gemmOperands, at func(i, p int) float64, bt func(p, j int) float64, also func(i, j, idx int, mag float64)) {
	t.Helper()
	o.ok(t)
	for i := range c.m {
		for j := range o.ldc {
			idx := i*o.ldc + j
			if idx >= len(o.c) {
				break
			}
			if j >= c.n {
				if o.c[idx] != canary {
					t.Fatalf("%s %+v: wrote C[%d,%d] past n", name, c, i, j)
				}
				continue
			}
			var want, mag float64
			for p := range c.k {
				v := at(i, p) * bt(p, j)
				want += v
				mag += math.Abs(v)
			}
			if c.beta != 0 {
				v := float64(c.beta) * float64(o.orig[idx])
				want += v
				mag += math.Abs(v)
			}
			if !near(o.c[idx], want, mag) {
				t.Fatalf("%s %+v ld %d,%d,%d: C[%d,%d] = %g, want %g%s", name, c, o.lda, o.ldb, o.ldc, i, j, o.c[idx], want, note)
			}
			if also != nil {
				also(i, j, idx, mag)
			}
		}
	}
}

// runGemm sets up one case with random padding and offsets, runs Sgemm and checks it.
func runGemm(t *testing.T, r *rand.Rand, c gemmCase) {
	t.Helper()
	o := newGemmOperands(r, c)
	a, b, lda, ldb := o.a, o.b, o.lda, o.ldb
	if c.packed {
		pa := PackA(c.transA, c.m, c.k, c.alpha, a, lda, make([]float32, PackedASize(c.m, c.k)))
		SgemmPacked(pa, c.transB, c.n, b, ldb, c.beta, o.c, o.ldc)
	} else {
		Sgemm(c.transA, c.transB, c.m, c.n, c.k, c.alpha, a, lda, b, ldb, c.beta, o.c, o.ldc)
	}
	at := func(i, p int) float64 {
		if c.transA {
			return float64(c.alpha) * float64(a[p*lda+i])
		}
		return float64(c.alpha) * float64(a[i*lda+p])
	}
	bt := func(p, j int) float64 {
		if c.transB {
			return float64(b[j*ldb+p])
		}
		return float64(b[p*ldb+j])
	}
	checkGemm(t, "Sgemm", "", c, o, at, bt, nil)
}

func TestSgemm(t *testing.T) {
	forEachPath(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(21, 22))
		type dims struct{ m, n, k int }
		var ds []dims
		for k := 1; k <= 70; k++ {
			ds = append(ds, dims{1 + r.IntN(20), 1 + r.IntN(70), k})
		}
		for n := 1; n <= 70; n++ {
			ds = append(ds, dims{1 + r.IntN(20), n, 1 + r.IntN(70)})
		}
		for m := 1; m <= 20; m++ {
			ds = append(ds, dims{m, 1 + r.IntN(70), 1 + r.IntN(70)})
		}
		// Several K slices, N blocks and M blocks, and the degenerate sizes.
		ds = append(ds, dims{257, 129, 300}, dims{97, 513, 257}, dims{100, 600, 20}, dims{13, 33, 513},
			dims{1, 1, 1}, dims{0, 5, 5}, dims{5, 0, 5}, dims{5, 5, 0}, dims{0, 0, 0})
		ab := [][2]float32{{1, 0}, {1, 1}, {0.5, -0.75}, {-2, 0}, {0, 0.5}, {0, 0}}
		for i, d := range ds {
			for tr := range 4 {
				big := d.m*d.n*d.k > 1e6
				if big && (tr+i)%2 == 1 {
					continue // half the combinations for the big ones: time
				}
				v := ab[(i+tr)%len(ab)]
				runGemm(t, r, gemmCase{d.m, d.n, d.k, tr&1 != 0, tr&2 != 0, v[0], v[1], false, 0})
				if i%3 == 0 || big {
					runGemm(t, r, gemmCase{d.m, d.n, d.k, tr&1 != 0, tr&2 != 0, v[0], v[1], true, 0})
				}
			}
		}
	})
}

// A packed A gives Sgemm's result bit for bit, column slice by column slice (how the backend
// uses it: x packed once, one slice of the weights per task).
func TestSgemmPackedSlices(t *testing.T) {
	forEachPath(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(25, 26))
		const m, n, k = 130, 700, 300
		a, b := guarded(r, m*k, 0), guarded(r, n*k, 0)
		want, got := make([]float32, m*n), make([]float32, m*n)
		Sgemm(false, true, m, n, k, 1, a, k, b, k, 0, want, n)
		pa := PackA(false, m, k, 1, a, k, make([]float32, PackedASize(m, k)))
		for n0 := 0; n0 < n; n0 += 96 {
			n1 := min(n, n0+96)
			SgemmPacked(pa, true, n1-n0, b[n0*k:], k, 0, got[n0:], n)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("C[%d] = %g, Sgemm gives %g", i, got[i], want[i])
			}
		}
	})
}

// TestSgemmConcurrent: goroutines on disjoint blocks of C (as the backend splits products).
func TestSgemmConcurrent(t *testing.T) {
	forEachPath(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(23, 24))
		const m, n, k = 64, 300, 200
		a, b := guarded(r, m*k, 0), guarded(r, n*k, 0)
		c := make([]float32, m*n)
		want := make([]float32, m*n)
		Sgemm(false, true, m, n, k, 1, a, k, b, k, 0, want, n)
		var wg sync.WaitGroup
		for q := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 5 {
					n0, n1 := q*n/4, (q+1)*n/4
					Sgemm(false, true, m, n1-n0, k, 1, a, k, b[n0*k:], k, 0, c[n0:], n)
				}
			}()
		}
		wg.Wait()
		for i := range c {
			if c[i] != want[i] {
				t.Fatalf("C[%d] = %g, want %g", i, c[i], want[i])
			}
		}
	})
}

// A transposed A is read in place or packed depending on its row stride (directA): both sides
// of the rule, and an untransposed A at the same strides, give the float64 product.
func TestSgemmStrideRule(t *testing.T) {
	forEachPath(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(5, 6))
		for _, lda := range []int{512, 513, 1024, 1030} {
			for _, transA := range []bool{true, false} {
				runGemm(t, r, gemmCase{m: 40, n: 37, k: 300, transA: transA, alpha: 1, lda: lda})
			}
		}
	})
}
