package main

// Kernels that stream through one or a few vectors element by element: sum, max and the
// elementwise operations. They share one loop shape (stream.emit).

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// stream is the loop over n elements: blocks of unroll vectors, then single vectors, then the
// last n % lanes elements: one masked vector (AVX-512) or one element at a time (AVX2).
type stream struct {
	s      isa
	n      GPVirtual   // elements left; consumed
	ptrs   []GPVirtual // base registers, advanced past the elements done
	unroll int
	block  func(u, off int)      // vector u of a block, at byte offset off
	masked func(k OpmaskVirtual) // AVX-512: the lanes of k, at offset 0
	reduce func()                // after the vector part, before the scalar part (may be nil)
	scalar func()                // AVX2: one element at offset 0
}

func (st stream) emit() {
	s := st.s
	advance := func(bytes int) {
		for _, p := range st.ptrs {
			ADDQ(U32(bytes), p)
		}
	}
	CMPQ(st.n, U32(st.unroll*s.lanes))
	JB(LabelRef("vectors"))
	Label("blocks")
	for u := 0; u < st.unroll; u++ {
		st.block(u, u*s.bytes)
	}
	advance(st.unroll * s.bytes)
	SUBQ(U32(st.unroll*s.lanes), st.n)
	CMPQ(st.n, U32(st.unroll*s.lanes))
	JAE(LabelRef("blocks"))

	Label("vectors")
	CMPQ(st.n, U32(s.lanes))
	JB(LabelRef("tail"))
	Label("vector")
	st.block(0, 0)
	advance(s.bytes)
	SUBQ(U32(s.lanes), st.n)
	CMPQ(st.n, U32(s.lanes))
	JAE(LabelRef("vector"))

	Label("tail")
	if s.masks {
		TESTQ(st.n, st.n)
		JZ(LabelRef("done"))
		k := tailOpmask(st.n)
		st.masked(k)
		Label("done")
		if st.reduce != nil {
			st.reduce()
		}
		return
	}
	if st.reduce != nil {
		st.reduce()
	}
	Label("scalars")
	TESTQ(st.n, st.n)
	JZ(LabelRef("done"))
	st.scalar()
	advance(4)
	DECQ(st.n)
	JMP(LabelRef("scalars"))
	Label("done")
}

// addAll folds acc[1:] into acc[0] pairwise.
func addAll(acc []VecVirtual, op func(a, b, dst Op)) {
	for len(acc) > 1 {
		h := len(acc) / 2
		for i := 0; i < h; i++ {
			op(acc[len(acc)-h+i], acc[i], acc[i])
		}
		acc = acc[:len(acc)-h]
	}
}

func vadd(a, b, dst Op) { VADDPS(a, b, dst) }

func sum(s isa) {
	TEXT("sum"+s.name, NOSPLIT, "func(a *float32, n int) float32")
	Pragma("noescape")
	Doc(fmt.Sprintf("sum%s returns Σ a[i] for i < n.", s.name))
	a := mem("a")
	n := loadGP("n")
	acc := s.zeros(4)
	var res VecVirtual
	stream{
		s: s, n: n, ptrs: []GPVirtual{a.Base.(GPVirtual)}, unroll: 4,
		block: func(u, off int) {
			VADDPS(a.Offset(off), acc[u], acc[u])
		},
		masked: func(k OpmaskVirtual) {
			VADDPS(a, acc[0], k, acc[0])
		},
		reduce: func() {
			addAll(acc, vadd)
			res = s.hsum(acc[0])
		},
		scalar: func() {
			VADDSS(a, res, res)
		},
	}.emit()
	Store(res, ReturnIndex(0))
	VZEROUPPER()
	RET()
}

