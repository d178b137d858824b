// AVX-512 kernels for products with quantized weights (quant.go): rows of Q8_0, Q4_0 or
// bfloat16 weights against float32 x, the weights widened in registers. Hand-written; each
// block of 32 weights: load the values, widen to int32, convert to float32, multiply by x,
// then scale the block's sum by its d (two independent accumulators hide the FMA latency).

#include "textflag.h"

// Horizontal sum of Z0 into X0.
#define HSUM \
	VEXTRACTF32X8 $1, Z0, Y1 \
	VADDPS        Y1, Y0, Y0 \
	VEXTRACTF32X4 $1, Y0, X1 \
	VADDPS        X1, X0, X0 \
	VPERMILPS     $0x4e, X0, X1 \
	VADDPS        X1, X0, X0 \
	VPERMILPS     $0xb1, X0, X1 \
	VADDPS        X1, X0, X0

// Q8_0 block at (SI) with scale at (DX) against x at (R11): ACC += d·Σ q·x.
#define Q8BLOCK(qoff, doff, xoff, T, S, ACC) \
	VPMOVSXBD   qoff(SI), Z1 \
	VPMOVSXBD   qoff+16(SI), Z2 \
	VCVTDQ2PS   Z1, Z1 \
	VCVTDQ2PS   Z2, Z2 \
	VMULPS      xoff(R11), Z1, T \
	VFMADD231PS xoff+64(R11), Z2, T \
	VBROADCASTSS doff(DX), S \
	VFMADD231PS S, T, ACC

// Q4_0 block: 16 bytes at (SI), low nibbles are elements 0-15, high nibbles 16-31, value
// nibble − 8 (Z15 holds 15 as int32, Z14 holds 8.0).
#define Q4BLOCK(qoff, doff, xoff, T, S, ACC) \
	VPMOVZXBD   qoff(SI), Z1 \
	VPSRLD      $4, Z1, Z2 \
	VPANDD      Z15, Z1, Z1 \
	VCVTDQ2PS   Z1, Z1 \
	VCVTDQ2PS   Z2, Z2 \
	VSUBPS      Z14, Z1, Z1 \
	VSUBPS      Z14, Z2, Z2 \
	VMULPS      xoff(R11), Z1, T \
	VFMADD231PS xoff+64(R11), Z2, T \
	VBROADCASTSS doff(DX), S \
	VFMADD231PS S, T, ACC

// func q8DotRowsAVX512(q *int8, d *float32, x *float32, y *float32, rows int, nb int)
TEXT ·q8DotRowsAVX512(SB), NOSPLIT, $0-48
	MOVQ q+0(FP), SI
	MOVQ d+8(FP), DX
	MOVQ x+16(FP), DI
	MOVQ y+24(FP), R8
	MOVQ rows+32(FP), R9
	MOVQ nb+40(FP), R10

q8row:
	TESTQ R9, R9
	JZ    q8done
	VXORPS Z0, Z0, Z0
	VXORPS Z5, Z5, Z5
	MOVQ   DI, R11
	MOVQ   R10, CX

q8pair:
	CMPQ CX, $2
	JB   q8single
	Q8BLOCK(0, 0, 0, Z3, Z4, Z0)
	Q8BLOCK(32, 4, 128, Z6, Z7, Z5)
	ADDQ $64, SI
	ADDQ $8, DX
	ADDQ $256, R11
	SUBQ $2, CX
	JMP  q8pair

q8single:
	TESTQ CX, CX
	JZ    q8sum
	Q8BLOCK(0, 0, 0, Z3, Z4, Z0)
	ADDQ $32, SI
	ADDQ $4, DX

q8sum:
	VADDPS Z5, Z0, Z0
	HSUM
	MOVSS X0, (R8)
	ADDQ  $4, R8
	DECQ  R9
	JMP   q8row

q8done:
	VZEROUPPER
	RET

// func q4DotRowsAVX512(q *uint8, d *float32, x *float32, y *float32, rows int, nb int)
TEXT ·q4DotRowsAVX512(SB), NOSPLIT, $0-48
	MOVQ q+0(FP), SI
	MOVQ d+8(FP), DX
	MOVQ x+16(FP), DI
	MOVQ y+24(FP), R8
	MOVQ rows+32(FP), R9
	MOVQ nb+40(FP), R10
	MOVL $15, AX
	VPBROADCASTD AX, Z15
	MOVL $0x41000000, AX // 8.0
	VPBROADCASTD AX, Z14

q4row:
	TESTQ R9, R9
	JZ    q4done
	VXORPS Z0, Z0, Z0
	VXORPS Z5, Z5, Z5
	MOVQ   DI, R11
	MOVQ   R10, CX

