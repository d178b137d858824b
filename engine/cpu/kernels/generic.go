package kernels

// The portable kernels: plain Go, used off amd64, on CPUs without AVX2+FMA, when forced with
// SetPath("generic"), and as the reference the tests hold the assembly to. They follow the same
// algorithms as the assembly where that matters for speed (several accumulators, rows of w
// shared by rows of x, a register tile for Sgemm, range reduction for exp).

import "math"

type op int

const (
	opAdd op = iota
	opSub
	opMul
	opDiv
	opMax  // max(a, b), NaN if either is
	opMin  // min(a, b), NaN if either is
	opRDiv // scalar ops only: c / a
)

func dotGo(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

func vecMatGo(x, b []float32, ldb int, y []float32) {
	clear(y)
	for p, v := range x {
		row := b[p*ldb : p*ldb+len(y)]
		for j, w := range row {
			y[j] += v * w
		}
	}
}

func sumGo(a []float32) float32 {
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i]
		s1 += a[i+1]
		s2 += a[i+2]
		s3 += a[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i]
	}
	return (s0 + s1) + (s2 + s3)
}

func maxGo(a []float32) float32 {
	m := float32(math.Inf(-1))
	for _, v := range a {
		if v != v {
			return v
		}
		if v > m {
			m = v
		}
	}
	return m
}

func binaryGo(o op, a, b, out []float32) {
	a, b = a[:len(out)], b[:len(out)]
	switch o {
	case opAdd:
		for i := range out {
			out[i] = a[i] + b[i]
		}
	case opSub:
		for i := range out {
			out[i] = a[i] - b[i]
		}
	case opMul:
		for i := range out {
			out[i] = a[i] * b[i]
		}
	case opDiv:
		for i := range out {
			out[i] = a[i] / b[i]
		}
	case opMax:
		for i := range out {
			out[i] = max(a[i], b[i])
		}
	case opMin:
		for i := range out {
			out[i] = min(a[i], b[i])
		}
	}
}

func scalarOpGo(o op, a []float32, s float32, out []float32) {
	a = a[:len(out)]
	switch o {
	case opAdd:
		for i := range out {
			out[i] = a[i] + s
		}
	case opMul:
		for i := range out {
			out[i] = a[i] * s
		}
	case opMax:
		for i := range out {
			out[i] = max(a[i], s)
		}
	case opMin:
		for i := range out {
			out[i] = min(a[i], s)
		}
	case opRDiv:
		for i := range out {
			out[i] = s / a[i]
		}
	}
}

func signGo(a, out []float32) {
	a = a[:len(out)]
	for i, x := range a {
		switch {
		case x > 0:
			out[i] = 1
		case x < 0:
			out[i] = -1
		default:
			out[i] = x // ±0 and NaN stay
		}
	}
}

// expGo: x = k·ln2 + r, |r| <= ln2/2, e^r by a degree-8 Taylor polynomial in float64 (error
// below 1e-10), scaled by 2^k through the exponent field; the float32 conversion rounds once
// (also into the subnormal range). NaN fails both clamps and stays NaN through the arithmetic.
func expGo(a, out []float32) {
	const (
		lo    = -104 // e^-104 rounds to 0 in float32
		hi    = 89   // e^89 overflows float32
		round = 0x1.8p52
	)
	a = a[:len(out)]
	for i, v := range a {
		x := float64(v)
		if x < lo {
			x = lo
		} else if x > hi {
			x = hi
		}
		k := x*math.Log2E + round - round // nearest integer, |k| <= 151
		r := x - k*math.Ln2
		p := 1 + r*(1+r*(1.0/2+r*(1.0/6+r*(1.0/24+r*(1.0/120+r*(1.0/720+r*(1.0/5040+r*(1.0/40320))))))))
		out[i] = float32(p * math.Float64frombits(uint64(int64(k)+1023)<<52))
	}
}