// maxf keeps the running maxima with VMAXPS, which drops NaNs (it returns its second source
// when the comparison is unordered), and records NaNs on the side with an unordered compare:
// into an opmask on AVX-512, into a vector on AVX2. If any was seen the result is NaN.
func maxf(s isa) {
	TEXT("max"+s.name, NOSPLIT, "func(a *float32, n int) float32")
	Pragma("noescape")
	Doc(fmt.Sprintf("max%s returns the largest a[i] for i < n: NaN if any is NaN, -Inf if n == 0.", s.name))
	a := mem("a")
	n := loadGP("n")
	acc := make([]VecVirtual, 4)
	for i := range acc {
		acc[i] = s.broadcast("negInf")
	}
	vmax := func(a, b, dst Op) { VMAXPS(a, b, dst) }
	var res VecVirtual
	var knan OpmaskVirtual
	var vnan VecVirtual
	if s.masks {
		knan = K()
		KXORW(knan, knan, knan)
	} else {
		vnan = s.zeros(1)[0]
	}
	// seen records the NaNs of t (its masked-off lanes are zero).
	seen := func(t VecVirtual) {
		if s.masks {
			c := K()
			VCMPPS(U8(3), t, t, c)
			KORW(c, knan, knan)
			return
		}
		c := s.vec()
		VCMPPS(U8(3), t, t, c)
		VORPS(c, vnan, vnan)
	}
	stream{
		s: s, n: n, ptrs: []GPVirtual{a.Base.(GPVirtual)}, unroll: 4,
		block: func(u, off int) {
			t := s.vec()
			VMOVUPS(a.Offset(off), t)
			seen(t)
			VMAXPS(t, acc[u], acc[u])
		},
		masked: func(k OpmaskVirtual) {
			t := s.vec()
			VMOVUPS_Z(a, k, t)
			seen(t)
			VMAXPS(t, acc[0], k, acc[0])
		},
		reduce: func() {
			if s.masks {
				KORTESTW(knan, knan)
			} else {
				r := GP32()
				VMOVMSKPS(vnan, r)
				TESTL(r, r)
			}
			JNZ(LabelRef("isnan"))
			addAll(acc, vmax)
			res = s.hreduce(acc[0], vmax)
		},
		scalar: func() {
			t := XMM()
			VMOVSS(a, t)
			VUCOMISS(t, t)
			JP(LabelRef("isnan"))
			VMAXSS(t, res, res)
		},
	}.emit()
	Store(res, ReturnIndex(0))
	VZEROUPPER()
	RET()
	Label("isnan")
	q := XMM()
	VMOVSS(scalarConst("nan"), q)
	Store(q, ReturnIndex(0))
	VZEROUPPER()
	RET()
}

// binaryOp is an elementwise operation out = a op b.
type binaryOp struct {
	name      string
	vec, scal func(ops ...Op) // packed and scalar instruction, (b, a, dst) order
	masked    func(ops ...Op)
}

var binaryOps = []binaryOp{
	{"add", VADDPS, VADDSS, VADDPS},
	{"sub", VSUBPS, VSUBSS, VSUBPS},
	{"mul", VMULPS, VMULSS, VMULPS},
	{"div", VDIVPS, VDIVSS, VDIVPS},
}

func binary(s isa, op binaryOp) {
	TEXT(op.name+s.name, NOSPLIT, "func(a, b, out *float32, n int)")
	Pragma("noescape")
	Doc(fmt.Sprintf("%s%s sets out[i] = a[i] %s b[i] for i < n (out may be a or b).", op.name, s.name, map[string]string{"add": "+", "sub": "-", "mul": "·", "div": "/"}[op.name]))
	a, b, out := mem("a"), mem("b"), mem("out")
	n := loadGP("n")
	stream{
		s: s, n: n, ptrs: []GPVirtual{a.Base.(GPVirtual), b.Base.(GPVirtual), out.Base.(GPVirtual)}, unroll: 4,
		block: func(u, off int) {
			t := s.vec()
			VMOVUPS(a.Offset(off), t)
			op.vec(b.Offset(off), t, t)
			VMOVUPS(t, out.Offset(off))
		},
		masked: func(k OpmaskVirtual) {
			t := s.vec()
			VMOVUPS_Z(a, k, t)
			op.masked(b, t, k, t)
			VMOVUPS(t, k, out)
		},
		scalar: func() {
			t := XMM()
			VMOVSS(a, t)
			op.scal(b, t, t)
			VMOVSS(t, out)
		},
	}.emit()
	VZEROUPPER()
	RET()
}

