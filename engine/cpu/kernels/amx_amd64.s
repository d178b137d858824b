// AMX (Advanced Matrix Extensions) kernels for SgemmBF16 (amx_amd64.go). Go's assembler has no
// AMX mnemonics: each AMX instruction is written as its bytes, with the Intel-syntax form in the
// comment (the encodings were checked against GNU as 2.40). The tile operands use only the
// registers AX, CX, DX, BX, SI, DI (base and stride) and R10, R11 (base), so that the VEX
// prefix's R and X bits stay clear: C4 E2 for a legacy base, C4 C2 for R10/R11.
//
// Tiles (configured by amxConfig: 16 rows of 64 bytes each):
//	tmm0 tmm1   C rows 0-15, columns 0-15 and 16-31 (float32)
//	tmm2 tmm3   C rows 16-31
//	tmm4 tmm5   A rows 0-15 and 16-31, 16 pairs of k each (bf16 pairs)
//	tmm6 tmm7   B pairs 16 of k, columns 0-15 and 16-31 (bf16 pairs, one 32-bit word a column)

#include "textflag.h"

// func amxRows(cfg *[64]byte, a *uint32, lda int, b *uint32, kq int, c *float32, ldc int, mb int, acc bool)
//
// For each of mb groups of 32 rows: C[32×32] (+)= A[32 rows, 16·kq pairs] · B[16·kq pairs, 32].
// A: rows of pairs, lda bytes apart, group g at a + 32·g·lda. B: one panel, 128 bytes per pair.
// C: ldc bytes between rows, group g at c + 32·g·ldc. acc: add to C rather than overwrite it.
TEXT ·amxRows(SB), NOSPLIT, $0-65
	MOVQ cfg+0(FP), AX
	BYTE $0xc4; BYTE $0xe2; BYTE $0x78; BYTE $0x49; BYTE $0x00 // ldtilecfg [rax]
	MOVQ a+8(FP), R12
	MOVQ lda+16(FP), DX
	MOVQ b+24(FP), R13
	MOVQ c+40(FP), AX
	MOVQ ldc+48(FP), CX
	MOVQ mb+56(FP), R9
	MOVQ $128, BX

	// C is usually an activation that has not been touched for a while (out of every cache):
	// a tile store of cold lines waits for each one, so C's rows are prefetched for writing,
	// the first group's here and each next group's while this one multiplies.
	MOVQ AX, SI
	CALL pfgroup<>(SB)

group:
	CMPQ R9, $1
	JEQ  nopf
	MOVQ CX, SI
	SHLQ $5, SI
	ADDQ AX, SI
	CALL pfgroup<>(SB)

nopf:
	MOVQ CX, R11
	SHLQ $4, R11
	ADDQ AX, R11
	CMPB acc+64(FP), $0
	JEQ  zero
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x04; BYTE $0x08              // tileloadd tmm0, [rax+rcx*1]
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x4c; BYTE $0x08; BYTE $0x40 // tileloadd tmm1, [rax+rcx*1+64]
	BYTE $0xc4; BYTE $0xc2; BYTE $0x7b; BYTE $0x4b; BYTE $0x14; BYTE $0x0b              // tileloadd tmm2, [r11+rcx*1]
	BYTE $0xc4; BYTE $0xc2; BYTE $0x7b; BYTE $0x4b; BYTE $0x5c; BYTE $0x0b; BYTE $0x40 // tileloadd tmm3, [r11+rcx*1+64]
	JMP  kstart

zero:
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xc0 // tilezero tmm0
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xc8 // tilezero tmm1
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xd0 // tilezero tmm2
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xd8 // tilezero tmm3

kstart:
	MOVQ R12, SI
	MOVQ DX, R10
	SHLQ $4, R10
	ADDQ R12, R10
	MOVQ R13, DI
	MOVQ kq+32(FP), R8

