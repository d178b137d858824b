// AVX2+FMA kernels for products with quantized weights (quant.go): the same five functions
// as the AVX-512 ones in quant_amd64.s, for CPUs (and the forced "avx2" kernel set) without
// AVX-512. Without them such CPUs dequantize a few rows at a time into a float32 panel in Go and
// multiply that, writing and reading every weight as four bytes: about ten times slower than
// widening the weights in registers, which is what these do. Hand-written.
//
// Only 16 ymm registers of 8 floats and no opmasks: a block of 32 weights is four vectors, each
// widened from 8 bytes (VPMOVSXBD/VPMOVZXBD/VPMOVZXWD take their memory operand at the width
// they need, so no shuffles), converted to float and multiplied by x into a temporary that the
// block's scale then adds to an accumulator. Two blocks are in flight with an accumulator each
// (four accumulators for bf16, which has no per-block step), so the adds chained through an
// accumulator do not limit the loop. The Go wrappers (quant_amd64.go) check every length.

#include "textflag.h"

// Horizontal sum of Y0 into X0; VMOVSS (not MOVSS) stores it, so no legacy SSE instruction
// runs while the upper halves are dirty.
#define HSUM256 \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPS       X1, X0, X0 \
	VPERMILPS    $0x4e, X0, X1 \
	VADDPS       X1, X0, X0 \
	VPERMILPS    $0xb1, X0, X1 \
	VADDPS       X1, X0, X0

// Q8_0 block at (SI), its scale at (DX), against x at (R11): ACC += d·Σ q·x. V0-V3 hold the
// values, T the block's sum, S the broadcast scale.
#define Q8BLOCK(qoff, doff, xoff, V0, V1, V2, V3, T, S, ACC) \
	VPMOVSXBD    qoff(SI), V0 \
	VPMOVSXBD    qoff+8(SI), V1 \
	VPMOVSXBD    qoff+16(SI), V2 \
	VPMOVSXBD    qoff+24(SI), V3 \
	VCVTDQ2PS    V0, V0 \
	VCVTDQ2PS    V1, V1 \
	VCVTDQ2PS    V2, V2 \
	VCVTDQ2PS    V3, V3 \
	VMULPS       xoff(R11), V0, T \
	VFMADD231PS  xoff+32(R11), V1, T \
	VFMADD231PS  xoff+64(R11), V2, T \
	VFMADD231PS  xoff+96(R11), V3, T \
	VBROADCASTSS doff(DX), S \
	VFMADD231PS  S, T, ACC

// Q4_0 nibbles of 16 bytes at (SI) into V0-V3 as int32 n−8, elements 0-7, 8-15, 16-23, 24-31
// (byte i holds element i in its low nibble and i+16 in its high one; Y15 holds 15 and Y14 8,
// as int32). Each dword holds one zero-extended byte, so a shift by 4 alone extracts its high
// nibble; −8 is subtracted as an integer, exactly, before the conversion.
#define Q4NIBBLES(qoff, V0, V1, V2, V3) \
	VPMOVZXBD qoff(SI), V0 \
	VPMOVZXBD qoff+8(SI), V1 \
	VPSRLD    $4, V0, V2 \
	VPSRLD    $4, V1, V3 \
	VPAND     Y15, V0, V0 \
	VPAND     Y15, V1, V1 \
	VPSUBD    Y14, V0, V0 \
	VPSUBD    Y14, V1, V1 \
	VPSUBD    Y14, V2, V2 \
	VPSUBD    Y14, V3, V3 \
	VCVTDQ2PS V0, V0 \
	VCVTDQ2PS V1, V1 \
	VCVTDQ2PS V2, V2 \
	VCVTDQ2PS V3, V3

// Q4_0 block: ACC += d·Σ (n−8)·x, registers as in Q8BLOCK.
#define Q4BLOCK(qoff, doff, xoff, V0, V1, V2, V3, T, S, ACC) \
	Q4NIBBLES(qoff, V0, V1, V2, V3) \
	VMULPS       xoff(R11), V0, T \
	VFMADD231PS  xoff+32(R11), V1, T \
	VFMADD231PS  xoff+64(R11), V2, T \
	VFMADD231PS  xoff+96(R11), V3, T \
	VBROADCASTSS doff(DX), S \
	VFMADD231PS  S, T, ACC

