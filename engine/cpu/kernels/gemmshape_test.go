package kernels

import (
	"fmt"
	"testing"
)

// trainShapes: the products of a v2 training step (dim 128, hidden 512, 2048 tokens): x·Wᵀ,
// the weight gradient (A transposed) and the input gradient, against 512³; then one head's
// attention products at 128 tokens and head size 32: p·v, q·kᵀ and the values' gradient pᵀ·dO.
var trainShapes = []struct {
	m, n, k int
	ta, tb  bool
}{{512, 512, 512, false, false}, {2048, 512, 128, false, true}, {512, 128, 2048, true, false}, {2048, 128, 512, false, false}, {2048, 128, 128, false, true},
	{128, 32, 128, false, false}, {128, 128, 32, false, true}, {128, 32, 128, true, false}}

// benchTrainShapes runs gemm (Sgemm's signature) on every training shape, in GFLOP/s.
func benchTrainShapes(b *testing.B, gemm func(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int)) {
	for _, s := range trainShapes {
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
				gemm(s.ta, s.tb, s.m, s.n, s.k, 1, a, lda, bb, ldb, 0, c, s.n)
			}
			b.ReportMetric(2*float64(s.m*s.n*s.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkSgemmTrainShapes: the training step's products. In a step they run about half as
// fast as here, their operands coming from memory rather than cache.
func BenchmarkSgemmTrainShapes(b *testing.B) { benchTrainShapes(b, Sgemm) }

// BenchmarkSgemmBF16: the same products with bf16 operands (the packing included), on the
// AVX512_BF16 kernel.
func BenchmarkSgemmBF16(b *testing.B) {
	if !HasBF16() {
		b.Logf("no AVX512_BF16 (kernel set %s): the Go kernel", Path())
	}
	if HasAMX() {
		defer SetAMX(true)
		SetAMX(false) // the AVX512_BF16 kernel; BenchmarkSgemmAMX has the tiles
	}
	benchTrainShapes(b, SgemmBF16)
}

// BenchmarkSgemmBF16Cold: the products of a 512-token training pass (dim 128, hidden 512) with
// their operands in cache ("warm": the same A, B and C every call) and from memory ("cold": each
// call on the next of enough operand sets, 48 MB at least, to overflow the L3), as a training
// step meets them: its saved activations outgrow the caches.
func BenchmarkSgemmBF16Cold(b *testing.B) {
	shapes := []struct {
		m, n, k int
		ta, tb  bool
	}{{512, 512, 128, false, true}, {512, 128, 512, false, true}, {512, 128, 512, true, false}, {128, 512, 512, true, false}}
	for _, s := range shapes {
		for _, cold := range []bool{false, true} {
			kind, sets := "warm", 1
			if cold {
				kind, sets = "cold", max(2, (48<<20)/(4*(s.m*s.k+s.k*s.n+s.m*s.n)))
			}
			b.Run(fmt.Sprintf("%dx%dx%d-%v%v/%s", s.m, s.n, s.k, s.ta, s.tb, kind), func(b *testing.B) {
				as, bs, cs := make([][]float32, sets), make([][]float32, sets), make([][]float32, sets)
				for i := range sets {
					as[i], bs[i], cs[i] = randSlice(s.m*s.k), randSlice(s.k*s.n), make([]float32, s.m*s.n)
				}
				lda, ldb := s.k, s.n
				if s.ta {
					lda = s.m
				}
				if s.tb {
					ldb = s.k
				}
				i := 0
				for b.Loop() {
					j := i % sets
					SgemmBF16(s.ta, s.tb, s.m, s.n, s.k, 1, as[j], lda, bs[j], ldb, 0, cs[j], s.n)
					i++
				}
				b.ReportMetric(2*float64(s.m*s.n*s.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
