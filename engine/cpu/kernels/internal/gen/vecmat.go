package main

// A row vector times a matrix stored row-major [k, n]: y[j] = Σ_p x[p]·b[p·ldb+j]. This is a
// decoding step's q·k against keys cached transposed [headDim, slots]: k is short (the head
// dimension), n long (the slots). A block of columns stays in registers while p runs down the
// rows, so y is written once and each element of b is read once; the alternative, k passes of
// axpy over y, loads and stores y k times.

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// vecMatCols is the number of vector accumulators of the main column block: 256 floats with
// AVX-512 (half its registers), so that a 256-slot cache row is read in one pass; 64 with
// AVX2 (half of its 16).
func vecMatCols(s isa) int { return s.regs / 2 }

func vecMat(s isa) {
	name := "vecMat" + s.name
	TEXT(name, NOSPLIT, "func(x *float32, b *float32, ldb int, y *float32, k, n int)")
	Pragma("noescape")
	Doc(fmt.Sprintf("%s sets y[j] = Σ_p x[p]·b[p·ldb+j] for j < n, p < k (k ≥ 1).", name))
	x := loadGP("x")
	b := loadGP("b")
	ldb := loadGP("ldb")
	SHLQ(U8(2), ldb) // bytes
	y := loadGP("y")
	k := loadGP("k")
	n := loadGP("n")
	xp, bp, p := GP64(), GP64(), GP64()

	// block emits one pass down the k rows for the columns at b (and y) with cols vector
	// accumulators: fma adds x[p] times vector u of row p, store writes accumulator u to y.
	block := func(label string, cols int, fma func(u int, bv Mem, xv, acc VecVirtual), store func(u int, acc VecVirtual)) {
		acc := s.zeros(cols)
		MOVQ(x, xp)
		MOVQ(b, bp)
		MOVQ(k, p)
		Label(label)
		xv := s.vec()
		VBROADCASTSS(Mem{Base: xp}, xv)
		for u := range cols {
			fma(u, Mem{Base: bp, Disp: u * s.bytes}, xv, acc[u])
		}
		ADDQ(U8(4), xp)
		ADDQ(ldb, bp)
		DECQ(p)
		JNZ(LabelRef(label))
		for u := range cols {
			store(u, acc[u])
		}
	}
	plain := func(u int, bv Mem, xv, acc VecVirtual) { VFMADD231PS(bv, xv, acc) }
	storeAt := func(u int, acc VecVirtual) { VMOVUPS(acc, Mem{Base: y, Disp: u * s.bytes}) }

	cols := vecMatCols(s)
	Label("wide")
	CMPQ(n, U32(cols*s.lanes))
	JB(LabelRef("narrow"))
	block("wideRows", cols, plain, storeAt)
	ADDQ(U32(cols*s.bytes), b)
	ADDQ(U32(cols*s.bytes), y)
	SUBQ(U32(cols*s.lanes), n)
	JMP(LabelRef("wide"))

	// What is left, fewer than cols vectors, in halving blocks: each at most once, so the rows
	// are passed over a few times rather than once per vector.
	Label("narrow")
	for c := cols / 2; c >= 1; c /= 2 {
		skip := fmt.Sprintf("after%d", c)
		CMPQ(n, U32(c*s.lanes))
		JB(LabelRef(skip))
		block(fmt.Sprintf("rows%d", c), c, plain, storeAt)
		ADDQ(U32(c*s.bytes), b)
		ADDQ(U32(c*s.bytes), y)
		SUBQ(U32(c*s.lanes), n)
		Label(skip)
	}

	Label("tail")
	TESTQ(n, n)
	JZ(LabelRef("done"))
	if s.masks {
		m := tailOpmask(n)
		block("tailRows", 1,
			func(u int, bv Mem, xv, acc VecVirtual) {
				t := s.vec()
				VMOVUPS_Z(bv, m, t)
				VFMADD231PS(t, xv, acc)
			},
			func(u int, acc VecVirtual) { VMOVUPS(acc, m, Mem{Base: y}) })
	} else {
		// One column at a time down the rows.
		Label("column")
		acc := XMM()
		VXORPS(acc, acc, acc)
		MOVQ(x, xp)
		MOVQ(b, bp)
		MOVQ(k, p)
		Label("columnRows")
		xv := XMM()
		VMOVSS(Mem{Base: xp}, xv)
		VFMADD231SS(Mem{Base: bp}, xv, acc)
		ADDQ(U8(4), xp)
		ADDQ(ldb, bp)
		DECQ(p)
		JNZ(LabelRef("columnRows"))
		VMOVSS(acc, Mem{Base: y})
		ADDQ(U8(4), b)
		ADDQ(U8(4), y)
		DECQ(n)
		JNZ(LabelRef("column"))
	}
	Label("done")
	VZEROUPPER()
	RET()
}
