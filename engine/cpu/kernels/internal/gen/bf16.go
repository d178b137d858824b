package main

// The bfloat16 micro-kernel of SgemmBF16: an mr×nr tile of C in float32 accumulators, fed by
// panels of A and B packed as bf16 pairs along k (each 32-bit lane holds x[2q] in its low half
// and x[2q+1] in its high half). One VDPBF16PS multiplies 16 such pairs of B (16 columns) with
// a broadcast pair of A and adds both products to 16 accumulators: two k steps per
// instruction where VFMADD231PS does one, at the same issue rate.
//
// Neither avo v0.5.0 nor the Go assembler knows the AVX512_BF16 instructions (VDPBF16PS,
// VCVTNE2PS2BF16). The kernels are therefore written with a stand-in of the same operand shape
// (VFMADD231PS for VDPBF16PS: zmm3, zmm2, zmm1 with zmm1 read and written; VPADDD for
// VCVTNE2PS2BF16: zmm1 only written), marked by a comment "bf16: <instruction>", so that avo
// allocates the registers; after Generate, bf16Patch replaces each marked stand-in by the
// bytes of the real instruction on the same registers (evexEncode).
//
// The packing to bf16 pairs is in assembly too: in Go, rounding and gathering each value
// took about as long as the kernel's whole work on it.

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func gemmBF16(mr, nv int) {
	const lanes, vbytes = 16, 64
	nr := nv * lanes
	name := fmt.Sprintf("gemm%dx%dBF16", mr, nr)
	TEXT(name, NOSPLIT, "func(k2 int, a, b *uint32, c *float32, ldc int, accumulate int)")
	Pragma("noescape")
	Doc(fmt.Sprintf("%s computes the %d×%d tile T = Σ_q Σ_h bf16(a[q·%d+i], h)·bf16(b[q·%d+j], h)", name, mr, nr, mr, nr),
		"over q < k2 (k2 >= 1) and both halves h of each 32-bit pair, and sets c[i·ldc+j] = T[i, j],",
		"or adds T to it if accumulate != 0 (AVX512_BF16: VDPBF16PS).")
	k := loadGP("k2")
	a, b := mem("a"), mem("b")
	acc := avx512.zeros(mr * nv)
	step := func(q int) {
		bv := make([]VecVirtual, nv)
		for v := range bv {
			bv[v] = ZMM()
			VMOVDQU32(b.Offset(q*4*nr+v*vbytes), bv[v])
		}
		for i := 0; i < mr; i++ {
			t := ZMM()
			VPBROADCASTD(a.Offset(q*4*mr+4*i), t)
			for v := range bv {
				dpbf16(bv[v], t, acc[i*nv+v])
			}
		}
	}
	panelLoop(k, a, b, mr, nr, envInt("GEN_GEMM_UNROLL_BF16", 2), step)
	storeTile(acc, mr, nv, vbytes)
}

