package kernels

import (
	"fmt"
	"testing"
)

// BenchmarkSgemmTrainShapes: the products of a v2 training step (dim 128, hidden 512, 2048
// tokens): x·Wᵀ, the weight gradient (A transposed) and the input gradient, against 512³. In a
// step they run about half as fast as here, their operands coming from memory rather than cache.
func BenchmarkSgemmTrainShapes(b *testing.B) {
	for _, s := range []struct {
		m, n, k int
		ta, tb  bool
	}{{512, 512, 512, false, false}, {2048, 512, 128, false, true}, {512, 128, 2048, true, false}, {2048, 128, 512, false, false}, {2048, 128, 128, false, true}} {
		b.Run(fmt.Sprintf("%dx%dx%d-%v%v", s.m, s.n, s.k, s.ta, s.tb), func(b *testing.B) {
			a, bb, c := randSlice(s.m*s.k), randSlice(s.k*s.n), make([]float32, s.m*s.n)
			lda, ldb := s.k, s.n
			if s.ta {
				lda = s.m
			}
			if s.tb {
				ldb = s.k
			}
			for b.Loop() {
				Sgemm(s.ta, s.tb, s.m, s.n, s.k, 1, a, lda, bb, ldb, 0, c, s.n)
			}
			b.ReportMetric(2*float64(s.m*s.n*s.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
