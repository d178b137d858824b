package main

// The AVX2 checker must reject AVX-512 registers and instructions in AVX2 functions only.

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

func TestCheckAVX2(t *testing.T) {
	for src, ok := range map[string]bool{
		"TEXT ·fAVX2(SB), NOSPLIT, $0-8\n\tVADDPS Y1, Y2, Y3\n\tRET\n":                              true,
		"TEXT ·fAVX512(SB), NOSPLIT, $0-8\n\tVADDPS Z17, Z2, K1, Z3\n\tRET\n":                       true,
		"TEXT ·fAVX2(SB), NOSPLIT, $0-8\n\tVADDPS Y16, Y2, Y3\n\tRET\n":                             false,
		"TEXT ·fAVX2(SB), NOSPLIT, $0-8\n\tVMOVSS (AX), X20\n\tRET\n":                               false,
		"TEXT ·fAVX2(SB), NOSPLIT, $0-8\n\tVEXTRACTF32X4 $0x01, Y1, X2\n\tRET\n":                    false,
		"TEXT ·fAVX2(SB), NOSPLIT, $0-8\n\tVMOVUPS.Z (AX), K1, Y2\n\tRET\n":                         false,
		"TEXT ·fAVX2(SB), NOSPLIT, $0-8\n\tKMOVW AX, K1\n\tRET\n":                                   false,
		"TEXT ·fAVX2(SB), NOSPLIT, $0-8\n\tVFMADD231PS.BCST (AX), Y1, Y2\n\tRET\n":                  false,
		"TEXT ·fAVX512(SB), NOSPLIT, $0-8\n\tRET\nTEXT ·gAVX2(SB), NOSPLIT, $0-8\n\tRET\n":          true,
		"TEXT ·fAVX2(SB), NOSPLIT, $0-8\n\tRET\nTEXT ·gAVX512(SB), NOSPLIT, $0-8\n\tKMOVW AX, K1\n": true,
	} {
		p := filepath.Join(t.TempDir(), "a.s")
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := checkAVX2(p); (err == nil) != ok {
			t.Errorf("checkAVX2(%q) = %v, want ok=%v", src, err, ok)
		}
	}
}

// evexEncode against the encodings binutils writes (objdump -d), for low, high (bit 3) and
// upper (bit 4, EVEX-only) registers in every position, zmm and ymm.
func TestEvexEncode(t *testing.T) {
	for _, c := range []struct {
		name          string
		ll            byte
		rm, vvvv, reg int
		want          string
	}{
		{"VDPBF16PS", 2, 3, 2, 1, "62f26e4852cb"},        // vdpbf16ps %zmm3,%zmm2,%zmm1
		{"VDPBF16PS", 2, 0, 0, 0, "62f27e4852c0"},        // vdpbf16ps %zmm0,%zmm0,%zmm0
		{"VDPBF16PS", 2, 31, 17, 9, "6212764052cf"},      // vdpbf16ps %zmm31,%zmm17,%zmm9
		{"VDPBF16PS", 2, 8, 24, 16, "62c23e4052c0"},      // vdpbf16ps %zmm8,%zmm24,%zmm16
		{"VDPBF16PS", 1, 8, 24, 16, "62c23e2052c0"},      // vdpbf16ps %ymm8,%ymm24,%ymm16
		{"VCVTNE2PS2BF16", 2, 3, 2, 1, "62f26f4872cb"},   // vcvtne2ps2bf16 %zmm3,%zmm2,%zmm1
		{"VCVTNE2PS2BF16", 1, 3, 2, 1, "62f26f2872cb"},   // vcvtne2ps2bf16 %ymm3,%ymm2,%ymm1
		{"VCVTNE2PS2BF16", 2, 31, 17, 9, "6212774072cf"}, // vcvtne2ps2bf16 %zmm31,%zmm17,%zmm9
		{"VCVTNE2PS2BF16", 1, 8, 24, 16, "62c23f2072c0"}, // vcvtne2ps2bf16 %ymm8,%ymm24,%ymm16
	} {
		op := bf16Ops[c.name]
		if got := fmt.Sprintf("%x", evexEncode(op.op, op.pp, c.ll, c.rm, c.vvvv, c.reg)); got != c.want {
			t.Errorf("%s %d %d %d (L %d) = %s, want %s", c.name, c.rm, c.vvvv, c.reg, c.ll, got, c.want)
		}
	}
}