// gemmBF16Emu is gemmBF16 for CPUs without AVX512_BF16, on AVX-512F (s = avx512: an 8×32 tile)
// or on AVX2 and FMA (s = avx2: 4×16): each pair of a 32-bit lane is widened to two floats (a
// bf16 is the high half of a float32: the low one shifted up, the high one masked), and two
// VFMADD231PS add the high products and then the low ones, each exact in float32, as VDPBF16PS
// sums them. It keeps the grid's bf16 training near Sgemm's speed on such machines, where the
// portable Go kernel is tens of times slower; its sums round like VDPBF16PS's but for
// subnormals, which it keeps.
func gemmBF16Emu(s isa, mr, nv int) {
	nr := nv * s.lanes
	name := fmt.Sprintf("gemm%dx%dBF16%s", mr, nr, s.name)
	if s.masks {
		name += "F" // AVX512F: without AVX512_BF16
	}
	TEXT(name, NOSPLIT, "func(k2 int, a, b *uint32, c *float32, ldc int, accumulate int)")
	Pragma("noescape")
	Doc(fmt.Sprintf("%s computes the %d×%d tile T = Σ_q Σ_h bf16(a[q·%d+i], h)·bf16(b[q·%d+j], h)", name, mr, nr, mr, nr),
		"over q < k2 (k2 >= 1) and both halves h of each 32-bit pair, and sets c[i·ldc+j] = T[i, j],",
		fmt.Sprintf("or adds T to it if accumulate != 0 (%s: pairs widened to floats).", map[bool]string{true: "AVX-512F", false: "AVX2 and FMA"}[s.masks]))
	k := loadGP("k2")
	a, b := mem("a"), mem("b")
	acc := s.zeros(mr * nv)
	high := s.vec() // 0xffff0000 in every lane: keeps the high bf16 of a pair as a float
	and := func(mask, x, dst VecVirtual) { VPAND(mask, x, dst) }
	if s.masks {
		VPTERNLOGD(U8(0xff), high, high, high)
		and = func(mask, x, dst VecVirtual) { VPANDD(mask, x, dst) }
	} else {
		VPCMPEQD(high, high, high)
	}
	VPSLLD(U8(16), high, high)
	step := func(q int) {
		lo, hi := make([]VecVirtual, nv), make([]VecVirtual, nv)
		for v := range nv {
			lo[v], hi[v] = s.vec(), s.vec()
			if s.masks {
				VMOVDQU32(b.Offset(q*4*nr+v*s.bytes), hi[v])
			} else {
				VMOVDQU(b.Offset(q*4*nr+v*s.bytes), hi[v])
			}
			VPSLLD(U8(16), hi[v], lo[v])
			and(high, hi[v], hi[v])
		}
		for i := 0; i < mr; i++ {
			th, tl := s.vec(), s.vec()
			VPBROADCASTD(a.Offset(q*4*mr+4*i), th)
			VPSLLD(U8(16), th, tl)
			and(high, th, th)
			for v := range nv {
				VFMADD231PS(hi[v], th, acc[i*nv+v])
				VFMADD231PS(lo[v], tl, acc[i*nv+v])
			}
		}
	}
	panelLoop(k, a, b, mr, nr, envInt("GEN_GEMM_UNROLL_BF16"+s.name, 2), step)
	storeTile(acc, mr, nv, s.bytes)
}

// dpbf16 is VDPBF16PS b, a, acc (acc += pairwise products of a and b), through its stand-in.
func dpbf16(b, a, acc VecVirtual) {
	Comment("bf16: VDPBF16PS")
	VFMADD231PS(b, a, acc)
}

// cvtne2ps2bf16 is VCVTNE2PS2BF16 lo, hi, dst: the 2·n bf16 of the n floats of lo (low half
// of dst) and of hi (high half), rounded to nearest even, through its stand-in.
func cvtne2ps2bf16(lo, hi, dst VecVirtual) {
	Comment("bf16: VCVTNE2PS2BF16")
	VPADDD(lo, hi, dst)
}

// Word permutations interleaving the two halves of a VCVTNE2PS2BF16 result into pairs: word
// 2j from the low half, word 2j+1 from the high half (zmm: 32 words, ymm: 16).
var pairIdx512, pairIdx256 Mem

func pairData() {
	pairIdx512 = GLOBL("pairidx512", RODATA|NOPTR)
	for i := 0; i < 32; i++ {
		DATA(2*i, U16(uint16(i/2+16*(i%2))))
	}
	pairIdx256 = GLOBL("pairidx256", RODATA|NOPTR)
	for i := 0; i < 16; i++ {
		DATA(2*i, U16(uint16(i/2+8*(i%2))))
	}
}

