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

// bf16Encode against the encoding of VDPBF16PS as binutils writes it (objdump -d), for low,
// high (bit 3) and upper (bit 4, EVEX-only) registers in every position.
func TestBF16Encode(t *testing.T) {
	for _, c := range []struct {
		src2, src1, dst int
		want            string
	}{
		{3, 2, 1, "62f26e4852cb"},   // vdpbf16ps %zmm3,%zmm2,%zmm1
		{0, 0, 0, "62f27e4852c0"},   // vdpbf16ps %zmm0,%zmm0,%zmm0
		{31, 17, 9, "6212764052cf"}, // vdpbf16ps %zmm31,%zmm17,%zmm9
		{8, 24, 16, "62c23e4052c0"}, // vdpbf16ps %zmm8,%zmm24,%zmm16
	} {
		if got := fmt.Sprintf("%x", bf16Encode(c.src2, c.src1, c.dst)); got != c.want {
			t.Errorf("bf16Encode(%d, %d, %d) = %s, want %s", c.src2, c.src1, c.dst, got, c.want)
		}
	}
}
