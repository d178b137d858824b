package kernels

// Benchmarks per kernel set: Sgemm 512³ (GFLOP/s), DotRows on the decode shapes (GB/s of
// matrix read), MatMulNT for small batches, Exp, and the memory read bandwidth that bounds
// decoding. Run with `go test -run XXX -bench . ./engine/cpu/kernels/`.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// forEachPathB runs f under every kernel set this CPU has.
func forEachPathB(b *testing.B, name string, f func(b *testing.B)) {
	saved := Path()
	defer SetPath(saved)
	for _, p := range Paths() {
		b.Run(p+name, func(b *testing.B) {
			SetPath(p)
			f(b)
		})
	}
}

func randSlice(n int) []float32 {
	r := rand.New(rand.NewPCG(uint64(n), 1))
	s := make([]float32, n)
	for i := range s {
		s[i] = r.Float32()*2 - 1
	}
	return s
}

func BenchmarkSgemm512(b *testing.B) {
	const n = 512
	for _, tr := range []struct {
		name   string
		ta, tb bool
	}{{"", false, false}, {"/NT", false, true}} {
		forEachPathB(b, tr.name, func(b *testing.B) {
			a, bb, c := randSlice(n*n), randSlice(n*n), make([]float32, n*n)
			for b.Loop() {
				Sgemm(tr.ta, tr.tb, n, n, n, 1, a, n, bb, n, 0, c, n)
			}
			b.ReportMetric(2*n*n*n*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

func BenchmarkDotRows(b *testing.B) {
	for _, s := range [][2]int{{32000, 288}, {768, 288}, {288, 768}} {
		forEachPathB(b, fmt.Sprintf("/%dx%d", s[0], s[1]), func(b *testing.B) {
			w, x, y := randSlice(s[0]*s[1]), randSlice(s[1]), make([]float32, s[0])
			for b.Loop() {
				DotRows(w, s[1], x, y)
			}
			b.ReportMetric(float64(4*s[0]*s[1])*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}

func BenchmarkMatMulNT(b *testing.B) {
	const n, k = 768, 288
	for _, m := range []int{1, 4, 8} {
		forEachPathB(b, fmt.Sprintf("/m=%d", m), func(b *testing.B) {
			x, w, y := randSlice(m*k), randSlice(n*k), make([]float32, m*n)
			for b.Loop() {
				MatMulNT(m, n, k, x, k, w, k, y, n)
			}
			b.ReportMetric(2*float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkExp is e^x on values in [-20, 20], and on a causal softmax's inputs: half of them
// masked (−∞ after x − max), whose results are 0.
func BenchmarkExp(b *testing.B) {
	forEachPathB(b, "/4096", func(b *testing.B) {
		a, out := randSlice(4096), make([]float32, 4096)
		for i := range a {
			a[i] *= 20
		}
		for b.Loop() {
			Exp(a, out)
		}
		b.ReportMetric(4096*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
	})
	forEachPathB(b, "/masked-4096", func(b *testing.B) {
		a, out := randSlice(4096), make([]float32, 4096)
		for i := range a {
			a[i] = -1 - a[i]*a[i]
			if (i/64)%2 == 1 {
				a[i] = float32(math.Inf(-1))
			}
		}
		for b.Loop() {
			Exp(a, out)
		}
		b.ReportMetric(4096*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
	})
}

func BenchmarkVector(b *testing.B) {
	const n = 4096
	a, c, out := randSlice(n), randSlice(n), make([]float32, n)
	var sink float32
	for _, k := range []struct {
		name string
		f    func()
	}{
		{"Add", func() { Add(a, c, out) }},
		{"MulScalar", func() { MulScalar(a, 0.5, out) }},
		{"Sum", func() { sink += Sum(a) }},
		{"Max", func() { sink += Max(a) }},
	} {
		forEachPathB(b, "/"+k.name, func(b *testing.B) {
			for b.Loop() {
				k.f()
			}
			b.ReportMetric(n*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
		})
	}
	_ = sink
}

// BenchmarkReadBandwidth: DotRows over a 512 MB matrix (far past any cache, on huge pages as the
// backend's weights are, rows of 2048 as a 110M model's widest) on 1 and 2 goroutines: the
// memory bandwidth that bounds decoding. The rows768 and rows288 runs read the same bytes as
// rows of 768 and 288, the widths of most of the 110M and 15M shapes' matrices.
func BenchmarkReadBandwidth(b *testing.B) {
	const size = 1 << 27
	w := hugeFloats(size)
	for i := range w {
		w[i] = 1 // fault the pages in now, not inside the timed loop
	}
	for _, c := range []struct {
		name    string
		k       int
		threads int
	}{{"threads=1", 2048, 1}, {"threads=2", 2048, 2}, {"rows768/threads=1", 768, 1}, {"rows768/threads=2", 768, 2}, {"rows288/threads=1", 288, 1}, {"rows288/threads=2", 288, 2}} {
		k, threads := c.k, c.threads
		rows := size / k &^ 1
		x, y := make([]float32, k), make([]float32, rows)
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
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

// BenchmarkDotRowsHeads: attention scores (one query against every cached key) for the head
// sizes of the small models: many short rows.
func BenchmarkDotRowsHeads(b *testing.B) {
	for _, k := range []int{8, 48, 64} {
		const rows = 1024
		forEachPathB(b, fmt.Sprintf("/%dx%d", rows, k), func(b *testing.B) {
			w, x, y := randSlice(rows*k), randSlice(k), make([]float32, rows)
			for b.Loop() {
				DotRows(w, k, x, y)
			}
			b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Grows/s")
		})
	}
}

// BenchmarkVecMat is one head's q·k against keys cached transposed [headDim 48, slots 256]
// (the 15M shape).
func BenchmarkVecMat(b *testing.B) {
	const k, n = 48, 256
	x, m, y := randSlice(k), randSlice(k*n), make([]float32, n)
	forEachPathB(b, "/VecMat", func(b *testing.B) {
		for b.Loop() {
			VecMat(x, m, n, y)
		}
		b.ReportMetric(float64(4*k*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
	})
}

// BenchmarkRowsUnpackedVsPacked is m rows of x against W stored [n, k], without packing
// (MatMulNT over blocks of W of 64 K floats, as the cpu backend's product runs a prefill's
// rows) and with the packed GEMM: where each pays (dot.go's maxNTRows and maxNTDepth).
func BenchmarkRowsUnpackedVsPacked(b *testing.B) {
	for _, s := range [][3]int{{64, 768, 2048}, {128, 768, 2048}, {256, 768, 2048}, {64, 768, 768}, {128, 768, 768}, {256, 768, 768}, {64, 288, 288}, {128, 288, 288}, {256, 288, 288}} {
		m, n, k := s[0], s[1], s[2]
		x, w, y := make([]float32, m*k), make([]float32, n*k), make([]float32, m*n)
		for i := range x {
			x[i] = float32(i%7) * 0.1
		}
		for i := range w {
			w[i] = float32(i%5) * 0.1
		}
		flops := func(b *testing.B) {
			b.ReportMetric(2*float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		}
		b.Run(fmt.Sprintf("%dx%dx%d/unpacked", m, n, k), func(b *testing.B) {
			step := max(16, (64<<10)/k)
			for b.Loop() {
				for j := 0; j < n; j += step {
					MatMulNT(m, min(step, n-j), k, x, k, w[j*k:], k, y[j:], n)
				}
			}
			flops(b)
		})
		b.Run(fmt.Sprintf("%dx%dx%d/packed", m, n, k), func(b *testing.B) {
			for b.Loop() {
				Sgemm(false, true, m, n, k, 1, x, k, w, k, 0, y, n)
			}
			flops(b)
		})
	}
}
