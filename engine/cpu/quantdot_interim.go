package cpu

// Interim quantized kernels in plain Go (dequantize a few rows, then the float32 kernels),
// until engine/cpu/kernels has its own.

import (
	"math"

	"github.com/posformer/posformer/engine/cpu/kernels"
)

func dequantBF16(w []uint16, dst []float32) {
	for i, v := range w {
		dst[i] = math.Float32frombits(uint32(v) << 16)
	}
}

func dequantQ8_0(q []int8, d []float32, dst []float32) {
	for b, s := range d {
		for j, v := range q[32*b : 32*b+32] {
			dst[32*b+j] = s * float32(v)
		}
	}
}

func dequantQ4_0(q []uint8, d []float32, dst []float32) {
	for b := range d {
		for j := range 16 {
			v := q[16*b+j]
			dst[32*b+j] = d[b] * float32(int(v&15)-8)
			dst[32*b+j+16] = d[b] * float32(int(v>>4)-8)
		}
	}
}

// interimRows dequantizes W in chunks of rows into a panel and multiplies with the float32
// kernel.
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

func dotRowsBF16(w []uint16, k int, x, y []float32) {
	matMulNTBF16(1, len(y), k, x, k, w, k, y, len(y))
}
func matMulNTBF16(m, n, k int, x []float32, ldx int, w []uint16, ldw int, y []float32, ldy int) {
	interimRows(m, n, k, x, ldx, y, ldy, func(r0, r1 int, dst []float32) { dequantBF16(w[r0*k:r1*k], dst) })
}
func dotRowsQ8_0(q []int8, d []float32, k int, x, y []float32) {
	matMulNTQ8_0(1, len(y), k, x, k, q, d, y, len(y))
}
func matMulNTQ8_0(m, n, k int, x []float32, ldx int, q []int8, d []float32, y []float32, ldy int) {
	interimRows(m, n, k, x, ldx, y, ldy, func(r0, r1 int, dst []float32) {
		dequantQ8_0(q[r0*k:r1*k], d[r0*k/32:r1*k/32], dst)
	})
}
func dotRowsQ4_0(q []uint8, d []float32, k int, x, y []float32) {
	matMulNTQ4_0(1, len(y), k, x, k, q, d, y, len(y))
}
func matMulNTQ4_0(m, n, k int, x []float32, ldx int, q []uint8, d []float32, y []float32, ldy int) {
	interimRows(m, n, k, x, ldx, y, ldy, func(r0, r1 int, dst []float32) {
		dequantQ4_0(q[r0*k/2:r1*k/2], d[r0*k/32:r1*k/32], dst)
	})
}
