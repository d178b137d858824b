package kernels

import "testing"

// BenchmarkPackBTrans packs a weight matrix [768, 288] stored [n, k] (x·Wᵀ), out of L2.
func BenchmarkPackBTrans(b *testing.B) {
	const n, k = 768, 288
	w := make([]float32, n*k*8) // 8 matrices: out of L2
	for i := range w {
		w[i] = float32(i)
	}
	dst := make([]float32, blockK*blockN)
	b.SetBytes(n * k * 4)
	for i := 0; i < b.N; i++ {
		m := w[(i%8)*n*k:]
		for pc := 0; pc < k; pc += blockK {
			kc := min(blockK, k-pc)
			for jc := 0; jc < n; jc += blockN {
				packB(dst, m, k, true, pc, kc, jc, min(blockN, n-jc), 32)
			}
		}
	}
}

// BenchmarkPackBRows packs B stored [k, n] (x·W, a gradient's operand) into AVX2's 16-column
// panels, out of L2.
func BenchmarkPackBRows(b *testing.B) {
	const n, k = 512, 512
	w := make([]float32, n*k*8)
	dst := make([]float32, blockK*blockN)
	b.SetBytes(n * k * 4)
	for i := 0; i < b.N; i++ {
		m := w[(i%8)*n*k:]
		for pc := 0; pc < k; pc += blockK {
			kc := min(blockK, k-pc)
			for jc := 0; jc < n; jc += blockN {
				packB(dst, m, n, false, pc, kc, jc, min(blockN, n-jc), 16)
			}
		}
	}
}