// Y15 = 15 and Y14 = 8 in every int32 lane (AVX2 broadcasts only from a vector register).
#define Q4CONSTS \
	MOVL         $15, AX \
	VMOVD        AX, X15 \
	VPBROADCASTD X15, Y15 \
	MOVL         $8, AX \
	VMOVD        AX, X14 \
	VPBROADCASTD X14, Y14

// func q8DotRowsAVX2(q *int8, d *float32, x *float32, y *float32, rows int, nb int)
TEXT ·q8DotRowsAVX2(SB), NOSPLIT, $0-48
	MOVQ q+0(FP), SI
	MOVQ d+8(FP), DX
	MOVQ x+16(FP), DI
	MOVQ y+24(FP), R8
	MOVQ rows+32(FP), R9
	MOVQ nb+40(FP), R10

q8row:
	TESTQ  R9, R9
	JZ     q8done
	VXORPS Y0, Y0, Y0
	VXORPS Y7, Y7, Y7
	MOVQ   DI, R11
	MOVQ   R10, CX

q8pair:
	CMPQ CX, $2
	JB   q8single
	Q8BLOCK(0, 0, 0, Y1, Y2, Y3, Y4, Y5, Y6, Y0)
	Q8BLOCK(32, 4, 128, Y8, Y9, Y10, Y11, Y12, Y13, Y7)
	ADDQ $64, SI
	ADDQ $8, DX
	ADDQ $256, R11
	SUBQ $2, CX
	JMP  q8pair

q8single:
	TESTQ CX, CX
	JZ    q8sum
	Q8BLOCK(0, 0, 0, Y1, Y2, Y3, Y4, Y5, Y6, Y0)
	ADDQ  $32, SI
	ADDQ  $4, DX

q8sum:
	VADDPS Y7, Y0, Y0
	HSUM256
	VMOVSS X0, (R8)
	ADDQ   $4, R8
	DECQ   R9
	JMP    q8row

q8done:
	VZEROUPPER
	RET

// func q4DotRowsAVX2(q *uint8, d *float32, x *float32, y *float32, rows int, nb int)
TEXT ·q4DotRowsAVX2(SB), NOSPLIT, $0-48
	MOVQ q+0(FP), SI
	MOVQ d+8(FP), DX
	MOVQ x+16(FP), DI
	MOVQ y+24(FP), R8
	MOVQ rows+32(FP), R9
	MOVQ nb+40(FP), R10
	Q4CONSTS

q4row:
	TESTQ  R9, R9
	JZ     q4done
	VXORPS Y0, Y0, Y0
	VXORPS Y7, Y7, Y7
	MOVQ   DI, R11
	MOVQ   R10, CX

q4pair:
	CMPQ CX, $2
	JB   q4single
	Q4BLOCK(0, 0, 0, Y1, Y2, Y3, Y4, Y5, Y6, Y0)
	Q4BLOCK(16, 4, 128, Y8, Y9, Y10, Y11, Y12, Y13, Y7)
	ADDQ $32, SI
	ADDQ $8, DX
	ADDQ $256, R11
	SUBQ $2, CX
	JMP  q4pair

q4single:
	TESTQ CX, CX
	JZ    q4sum
	Q4BLOCK(0, 0, 0, Y1, Y2, Y3, Y4, Y5, Y6, Y0)
	ADDQ  $16, SI
	ADDQ  $4, DX

q4sum:
	VADDPS Y7, Y0, Y0
	HSUM256
	VMOVSS X0, (R8)
	ADDQ   $4, R8
	DECQ   R9
	JMP    q4row

q4done:
	VZEROUPPER
	RET

// func bf16DotRowsAVX2(w *uint16, ldw int, x *float32, y *float32, rows int, n16 int)
// y[r] = Σ_{p < 16·n16} float(w[r·ldw + p])·x[p]; the caller adds the tail. A bfloat16 is
// the top half of a float32, so widening is a zero-extension and a shift by 16.
TEXT ·bf16DotRowsAVX2(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), SI
	MOVQ ldw+8(FP), DX
	SHLQ $1, DX        // bytes per row
	MOVQ x+16(FP), DI
	MOVQ y+24(FP), R8
	MOVQ rows+32(FP), R9
	MOVQ n16+40(FP), R10

bfrow:
	TESTQ  R9, R9
	JZ     bfdone
	VXORPS Y0, Y0, Y0
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	MOVQ   SI, R12
	MOVQ   DI, R11
	MOVQ   R10, CX

