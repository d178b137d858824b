package main

// The register-blocked micro-kernels of Sgemm: an mr×nr tile of C (nr = nv vectors) kept in
// registers over the whole k loop, fed by packed panels of A (mr floats per k, broadcast one
// at a time) and B (nr floats per k).

import (
	"fmt"
	"math/bits"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func gemm(s isa, mr, nv int) {
	nr := nv * s.lanes
	name := fmt.Sprintf("gemm%dx%d%s", mr, nr, s.name)
	TEXT(name, NOSPLIT, "func(k int, a, b, c *float32, ldc int, accumulate int)")
	Pragma("noescape")
	Doc(fmt.Sprintf("%s computes the %d×%d tile T = Σ_p a[p·%d+i]·b[p·%d+j] over p < k (k >= 1)", name, mr, nr, mr, nr),
		"and sets c[i·ldc+j] = T[i, j], or adds T to it if accumulate != 0.")
	k := loadGP("k")
	a, b := mem("a"), mem("b")
	acc := s.zeros(mr * nv)
	// step multiplies column p (relative to the pointers) of the A panel with row p of the B
	// panel into the tile.
	step := func(p int) {
		bv := make([]VecVirtual, nv)
		for v := range bv {
			bv[v] = s.vec()
			VMOVUPS(b.Offset(p*4*nr+v*s.bytes), bv[v])
		}
		for i := 0; i < mr; i++ {
			t := s.vec()
			VBROADCASTSS(a.Offset(p*4*mr+4*i), t)
			for v := range bv {
				VFMADD231PS(bv[v], t, acc[i*nv+v])
			}
		}
	}
	// Two k steps per loop iteration: measured a few percent ahead of one and of four (and the
	// 8x32 tile level with 12x32) at 512³; $GEN_GEMM_UNROLL_<ISA> overrides (a power of 2).
	unroll := envInt(fmt.Sprintf("GEN_GEMM_UNROLL_%s", s.name), 2)
	panelLoop(k, a, b, mr, nr, unroll, step)
	storeTile(acc, mr, nv, s.bytes)
}

// gemmDirect is gemm reading A where it lies, without a packed panel: element (i, p) of the
// mr×k block at a[i·rs+p·cs], so op(A) = A (rs = lda, cs = 1) and op(A) = Aᵀ (rs = 1, cs = lda)
// are both walked in place. Packing A costs a pass over it per product, as much time as the
// multiply itself when n is small (attention's products with n = head dim) and the pack is
// scalar; the broadcasts need no contiguous panel, only mr addresses per step. Rows go through
// a base pointer every three rows (x86 scales an index by 1, 2, 4 or 8, so rows 3q to 3q+2 are
// base_q+{0,1,2}·rs). mr is at most 9.
func gemmDirect(s isa, mr, nv int) {
	if mr > 9 {
		panic("gemmDirect: at most 9 rows")
	}
	nr := nv * s.lanes
	name := fmt.Sprintf("gemmDirect%dx%d%s", mr, nr, s.name)
	TEXT(name, NOSPLIT, "func(k int, a *float32, rs, cs int, b, c *float32, ldc int, accumulate int)")
	Pragma("noescape")
	Doc(fmt.Sprintf("%s computes the %d×%d tile T = Σ_p a[i·rs+p·cs]·b[p·%d+j] over p < k (k >= 1)", name, mr, nr, nr),
		"and sets c[i·ldc+j] = T[i, j], or adds T to it if accumulate != 0.")
	k := loadGP("k")
	rs := loadGP("rs")
	SHLQ(U8(2), rs)
	cs := loadGP("cs")
	SHLQ(U8(2), cs)
	bases := []GPVirtual{loadGP("a")}
	for len(bases)*3 < mr {
		next := GP64()
		prev := bases[len(bases)-1]
		LEAQ(Mem{Base: prev, Index: rs, Scale: 2}, next)
		ADDQ(rs, next)
		bases = append(bases, next)
	}
	b := mem("b")
	rows := make([]Mem, mr)
	for i := range rows {
		base := bases[i/3]
		switch i % 3 {
		case 0:
			rows[i] = Mem{Base: base}
		case 1:
			rows[i] = Mem{Base: base, Index: rs, Scale: 1}
		case 2:
			rows[i] = Mem{Base: base, Index: rs, Scale: 2}
		}
	}
	acc := s.zeros(mr * nv)
	Label("step")
	bv := make([]VecVirtual, nv)
	for v := range bv {
		bv[v] = s.vec()
		VMOVUPS(b.Offset(v*s.bytes), bv[v])
	}
	for i := 0; i < mr; i++ {
		t := s.vec()
		VBROADCASTSS(rows[i], t)
		for v := range bv {
			VFMADD231PS(bv[v], t, acc[i*nv+v])
		}
	}
	for _, base := range bases {
		ADDQ(cs, base)
	}
	ADDQ(U32(4*nr), b.Base)
	DECQ(k)
	JNZ(LabelRef("step"))
	storeTile(acc, mr, nv, s.bytes)
}

// panelLoop runs step over the k steps of the packed panels (mr and nr 4-byte values a step:
// floats, or bfloat16 pairs), unroll at a time, then one at a time.
func panelLoop(k GPVirtual, a, b Mem, mr, nr, unroll int, step func(q int)) {
	if unroll > 1 {
		n := GP64()
		MOVQ(k, n)
		SHRQ(U8(bits.TrailingZeros(uint(unroll))), n)
		JZ(LabelRef("one"))
		Label("block")
		for q := 0; q < unroll; q++ {
			step(q)
		}
		ADDQ(U32(4*mr*unroll), a.Base)
		ADDQ(U32(4*nr*unroll), b.Base)
		DECQ(n)
		JNZ(LabelRef("block"))
		ANDQ(U32(unroll-1), k)
		JZ(LabelRef("done"))
	}
	Label("one")
	step(0)
	ADDQ(U32(4*mr), a.Base)
	ADDQ(U32(4*nr), b.Base)
	DECQ(k)
	JNZ(LabelRef("one"))
	Label("done")
}

// storeTile writes the tile in acc (mr rows of nv vectors of vbytes) to c (row stride ldc),
// adding it there if accumulate != 0, and returns.
func storeTile(acc []VecVirtual, mr, nv, vbytes int) {
	c := mem("c")
	ldc := loadGP("ldc")
	SHLQ(U8(2), ldc)
	flag := loadGP("accumulate")
	TESTQ(flag, flag)
	JZ(LabelRef("overwrite"))
	for i := 0; i < mr; i++ {
		for v := 0; v < nv; v++ {
			VADDPS(c.Offset(v*vbytes), acc[i*nv+v], acc[i*nv+v])
			VMOVUPS(acc[i*nv+v], c.Offset(v*vbytes))
		}
		if i < mr-1 {
			ADDQ(ldc, c.Base)
		}
	}
	VZEROUPPER()
	RET()
	Label("overwrite")
	for i := 0; i < mr; i++ {
		for v := 0; v < nv; v++ {
			VMOVUPS(acc[i*nv+v], c.Offset(v*vbytes))
		}
		if i < mr-1 {
			ADDQ(ldc, c.Base)
		}
	}
	VZEROUPPER()
	RET()
}