// packRowsBF16 packs 8 rows whose pairs are adjacent values (A stored [m, k], B stored [n, k]):
// for each group of 32 values, each row's 32 floats become 16 pairs in one register, and the
// 8×16 transpose of pack8 writes pair t of row i at dst + stride·t + 4·i.
func packRowsBF16(name string, stride int) {
	TEXT(name, NOSPLIT, "func(a *float32, lda int, dst *uint32, n32 int)")
	Pragma("noescape")
	Doc(name+fmt.Sprintf(" writes dst[t·%d+i] = pair(a[i·lda+2t], a[i·lda+2t+1]) for i < 8 and t < 16·n32:", stride/4),
		"the two values rounded to bf16 (nearest even), the first in the low half (AVX512_BF16).")
	a, lda, dst, n := loadGP("a"), loadGP("lda"), loadGP("dst"), loadGP("n32")
	SHLQ(U8(2), lda)             // bytes
	rows, b := eightRows(a, lda) // b: row 4, advanced with a
	TESTQ(n, n)
	JZ(LabelRef("done"))
	Label("loop")
	r := make([]VecVirtual, 8)
	for i := range r {
		lo, hi := ZMM(), ZMM()
		VMOVUPS(rows[i], lo)
		VMOVUPS(rows[i].Offset(64), hi)
		r[i] = ZMM()
		cvtne2ps2bf16(lo, hi, r[i]) // words in order: pairs 0..15 of the row
	}
	transpose8x16(r, dst, stride)
	ADDQ(U32(128), a)
	ADDQ(U32(128), b)
	ADDQ(U32(16*stride), dst)
	DECQ(n)
	JNZ(LabelRef("loop"))
	Label("done")
	VZEROUPPER()
	RET()
}

// packPairsBF16 packs width columns whose pairs join two stored rows (A stored [k, m], B stored
// [k, n]): each pair t of stored rows 2t, 2t+1 becomes width pairs at dst + 4·width·t.
func packPairsBF16(name string, width int) {
	TEXT(name, NOSPLIT, "func(a *float32, lda int, dst *uint32, kp int)")
	Pragma("noescape")
	Doc(name+fmt.Sprintf(" writes dst[t·%d+j] = pair(a[2t·lda+j], a[(2t+1)·lda+j]) for j < %d and t < kp:", width, width),
		"the two values rounded to bf16 (nearest even), the first in the low half (AVX512_BF16).")
	a, lda, dst, n := loadGP("a"), loadGP("lda"), loadGP("dst"), loadGP("kp")
	SHLQ(U8(2), lda) // bytes
	var idx VecVirtual
	if width == 8 {
		idx = YMM()
		VMOVDQU16(pairIdx256, idx)
	} else {
		idx = ZMM()
		VMOVDQU16(pairIdx512, idx)
	}
	TESTQ(n, n)
	JZ(LabelRef("done"))
	Label("loop")
	if width == 8 {
		lo, hi, o := YMM(), YMM(), YMM()
		VMOVUPS(Mem{Base: a}, lo)
		VMOVUPS(Mem{Base: a, Index: lda, Scale: 1}, hi)
		cvtne2ps2bf16(lo, hi, o)
		VPERMW(o, idx, o)
		VMOVDQU32(o, Mem{Base: dst})
	} else {
		for h := 0; h < width/16; h++ {
			lo, hi, o := ZMM(), ZMM(), ZMM()
			VMOVUPS(Mem{Base: a, Disp: 64 * h}, lo)
			VMOVUPS(Mem{Base: a, Index: lda, Scale: 1, Disp: 64 * h}, hi)
			cvtne2ps2bf16(lo, hi, o)
			VPERMW(o, idx, o)
			VMOVDQU32(o, Mem{Base: dst, Disp: 64 * h})
		}
	}
	LEAQ(Mem{Base: a, Index: lda, Scale: 2}, a)
	ADDQ(U32(4*width), dst)
	DECQ(n)
	JNZ(LabelRef("loop"))
	Label("done")
	VZEROUPPER()
	RET()
}