kloop:
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x24; BYTE $0x16              // tileloadd tmm4, [rsi+rdx*1]
	BYTE $0xc4; BYTE $0xc2; BYTE $0x7b; BYTE $0x4b; BYTE $0x2c; BYTE $0x12              // tileloadd tmm5, [r10+rdx*1]
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x34; BYTE $0x1f              // tileloadd tmm6, [rdi+rbx*1]
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x7c; BYTE $0x1f; BYTE $0x40 // tileloadd tmm7, [rdi+rbx*1+64]
	BYTE $0xc4; BYTE $0xe2; BYTE $0x4a; BYTE $0x5c; BYTE $0xc4                         // tdpbf16ps tmm0, tmm4, tmm6
	BYTE $0xc4; BYTE $0xe2; BYTE $0x42; BYTE $0x5c; BYTE $0xcc                         // tdpbf16ps tmm1, tmm4, tmm7
	BYTE $0xc4; BYTE $0xe2; BYTE $0x4a; BYTE $0x5c; BYTE $0xd5                         // tdpbf16ps tmm2, tmm5, tmm6
	BYTE $0xc4; BYTE $0xe2; BYTE $0x42; BYTE $0x5c; BYTE $0xdd                         // tdpbf16ps tmm3, tmm5, tmm7
	ADDQ $64, SI
	ADDQ $64, R10
	ADDQ $2048, DI
	DECQ R8
	JNZ  kloop

	BYTE $0xc4; BYTE $0xe2; BYTE $0x7a; BYTE $0x4b; BYTE $0x04; BYTE $0x08              // tilestored [rax+rcx*1], tmm0
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7a; BYTE $0x4b; BYTE $0x4c; BYTE $0x08; BYTE $0x40 // tilestored [rax+rcx*1+64], tmm1
	BYTE $0xc4; BYTE $0xc2; BYTE $0x7a; BYTE $0x4b; BYTE $0x14; BYTE $0x0b              // tilestored [r11+rcx*1], tmm2
	BYTE $0xc4; BYTE $0xc2; BYTE $0x7a; BYTE $0x4b; BYTE $0x5c; BYTE $0x0b; BYTE $0x40 // tilestored [r11+rcx*1+64], tmm3

	MOVQ DX, R8
	SHLQ $5, R8
	ADDQ R8, R12
	MOVQ CX, R8
	SHLQ $5, R8
	ADDQ R8, AX
	DECQ R9
	JNZ  group

	BYTE $0xc4; BYTE $0xe2; BYTE $0x78; BYTE $0x49; BYTE $0xc0 // tilerelease
	RET

// pfgroup prefetches for writing the 32 rows of 128 bytes at SI, CX bytes apart (a 32×32 block
// of C). It clobbers SI and R8.
TEXT pfgroup<>(SB), NOSPLIT|NOFRAME, $0-0
	MOVQ $32, R8

pfrow:
	BYTE $0x0f; BYTE $0x0d; BYTE $0x0e             // prefetchw [rsi]
	BYTE $0x0f; BYTE $0x0d; BYTE $0x4e; BYTE $0x40 // prefetchw [rsi+64]
	ADDQ CX, SI
	DECQ R8
	JNZ  pfrow
	RET

// func cvtPairsBF16(src *float32, dst *uint32, n16 int)
//
// dst[t] = bf16(src[2t]) | bf16(src[2t+1])<<16 for t < 16·n16, rounding to nearest even: 32
// floats become 16 pairs with one VCVTNE2PS2BF16 (its second source gives the low half).
TEXT ·cvtPairsBF16(SB), NOSPLIT, $0-24
	MOVQ src+0(FP), SI
	MOVQ dst+8(FP), DI
	MOVQ n16+16(FP), CX
	TESTQ CX, CX
	JZ    cvtdone

cvtloop:
	VMOVUPS (SI), Z0
	VMOVUPS 64(SI), Z1
	BYTE $0x62; BYTE $0xf2; BYTE $0x77; BYTE $0x48; BYTE $0x72; BYTE $0xd0 // vcvtne2ps2bf16 zmm2, zmm1, zmm0
	VMOVUPS Z2, (DI)
	ADDQ    $128, SI
	ADDQ    $64, DI
	DECQ    CX
	JNZ     cvtloop
	VZEROUPPER

cvtdone:
	RET

// func packATAMX(a *float32, lda int, dst *uint32, ldd int, n16 int)
//
// The rows of pairs of a transposed A (stored [k, m]) for 16 rows of op(A): for each of n16
// groups of 16 pairs t, dst[r·ldd + t] (ldd in bytes) = bf16(a[2t·lda + r]) | bf16(a[(2t+1)·lda
// + r])<<16, r < 16 (lda in bytes). A group reads 32 stored rows of 16 floats, rounds each pair
// of rows into one register of 16 pairs (VCVTNE2PS2BF16, then VPERMW interleaves the halves):
// register t holds pair t of rows 0-15. A 16×16 transpose of 32-bit words (dwords, then
// qwords, then 128-bit lanes twice) makes register r hold row r's 16 pairs.
TEXT ·packATAMX(SB), NOSPLIT, $0-40
	MOVQ a+0(FP), SI
	MOVQ lda+8(FP), DX
	MOVQ dst+16(FP), DI
	MOVQ ldd+24(FP), BX
	MOVQ n16+32(FP), CX
	TESTQ CX, CX
	JZ    atdone

