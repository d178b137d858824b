package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestSgemmAMX checks the tile path of SgemmBF16 two ways, on shapes with every kind of edge
// (rows, columns and pairs of k short of a whole tile, odd k, K slices, column blocks):
//   - on small integers, where every product and sum is exact in float32, against a float64
//     triple loop, to the bit;
//   - on random operands, against the AVX512_BF16 kernel (the same rounded operands, the sums
//     in another order): within k·1e-5 (the |terms| add up to at most k).
//
// A, B and C have strides wider than their rows (C's gap filled with a sentinel), and starts as NaN where beta is 0
// (which must not read it).
func TestSgemmAMX(t *testing.T) {
	saved := Path()
	defer SetPath(saved)
	if SetPath(AVX512) != nil || !HasAMX() {
		t.Skip("no AMX here")
	}
	defer SetAMX(true)
	r := rand.New(rand.NewPCG(35, 36))
	shapes := []struct{ m, n, k int }{{1, 1, 1}, {8, 32, 2}, {31, 33, 17}, {32, 32, 32}, {33, 100, 301}, {96, 512, 512}, {97, 545, 1030}, {200, 64, 77}}
	for _, d := range shapes {
		for tr := range 4 {
			ta, tb := tr&1 != 0, tr&2 != 0
			for _, ab := range [][2]float32{{1, 0}, {0.5, 1}, {1, 0.25}} {
				alpha, beta := ab[0], ab[1]
				for _, exact := range []bool{true, false} {
					// Strides wider than the rows (3 more), as a slice of a larger matrix has.
					lda, ldb := d.k+3, d.n+3
					if ta {
						lda = d.m + 3
					}
					if tb {
						ldb = d.k + 3
					}
					a, b := make([]float32, (max(d.m, d.k)+3)*lda), make([]float32, (max(d.k, d.n)+3)*ldb)
					c0 := make([]float32, d.m*d.n)
					for _, s := range [][]float32{a, b, c0} {
						for i := range s {
							if exact {
								s[i] = float32(r.IntN(17) - 8)
							} else {
								s[i] = r.Float32()*2 - 1
							}
						}
					}
					ldc := d.n + 3
					run := func(amx bool) []float32 {
						if err := SetAMX(amx); err != nil {
							t.Fatal(err)
						}
						c := make([]float32, d.m*ldc)
						for i := range c {
							c[i] = -12345
						}
						for i := range d.m {
							for j := range d.n {
								c[i*ldc+j] = c0[i*d.n+j]
								if beta == 0 {
									c[i*ldc+j] = float32(math.NaN())
								}
							}
						}
						SgemmBF16(ta, tb, d.m, d.n, d.k, alpha, a, lda, b, ldb, beta, c, ldc)
						for i := range d.m {
							for j := d.n; j < ldc; j++ {
								if c[i*ldc+j] != -12345 {
									t.Fatalf("%v %v %dx%dx%d: wrote C[%d, %d] past the row", ta, tb, d.m, d.n, d.k, i, j)
								}
							}
						}
						return c
					}
					got := run(true)
					if exact {
						for i := range d.m {
							for j := range d.n {
								var s float64
								for p := range d.k {
									var av, bv float32
									if ta {
										av = a[p*lda+i]
									} else {
										av = a[i*lda+p]
									}
									if tb {
										bv = b[j*ldb+p]
									} else {
										bv = b[p*ldb+j]
									}
									s += float64(alpha*av) * float64(bv)
								}
								if beta != 0 {
									s += float64(beta * c0[i*d.n+j])
								}
								if g := got[i*ldc+j]; float64(g) != s {
									t.Fatalf("%v %v %dx%dx%d α=%g β=%g: C[%d, %d] = %g, want %g exactly", ta, tb, d.m, d.n, d.k, alpha, beta, i, j, g, s)
								}
							}
						}
						continue
					}
					want := run(false)
					for i := range d.m {
						for j := range d.n {
							g, w := got[i*ldc+j], want[i*ldc+j]
							if math.Abs(float64(g-w)) > 1e-5*float64(d.k+1) {
								t.Fatalf("%v %v %dx%dx%d α=%g β=%g: C[%d, %d] = %g (amx), %g (avx512_bf16)", ta, tb, d.m, d.n, d.k, alpha, beta, i, j, g, w)
							}
						}
					}
				}
			}
		}
	}
}

// BenchmarkSgemmAMX: the training step's products on the tiles, against BenchmarkSgemmBF16.
func BenchmarkSgemmAMX(b *testing.B) {
	if !HasAMX() {
		b.Skip("no AMX here")
	}
	benchTrainShapes(b, SgemmBF16)
}

// TestSgemmAMXConcurrent runs the tile path from more goroutines than threads, with the
// collector running, so that goroutines are preempted (a signal each time) and moved between
// threads mid-product: every result must equal the one computed alone. The tile registers are
// per thread and the kernel configures them on every call; this checks that nothing else
// (signal delivery, a context switch) loses them.
func TestSgemmAMXConcurrent(t *testing.T) {
	saved := Path()
	defer SetPath(saved)
	if SetPath(AVX512) != nil || !HasAMX() {
		t.Skip("no AMX here")
	}
	const m, n, k = 200, 300, 700
	r := rand.New(rand.NewPCG(37, 38))
	a, b := guarded(r, m*k, 0), guarded(r, k*n, 0)
	want := make([]float32, m*n)
	SgemmBF16(false, true, m, n, k, 1, a, k, b, k, 0, want, n)
	errs := make(chan error, 8)
	for g := range 8 {
		go func() {
			c := make([]float32, m*n)
			for it := range 40 {
				_ = make([]byte, 1<<16) // garbage, for the collector to run
				SgemmBF16(false, true, m, n, k, 1, a, k, b, k, 0, c, n)
				for i := range c {
					if c[i] != want[i] {
						errs <- fmt.Errorf("goroutine %d, product %d: C[%d] = %g, want %g", g, it, i, c[i], want[i])
						return
					}
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