// logisticGo is the portable Logistic: the four passes it stands for, in chunks that stay in
// L1.
func logisticGo(a, out []float32) {
	const chunk = 2048
	for lo := 0; lo < len(out); lo += chunk {
		hi := min(lo+chunk, len(out))
		o := out[lo:hi]
		scalarOpGo(opMul, a[lo:hi], -1, o)
		expGo(o, o)
		scalarOpGo(opAdd, o, 1, o)
		scalarOpGo(opRDiv, o, 1, o)
	}
}

// dotRowsGo computes y[j] = w[j·ldw:]·x for j < n, four rows of w per pass over x.
func dotRowsGo(w []float32, ldw int, x, y []float32) {
	k := len(x)
	if k == 8 {
		// Attention heads of 8 (the smallest models): one unrolled row at a time, x in registers.
		x0, x1, x2, x3, x4, x5, x6, x7 := x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7]
		for j := range y {
			r := w[j*ldw : j*ldw+8 : j*ldw+8]
			y[j] = (r[0]*x0 + r[1]*x1 + r[2]*x2 + r[3]*x3) + (r[4]*x4 + r[5]*x5 + r[6]*x6 + r[7]*x7)
		}
		return
	}
	j := 0
	for ; j+4 <= len(y); j += 4 {
		w0 := w[j*ldw : j*ldw+k]
		w1 := w[(j+1)*ldw : (j+1)*ldw+k]
		w2 := w[(j+2)*ldw : (j+2)*ldw+k]
		w3 := w[(j+3)*ldw : (j+3)*ldw+k]
		var s0, s1, s2, s3 float32
		for p, v := range x {
			s0 += w0[p] * v
			s1 += w1[p] * v
			s2 += w2[p] * v
			s3 += w3[p] * v
		}
		y[j], y[j+1], y[j+2], y[j+3] = s0, s1, s2, s3
	}
	for ; j < len(y); j++ {
		y[j] = dotGo(w[j*ldw:j*ldw+k], x)
	}
}

// matMulNTGo: rows of w in the outer loop, so each is brought in once for all rows of x.
func matMulNTGo(m, n, k int, x []float32, ldx int, w []float32, ldw int, y []float32, ldy int) {
	if m == 1 {
		dotRowsGo(w, ldw, x[:k], y[:n])
		return
	}
	for j := range n {
		row := w[j*ldw : j*ldw+k]
		for i := range m {
			y[i*ldy+j] = dotGo(row, x[i*ldx:i*ldx+k])
		}
	}
}

// gemm4x4Go is the portable Sgemm micro-kernel (see the assembly ones): a 4×4 tile in 16
// local variables (registers on 64-bit ARM, which has 32 of them).
func gemm4x4Go(k int, a, b, c []float32, ldc int, accumulate bool) {
	var c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33 float32
	a, b = a[:4*k], b[:4*k]
	for p := 0; p < len(a); p += 4 {
		av, bv := a[p:p+4:p+4], b[p:p+4:p+4]
		b0, b1, b2, b3 := bv[0], bv[1], bv[2], bv[3]
		a0 := av[0]
		c00 += a0 * b0
		c01 += a0 * b1
		c02 += a0 * b2
		c03 += a0 * b3
		a1 := av[1]
		c10 += a1 * b0
		c11 += a1 * b1
		c12 += a1 * b2
		c13 += a1 * b3
		a2 := av[2]
		c20 += a2 * b0
		c21 += a2 * b1
		c22 += a2 * b2
		c23 += a2 * b3
		a3 := av[3]
		c30 += a3 * b0
		c31 += a3 * b1
		c32 += a3 * b2
		c33 += a3 * b3
	}
	tile := [4][4]float32{{c00, c01, c02, c03}, {c10, c11, c12, c13}, {c20, c21, c22, c23}, {c30, c31, c32, c33}}
	for i := range 4 {
		row := c[i*ldc : i*ldc+4 : i*ldc+4]
		if accumulate {
			row[0] += tile[i][0]
			row[1] += tile[i][1]
			row[2] += tile[i][2]
			row[3] += tile[i][3]
		} else {
			copy(row, tile[i][:])
		}
	}
}