bfpair:
	CMPQ        CX, $2
	JB          bfsingle
	VPMOVZXWD   (R12), Y1
	VPMOVZXWD   16(R12), Y2
	VPMOVZXWD   32(R12), Y3
	VPMOVZXWD   48(R12), Y4
	VPSLLD      $16, Y1, Y1
	VPSLLD      $16, Y2, Y2
	VPSLLD      $16, Y3, Y3
	VPSLLD      $16, Y4, Y4
	VFMADD231PS (R11), Y1, Y0
	VFMADD231PS 32(R11), Y2, Y5
	VFMADD231PS 64(R11), Y3, Y6
	VFMADD231PS 96(R11), Y4, Y7
	ADDQ        $64, R12
	ADDQ        $128, R11
	SUBQ        $2, CX
	JMP         bfpair

bfsingle:
	TESTQ       CX, CX
	JZ          bfsum
	VPMOVZXWD   (R12), Y1
	VPMOVZXWD   16(R12), Y2
	VPSLLD      $16, Y1, Y1
	VPSLLD      $16, Y2, Y2
	VFMADD231PS (R11), Y1, Y0
	VFMADD231PS 32(R11), Y2, Y5

bfsum:
	VADDPS Y5, Y0, Y0
	VADDPS Y7, Y6, Y6
	VADDPS Y6, Y0, Y0
	HSUM256
	VMOVSS X0, (R8)
	ADDQ   $4, R8
	ADDQ   DX, SI
	DECQ   R9
	JMP    bfrow

bfdone:
	VZEROUPPER
	RET

// func q8DequantAVX2(q *int8, d *float32, dst *float32, nb int)
// dst = d·q, rounded once per value as the Go path does.
TEXT ·q8DequantAVX2(SB), NOSPLIT, $0-32
	MOVQ q+0(FP), SI
	MOVQ d+8(FP), DX
	MOVQ dst+16(FP), DI
	MOVQ nb+24(FP), CX

q8dq:
	TESTQ        CX, CX
	JZ           q8dqdone
	VPMOVSXBD    (SI), Y1
	VPMOVSXBD    8(SI), Y2
	VPMOVSXBD    16(SI), Y3
	VPMOVSXBD    24(SI), Y4
	VCVTDQ2PS    Y1, Y1
	VCVTDQ2PS    Y2, Y2
	VCVTDQ2PS    Y3, Y3
	VCVTDQ2PS    Y4, Y4
	VBROADCASTSS (DX), Y5
	VMULPS       Y5, Y1, Y1
	VMULPS       Y5, Y2, Y2
	VMULPS       Y5, Y3, Y3
	VMULPS       Y5, Y4, Y4
	VMOVUPS      Y1, (DI)
	VMOVUPS      Y2, 32(DI)
	VMOVUPS      Y3, 64(DI)
	VMOVUPS      Y4, 96(DI)
	ADDQ         $32, SI
	ADDQ         $4, DX
	ADDQ         $128, DI
	DECQ         CX
	JMP          q8dq

q8dqdone:
	VZEROUPPER
	RET

// func q4DequantAVX2(q *uint8, d *float32, dst *float32, nb int)
// dst = d·(n−8), n−8 exact as an integer, so one rounding per value as in the Go path.
TEXT ·q4DequantAVX2(SB), NOSPLIT, $0-32
	MOVQ q+0(FP), SI
	MOVQ d+8(FP), DX
	MOVQ dst+16(FP), DI
	MOVQ nb+24(FP), CX
	Q4CONSTS

q4dq:
	TESTQ        CX, CX
	JZ           q4dqdone
	Q4NIBBLES(0, Y1, Y2, Y3, Y4)
	VBROADCASTSS (DX), Y5
	VMULPS       Y5, Y1, Y1
	VMULPS       Y5, Y2, Y2
	VMULPS       Y5, Y3, Y3
	VMULPS       Y5, Y4, Y4
	VMOVUPS      Y1, (DI)
	VMOVUPS      Y2, 32(DI)
	VMOVUPS      Y3, 64(DI)
	VMOVUPS      Y4, 96(DI)
	ADDQ         $16, SI
	ADDQ         $4, DX
	ADDQ         $128, DI
	DECQ         CX
	JMP          q4dq

q4dqdone:
	VZEROUPPER
	RET