// scalarOpDef is an elementwise operation with a scalar: out = a op s.
type scalarOpDef struct {
	name      string
	vec, scal func(ops ...Op)
	zeroing   func(mxyz, xyz, k, xyz1 Op)
}

var scalarOps = []scalarOpDef{
	{"addScalar", VADDPS, VADDSS, VADDPS_Z},
	{"mulScalar", VMULPS, VMULSS, VMULPS_Z},
	{"rdivScalar", VDIVPS, VDIVSS, VDIVPS_Z}, // c / a: the second half of a logistic
}

func scalarOp(s isa, op scalarOpDef) {
	TEXT(op.name+s.name, NOSPLIT, "func(a *float32, c float32, out *float32, n int)")
	Pragma("noescape")
	Doc(fmt.Sprintf("%s%s sets out[i] = %s for i < n (out may be a).", op.name, s.name, map[string]string{"addScalar": "a[i] + c", "mulScalar": "a[i] · c", "rdivScalar": "c / a[i]"}[op.name]))
	a := mem("a")
	cx := Load(Param("c"), XMM())
	out := mem("out")
	n := loadGP("n")
	cv := s.vec()
	VBROADCASTSS(cx, cv)
	stream{
		s: s, n: n, ptrs: []GPVirtual{a.Base.(GPVirtual), out.Base.(GPVirtual)}, unroll: 4,
		block: func(u, off int) {
			t := s.vec()
			op.vec(a.Offset(off), cv, t)
			VMOVUPS(t, out.Offset(off))
		},
		masked: func(k OpmaskVirtual) {
			t := s.vec()
			op.zeroing(a, cv, k, t)
			VMOVUPS(t, k, out)
		},
		scalar: func() {
			t := XMM()
			op.scal(a, cx, t)
			VMOVSS(t, out)
		},
	}.emit()
	VZEROUPPER()
	RET()
}

// Max and min that propagate NaN, as Go's max and min do (and XLA's). VMAXPS and VMINPS return
// their second source, b, when the comparison is unordered, which covers a NaN b; the lanes
// where a is NaN are then set to a. (For equal zeros of both signs they return b.)
var extremumOps = []binaryOp{
	{"maximum", VMAXPS, VMAXSS, nil},
	{"minimum", VMINPS, VMINSS, nil},
}

// keepNaN sets the lanes of r where t is NaN to t.
func keepNaN(s isa, t, r VecVirtual) {
	if s.masks {
		k := K()
		VCMPPS(U8(3), t, t, k)
		VMOVAPS(t, k, r)
		return
	}
	c := s.vec()
	VCMPPS(U8(3), t, t, c)
	VBLENDVPS(c, t, r, r)
}

// keepNaNScalar is keepNaN on lane 0 (AVX2's scalar tail).
func keepNaNScalar(t, r VecVirtual) {
	c := XMM()
	VCMPSS(U8(3), t, t, c)
	VBLENDVPS(c, t, r, r)
}

func extremum(s isa, op binaryOp) {
	TEXT(op.name+s.name, NOSPLIT, "func(a, b, out *float32, n int)")
	Pragma("noescape")
	Doc(fmt.Sprintf("%s%s sets out[i] = %s(a[i], b[i]) for i < n, NaN if either is (out may be a or b).", op.name, s.name, op.name[:3]))
	a, b, out := mem("a"), mem("b"), mem("out")
	n := loadGP("n")
	stream{
		s: s, n: n, ptrs: []GPVirtual{a.Base.(GPVirtual), b.Base.(GPVirtual), out.Base.(GPVirtual)}, unroll: 4,
		block: func(u, off int) {
			t, r := s.vec(), s.vec()
			VMOVUPS(a.Offset(off), t)
			op.vec(b.Offset(off), t, r)
			keepNaN(s, t, r)
			VMOVUPS(r, out.Offset(off))
		},
		masked: func(k OpmaskVirtual) {
			t, v, r := s.vec(), s.vec(), s.vec()
			VMOVUPS_Z(a, k, t)
			VMOVUPS_Z(b, k, v)
			op.vec(v, t, r)
			keepNaN(s, t, r)
			VMOVUPS(r, k, out)
		},
		scalar: func() {
			t, r := XMM(), XMM()
			VMOVSS(a, t)
			op.scal(b, t, r)
			keepNaNScalar(t, r)
			VMOVSS(r, out)
		},
	}.emit()
	VZEROUPPER()
	RET()
}