atgroup:
	VMOVDQU16 permPairs<>(SB), Z31 // the transpose takes every register
	MOVQ      SI, AX
	VMOVUPS (AX), Z16
	VMOVUPS (AX)(DX*1), Z17
	BYTE $0x62; BYTE $0xa2; BYTE $0x77; BYTE $0x40; BYTE $0x72; BYTE $0xd0 // vcvtne2ps2bf16 zmm18, zmm17, zmm16
	VPERMW  Z18, Z31, Z0
	LEAQ    (AX)(DX*2), AX
	VMOVUPS (AX), Z16
	VMOVUPS (AX)(DX*1), Z17
	BYTE $0x62; BYTE $0xa2; BYTE $0x77; BYTE $0x40; BYTE $0x72; BYTE $0xd0 // vcvtne2ps2bf16 zmm18, zmm17, zmm16
	VPERMW  Z18, Z31, Z1
	LEAQ    (AX)(DX*2), AX
	VMOVUPS (AX), Z16
	VMOVUPS (AX)(DX*1), Z17
	BYTE $0x62; BYTE $0xa2; BYTE $0x77; BYTE $0x40; BYTE $0x72; BYTE $0xd0 // vcvtne2ps2bf16 zmm18, zmm17, zmm16
	VPERMW  Z18, Z31, Z2
	LEAQ    (AX)(DX*2), AX
	VMOVUPS (AX), Z16
	VMOVUPS (AX)(DX*1), Z17
	BYTE $0x62; BYTE $0xa2; BYTE $0x77; BYTE $0x40; BYTE $0x72; BYTE $0xd0 // vcvtne2ps2bf16 zmm18, zmm17, zmm16
	VPERMW  Z18, Z31, Z3
	LEAQ    (AX)(DX*2), AX
	VMOVUPS (AX), Z16
	VMOVUPS (AX)(DX*1), Z17
	BYTE $0x62; BYTE $0xa2; BYTE $0x77; BYTE $0x40; BYTE $0x72; BYTE $0xd0 // vcvtne2ps2bf16 zmm18, zmm17, zmm16
	VPERMW  Z18, Z31, Z4
	LEAQ    (AX)(DX*2), AX
	VMOVUPS (AX), Z16
	VMOVUPS (AX)(DX*1), Z17
	BYTE $0x62; BYTE $0xa2; BYTE $0x77; BYTE $0x40; BYTE $0x72; BYTE $0xd0 // vcvtne2ps2bf16 zmm18, zmm17, zmm16
	VPERMW  Z18, Z31, Z5
	LEAQ    (AX)(DX*2), AX
	VMOVUPS (AX), Z16
	VMOVUPS (AX)(DX*1), Z17
	BYTE $0x62; BYTE $0xa2; BYTE $0x77; BYTE $0x40; BYTE $0x72; BYTE $0xd0 // vcvtne2ps2bf16 zmm18, zmm17, zmm16
	VPERMW  Z18, Z31, Z6
	LEAQ    (AX)(DX*2), AX
	VMOVUPS (AX), Z16
	VMOVUPS (AX)(DX*1), Z17
	BYTE $0x62; BYTE $0xa2; BYTE $0x77; BYTE $0x40; BYTE $0x72; BYTE $0xd0 // vcvtne2ps2bf16 zmm18, zmm17, zmm16
	VPERMW  Z18, Z31, Z7
	LEAQ    (AX)(DX*2), AX
	VMOVUPS (AX), Z16
	VMOVUPS (AX)(DX*1), Z17
	BYTE $0x62; BYTE $0xa2; BYTE $0x77; BYTE $0x40; BYTE $0x72; BYTE $0xd0 // vcvtne2ps2bf16 zmm18, zmm17, zmm16
	VPERMW  Z18, Z31, Z8
	LEAQ    (AX)(DX*2), AX
	VMOVUPS (AX), Z16
	VMOVUPS (AX)(DX*1), Z17
	BYTE $0x62; BYTE $0xa2; BYTE $0x77; BYTE $0x40; BYTE $0x72; BYTE $0xd0 // vcvtne2ps2bf16 zmm18, zmm17, zmm16
	VPERMW  Z18, Z31, Z9
	LEAQ    (AX)(DX*2), AX
	VMOVUPS (AX), Z16
	VMOVUPS (AX)(DX*1), Z17
	BYTE $0x62; BYTE $0xa2; BYTE $0x77; BYTE $0x40; BYTE $0x72; BYTE $0xd0 // vcvtne2ps2bf16 zmm18, zmm17, zmm16
	VPERMW  Z18, Z31, Z10
	LEAQ    (AX)(DX*2), AX
	VMOVUPS (AX), Z16
	VMOVUPS (AX)(DX*1), Z17
	BYTE $0x62; BYTE $0xa2; BYTE $0x77; BYTE $0x40; BYTE $0x72; BYTE $0xd0 // vcvtne2ps2bf16 zmm18, zmm17, zmm16
	VPERMW  Z18, Z31, Z11
	LEAQ    (AX)(DX*2), AX
	VMOVUPS (AX), Z16
	VMOVUPS (AX)(DX*1), Z17
	BYTE $0x62; BYTE $0xa2; BYTE $0x77; BYTE $0x40; BYTE $0x72; BYTE $0xd0 // vcvtne2ps2bf16 zmm18, zmm17, zmm16
	VPERMW  Z18, Z31, Z12
	LEAQ    (AX)(DX*2), AX
	VMOVUPS (AX), Z16
	VMOVUPS (AX)(DX*1), Z17
	BYTE $0x62; BYTE $0xa2; BYTE $0x77; BYTE $0x40; BYTE $0x72; BYTE $0xd0 // vcvtne2ps2bf16 zmm18, zmm17, zmm16
	VPERMW  Z18, Z31, Z13
	LEAQ    (AX)(DX*2), AX
	VMOVUPS (AX), Z16
	VMOVUPS (AX)(DX*1), Z17
	BYTE $0x62; BYTE $0xa2; BYTE $0x77; BYTE $0x40; BYTE $0x72; BYTE $0xd0 // vcvtne2ps2bf16 zmm18, zmm17, zmm16
	VPERMW  Z18, Z31, Z14
	LEAQ    (AX)(DX*2), AX
	VMOVUPS (AX), Z16
	VMOVUPS (AX)(DX*1), Z17
	BYTE $0x62; BYTE $0xa2; BYTE $0x77; BYTE $0x40; BYTE $0x72; BYTE $0xd0 // vcvtne2ps2bf16 zmm18, zmm17, zmm16
	VPERMW  Z18, Z31, Z15
	LEAQ    (AX)(DX*2), AX
	VPUNPCKLDQ Z1, Z0, Z16
	VPUNPCKHDQ Z1, Z0, Z17
	VPUNPCKLDQ Z3, Z2, Z18
	VPUNPCKHDQ Z3, Z2, Z19
	VPUNPCKLDQ Z5, Z4, Z20
	VPUNPCKHDQ Z5, Z4, Z21
	VPUNPCKLDQ Z7, Z6, Z22
	VPUNPCKHDQ Z7, Z6, Z23
	VPUNPCKLDQ Z9, Z8, Z24
	VPUNPCKHDQ Z9, Z8, Z25
	VPUNPCKLDQ Z11, Z10, Z26
	VPUNPCKHDQ Z11, Z10, Z27
	VPUNPCKLDQ Z13, Z12, Z28
	VPUNPCKHDQ Z13, Z12, Z29
	VPUNPCKLDQ Z15, Z14, Z30
	VPUNPCKHDQ Z15, Z14, Z31
	VPUNPCKLQDQ Z18, Z16, Z0
	VPUNPCKHQDQ Z18, Z16, Z1
	VPUNPCKLQDQ Z19, Z17, Z2
	VPUNPCKHQDQ Z19, Z17, Z3
	VPUNPCKLQDQ Z22, Z20, Z4
	VPUNPCKHQDQ Z22, Z20, Z5
	VPUNPCKLQDQ Z23, Z21, Z6
	VPUNPCKHQDQ Z23, Z21, Z7
	VPUNPCKLQDQ Z26, Z24, Z8
	VPUNPCKHQDQ Z26, Z24, Z9
	VPUNPCKLQDQ Z27, Z25, Z10
	VPUNPCKHQDQ Z27, Z25, Z11
	VPUNPCKLQDQ Z30, Z28, Z12
	VPUNPCKHQDQ Z30, Z28, Z13
	VPUNPCKLQDQ Z31, Z29, Z14
	VPUNPCKHQDQ Z31, Z29, Z15
	VSHUFI32X4 $0x88, Z4, Z0, Z16
	VSHUFI32X4 $0xdd, Z4, Z0, Z17
	VSHUFI32X4 $0x88, Z12, Z8, Z18
	VSHUFI32X4 $0xdd, Z12, Z8, Z19
	VSHUFI32X4 $0x88, Z5, Z1, Z20
	VSHUFI32X4 $0xdd, Z5, Z1, Z21
	VSHUFI32X4 $0x88, Z13, Z9, Z22
	VSHUFI32X4 $0xdd, Z13, Z9, Z23
	VSHUFI32X4 $0x88, Z6, Z2, Z24
	VSHUFI32X4 $0xdd, Z6, Z2, Z25
	VSHUFI32X4 $0x88, Z14, Z10, Z26
	VSHUFI32X4 $0xdd, Z14, Z10, Z27
	VSHUFI32X4 $0x88, Z7, Z3, Z28
	VSHUFI32X4 $0xdd, Z7, Z3, Z29
	VSHUFI32X4 $0x88, Z15, Z11, Z30
	VSHUFI32X4 $0xdd, Z15, Z11, Z31
	MOVQ DI, AX
	VSHUFI32X4 $0x88, Z18, Z16, Z0
	VMOVDQU32  Z0, (AX)
	ADDQ       BX, AX
	VSHUFI32X4 $0x88, Z22, Z20, Z1
	VMOVDQU32  Z1, (AX)
	ADDQ       BX, AX
	VSHUFI32X4 $0x88, Z26, Z24, Z2
	VMOVDQU32  Z2, (AX)
	ADDQ       BX, AX
	VSHUFI32X4 $0x88, Z30, Z28, Z3
	VMOVDQU32  Z3, (AX)
	ADDQ       BX, AX
	VSHUFI32X4 $0x88, Z19, Z17, Z4
	VMOVDQU32  Z4, (AX)
	ADDQ       BX, AX
	VSHUFI32X4 $0x88, Z23, Z21, Z5
	VMOVDQU32  Z5, (AX)
	ADDQ       BX, AX
	VSHUFI32X4 $0x88, Z27, Z25, Z6
	VMOVDQU32  Z6, (AX)
	ADDQ       BX, AX
	VSHUFI32X4 $0x88, Z31, Z29, Z7
	VMOVDQU32  Z7, (AX)
	ADDQ       BX, AX
	VSHUFI32X4 $0xdd, Z18, Z16, Z8
	VMOVDQU32  Z8, (AX)
	ADDQ       BX, AX
	VSHUFI32X4 $0xdd, Z22, Z20, Z9
	VMOVDQU32  Z9, (AX)
	ADDQ       BX, AX
	VSHUFI32X4 $0xdd, Z26, Z24, Z10
	VMOVDQU32  Z10, (AX)
	ADDQ       BX, AX
	VSHUFI32X4 $0xdd, Z30, Z28, Z11
	VMOVDQU32  Z11, (AX)
	ADDQ       BX, AX
	VSHUFI32X4 $0xdd, Z19, Z17, Z12
	VMOVDQU32  Z12, (AX)
	ADDQ       BX, AX
	VSHUFI32X4 $0xdd, Z23, Z21, Z13
	VMOVDQU32  Z13, (AX)
	ADDQ       BX, AX
	VSHUFI32X4 $0xdd, Z27, Z25, Z14
	VMOVDQU32  Z14, (AX)
	ADDQ       BX, AX
	VSHUFI32X4 $0xdd, Z31, Z29, Z15
	VMOVDQU32  Z15, (AX)
	ADDQ       BX, AX
	MOVQ DX, AX
	SHLQ $5, AX
	ADDQ AX, SI
	ADDQ $64, DI
	DECQ CX
	JNZ  atgroup
	VZEROUPPER

atdone:
	RET

// permPairs: the words of VCVTNE2PS2BF16's result (16 low halves, then 16 high halves) in
// pair order: 0, 16, 1, 17, ... 15, 31.
DATA permPairs<>+0(SB)/8, $0x0011000100100000
DATA permPairs<>+8(SB)/8, $0x0013000300120002
DATA permPairs<>+16(SB)/8, $0x0015000500140004
DATA permPairs<>+24(SB)/8, $0x0017000700160006
DATA permPairs<>+32(SB)/8, $0x0019000900180008
DATA permPairs<>+40(SB)/8, $0x001b000b001a000a
DATA permPairs<>+48(SB)/8, $0x001d000d001c000c
DATA permPairs<>+56(SB)/8, $0x001f000f001e000e
GLOBL permPairs<>(SB), RODATA|NOPTR, $64