// packPairs2x8BF16 is packPairsBF16 for two panels of 8 at once (A stored [k, m]): 16 values
// of each stored row, whole cache lines, where two calls of the 8-wide kernel would each read
// half of every line, the second after a pass over the whole K slice. Pairs of columns 0-7 go
// to dst + 32·t, of columns 8-15 to dst + 4·pstride + 32·t.
func packPairs2x8BF16(name string) {
	TEXT(name, NOSPLIT, "func(a *float32, lda int, dst *uint32, kp int, pstride int)")
	Pragma("noescape")
	Doc(name+" writes dst[t·8+j] = pair(a[2t·lda+j], a[(2t+1)·lda+j]) for j < 8 and",
		"dst[pstride+t·8+j-8] for 8 <= j < 16, t < kp: the two values rounded to bf16 (nearest",
		"even), the first in the low half (AVX512_BF16).")
	a, lda, dst, n, ps := loadGP("a"), loadGP("lda"), loadGP("dst"), loadGP("kp"), loadGP("pstride")
	SHLQ(U8(2), lda) // bytes
	SHLQ(U8(2), ps)
	idx := ZMM()
	VMOVDQU16(pairIdx512, idx)
	TESTQ(n, n)
	JZ(LabelRef("done"))
	Label("loop")
	lo, hi, o := ZMM(), ZMM(), ZMM()
	VMOVUPS(Mem{Base: a}, lo)
	VMOVUPS(Mem{Base: a, Index: lda, Scale: 1}, hi)
	cvtne2ps2bf16(lo, hi, o)
	VPERMW(o, idx, o)
	VMOVDQU32(o.AsY(), Mem{Base: dst})
	VEXTRACTI32X8(U8(1), o, Mem{Base: dst, Index: ps, Scale: 1})
	LEAQ(Mem{Base: a, Index: lda, Scale: 2}, a)
	ADDQ(U32(32), dst)
	DECQ(n)
	JNZ(LabelRef("loop"))
	Label("done")
	VZEROUPPER()
	RET()
}

// evexEncode returns the EVEX encoding of a register-only AVX-512 instruction of map 0F38, W0,
// no masking: opcode op, prefix pp (1: 66, 2: F3, 3: F2), vector length ll (1: 256, 2: 512 bits),
// operands in Go's order (rm, vvvv, reg: Intel's reg, vvvv, rm).
func evexEncode(op, pp, ll byte, rm, vvvv, reg int) []byte {
	inv := func(r, bit int) byte { return byte((r>>bit)&1) ^ 1 }
	p0 := inv(reg, 3)<<7 | inv(rm, 4)<<6 | inv(rm, 3)<<5 | inv(reg, 4)<<4 | 0b010 // map 0F38
	p1 := byte(^vvvv&15)<<3 | 1<<2 | pp                                           // W0, vvvv
	p2 := ll<<5 | inv(vvvv, 4)<<3                                                 // L'L, V'
	modrm := byte(0b11)<<6 | byte(reg&7)<<3 | byte(rm&7)
	return []byte{0x62, p0, p1, p2, op, modrm}
}

// bf16Ops: opcode and prefix of each instruction bf16Patch writes.
var bf16Ops = map[string]struct{ op, pp byte }{
	"VDPBF16PS":      {0x52, 2}, // EVEX.F3.0F38.W0 52 /r
	"VCVTNE2PS2BF16": {0x72, 3}, // EVEX.F2.0F38.W0 72 /r
}

var (
	markLine  = regexp.MustCompile(`^\s*// bf16: (\w+)$`)
	standLine = regexp.MustCompile(`^(\s*)V\w+\s+([YZ])(\d+),\s*[YZ](\d+),\s*[YZ](\d+)\s*$`)
)

// bf16Patch replaces each stand-in marked "bf16: <instruction>" in the generated assembly by
// the bytes of that instruction (see the top of this file).
func bf16Patch(path string) error {
	src, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	lines := strings.Split(string(src), "\n")
	want := ""
	patched := 0
	for i, line := range lines {
		if m := markLine.FindStringSubmatch(line); m != nil {
			want = m[1]
			continue
		}
		if want == "" || strings.TrimSpace(line) == "" {
			continue
		}
		m := standLine.FindStringSubmatch(line)
		code, ok := bf16Ops[want]
		if m == nil || !ok {
			return fmt.Errorf("%s:%d: cannot patch %q into %s", path, i+1, strings.TrimSpace(line), want)
		}
		r := make([]int, 3)
		for j := range r {
			r[j], _ = strconv.Atoi(m[j+3])
		}
		ll := byte(2)
		if m[2] == "Y" {
			ll = 1
		}
		enc := evexEncode(code.op, code.pp, ll, r[0], r[1], r[2])
		parts := make([]string, len(enc))
		for j, x := range enc {
			parts[j] = fmt.Sprintf("BYTE $0x%02x", x)
		}
		lines[i] = fmt.Sprintf("%s%s // %s %s%d, %s%d, %s%d", m[1], strings.Join(parts, "; "), want, m[2], r[0], m[2], r[1], m[2], r[2])
		want = ""
		patched++
	}
	if patched == 0 {
		return fmt.Errorf("%s: no bf16 stand-ins found", path)
	}
	return os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644)
}

