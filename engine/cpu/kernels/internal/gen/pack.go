package main

// The packing of A for Sgemm's AVX-512 micro-kernel: 8 rows of A become a panel of k columns
// of 8 floats. In Go that gather costs about a nanosecond a float, an eighth of a training
// step's time; in registers it is an 8×16 transpose per 16 columns: 32 shuffles for 128 floats.
// The same transpose packs a transposed B (stored [n, k]) into the micro-kernel's panels of 32
// columns, 8 rows of it at a time into a quarter of each panel row.

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// pack8 generates name, which writes row p of the transpose of 8 rows of a, ldd floats apart.
func pack8(name string, ldd int) {
	TEXT(name, NOSPLIT, "func(a *float32, lda int, dst *float32, n16 int)")
	Pragma("noescape")
	Doc(fmt.Sprintf("%s writes dst[p·%d+i] = a[i·lda+p] for i < 8 and p < 16·n16 (AVX-512 only).", name, ldd))
	a, lda, dst, n := loadGP("a"), loadGP("lda"), loadGP("dst"), loadGP("n16")
	SHLQ(U8(2), lda)             // bytes
	rows, b := eightRows(a, lda) // b: row 4, advanced with a
	TESTQ(n, n)
	JZ(LabelRef("done"))
	Label("loop")
	r := make([]VecVirtual, 8)
	for i := range r {
		r[i] = ZMM()
		VMOVUPS(rows[i], r[i])
	}
	transpose8x16(r, dst, 4*ldd)
	ADDQ(U32(64), a)
	ADDQ(U32(64), b)
	ADDQ(U32(16*4*ldd), dst)
	DECQ(n)
	JNZ(LabelRef("loop"))
	Label("done")
	VZEROUPPER()
	RET()
}

// transpose8x16 stores the 8×16 matrix of 32-bit values in r (r[i] is row i) by columns:
// column c (8 values, rows 0-7) at dst + stride·c (bytes, at least 32).
func transpose8x16(r []VecVirtual, dst GPVirtual, stride int) {
	// Within each 128-bit lane (columns c0..c3 of the lane): pairs of rows interleaved, then
	// pairs of pairs, so that u[c] holds rows 0-3 of column c of every lane and v[c] rows 4-7.
	t := make([]VecVirtual, 8)
	for i := 0; i < 8; i += 2 {
		t[i], t[i+1] = ZMM(), ZMM()
		VUNPCKLPS(r[i+1], r[i], t[i])   // r_i c0, r_i+1 c0, r_i c1, r_i+1 c1
		VUNPCKHPS(r[i+1], r[i], t[i+1]) // the same for c2, c3
	}
	col := func(lo, hi VecVirtual, high bool) VecVirtual {
		x := ZMM()
		if high {
			VUNPCKHPD(hi, lo, x)
		} else {
			VUNPCKLPD(hi, lo, x)
		}
		return x
	}
	u := []VecVirtual{col(t[0], t[2], false), col(t[0], t[2], true), col(t[1], t[3], false), col(t[1], t[3], true)}
	v := []VecVirtual{col(t[4], t[6], false), col(t[4], t[6], true), col(t[5], t[7], false), col(t[5], t[7], true)}
	// Lane L of u[c] and v[c] is column 4L+c. Output vector j is columns 2j and 2j+1, all 8
	// rows: [u[c].L, v[c].L, u[c+1].L, v[c+1].L] for column 4L+c, c even.
	const even, odd = 0x88, 0xDD // lanes (0, 2) of each source, lanes (1, 3)
	for c := 0; c < 4; c += 2 {
		for _, half := range []int{even, odd} { // lanes 0, 2 or lanes 1, 3
			x, y := ZMM(), ZMM()
			VSHUFF32X4(U8(half), v[c], u[c], x)     // u[c].La, u[c].Lb, v[c].La, v[c].Lb
			VSHUFF32X4(U8(half), v[c+1], u[c+1], y) // the same for column c+1
			lane := 0
			if half == odd {
				lane = 1
			}
			for k, sel := range []int{even, odd} { // lane a (0 or 1), then lane b (2 or 3)
				o := ZMM()
				VSHUFF32X4(U8(sel), y, x, o)
				column := 4*(lane+2*k) + c
				// o holds columns column and column+1: adjacent unless the stride is 8 values.
				if stride == 4*8 {
					VMOVUPS(o, Mem{Base: dst, Disp: stride * column})
				} else {
					VMOVUPS(o.AsY(), Mem{Base: dst, Disp: stride * column})
					VEXTRACTF32X8(U8(1), o, Mem{Base: dst, Disp: stride * (column + 1)})
				}
			}
		}
	}
}

// eightRows addresses rows 0-7 from a, lda bytes apart, from two bases: a and row4, a new
// register holding row 4's address (a loop that moves a along the rows moves row4 too).
func eightRows(a, lda GPVirtual) (rows []Mem, row4 GPVirtual) {
	lda3 := times3(lda)
	row4 = GP64()
	LEAQ(Mem{Base: a, Index: lda, Scale: 4}, row4)
	return append(fourRows(a, lda, lda3), fourRows(row4, lda, lda3)...), row4
}

// fourRows addresses rows 0-3 from base, lda bytes apart (lda3 = 3·lda).
func fourRows(base, lda, lda3 GPVirtual) []Mem {
	return []Mem{{Base: base}, {Base: base, Index: lda, Scale: 1}, {Base: base, Index: lda, Scale: 2}, {Base: base, Index: lda3, Scale: 1}}
}

// times3 is a new register holding 3·x (x a row stride in bytes).
func times3(x GPVirtual) GPVirtual {
	r := GP64()
	LEAQ(Mem{Base: x, Index: x, Scale: 2}, r)
	return r
}
