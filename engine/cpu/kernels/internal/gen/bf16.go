package main

// The bfloat16 micro-kernel of SgemmBF16: an mr×nr tile of C in float32 accumulators, fed by
// panels of A and B packed as bf16 pairs along k (each 32-bit lane holds x[2q] in its low half
// and x[2q+1] in its high half). One VDPBF16PS multiplies 16 such pairs of B (16 columns) with
// a broadcast pair of A and adds both products to 16 accumulators: two k steps per
// instruction where VFMADD231PS does one, at the same issue rate.
//
// Neither avo v0.5.0 nor the Go assembler knows VDPBF16PS. The kernel is therefore written
// with VFMADD231PS standing in for it (the same operand shape: zmm3, zmm2, zmm1, with zmm1 read
// and written), so that avo allocates the registers, and after Generate the stand-ins in
// the kernel's text are replaced by the bytes of VDPBF16PS with the same registers (bf16Encode).
// VDPBF16PS and VFMADD231PS differ in encoding, so nothing else of the function may be a
// VFMADD231PS: bf16Patch rewrites every one between the kernel's TEXT and the next.

import (
	"fmt"
	"math/bits"
	"os"
	"regexp"
	"strconv"
	"strings"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// bf16Kernels lists the generated bf16 kernel names, for bf16Patch.
var bf16Kernels []string

func gemmBF16(mr, nv int) {
	const lanes, vbytes = 16, 64
	nr := nv * lanes
	name := fmt.Sprintf("gemm%dx%dBF16", mr, nr)
	bf16Kernels = append(bf16Kernels, name)
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
				VFMADD231PS(bv[v], t, acc[i*nv+v]) // VDPBF16PS, see bf16Patch
			}
		}
	}
	unroll := envInt("GEN_GEMM_UNROLL_BF16", 2)
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

// bf16Encode returns the EVEX encoding of VDPBF16PS zmm(src2), zmm(src1), zmm(dst) in Go's
// operand order (Intel: VDPBF16PS zmm_dst, zmm_src1, zmm_src2; EVEX.512.F3.0F38.W0 52 /r),
// without masking, register operands only.
func bf16Encode(src2, src1, dst int) []byte {
	inv := func(r, bit int) byte { return byte((r>>bit)&1) ^ 1 }
	p0 := inv(dst, 3)<<7 | inv(src2, 4)<<6 | inv(src2, 3)<<5 | inv(dst, 4)<<4 | 0b010 // map 0F38
	p1 := byte(0)<<7 | byte(^src1&15)<<3 | 1<<2 | 0b10                                // W0, vvvv, pp = F3
	p2 := byte(0b10)<<5 | inv(src1, 4)<<3                                             // L'L = 512, V'
	modrm := byte(0b11)<<6 | byte(dst&7)<<3 | byte(src2&7)
	return []byte{0x62, p0, p1, p2, 0x52, modrm}
}

var fmaLine = regexp.MustCompile(`^(\s*)VFMADD231PS\s+Z(\d+),\s*Z(\d+),\s*Z(\d+)\s*$`)

// bf16Patch replaces the VFMADD231PS stand-ins of the bf16 kernels in the generated assembly
// by VDPBF16PS bytes (see the top of this file).
func bf16Patch(path string) error {
	src, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	lines := strings.Split(string(src), "\n")
	in := false
	patched := 0
	for i, line := range lines {
		if strings.HasPrefix(line, "TEXT ") {
			in = false
			for _, k := range bf16Kernels {
				if strings.HasPrefix(line, "TEXT ·"+k+"(SB)") {
					in = true
				}
			}
			continue
		}
		if !in || !strings.Contains(line, "VFMADD231PS") {
			continue
		}
		m := fmaLine.FindStringSubmatch(line)
		if m == nil {
			return fmt.Errorf("%s:%d: cannot patch %q into VDPBF16PS", path, i+1, strings.TrimSpace(line))
		}
		r := make([]int, 3)
		for j := range r {
			r[j], _ = strconv.Atoi(m[j+2])
		}
		enc := bf16Encode(r[0], r[1], r[2])
		parts := make([]string, len(enc))
		for j, x := range enc {
			parts[j] = fmt.Sprintf("BYTE $0x%02x", x)
		}
		lines[i] = fmt.Sprintf("%s%s // VDPBF16PS Z%d, Z%d, Z%d", m[1], strings.Join(parts, "; "), r[0], r[1], r[2])
		patched++
	}
	if patched == 0 && len(bf16Kernels) > 0 {
		return fmt.Errorf("%s: no VDPBF16PS stand-ins found", path)
	}
	return os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644)
}