// The AVX2 packing of SgemmBF16's emulated path (CPUs without AVX512_BF16, where the pairs are
// rounded here rather than by VCVTNE2PS2BF16): toBF16 on 8 lanes at a time, in integer ops.

// bf16Round holds the constants of roundBF16 (one dword each, broadcast when loaded).
var bf16Round Mem

var bf16RoundNames = []string{"bias", "one", "abs", "inf", "quiet", "high"}

func bf16RoundData() {
	bf16Round = GLOBL("bf16round", RODATA|NOPTR)
	for i, v := range []uint32{0x7fff, 1, 0x7fffffff, 0x7f800000, 0x00400000, 0xffff0000} {
		DATA(4*i, U32(v))
	}
}

// bf16Consts broadcasts roundBF16's constants into registers of x's width (YMM or XMM).
func bf16Consts(vec func() VecVirtual) map[string]VecVirtual {
	c := map[string]VecVirtual{}
	for i, name := range bf16RoundNames {
		c[name] = vec()
		VPBROADCASTD(bf16Round.Offset(4*i), c[name])
	}
	return c
}

// roundBF16 rounds the floats of x to bf16 in place, ties to even, as toBF16 does: the bf16 is
// the high half of each lane afterwards (the low half is garbage). A NaN is made quiet
// instead, since the rounding bias could carry its mantissa into Inf.
func roundBF16(x VecVirtual, c map[string]VecVirtual, vec func() VecVirtual) {
	t, m := vec(), vec()
	VPSRLD(U8(16), x, t)
	VPAND(c["one"], t, t)
	VPADDD(c["bias"], t, t) // 0x7fff + the lowest kept bit
	VPAND(c["abs"], x, m)
	VPCMPGTD(c["inf"], m, m) // |x| > Inf: NaN
	VPADDD(t, x, t)
	VPOR(c["quiet"], x, x)
	VPBLENDVB(m, x, t, x) // NaN lanes keep x | quiet, the others x + bias
}

// packPairsBF16AVX2 writes dst[t·width+j] = pair(a[2t·lda+j], a[(2t+1)·lda+j]) for j < width
// and t < kp (width 4: one XMM, 16: two YMM), the pairs of two stored rows.
func packPairsBF16AVX2(name string, width int) {
	TEXT(name, NOSPLIT, "func(a *float32, lda int, dst *uint32, kp int)")
	Pragma("noescape")
	Doc(name+fmt.Sprintf(" writes dst[t·%d+j] = pair(a[2t·lda+j], a[(2t+1)·lda+j]) for j < %d and t < kp:", width, width),
		"the two values rounded to bf16 (nearest even), the first in the low half (AVX2).")
	a, lda, dst, n := loadGP("a"), loadGP("lda"), loadGP("dst"), loadGP("kp")
	SHLQ(U8(2), lda) // bytes
	vec, vbytes := func() VecVirtual { return YMM() }, 32
	if width == 4 {
		vec, vbytes = func() VecVirtual { return XMM() }, 16
	}
	c := bf16Consts(vec)
	TESTQ(n, n)
	JZ(LabelRef("done"))
	Label("loop")
	for h := 0; h < 4*width/vbytes; h++ {
		lo, hi := vec(), vec()
		VMOVDQU(Mem{Base: a, Disp: vbytes * h}, lo)
		VMOVDQU(Mem{Base: a, Index: lda, Scale: 1, Disp: vbytes * h}, hi)
		roundBF16(lo, c, vec)
		roundBF16(hi, c, vec)
		VPSRLD(U8(16), lo, lo)
		VPAND(c["high"], hi, hi)
		VPOR(lo, hi, hi)
		VMOVDQU(hi, Mem{Base: dst, Disp: vbytes * h})
	}
	LEAQ(Mem{Base: a, Index: lda, Scale: 2}, a)
	ADDQ(U32(4*width), dst)
	DECQ(n)
	JNZ(LabelRef("loop"))
	Label("done")
	VZEROUPPER()
	RET()
}