func extremumScalar(s isa, op binaryOp) {
	name := op.name + "Scalar"
	TEXT(name+s.name, NOSPLIT, "func(a *float32, c float32, out *float32, n int)")
	Pragma("noescape")
	Doc(fmt.Sprintf("%s%s sets out[i] = %s(a[i], c) for i < n, NaN if either is (out may be a).", name, s.name, op.name[:3]))
	a := mem("a")
	cx := Load(Param("c"), XMM())
	out := mem("out")
	n := loadGP("n")
	cv := s.vec()
	VBROADCASTSS(cx, cv)
	stream{
		s: s, n: n, ptrs: []GPVirtual{a.Base.(GPVirtual), out.Base.(GPVirtual)}, unroll: 4,
		block: func(u, off int) {
			t, r := s.vec(), s.vec()
			VMOVUPS(a.Offset(off), t)
			op.vec(cv, t, r)
			keepNaN(s, t, r)
			VMOVUPS(r, out.Offset(off))
		},
		masked: func(k OpmaskVirtual) {
			t, r := s.vec(), s.vec()
			VMOVUPS_Z(a, k, t)
			op.vec(cv, t, r)
			keepNaN(s, t, r)
			VMOVUPS(r, k, out)
		},
		scalar: func() {
			t, r := XMM(), XMM()
			VMOVSS(a, t)
			op.scal(cx, t, r)
			keepNaNScalar(t, r)
			VMOVSS(r, out)
		},
	}.emit()
	VZEROUPPER()
	RET()
}

// sign: (a AND the sign bit) OR 1.0 is ±1; lanes where a is ±0 or NaN keep a (an ordered
// not-equal compare with zero picks the others).
func sign(s isa) {
	TEXT("sign"+s.name, NOSPLIT, "func(a, out *float32, n int)")
	Pragma("noescape")
	Doc(fmt.Sprintf("sign%s sets out[i] = 1 for a[i] > 0, -1 for a[i] < 0, a[i] otherwise (±0, NaN).", s.name))
	a, out := mem("a"), mem("out")
	n := loadGP("n")
	bit, one := s.broadcast("signBit"), s.broadcast("one")
	zero := s.zeros(1)[0]
	and, or := VANDPS, VORPS
	if s.masks {
		and, or = VPANDD, VPORD
	}
	body := func(t VecVirtual) {
		u := s.vec()
		and(bit, t, u)
		or(one, u, u)
		if s.masks {
			k := K()
			VCMPPS(U8(0x0c), zero, t, k)
			VMOVAPS(u, k, t)
			return
		}
		c := s.vec()
		VCMPPS(U8(0x0c), zero, t, c)
		VBLENDVPS(c, u, t, t)
	}
	stream{
		s: s, n: n, ptrs: []GPVirtual{a.Base.(GPVirtual), out.Base.(GPVirtual)}, unroll: 4,
		block: func(u, off int) {
			t := s.vec()
			VMOVUPS(a.Offset(off), t)
			body(t)
			VMOVUPS(t, out.Offset(off))
		},
		masked: func(k OpmaskVirtual) {
			t := s.vec()
			VMOVUPS_Z(a, k, t)
			body(t)
			VMOVUPS(t, k, out)
		},
		scalar: func() {
			t := XMM()
			VMOVSS(a, t)
			u, c := XMM(), XMM()
			VANDPS(bit.AsX(), t, u)
			VORPS(one.AsX(), u, u)
			VCMPSS(U8(0x0c), zero.AsX(), t, c)
			VBLENDVPS(c, u, t, t)
			VMOVSS(t, out)
		},
	}.emit()
	VZEROUPPER()
	RET()
}
