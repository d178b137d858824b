#include "textflag.h"

// Half-precision values widened to float32, 16 a loop turn, then 8 (n is a multiple of 8).

// func widenF16AVX2(dst *float32, src *uint16, n int)
TEXT ·widenF16AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX

f16loop16:
	CMPQ      CX, $16
	JL        f16tail
	VCVTPH2PS (SI), Y0
	VCVTPH2PS 16(SI), Y1
	VMOVUPS   Y0, (DI)
	VMOVUPS   Y1, 32(DI)
	ADDQ      $32, SI
	ADDQ      $64, DI
	SUBQ      $16, CX
	JMP       f16loop16

f16tail:
	TESTQ     CX, CX
	JZ        f16done
	VCVTPH2PS (SI), Y0
	VMOVUPS   Y0, (DI)

f16done:
	VZEROUPPER
	RET

// func widenBF16AVX2(dst *float32, src *uint16, n int)
TEXT ·widenBF16AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX

bf16loop16:
	CMPQ      CX, $16
	JL        bf16tail
	VPMOVZXWD (SI), Y0
	VPMOVZXWD 16(SI), Y1
	VPSLLD    $16, Y0, Y0
	VPSLLD    $16, Y1, Y1
	VMOVDQU   Y0, (DI)
	VMOVDQU   Y1, 32(DI)
	ADDQ      $32, SI
	ADDQ      $64, DI
	SUBQ      $16, CX
	JMP       bf16loop16

bf16tail:
	TESTQ     CX, CX
	JZ        bf16done
	VPMOVZXWD (SI), Y0
	VPSLLD    $16, Y0, Y0
	VMOVDQU   Y0, (DI)

bf16done:
	VZEROUPPER
	RET

// func narrowF16AVX2(dst *uint16, src *float32, n int) int
TEXT ·narrowF16AVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	XORQ DX, DX

narrowloop:
	CMPQ      DX, CX
	JGE       narrowdone
	VMOVUPS   (SI)(DX*4), Y0
	VCMPPS    $3, Y0, Y0, Y1 // unordered: a NaN lane
	VMOVMSKPS Y1, AX
	TESTL     AX, AX
	JNZ       narrowdone
	VCVTPS2PH $0, Y0, X2 // round to nearest even
	VMOVDQU   X2, (DI)(DX*2)
	ADDQ      $8, DX
	JMP       narrowloop

narrowdone:
	MOVQ DX, ret+24(FP)
	VZEROUPPER
	RET