// packRows4BF16AVX2 writes dst[t·stride+i] = pair(a[i·lda+2t], a[i·lda+2t+1]) for i < 4 and
// t < 8·n8: four rows of adjacent pairs (A [m, k] into its panels of 4 rows, stride 4; B stored
// [n, k], 4 of the 16 columns of a panel, stride 16).
func packRows4BF16AVX2(name string) {
	TEXT(name, NOSPLIT, "func(a *float32, lda int, dst *uint32, stride int, n8 int)")
	Pragma("noescape")
	Doc(name+" writes dst[t·stride+i] = pair(a[i·lda+2t], a[i·lda+2t+1]) for i < 4 and t < 8·n8:",
		"the two values rounded to bf16 (nearest even), the first in the low half (AVX2).")
	a, lda, dst, stride, n := loadGP("a"), loadGP("lda"), loadGP("dst"), loadGP("stride"), loadGP("n8")
	SHLQ(U8(2), lda)    // bytes
	SHLQ(U8(2), stride) // bytes
	vec := func() VecVirtual { return YMM() }
	c := bf16Consts(vec)
	rows := fourRows(a, lda, times3(lda))
	TESTQ(n, n)
	JZ(LabelRef("done"))
	Label("loop")
	r := make([]VecVirtual, 4)
	for i := range r {
		v0, v1 := vec(), vec()
		VMOVDQU(rows[i], v0)
		VMOVDQU(rows[i].Offset(32), v1)
		roundBF16(v0, c, vec)
		roundBF16(v1, c, vec)
		VPSRLD(U8(16), v0, v0)
		VPSRLD(U8(16), v1, v1)
		// Words of v0 then v1, per 128-bit lane: (x0..x3, x8..x11 | x4..x7, x12..x15).
		VPACKUSDW(v1, v0, v0)
		VPERMQ(U8(0xd8), v0, v0) // pairs 0..7 of the row, in order
		r[i] = v0
	}
	// Transpose 4 rows of 8 pairs into 8 groups (one per t) of 4.
	t0, t1, t2, t3 := vec(), vec(), vec(), vec()
	VPUNPCKLDQ(r[1], r[0], t0) // r0[0] r1[0] r0[1] r1[1] | r0[4] r1[4] r0[5] r1[5]
	VPUNPCKHDQ(r[1], r[0], t1) // r0[2] r1[2] r0[3] r1[3] | r0[6] ...
	VPUNPCKLDQ(r[3], r[2], t2)
	VPUNPCKHDQ(r[3], r[2], t3)
	u := []VecVirtual{r[0], r[1], r[2], r[3]}
	VPUNPCKLQDQ(t2, t0, u[0]) // t = 0 | 4
	VPUNPCKHQDQ(t2, t0, u[1]) // t = 1 | 5
	VPUNPCKLQDQ(t3, t1, u[2]) // t = 2 | 6
	VPUNPCKHQDQ(t3, t1, u[3]) // t = 3 | 7
	p := GP64()
	MOVQ(dst, p)
	for half := 0; half < 2; half++ {
		for q := 0; q < 4; q++ {
			if half == 0 {
				VMOVDQU(u[q].AsX(), Mem{Base: p})
			} else {
				VEXTRACTI128(U8(1), u[q], Mem{Base: p})
			}
			ADDQ(stride, p)
		}
	}
	MOVQ(p, dst)
	ADDQ(U32(64), a) // 8 pairs of each row
	DECQ(n)
	JNZ(LabelRef("loop"))
	Label("done")
	VZEROUPPER()
	RET()
}