q4pair:
	CMPQ CX, $2
	JB   q4single
	Q4BLOCK(0, 0, 0, Z3, Z4, Z0)
	Q4BLOCK(16, 4, 128, Z6, Z7, Z5)
	ADDQ $32, SI
	ADDQ $8, DX
	ADDQ $256, R11
	SUBQ $2, CX
	JMP  q4pair

q4single:
	TESTQ CX, CX
	JZ    q4sum
	Q4BLOCK(0, 0, 0, Z3, Z4, Z0)
	ADDQ $16, SI
	ADDQ $4, DX

q4sum:
	VADDPS Z5, Z0, Z0
	HSUM
	MOVSS X0, (R8)
	ADDQ  $4, R8
	DECQ  R9
	JMP   q4row

q4done:
	VZEROUPPER
	RET

// func bf16DotRowsAVX512(w *uint16, ldw int, x *float32, y *float32, rows int, n16 int)
// y[r] = Σ_{p < 16·n16} float(w[r·ldw + p])·x[p]; the caller adds the tail.
TEXT ·bf16DotRowsAVX512(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), SI
	MOVQ ldw+8(FP), DX
	SHLQ $1, DX // bytes per row
	MOVQ x+16(FP), DI
	MOVQ y+24(FP), R8
	MOVQ rows+32(FP), R9
	MOVQ n16+40(FP), R10

bfrow:
	TESTQ R9, R9
	JZ    bfdone
	VXORPS Z0, Z0, Z0
	VXORPS Z5, Z5, Z5
	MOVQ   SI, R12
	MOVQ   DI, R11
	MOVQ   R10, CX

bfpair:
	CMPQ CX, $2
	JB   bfsingle
	VPMOVZXWD   (R12), Z1
	VPMOVZXWD   32(R12), Z2
	VPSLLD      $16, Z1, Z1
	VPSLLD      $16, Z2, Z2
	VFMADD231PS (R11), Z1, Z0
	VFMADD231PS 64(R11), Z2, Z5
	ADDQ        $64, R12
	ADDQ        $128, R11
	SUBQ        $2, CX
	JMP         bfpair

bfsingle:
	TESTQ CX, CX
	JZ    bfsum
	VPMOVZXWD   (R12), Z1
	VPSLLD      $16, Z1, Z1
	VFMADD231PS (R11), Z1, Z0

bfsum:
	VADDPS Z5, Z0, Z0
	HSUM
	MOVSS X0, (R8)
	ADDQ  $4, R8
	ADDQ  DX, SI
	DECQ  R9
	JMP   bfrow

bfdone:
	VZEROUPPER
	RET

// func q8DequantAVX512(q *int8, d *float32, dst *float32, nb int)
TEXT ·q8DequantAVX512(SB), NOSPLIT, $0-32
	MOVQ q+0(FP), SI
	MOVQ d+8(FP), DX
	MOVQ dst+16(FP), DI
	MOVQ nb+24(FP), CX

q8dq:
	TESTQ CX, CX
	JZ    q8dqdone
	VPMOVSXBD    (SI), Z1
	VPMOVSXBD    16(SI), Z2
	VCVTDQ2PS    Z1, Z1
	VCVTDQ2PS    Z2, Z2
	VBROADCASTSS (DX), Z4
	VMULPS       Z4, Z1, Z1
	VMULPS       Z4, Z2, Z2
	VMOVUPS      Z1, (DI)
	VMOVUPS      Z2, 64(DI)
	ADDQ         $32, SI
	ADDQ         $4, DX
	ADDQ         $128, DI
	DECQ         CX
	JMP          q8dq

q8dqdone:
	VZEROUPPER
	RET

// func q4DequantAVX512(q *uint8, d *float32, dst *float32, nb int)
TEXT ·q4DequantAVX512(SB), NOSPLIT, $0-32
	MOVQ q+0(FP), SI
	MOVQ d+8(FP), DX
	MOVQ dst+16(FP), DI
	MOVQ nb+24(FP), CX
	MOVL $15, AX
	VPBROADCASTD AX, Z15
	MOVL $0x41000000, AX
	VPBROADCASTD AX, Z14

q4dq:
	TESTQ CX, CX
	JZ    q4dqdone
	VPMOVZXBD    (SI), Z1
	VPSRLD       $4, Z1, Z2
	VPANDD       Z15, Z1, Z1
	VCVTDQ2PS    Z1, Z1
	VCVTDQ2PS    Z2, Z2
	VSUBPS       Z14, Z1, Z1
	VSUBPS       Z14, Z2, Z2
	VBROADCASTSS (DX), Z4
	VMULPS       Z4, Z1, Z1
	VMULPS       Z4, Z2, Z2
	VMOVUPS      Z1, (DI)
	VMOVUPS      Z2, 64(DI)
	ADDQ         $16, SI
	ADDQ         $4, DX
	ADDQ         $128, DI
	DECQ         CX
	JMP          q4dq

q4dqdone:
	VZEROUPPER
	RET
