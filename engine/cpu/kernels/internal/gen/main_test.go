package main

// The AVX2 checker must reject AVX-512 registers and instructions in AVX2 functions only.

import (
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
