// AVX-512 VNNI kernels for one row of x against row groups of Q8_0 or Q4_0 weights (group.go,
// layers/quant's row groups). Hand-written.
//
// A group's block is 16 rows × 32 values; each 64-byte vector of it holds 4 values of every row,
// one row a 32-bit lane, and one vpdpbusd adds each lane's four products with the same four
// bytes of x, broadcast. The weights enter vpdpbusd as unsigned bytes: Q4_0's nibbles n as they
// are (the value is n − 8), Q8_0's q flipped to q + 128 (xor 0x80); so each lane's sum is off by
// 8·Σx (or 128·Σx) over the block's 32 values of x, subtracted once for all sixteen rows. The
// exact integer sums, converted to float, take the block's sixteen weight scales (half floats,
// widened by one vcvtph2ps) times x's scale in one FMA into the group's sixteen results, which
// are stored as they are: no horizontal sums. Two integer accumulators halve the chain of
// vpdpbusd a block waits on. Registers:
//
//	SI, DX   the group's values and scales at the current block
//	DI       x's values (ActRow.q), R13 at the current block; R8 the blocks' sums of x (ActRow.s),
//	         R9 x's scales (ActRow.d), BX the current block
//	R10      y, R11 the groups left, R12 the blocks a row
//	Z0       the group's results; Z1, Z2 the integer sums; Z3-Z7 temporaries
//	Z31      0x0F in every byte (Q4_0) or 0x80 (Q8_0)
//
// The group's bytes are one stream: no software prefetch (it slowed the stream from memory by a
// quarter; 200000 rows of 288 as Q4_0, 57 MB, on one thread: 40 GB/s without, 27-32 with
// prefetches 2 or 4 KB ahead).

#include "textflag.h"

#define ARGS \
	MOVQ gq+0(FP), SI \
	MOVQ gd+8(FP), DX \
	MOVQ xq+16(FP), DI \
	MOVQ xs+24(FP), R8 \
	MOVQ xd+32(FP), R9 \
	MOVQ y+40(FP), R10 \
	MOVQ groups+48(FP), R11 \
	MOVQ nb+56(FP), R12

// One group's start: zero results, the first block.
#define GROUPSTART \
	VXORPS Z0, Z0, Z0 \
	XORQ   BX, BX \
	MOVQ   DI, R13

// The block's scaling: Z1 = Z1 + Z2 − Z7 (the offset), as float, times the weights' scales
// times x's, into Z0; then the next block.
#define BLOCKEND(qbytes) \
	VPADDD       Z2, Z1, Z1 \
	VPSUBD       Z7, Z1, Z1 \
	VCVTDQ2PS    Z1, Z1 \
	VCVTPH2PS    (DX), Z6 \
	VMULPS.BCST  (R9)(BX*4), Z6, Z6 \
	VFMADD231PS  Z6, Z1, Z0 \
	ADDQ         $qbytes, SI \
	ADDQ         $32, DX \
	ADDQ         $32, R13 \
	INCQ         BX

// Q4_0: step s of a block, values 4s..4s+3 (low nibbles) and 16+4s.. (high nibbles).
#define Q4STEP(s) \
	VMOVDQU64          (64*s)(SI), Z3 \
	VPANDD             Z31, Z3, Z4 \
	VPSRLW             $4, Z3, Z5 \
	VPANDD             Z31, Z5, Z5 \
	VPDPBUSD.BCST      (4*s)(R13), Z4, Z1 \
	VPDPBUSD.BCST      (16+4*s)(R13), Z5, Z2

// Q8_0: steps s and s+1 of a block, values 4s..4s+7.
#define Q8STEPS(s) \
	VPXORD             (64*s)(SI), Z31, Z3 \
	VPDPBUSD.BCST      (4*s)(R13), Z3, Z1 \
	VPXORD             (64*s+64)(SI), Z31, Z4 \
	VPDPBUSD.BCST      (4*s+4)(R13), Z4, Z2

// func q4GroupDotVNNI(gq *uint8, gd *uint16, xq *int8, xs *int32, xd *float32, y *float32, groups int, nb int)
TEXT ·q4GroupDotVNNI(SB), NOSPLIT, $0-64
	ARGS
	MOVL         $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z31

q4group:
	TESTQ R11, R11
	JZ    q4done
	GROUPSTART

q4block:
	CMPQ         BX, R12
	JAE          q4store
	VPBROADCASTD (R8)(BX*4), Z7
	VPSLLD       $3, Z7, Z7
	VPXORD       Z1, Z1, Z1
	VPXORD       Z2, Z2, Z2
	Q4STEP(0)
	Q4STEP(1)
	Q4STEP(2)
	Q4STEP(3)
	BLOCKEND(256)
	JMP          q4block

q4store:
	VMOVUPS Z0, (R10)
	ADDQ    $64, R10
	DECQ    R11
	JMP     q4group

q4done:
	VZEROUPPER
	RET

// func q8GroupDotVNNI(gq *int8, gd *uint16, xq *int8, xs *int32, xd *float32, y *float32, groups int, nb int)
TEXT ·q8GroupDotVNNI(SB), NOSPLIT, $0-64
	ARGS
	MOVL         $0x80808080, AX
	VPBROADCASTD AX, Z31

q8group:
	TESTQ R11, R11
	JZ    q8done
	GROUPSTART

q8block:
	CMPQ         BX, R12
	JAE          q8store
	VPBROADCASTD (R8)(BX*4), Z7
	VPSLLD       $7, Z7, Z7
	VPXORD       Z1, Z1, Z1
	VPXORD       Z2, Z2, Z2
	Q8STEPS(0)
	Q8STEPS(2)
	Q8STEPS(4)
	Q8STEPS(6)
	BLOCKEND(512)
	JMP          q8block

q8store:
	VMOVUPS Z0, (R10)
	ADDQ    $64, R10
	DECQ    R11
	JMP     q8group

q8done:
	VZEROUPPER
	RET
