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
}

// runGemm sets up one case with random padding and offsets, runs Sgemm and checks it.
func runGemm(t *testing.T, r *rand.Rand, c gemmCase) {
	t.Helper()
	m, n, k := c.m, c.n, c.k
	aRows, aCols := m, k
	if c.transA {
		aRows, aCols = k, m
	}
	bRows, bCols := k, n
	if c.transB {
		bRows, bCols = n, k
	}
	lda, ldb, ldc := aCols+r.IntN(3), bCols+r.IntN(3), n+r.IntN(4)
	a := guarded(r, max(0, (aRows-1)*lda+aCols), r.IntN(5))
	b := guarded(r, max(0, (bRows-1)*ldb+bCols), r.IntN(5))
	cs, ok := output(max(0, (m-1)*ldc+n), r.IntN(5))
	orig := make([]float32, len(cs))
	for i := range cs {
		if c.beta == 0 {
			cs[i] = nan32 // must not be read
		} else {
			cs[i] = r.Float32()*2 - 1
		}
		orig[i] = cs[i]
	}
	// Elements between rows (j >= n) are canaries too.
	for i := range m {
		for j := n; j < ldc && i*ldc+j < len(cs); j++ {
			cs[i*ldc+j] = canary
			orig[i*ldc+j] = canary
		}
	}
	if c.packed {
		pa := PackA(c.transA, m, k, c.alpha, a, lda, make([]float32, PackedASize(m, k)))
		SgemmPacked(pa, c.transB, n, b, ldb, c.beta, cs, ldc)
	} else {
		Sgemm(c.transA, c.transB, m, n, k, c.alpha, a, lda, b, ldb, c.beta, cs, ldc)
	}
	ok(t)
	at := func(i, p int) float64 {
		if c.transA {
			return float64(a[p*lda+i])
		}
		return float64(a[i*lda+p])
	}
	bt := func(p, j int) float64 {
		if c.transB {
			return float64(b[j*ldb+p])
		}
		return float64(b[p*ldb+j])
	}
	for i := range m {
		for j := range ldc {
			idx := i*ldc + j
			if idx >= len(cs) {
				break
			}
			if j >= n {
				if cs[idx] != canary {
					t.Fatalf("Sgemm %+v: wrote C[%d,%d] past n", c, i, j)
				}
				continue
			}
			var want, mag float64
			for p := range k {
				v := float64(c.alpha) * at(i, p) * bt(p, j)
				want += v
				mag += math.Abs(v)
			}
			if c.beta != 0 {
				v := float64(c.beta) * float64(orig[idx])
				want += v
				mag += math.Abs(v)
			}
			if !near(cs[idx], want, mag) {
				t.Fatalf("Sgemm %+v ld %d,%d,%d: C[%d,%d] = %g, want %g", c, lda, ldb, ldc, i, j, cs[idx], want)
			}
		}
	}
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
				runGemm(t, r, gemmCase{d.m, d.n, d.k, tr&1 != 0, tr&2 != 0, v[0], v[1], false})
				if i%3 == 0 || big {
					runGemm(t, r, gemmCase{d.m, d.n, d.k, tr&1 != 0, tr&2 != 0, v[0], v[1], true})
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
