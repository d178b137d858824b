package kernels

// Products of many rows of x with Q8_0 or Q4_0 weights on integer arithmetic (prefill with the
// backend option actq8): every row of x is quantized to Q8_0 blocks as ggml does (vnni.go says
// how), each block of a row against a block of a weight row is an exact integer dot product, and
// the blocks are summed in float32 times their two scales. The float32 route (a panel of W
// dequantized, then the float32 GEMM) writes and reads every weight as four bytes and does its
// multiply-adds in float; this one reads the stored bytes and does 32 multiply-adds in a handful
// of integer instructions.
//
// The same arithmetic serves one row of x (decoding) where the CPU has AVX2 but not AVX-512
// VNNI. On amd64 with AVX2 it runs in actgemm_avx2_amd64.s; elsewhere, or with the generic
// kernel set, actGemmGo below does the same operations in the same order, so the two agree to
// the bit (TestActGemmAssemblyMatchesGo).

import (
	"fmt"
	"math"

	"github.com/posformer/posformer/layers/quant"
)

// IntAsm reports whether the products with int8 activations run in assembly: AVX-512 VNNI's
// for decoding's rows where the CPU has it (VNNI), this file's AVX2 kernels for the rest.
func IntAsm() bool { return haveActGemmAsm && quantKernels() != noQuantAsm }

// ActRows is m rows of x of k quantized for ActGemm: the values row by row, and the scales of
// each group of four rows interleaved ([block][row of the group], the order the four-row kernel
// walks), those of the last m%4 rows row by row.
type ActRows struct {
	M, K int
	q    []int8
	d    []float32
}

// ActRowsBytes is the scratch QuantizeActRows needs for m rows of k (a multiple of 32).
func ActRowsBytes(m, k int) int {
	return align64(m*k) + 2*align64(4*m*k/32)
}

// QuantizeActRows quantizes the m rows of x (k values each, ldx apart) into buf
// (ActRowsBytes(m, k) bytes) with layers/quant's Q8_0 rounding.
func QuantizeActRows(x []float32, m, k, ldx int, buf []byte) (ActRows, error) {
	if k%32 != 0 || len(buf) < ActRowsBytes(m, k) || (m > 0 && len(x) < (m-1)*ldx+k) {
		return ActRows{}, fmt.Errorf("quantizing %d rows of %d: want k a multiple of 32, %d bytes of scratch and %d values, got %d and %d", m, k, ActRowsBytes(m, k), (m-1)*ldx+k, len(buf), len(x))
	}
	nb := k / 32
	a := ActRows{M: m, K: k, q: bytesAs[int8](buf[:m*k])}
	off := align64(m * k)
	a.d = bytesAs[float32](buf[off : off+4*m*nb])
	raw := bytesAs[float32](buf[off+align64(4*m*nb) : off+align64(4*m*nb)+4*m*nb])
	asm := IntAsm()
	for i := range m {
		xi, qi, di := x[i*ldx:i*ldx+k], a.q[i*k:i*k+k], raw[i*nb:i*nb+nb]
		if asm {
			quantizeRowAsm(xi, qi, di)
			continue
		}
		if err := quant.QuantizeSplit(quant.Q8_0, xi, buf[i*k:i*k+k], di); err != nil {
			return a, fmt.Errorf("quantizing activations: %w", err)
		}
	}
	full := m &^ 3
	for g := 0; g < full; g += 4 {
		for b := range nb {
			for r := range 4 {
				a.d[g*nb+4*b+r] = raw[(g+r)*nb+b]
			}
		}
	}
	copy(a.d[full*nb:], raw[full*nb:m*nb])
	return a, nil
}

// ActGemm computes y[i·ldy + j] = x[i]·W[j] for the a.M rows of x and the n rows of W, stored
// as typ (Q8_0: q as int8, Q4_0: nibble bytes) with scales d.
func ActGemm(typ quant.Type, a *ActRows, q []byte, d []float32, n int, y []float32, ldy int) {
	m, k := a.M, a.K
	nb := k / 32
	rowBytes := k
	if typ == quant.Q4_0 {
		rowBytes = k / 2
	}
	if len(q) < n*rowBytes || len(d) < n*nb || (m > 0 && n > 0 && len(y) < (m-1)*ldy+n) {
		panic(fmt.Sprintf("ActGemm: %d×%d by %d rows of %d, got %d bytes, %d scales, y of %d", m, k, n, k, len(q), len(d), len(y)))
	}
	if m == 0 || n == 0 {
		return
	}
	if nb == 0 {
		for i := range m {
			clear(y[i*ldy : i*ldy+n])
		}
		return
	}
	asm := IntAsm()
	full := m &^ 3
	for g := 0; g < full; g += 4 {
		xq, xd := a.q[g*k:(g+4)*k], a.d[g*nb:(g+4)*nb]
		if asm {
			actGemm4(typ, q, d, xq, xd, y[g*ldy:], ldy, n, nb)
		} else {
			actGemmGo(typ, 4, q, d, xq, xd, y[g*ldy:], ldy, n, nb)
		}
	}
	for i := full; i < m; i++ {
		xq, xd := a.q[i*k:(i+1)*k], a.d[i*nb:(i+1)*nb]
		if asm {
			actGemm1(typ, q, d, xq, xd, y[i*ldy:i*ldy+n], nb)
		} else {
			actGemmGo(typ, 1, q, d, xq, xd, y[i*ldy:], ldy, n, nb)
		}
	}
}

// actGemmGo is the kernels' arithmetic in Go, for mr = 4 rows of x (scales interleaved) or 1:
// per block eight int32 lanes, lane l the sum of the products of elements 4l..4l+3; each lane
// converted to float32 and fused-multiply-added into its accumulator with d_x·d_w; the lanes
// summed at the end as the assembly's HSUM does.
func actGemmGo(typ quant.Type, mr int, q []byte, d []float32, xq []int8, xd []float32, y []float32, ldy, n, nb int) {
	k := 32 * nb
	var w [32]int8
	for j := range n {
		var acc [4][8]float32
		for b := range nb {
			unpackBlock(typ, q, j*nb+b, &w)
			dw := d[j*nb+b]
			for r := range mr {
				x := xq[r*k+32*b : r*k+32*b+32]
				s := xd[mr*b+r] * dw
				for l := range 8 {
					var lane int32
					for e := 4 * l; e < 4*l+4; e++ {
						lane += int32(w[e]) * int32(x[e])
					}
					acc[r][l] = fma32(float32(lane), s, acc[r][l])
				}
			}
		}
		for r := range mr {
			v := acc[r]
			y[r*ldy+j] = ((v[0] + v[4]) + (v[2] + v[6])) + ((v[1] + v[5]) + (v[3] + v[7]))
		}
	}
}

// unpackBlock writes block i of a stored matrix as signed bytes in element order.
func unpackBlock(typ quant.Type, q []byte, i int, w *[32]int8) {
	if typ == quant.Q8_0 {
		for e, v := range q[32*i : 32*i+32] {
			w[e] = int8(v)
		}
		return
	}
	for e, v := range q[16*i : 16*i+16] {
		w[e] = int8(v&15) - 8
		w[e+16] = int8(v>>4) - 8
	}
}

// fma32 is a·b + c rounded once to float32, as VFMADD231PS does. a·b is exact in float64 (24+24
// bits), so only the final sum is rounded twice (to float64, then float32); that can differ
// from one rounding only when the float64 sum lies within 2⁻⁵³ of a float32 tie, which the tests'
// data never hits.
func fma32(a, b, c float32) float32 {
	return float32(math.FMA(float64(a), float64(b), float64(c)))
}
