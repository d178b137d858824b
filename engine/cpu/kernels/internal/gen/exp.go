package main

// The vector exponential. x is clamped to [-104, 89] (NaN passes through: the clamps keep
// their second operand, x, when the comparison is unordered), split as x = k·ln2 + r with
// k = round(x·log2 e) and |r| <= ln2/2 (ln2 in two parts so that r is exact to float32
// precision), e^r by its Taylor polynomial of degree 7 (truncation error below 6e-9), then
// scaled by 2^k: VSCALEFPS on AVX-512 (it saturates to 0 and +Inf and rounds subnormals
// correctly); on AVX2 two multiplications by 2^(k/2) and 2^(k-k/2) built in the exponent field,
// so that k from -150 to 128 needs no special case (the second product overflows to +Inf or
// rounds to a subnormal or 0 exactly as a float32 multiplication does). x at or below -104
// gives 0 without the scaling (below).

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func exp(s isa) {
	expKernel(s, "exp", "e^a[i]", false)
}

// logistic is 1/(1 + e^−x) in one pass: the negation (a sign flip), the exponential above,
// an addition and a division, the operations and roundings of
// RDivScalar(AddScalar(Exp(MulScalar(x, −1)), 1), 1), so its results are those four passes'
// bit for bit.
func logistic(s isa) {
	expKernel(s, "logistic", "1/(1 + e^−a[i])", true)
}

// expKernel emits the exponential of each element, or with sigmoid the logistic function.
func expKernel(s isa, name, formula string, sigmoid bool) {
	TEXT(name+s.name, NOSPLIT, "func(a, out *float32, n int)")
	Pragma("noescape")
	Doc(fmt.Sprintf("%s%s sets out[i] = %s for i < n (out may be a).", name, s.name, formula))
	a, out := mem("a"), mem("out")
	n := loadGP("n")

	// Constants: registers on AVX-512; on AVX2 the clamps, the reduction and the scaling in
	// registers, the polynomial coefficients as memory operands.
	reg := map[string]Op{}
	for _, c := range []string{"expLo", "expHi", "log2e", "ln2hi", "ln2lo", "one"} {
		reg[c] = s.broadcast(c)
	}
	if sigmoid {
		reg["signBit"] = s.broadcast("signBit")
	}
	if s.masks {
		for _, c := range []string{"c7", "c6", "c5", "c4", "c3", "c2"} {
			reg[c] = s.broadcast(c)
		}
	} else {
		reg["bias"] = s.broadcast("bias")
		for _, c := range []string{"c7", "c6", "c5", "c4", "c3", "c2"} {
			reg[c] = vectorConst(c)
		}
	}
	expBody := func(x VecVirtual) VecVirtual {
		VMAXPS(x, reg["expLo"], x)
		VMINPS(x, reg["expHi"], x)
		// Lanes at the lower clamp (a causal mask's −∞, half of a softmax's scores) are 0,
		// set directly: computed, their 2^−150 underflows, and on Intel every vector
		// with an underflowing lane takes a microcode assist (16 times slower). keep is
		// x > −104 or NaN (predicate NLE_UQ, so NaN stays NaN).
		var keep Op
		if s.masks {
			km := K()
			VCMPPS(U8(6), reg["expLo"], x, km)
			keep = km
		} else {
			m := s.vec()
			VCMPPS(U8(6), reg["expLo"], x, m)
			VANDPS(m, x, x) // the dropped lanes compute e^0
			keep = m
		}
		k := s.vec()
		VMULPS(reg["log2e"], x, k)
		if s.masks {
			VRNDSCALEPS(U8(0), k, k) // round to nearest even
		} else {
			VROUNDPS(U8(0), k, k)
		}
		VFNMADD231PS(reg["ln2hi"], k, x) // x -= k·ln2hi
		VFNMADD231PS(reg["ln2lo"], k, x) // x -= k·ln2lo: now r
		p := s.vec()
		if s.masks {
			VMOVAPS(reg["c7"], p)
		} else {
			VMOVUPS(reg["c7"], p)
		}
		for _, c := range []string{"c6", "c5", "c4", "c3", "c2", "one", "one"} {
			VFMADD213PS(reg[c], x, p) // p = p·r + c
		}
		if s.masks {
			VSCALEFPS_Z(k, p, keep, p)
			return p
		}
		ki, k1 := s.vec(), s.vec()
		VCVTPS2DQ(k, ki)
		VPSRAD(U8(1), ki, k1) // k1 = k>>1
		VPSUBD(k1, ki, ki)    // ki = k - k1
		VPADDD(reg["bias"], k1, k1)
		VPSLLD(U8(23), k1, k1)
		VPADDD(reg["bias"], ki, ki)
		VPSLLD(U8(23), ki, ki)
		VMULPS(k1, p, p)
		VMULPS(ki, p, p)
		VANDPS(keep, p, p)
		return p
	}
	body := expBody
	if sigmoid {
		body = func(x VecVirtual) VecVirtual {
			VXORPS(reg["signBit"], x, x) // −x
			p := expBody(x)
			VADDPS(reg["one"], p, p)
			VDIVPS(p, reg["one"], p) // 1/p
			return p
		}
	}
	stream{
		s: s, n: n, ptrs: []GPVirtual{a.Base.(GPVirtual), out.Base.(GPVirtual)}, unroll: 2,
		block: func(u, off int) {
			x := s.vec()
			VMOVUPS(a.Offset(off), x)
			VMOVUPS(body(x), out.Offset(off))
		},
		masked: func(k OpmaskVirtual) {
			x := s.vec()
			VMOVUPS_Z(a, k, x)
			VMOVUPS(body(x), k, out)
		},
		scalar: func() {
			// The vector code on lane 0 (the other lanes hold e^0).
			x := s.vec()
			VXORPS(x, x, x) // a full write first, for avo's liveness (see mmnt.go)
			VMOVSS(a, x.AsX())
			VMOVSS(body(x).AsX(), out)
		},
	}.emit()
	VZEROUPPER()
	RET()
}
