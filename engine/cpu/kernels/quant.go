package kernels

// Kernels for products with quantized weights (the cpu backend's quantdot.go): rows of BF16,
// Q8_0 or Q4_0 weights against float32 rows of x. With the AVX-512 or the AVX2 kernel set in
// use, hand-written assembly widens the weights in registers (quant_amd64.s,
// quant_avx2_amd64.s); with the generic set, or off amd64, a few rows are dequantized into a
// panel and multiplied by the float32 kernels (the portable path, which the tests compare the
// assembly against). vnni.go holds the products with int8 activations.

import (
	"math"

	"github.com/posformer/posformer/engine/cpu/internal/freelist"
)

// QuantRowBlock is how many weight rows the few-rows products take at a time: their bytes stay
// in L2 while every row of x passes over them.
const QuantRowBlock = 256

// quantAsm names the assembly the quantized kernels run.
type quantAsm int8

const (
	noQuantAsm  quantAsm = iota // the Go panel path
	quantAVX2                   // quant_avx2_amd64.s
	quantAVX512                 // quant_amd64.s
)

// quantKernels is the assembly that goes with the kernel set in use (which is only selected on
// a CPU that has its instructions), read from the same level as the float32 kernels' dispatch.
// Each call reads it once, so it finishes on the assembly it started with even if the kernel
// set changes meanwhile.
func quantKernels() quantAsm {
	if !haveQuantAsm {
		return noQuantAsm
	}
	switch level.Load() {
	case lvAVX512:
		return quantAVX512
	case lvAVX2:
		return quantAVX2
	}
	return noQuantAsm
}

// DequantBF16, DequantQ8_0 and DequantQ4_0 widen stored weights to float32: a bfloat16 is the
// top half of a float32, a Q8_0 value d·q, a Q4_0 value d·(n−8) (d the scale of its block of 32).
func DequantBF16(w []uint16, dst []float32) {
	for i, v := range w {
		dst[i] = math.Float32frombits(uint32(v) << 16)
	}
}

func DequantQ8_0(q []int8, d []float32, dst []float32) {
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

func DequantQ4_0(q []uint8, d []float32, dst []float32) {
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

// DotRowsBF16 computes y[r] = W[r]·x for the rows of y, W being a stored matrix with rows of k.
func DotRowsBF16(w []uint16, k int, x, y []float32) {
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
	interimRows(1, len(y), k, x, k, y, len(y), func(r0, r1 int, dst []float32) { DequantBF16(w[r0*k:r1*k], dst) })
}

// DotRowsQ8_0 and DotRowsQ4_0 are DotRowsBF16 for Q8_0 and Q4_0 rows with scales d.
func DotRowsQ8_0(q []int8, d []float32, k int, x, y []float32) {
	if len(y) == 0 {
		return
	}
	if a := quantKernels(); a != noQuantAsm {
		q8DotRows(a, q, d, x, y, k/32)
		return
	}
	interimRows(1, len(y), k, x, k, y, len(y), func(r0, r1 int, dst []float32) {
		DequantQ8_0(q[r0*k:r1*k], d[r0*k/32:r1*k/32], dst)
	})
}

func DotRowsQ4_0(q []uint8, d []float32, k int, x, y []float32) {
	if len(y) == 0 {
		return
	}
	if a := quantKernels(); a != noQuantAsm {
		q4DotRows(a, q, d, x, y, k/32)
		return
	}
	interimRows(1, len(y), k, x, k, y, len(y), func(r0, r1 int, dst []float32) {
		DequantQ4_0(q[r0*k/2:r1*k/2], d[r0*k/32:r1*k/32], dst)
	})
}

// MatMulNTBF16, MatMulNTQ8_0 and MatMulNTQ4_0 are the few-rows products: y[i·ldy + j] = x[i]·W[j] for i < m, j < n, in blocks of weight rows.
func MatMulNTBF16(m, n, k int, x []float32, ldx int, w []uint16, ldw int, y []float32, ldy int) {
	for r0 := 0; r0 < n; r0 += QuantRowBlock {
		r1 := min(n, r0+QuantRowBlock)
		for i := range m {
			DotRowsBF16(w[r0*ldw:r1*ldw], k, x[i*ldx:i*ldx+k], y[i*ldy+r0:i*ldy+r1])
		}
	}
}

func MatMulNTQ8_0(m, n, k int, x []float32, ldx int, q []int8, d []float32, y []float32, ldy int) {
	for r0 := 0; r0 < n; r0 += QuantRowBlock {
		r1 := min(n, r0+QuantRowBlock)
		for i := range m {
			DotRowsQ8_0(q[r0*k:r1*k], d[r0*k/32:r1*k/32], k, x[i*ldx:i*ldx+k], y[i*ldy+r0:i*ldy+r1])
		}
	}
}

func MatMulNTQ4_0(m, n, k int, x []float32, ldx int, q []uint8, d []float32, y []float32, ldy int) {
	for r0 := 0; r0 < n; r0 += QuantRowBlock {
		r1 := min(n, r0+QuantRowBlock)
		for i := range m {
			DotRowsQ4_0(q[r0*k/2:r1*k/2], d[r0*k/32:r1*k/32], k, x[i*ldx:i*ldx+k], y[i*ldy+r0:i*ldy+r1])
		}
	}
}

// panelFloats bounds the float32 scratch of one dequantized panel of W (about L2's share).
const panelFloats = 32 << 10

// panels are the dequantization scratch buffers of the portable path, reused across calls and
// threads.
var panels = freelist.New(freelist.Config[float32]{Max: freelist.PerCPU})

// interimRows dequantizes W in chunks of rows into a panel and multiplies with the float32
// kernel (the portable path).
func interimRows(m, n, k int, x []float32, ldx int, y []float32, ldy int, widen func(r0, r1 int, dst []float32)) {
	panel := panels.Get(panelFloats)
	defer panels.Put(panel)
	step := max(1, min(64, len(panel)/k))
	for r0 := 0; r0 < n; r0 += step {
		r1 := min(n, r0+step)
		widen(r0, r1, panel[:(r1-r0)*k])
		MatMulNT(m, r1-r0, k, x, ldx, panel, k, y[r0:], ldy)
	}
}
