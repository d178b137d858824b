package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// forEachPath runs f under every kernel set this CPU has, restoring the default after.
func forEachPath(t *testing.T, f func(t *testing.T)) {
	saved := Path()
	defer SetPath(saved)
	for _, p := range Paths() {
		if err := SetPath(p); err != nil {
			t.Fatal(err)
		}
		t.Run(p, f)
	}
}

func randSlice(r *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = r.Float32()*2 - 1
	}
	return s
}

// close reports whether got is within the rounding error of a float32 sum of terms whose
// absolute values add up to mag.
func close(got float32, want, mag float64) bool {
	return math.Abs(float64(got)-want) <= 1e-5*mag+1e-6
}

func TestDotAndDotRows(t *testing.T) {
	forEachPath(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(1, 2))
		for _, k := range []int{0, 1, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 172, 288, 768} {
			for _, rows := range []int{1, 2, 3, 4, 5, 9, 64} {
				ldw := k + r.IntN(3)
				off := r.IntN(3) // unaligned starts
				w := randSlice(r, off+rows*ldw)[off:]
				x := randSlice(r, k+1)[1:]
				y := make([]float32, rows)
				DotRows(w, ldw, x, y)
				for i := range rows {
					var want, mag float64
					for j := range k {
						p := float64(w[i*ldw+j]) * float64(x[j])
						want += p
						mag += math.Abs(p)
					}
					if !close(y[i], want, mag) {
						t.Fatalf("DotRows k=%d rows=%d row %d: %g, want %g", k, rows, i, y[i], want)
					}
					if d := Dot(w[i*ldw:i*ldw+k], x); !close(d, want, mag) {
						t.Fatalf("Dot k=%d: %g, want %g", k, d, want)
					}
				}
			}
		}
	})
}

func TestSgemm(t *testing.T) {
	forEachPath(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(3, 4))
		type dims struct{ m, n, k int }
		cases := []dims{{1, 1, 1}, {257, 129, 300}, {96, 512, 256}, {100, 600, 270}}
		for range 60 {
			cases = append(cases, dims{1 + r.IntN(20), 1 + r.IntN(70), 1 + r.IntN(70)})
		}
		for _, d := range cases {
			for _, tr := range [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
				ta, tb := tr[0], tr[1]
				lda, ldb, ldc := d.k+r.IntN(2), d.n+r.IntN(2), d.n+r.IntN(3)
				if ta {
					lda = d.m + r.IntN(2)
				}
				if tb {
					ldb = d.k + r.IntN(2)
				}
				a := randSlice(r, lda*max(d.m, d.k))
				b := randSlice(r, ldb*max(d.n, d.k))
				c := randSlice(r, ldc*d.m)
				orig := append([]float32(nil), c...)
				alpha, beta := float32(1), float32(0)
				switch r.IntN(3) {
				case 1:
					alpha, beta = 0.5, 1
				case 2:
					alpha, beta = -2, 0.25
				}
				if beta == 0 {
					for i := range c {
						c[i] = float32(math.NaN()) // must not be read
					}
				}
				Sgemm(ta, tb, d.m, d.n, d.k, alpha, a, lda, b, ldb, beta, c, ldc)
				for i := range d.m {
					for j := range d.n {
						var want, mag float64
						for p := range d.k {
							av := a[i*lda+p]
							if ta {
								av = a[p*lda+i]
							}
							bv := b[p*ldb+j]
							if tb {
								bv = b[j*ldb+p]
							}
							want += float64(alpha) * float64(av) * float64(bv)
							mag += math.Abs(float64(alpha) * float64(av) * float64(bv))
						}
						if beta != 0 {
							want += float64(beta) * float64(orig[i*ldc+j])
							mag += math.Abs(float64(beta) * float64(orig[i*ldc+j]))
						}
						if got := c[i*ldc+j]; !close(got, want, mag) {
							t.Fatalf("Sgemm %v trans %v alpha %g beta %g: C[%d,%d] = %g, want %g", d, tr, alpha, beta, i, j, got, want)
						}
					}
				}
			}
		}
	})
}

func TestMatMulNT(t *testing.T) {
	forEachPath(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(5, 6))
		for _, m := range []int{1, 2, 4, 8} {
			n, k := 37, 70
			x, w, y := randSlice(r, m*k), randSlice(r, n*k), make([]float32, m*n)
			MatMulNT(m, n, k, x, k, w, k, y, n)
			for i := range m {
				for j := range n {
					var want, mag float64
					for p := range k {
						want += float64(x[i*k+p]) * float64(w[j*k+p])
						mag += math.Abs(float64(x[i*k+p]) * float64(w[j*k+p]))
					}
					if !close(y[i*n+j], want, mag) {
						t.Fatalf("m=%d y[%d,%d] = %g, want %g", m, i, j, y[i*n+j], want)
					}
				}
			}
		}
	})
}

