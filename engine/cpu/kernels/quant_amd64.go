package kernels

// Go declarations of quant_amd64.s (AVX-512) and quant_avx2_amd64.s (AVX2+FMA), and
// the checked wrappers that call the set asked for.

import "fmt"

const haveQuantAsm = true

//go:noescape
func q8DotRowsAVX512(q *int8, d *float32, x *float32, y *float32, rows int, nb int)

//go:noescape
func q4DotRowsAVX512(q *uint8, d *float32, x *float32, y *float32, rows int, nb int)

//go:noescape
func bf16DotRowsAVX512(w *uint16, ldw int, x *float32, y *float32, rows int, n16 int)

//go:noescape
func q8DequantAVX512(q *int8, d *float32, dst *float32, nb int)

//go:noescape
func q4DequantAVX512(q *uint8, d *float32, dst *float32, nb int)

//go:noescape
func q8DotRowsAVX2(q *int8, d *float32, x *float32, y *float32, rows int, nb int)

//go:noescape
func q4DotRowsAVX2(q *uint8, d *float32, x *float32, y *float32, rows int, nb int)

//go:noescape
func bf16DotRowsAVX2(w *uint16, ldw int, x *float32, y *float32, rows int, n16 int)

//go:noescape
func q8DequantAVX2(q *int8, d *float32, dst *float32, nb int)

//go:noescape
func q4DequantAVX2(q *uint8, d *float32, dst *float32, nb int)

// The wrappers check every length before the assembly reads or writes memory, and run the
// assembly of set a (quantAVX2 or quantAVX512, from quantKernels).

func q8DotRows(a quantAsm, q []int8, d []float32, x, y []float32, nb int) {
	if len(q) < len(y)*32*nb || len(d) < len(y)*nb || len(x) < 32*nb {
		panic(fmt.Sprintf("q8DotRows: %d rows of %d blocks, got %d values, %d scales, x of %d", len(y), nb, len(q), len(d), len(x)))
	}
	if nb == 0 || len(y) == 0 {
		clear(y)
		return
	}
	if a == quantAVX2 {
		q8DotRowsAVX2(&q[0], &d[0], &x[0], &y[0], len(y), nb)
	} else {
		q8DotRowsAVX512(&q[0], &d[0], &x[0], &y[0], len(y), nb)
	}
}

func q4DotRows(a quantAsm, q []uint8, d []float32, x, y []float32, nb int) {
	if len(q) < len(y)*16*nb || len(d) < len(y)*nb || len(x) < 32*nb {
		panic(fmt.Sprintf("q4DotRows: %d rows of %d blocks, got %d bytes, %d scales, x of %d", len(y), nb, len(q), len(d), len(x)))
	}
	if nb == 0 || len(y) == 0 {
		clear(y)
		return
	}
	if a == quantAVX2 {
		q4DotRowsAVX2(&q[0], &d[0], &x[0], &y[0], len(y), nb)
	} else {
		q4DotRowsAVX512(&q[0], &d[0], &x[0], &y[0], len(y), nb)
	}
}

func bf16DotRows(a quantAsm, w []uint16, ldw int, x, y []float32, n16 int) {
	if len(y) > 0 && (len(w) < (len(y)-1)*ldw+16*n16 || len(x) < 16*n16 || 16*n16 > ldw) {
		panic(fmt.Sprintf("bf16DotRows: %d rows of stride %d, 16·%d values, got %d and x of %d", len(y), ldw, n16, len(w), len(x)))
	}
	if n16 == 0 || len(y) == 0 {
		clear(y)
		return
	}
	if a == quantAVX2 {
		bf16DotRowsAVX2(&w[0], ldw, &x[0], &y[0], len(y), n16)
	} else {
		bf16DotRowsAVX512(&w[0], ldw, &x[0], &y[0], len(y), n16)
	}
}

func q8Dequant(a quantAsm, q []int8, d []float32, dst []float32) {
	nb := len(d)
	if len(q) < 32*nb || len(dst) < 32*nb {
		panic(fmt.Sprintf("q8Dequant: %d blocks, got %d values and %d floats", nb, len(q), len(dst)))
	}
	if nb == 0 {
		return
	}
	if a == quantAVX2 {
		q8DequantAVX2(&q[0], &d[0], &dst[0], nb)
	} else {
		q8DequantAVX512(&q[0], &d[0], &dst[0], nb)
	}
}

func q4Dequant(a quantAsm, q []uint8, d []float32, dst []float32) {
	nb := len(d)
	if len(q) < 16*nb || len(dst) < 32*nb {
		panic(fmt.Sprintf("q4Dequant: %d blocks, got %d bytes and %d floats", nb, len(q), len(dst)))
	}
	if nb == 0 {
		return
	}
	if a == quantAVX2 {
		q4DequantAVX2(&q[0], &d[0], &dst[0], nb)
	} else {
		q4DequantAVX512(&q[0], &d[0], &dst[0], nb)
	}
}
