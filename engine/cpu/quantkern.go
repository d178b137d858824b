package cpu

// Kernels for products with quantized weights (quantdot.go): rows of BF16, Q8_0 or Q4_0
// weights against float32 rows of x. With the AVX-512 or the AVX2 kernel set in use,
// hand-written assembly widens the weights in registers (quantkern_amd64.s,
// quantkern_avx2_amd64.s); elsewhere a few rows are dequantized into a panel and multiplied by
// the float32 kernels.

import (
	"math"

	"github.com/posformer/posformer/engine/cpu/kernels"
)

// quantRowBlock is how many weight rows the few-rows products take at a time: their bytes stay
// in L2 while every row of x passes over them.
const quantRowBlock = 256

// quantAsm names the assembly the quantized kernels run.
type quantAsm int8

const (
	noQuantAsm  quantAsm = iota // the Go panel path
	quantAVX2                   // quantkern_avx2_amd64.s
	quantAVX512                 // quantkern_amd64.s
)

// quantKernels is the assembly that goes with the kernel set in use (which the kernels package
// only selects on a CPU that has its instructions). Each call reads it once, so it finishes on
// the assembly it started with even if the kernel set changes meanwhile.
func quantKernels() quantAsm {
	if !haveQuantAsm {
		return noQuantAsm
	}
	switch kernels.Path() {
	case kernels.AVX512:
		return quantAVX512
	case kernels.AVX2:
		return quantAVX2
	}
	return noQuantAsm
}

func dequantBF16(w []uint16, dst []float32) {
	for i, v := range w {
		dst[i] = math.Float32frombits(uint32(v) << 16)
	}
}

func dequantQ8_0(q []int8, d []float32, dst []float32) {
	if len(d) == 0 {
		return
	}
	if a := quantKernels(); a != noQuantAsm {
		q8Dequant(a, q, d, dst)
		return
	}
	for b, s := range d {
		for j, v := range q[32*b : 32*b+32] {
			dst[32*b+j] = s * float32(v)
		}
	}
}

func dequantQ4_0(q []uint8, d []float32, dst []float32) {
	if len(d) == 0 {
		return
	}
	if a := quantKernels(); a != noQuantAsm {
		q4Dequant(a, q, d, dst)
		return
	}
	for b := range d {
		for j := range 16 {
			v := q[16*b+j]
			dst[32*b+j] = d[b] * (float32(v&15) - 8)
			dst[32*b+j+16] = d[b] * (float32(v>>4) - 8)
		}
	}
}

// dotRows computes y[r] = W[r]·x for the rows of y, W being a stored matrix with rows of k.
func dotRowsBF16(w []uint16, k int, x, y []float32) {
	if len(y) == 0 {
		return
	}
	if a := quantKernels(); a != noQuantAsm {
		n16 := k / 16
		bf16DotRows(a, w, k, x, y, n16)
		if tail := 16 * n16; tail < k {
			for r := range y {
				var s float32
				for p := tail; p < k; p++ {
					s += math.Float32frombits(uint32(w[r*k+p])<<16) * x[p]
				}
				y[r] += s
			}
		}
		return
	}
	interimRows(1, len(y), k, x, k, y, len(y), func(r0, r1 int, dst []float32) { dequantBF16(w[r0*k:r1*k], dst) })
}

func dotRowsQ8_0(q []int8, d []float32, k int, x, y []float32) {
	if len(y) == 0 {
		return
	}
	if a := quantKernels(); a != noQuantAsm {
		q8DotRows(a, q, d, x, y, k/32)
		return
	}
	interimRows(1, len(y), k, x, k, y, len(y), func(r0, r1 int, dst []float32) {
		dequantQ8_0(q[r0*k:r1*k], d[r0*k/32:r1*k/32], dst)
	})
}

func dotRowsQ4_0(q []uint8, d []float32, k int, x, y []float32) {
	if len(y) == 0 {
		return
	}
	if a := quantKernels(); a != noQuantAsm {
		q4DotRows(a, q, d, x, y, k/32)
		return
	}
	interimRows(1, len(y), k, x, k, y, len(y), func(r0, r1 int, dst []float32) {
		dequantQ4_0(q[r0*k/2:r1*k/2], d[r0*k/32:r1*k/32], dst)
	})
}

// The few-rows products: y[i·ldy + j] = x[i]·W[j] for i < m, j < n, in blocks of weight rows.
func matMulNTBF16(m, n, k int, x []float32, ldx int, w []uint16, ldw int, y []float32, ldy int) {
	for r0 := 0; r0 < n; r0 += quantRowBlock {
		r1 := min(n, r0+quantRowBlock)
		for i := range m {
			dotRowsBF16(w[r0*ldw:r1*ldw], k, x[i*ldx:i*ldx+k], y[i*ldy+r0:i*ldy+r1])
		}
	}
}

func matMulNTQ8_0(m, n, k int, x []float32, ldx int, q []int8, d []float32, y []float32, ldy int) {
	for r0 := 0; r0 < n; r0 += quantRowBlock {
		r1 := min(n, r0+quantRowBlock)
		for i := range m {
			dotRowsQ8_0(q[r0*k:r1*k], d[r0*k/32:r1*k/32], k, x[i*ldx:i*ldx+k], y[i*ldy+r0:i*ldy+r1])
		}
	}
}

func matMulNTQ4_0(m, n, k int, x []float32, ldx int, q []uint8, d []float32, y []float32, ldy int) {
	for r0 := 0; r0 < n; r0 += quantRowBlock {
		r1 := min(n, r0+quantRowBlock)
		for i := range m {
			dotRowsQ4_0(q[r0*k/2:r1*k/2], d[r0*k/32:r1*k/32], k, x[i*ldx:i*ldx+k], y[i*ldy+r0:i*ldy+r1])
		}
	}
}

// interimRows dequantizes W in chunks of rows into a panel and multiplies with the float32
// kernel (the portable path).
func interimRows(m, n, k int, x []float32, ldx int, y []float32, ldy int, widen func(r0, r1 int, dst []float32)) {
	panel := getPanel()
	defer putPanel(panel)
	step := max(1, min(64, len(panel)/k))
	for r0 := 0; r0 < n; r0 += step {
		r1 := min(n, r0+step)
		widen(r0, r1, panel[:(r1-r0)*k])
		kernels.MatMulNT(m, r1-r0, k, x, ldx, panel, k, y[r0:], ldy)
	}
}