func TestSetPath(t *testing.T) {
	if err := SetPath("sse9"); err == nil {
		t.Error("unknown set accepted")
	}
	if err := SetPath(Generic); err != nil {
		t.Error(err)
	}
	SetPath(Paths()[0])
}

func BenchmarkSgemm512(b *testing.B) {
	for _, p := range Paths() {
		b.Run(p, func(b *testing.B) {
			saved := Path()
			defer SetPath(saved)
			SetPath(p)
			r := rand.New(rand.NewPCG(1, 1))
			n := 512
			a, bb, c := randSlice(r, n*n), randSlice(r, n*n), make([]float32, n*n)
			b.ResetTimer()
			for range b.N {
				Sgemm(false, true, n, n, n, 1, a, n, bb, n, 0, c, n)
			}
			b.ReportMetric(2*float64(n*n*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

func BenchmarkDotRows(b *testing.B) {
	for _, p := range Paths() {
		for _, s := range [][2]int{{32000, 288}, {768, 288}, {288, 768}} {
			b.Run(fmt.Sprintf("%s/%dx%d", p, s[0], s[1]), func(b *testing.B) {
				saved := Path()
				defer SetPath(saved)
				SetPath(p)
				r := rand.New(rand.NewPCG(1, 1))
				w, x, y := randSlice(r, s[0]*s[1]), randSlice(r, s[1]), make([]float32, s[0])
				b.ResetTimer()
				for range b.N {
					DotRows(w, s[1], x, y)
				}
				b.ReportMetric(float64(4*s[0]*s[1])*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
			})
		}
	}
}

func TestExp(t *testing.T) {
	forEachPath(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(7, 8))
		var xs []float32
		for x := float32(-110); x < 95; x += 0.0137 {
			xs = append(xs, x)
		}
		for range 1000 {
			xs = append(xs, r.Float32()*200-100)
		}
		inf := float32(math.Inf(1))
		xs = append(xs, 0, -0.0, 1, -1, inf, -inf, float32(math.NaN()), 88.7, -87.3, -103.9)
		out := make([]float32, len(xs))
		Exp(xs, out)
		for i, x := range xs {
			want := math.Exp(float64(x))
			got := float64(out[i])
			switch {
			case math.IsNaN(want):
				if !math.IsNaN(got) {
					t.Fatalf("exp(%g) = %g, want NaN", x, got)
				}
			case want > math.MaxFloat32:
				if !math.IsInf(got, 1) {
					t.Fatalf("exp(%g) = %g, want +Inf", x, got)
				}
			case want < 1.2e-38: // float32 subnormals: absolute error only
				if math.Abs(got-want) > 1e-44 {
					t.Fatalf("exp(%g) = %g, want %g", x, got, want)
				}
			default:
				if math.Abs(got-want) > 2e-7*want {
					t.Fatalf("exp(%g) = %g, want %g (relative error %.2g)", x, got, want, math.Abs(got-want)/want)
				}
			}
		}
	})
}

// BenchmarkReadBandwidth: DotRows over a 512 MB matrix (far past any cache) on 1 and 2
// goroutines: the memory bandwidth that bounds f32 decoding (SPEED.md).
func BenchmarkReadBandwidth(b *testing.B) {
	const rows, k = 1 << 19, 256
	w, x, y := make([]float32, rows*k), make([]float32, k), make([]float32, rows)
	for _, threads := range []int{1, 2} {
		b.Run(fmt.Sprintf("threads=%d", threads), func(b *testing.B) {
			for range b.N {
				done := make(chan bool)
				per := rows / threads
				for t := range threads {
					go func() {
						DotRows(w[t*per*k:], k, x, y[t*per:(t+1)*per])
						done <- true
					}()
				}
				for range threads {
					<-done
				}
			}
			b.ReportMetric(float64(rows*k*4)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}

func TestMax(t *testing.T) {
	forEachPath(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(9, 10))
		if m := Max(nil); !math.IsInf(float64(m), -1) {
			t.Errorf("Max of nothing = %g, want -Inf", m)
		}
		for _, n := range []int{1, 5, 31, 32, 33, 64, 100, 513} {
			a := randSlice(r, n)
			want := float32(math.Inf(-1))
			for _, v := range a {
				want = max(want, v)
			}
			if got := Max(a); got != want {
				t.Fatalf("Max of %d = %g, want %g", n, got, want)
			}
			for _, at := range []int{0, n / 2, n - 1} {
				b := append([]float32(nil), a...)
				b[at] = float32(math.NaN())
				if got := Max(b); !math.IsNaN(float64(got)) {
					t.Fatalf("Max of %d with a NaN at %d = %g, want NaN", n, at, got)
				}
			}
		}
	})
}
