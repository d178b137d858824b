// AVX-512 VNNI kernels for one row of x, and for four, against row groups of Q8_0 or Q4_0
// weights (group.go, layers/quant's row groups). Hand-written.
//
// A group's block is 16 rows × 32 values; each 64-byte vector of it holds 4 values of every row,
// one row a 32-bit lane, and one vpdpbusd adds each lane's four products with the same four
// bytes of x, broadcast. The weights enter vpdpbusd as unsigned bytes: Q4_0's nibbles n as they
// are (the value is n − 8), Q8_0's q flipped to q + 128 (xor 0x80); so each lane's sum is off by
// 8·Σx (or 128·Σx) over the block's 32 values of x, subtracted once for all sixteen rows. The
// exact integer sums, converted to float, take the block's sixteen weight scales (half floats,
// widened by one vcvtph2ps) times x's scale in one FMA into the group's sixteen results, which
// are stored as they are: no horizontal sums. x's sums come as 8·Σ (ActRow.s), Q4_0's offset
// already, shifted by 4 for Q8_0's. Two integer accumulators halve the chain of vpdpbusd a
// block waits on. Registers of the one-row kernels:
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
#include "group_args_amd64.h"

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

// Four rows of x at once (q4GroupDot4VNNI, q8GroupDot4VNNI): each vector of weights, unpacked
// once, meets the four rows' bytes, so the weights' share of the work is a quarter. x's rows are
// ActRow plain forms xstride bytes apart (R13 row 0 and R15 row 3 at the current block, R14 the
// stride); their blocks' sums and scales come packed four to a block (xs4, xd4: AX and CX at
// the current block). Integer sums: Z8 + 2i and Z9 + 2i for row i; results Z0-Z3; the block's
// weight scales Z16.

#define GROUPSTART4 \
	VXORPS Z0, Z0, Z0 \
	VXORPS Z1, Z1, Z1 \
	VXORPS Z2, Z2, Z2 \
	VXORPS Z3, Z3, Z3 \
	XORQ   BX, BX \
	MOVQ   DI, R13 \
	LEAQ   (DI)(R14*2), R15 \
	ADDQ   R14, R15 \
	MOVQ   R8, AX \
	MOVQ   R9, CX

#define ZERO8 \
	VPXORD Z8, Z8, Z8 \
	VPXORD Z9, Z9, Z9 \
	VPXORD Z10, Z10, Z10 \
	VPXORD Z11, Z11, Z11 \
	VPXORD Z12, Z12, Z12 \
	VPXORD Z13, Z13, Z13 \
	VPXORD Z14, Z14, Z14 \
	VPXORD Z15, Z15, Z15

// U against four bytes at off of each row of x, into the rows' accumulators A (row 0 is A0, and
// so on).
#define DOT4(U, off, A0, A1, A2, A3) \
	VPDPBUSD.BCST off(R13), U, A0 \
	VPDPBUSD.BCST off(R13)(R14*1), U, A1 \
	VPDPBUSD.BCST off(R13)(R14*2), U, A2 \
	VPDPBUSD.BCST off(R15), U, A3

// Row i's scaling: its two sums less its offset (SHIFT, the sum shifted), as float, times the
// weights' scales times its own, into ACC.
#define ROWEND(i, SHIFT, LO, HI, ACC) \
	VPADDD       HI, LO, LO \
	VPBROADCASTD (4*i)(AX), Z17 \
	SHIFT \
	VPSUBD       Z17, LO, LO \
	VCVTDQ2PS    LO, LO \
	VMULPS.BCST  (4*i)(CX), Z16, Z18 \
	VFMADD231PS  Z18, LO, ACC

// The offsets: Q4_0's is x's sum as it comes, Q8_0's 16 times it.
#define Q4OFF
#define Q8OFF VPSLLD $4, Z17, Z17

#define BLOCKEND4(SHIFT, qbytes) \
	VCVTPH2PS (DX), Z16 \
	ROWEND(0, SHIFT, Z8, Z9, Z0) \
	ROWEND(1, SHIFT, Z10, Z11, Z1) \
	ROWEND(2, SHIFT, Z12, Z13, Z2) \
	ROWEND(3, SHIFT, Z14, Z15, Z3) \
	ADDQ $qbytes, SI \
	ADDQ $32, DX \
	ADDQ $32, R13 \
	ADDQ $32, R15 \
	ADDQ $16, AX \
	ADDQ $16, CX \
	INCQ BX

// The group's four rows of results, ystride bytes apart.
#define STORE4 \
	MOVQ    ystride+56(FP), R13 \
	VMOVUPS Z0, (R10) \
	VMOVUPS Z1, (R10)(R13*1) \
	VMOVUPS Z2, (R10)(R13*2) \
	LEAQ    (R13)(R13*2), R13 \
	VMOVUPS Z3, (R10)(R13*1) \
	ADDQ    $64, R10 \
	DECQ    R11

#define Q4STEP4(s) \
	VMOVDQU64 (64*s)(SI), Z4 \
	VPANDD    Z31, Z4, Z5 \
	VPSRLW    $4, Z4, Z6 \
	VPANDD    Z31, Z6, Z6 \
	DOT4(Z5, (4*s), Z8, Z10, Z12, Z14) \
	DOT4(Z6, (16+4*s), Z9, Z11, Z13, Z15)

#define Q8STEP4(s, A0, A1, A2, A3) \
	VPXORD (64*s)(SI), Z31, Z4 \
	DOT4(Z4, (4*s), A0, A1, A2, A3)


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
	VPSLLD       $4, Z7, Z7
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

// func q4GroupDot4VNNI(gq *uint8, gd *uint16, xq *int8, xstride int, xs4 *int32, xd4 *float32, y *float32, ystride int, groups int, nb int)
TEXT ·q4GroupDot4VNNI(SB), NOSPLIT, $0-80
	ARGS4
	MOVL         $0x0f0f0f0f, BX
	VPBROADCASTD BX, Z31

q4g4group:
	TESTQ R11, R11
	JZ    q4g4done
	GROUPSTART4

q4g4block:
	CMPQ BX, R12
	JAE  q4g4store
	ZERO8
	Q4STEP4(0)
	Q4STEP4(1)
	Q4STEP4(2)
	Q4STEP4(3)
	BLOCKEND4(Q4OFF, 256)
	JMP  q4g4block

q4g4store:
	STORE4
	JMP q4g4group

q4g4done:
	VZEROUPPER
	RET

// func q8GroupDot4VNNI(gq *int8, gd *uint16, xq *int8, xstride int, xs4 *int32, xd4 *float32, y *float32, ystride int, groups int, nb int)
TEXT ·q8GroupDot4VNNI(SB), NOSPLIT, $0-80
	ARGS4
	MOVL         $0x80808080, BX
	VPBROADCASTD BX, Z31

q8g4group:
	TESTQ R11, R11
	JZ    q8g4done
	GROUPSTART4

q8g4block:
	CMPQ BX, R12
	JAE  q8g4store
	ZERO8
	Q8STEP4(0, Z8, Z10, Z12, Z14)
	Q8STEP4(1, Z9, Z11, Z13, Z15)
	Q8STEP4(2, Z8, Z10, Z12, Z14)
	Q8STEP4(3, Z9, Z11, Z13, Z15)
	Q8STEP4(4, Z8, Z10, Z12, Z14)
	Q8STEP4(5, Z9, Z11, Z13, Z15)
	Q8STEP4(6, Z8, Z10, Z12, Z14)
	Q8STEP4(7, Z9, Z11, Z13, Z15)
	BLOCKEND4(Q8OFF, 512)
	JMP  q8g4block

q8g4store:
	STORE4
	JMP q8g4group

q8g4done:
	VZEROUPPER
	RET
