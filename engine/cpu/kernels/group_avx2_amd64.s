// AVX2 kernels for one row of x, and for four, against row groups of Q8_0 or Q4_0 weights
// (group.go; the VNNI ones are group_amd64.s). Hand-written.
//
// A group's block is 16 rows × 32 values; each 64-byte step of it holds 4 values of every row,
// one row a 32-bit lane: rows 0-7 in its first 32 bytes, rows 8-15 in the second. AVX2 has no
// vpdpbusd, so a step takes ggml's route (actgemm_avx2_amd64.s): VPMADDUBSW multiplies unsigned
// bytes by the same four bytes of x, broadcast, into int16 pair sums, and VPMADDWD against ones
// adds each lane's pair into int32. Q4_0's nibbles n enter as they are (the value is n − 8, so a
// lane's sum is off by 8·Σx, ActRow.s, subtracted once for all sixteen rows); a block's low and
// high nibbles add in int16 over its four steps before VPMADDWD: |a sum| ≤ 4·2·2·15·127 =
// 30,480 < 32,767. Q8_0's signed q enter as |q|, x taking q's sign (VPSIGNB), so no offset: a
// pair is at most 2·128·127 = 32,512, and each step goes to int32 on its own. The block's exact
// sums, as float, take its sixteen weight scales (half floats, VCVTPH2PS) times x's scale in one
// FMA into the group's results, stored as they are: no horizontal sums. The float operations
// are those of the VNNI kernels, in the same order, so the two give the same bits
// (TestGroupKernelSetsAgree).
// Registers of the one-row kernels:
//
//	SI, DX   the group's values and scales at the current block
//	DI       x's values (ActRow.q), R13 at the current block; R8 the blocks' sums of x (ActRow.s),
//	         R9 x's scales (ActRow.d), BX the current block
//	R10      y, R11 the groups left, R12 the blocks a row
//	Y0, Y1   the results of rows 0-7 and 8-15; Y2, Y3 their integer sums; Y4-Y7 temporaries
//	Y14      0x0F in every byte (Q4_0); Y15 1 in every int16 (VPMADDWD's pair sum)

#include "textflag.h"
#include "group_args_amd64.h"

// The 32-bit constant val in every lane of Y (X its lower half); uses AX.
#define BCAST(val, Y, X) \
	MOVL         val, AX \
	VMOVD        AX, X \
	VPBROADCASTD X, Y

#define CONSTS \
	BCAST($0x0f0f0f0f, Y14, X14) \
	BCAST($0x00010001, Y15, X15)

// Q4_0: step s of a block for eight rows (the 32 bytes at off), low nibbles against x's
// values 4s..4s+3 (XL), high ones against 16+4s.. (XH), into ACC's int16 lanes.
#define Q4HALF(off, XL, XH, ACC) \
	VMOVDQU    off(SI), Y4 \
	VPSRLW     $4, Y4, Y5 \
	VPAND      Y14, Y4, Y4 \
	VPAND      Y14, Y5, Y5 \
	VPMADDUBSW XL, Y4, Y4 \
	VPMADDUBSW XH, Y5, Y5 \
	VPADDW     Y5, Y4, Y4 \
	VPADDW     Y4, ACC, ACC

#define Q4STEP(s) \
	VPBROADCASTD (4*s)(R13), Y6 \
	VPBROADCASTD (16+4*s)(R13), Y7 \
	Q4HALF(64*s, Y6, Y7, Y2) \
	Q4HALF(64*s+32, Y6, Y7, Y3)

// Q8_0: step s of a block for eight rows (the 32 bytes at off) against x's values 4s..4s+3
// (X), into ACC's int32 lanes.
#define Q8HALF(off, X, ACC) \
	VMOVDQU    off(SI), Y4 \
	VPABSB     Y4, Y5 \
	VPSIGNB    Y4, X, Y4 \
	VPMADDUBSW Y4, Y5, Y4 \
	VPMADDWD   Y15, Y4, Y4 \
	VPADDD     Y4, ACC, ACC

#define Q8STEP(s) \
	VPBROADCASTD (4*s)(R13), Y6 \
	Q8HALF(64*s, Y6, Y2) \
	Q8HALF(64*s+32, Y6, Y3)

// Q4_0's int16 sums into int32, less the block's offset 8·Σx; Q8_0's are int32 already.
#define Q4SUMS \
	VPMADDWD     Y15, Y2, Y2 \
	VPMADDWD     Y15, Y3, Y3 \
	VPBROADCASTD (R8)(BX*4), Y7 \
	VPSUBD       Y7, Y2, Y2 \
	VPSUBD       Y7, Y3, Y3

#define Q8SUMS

// The block's scaling: its sums as float times the weights' scales times x's, into Y0 and Y1;
// then the next block.
#define BLOCKEND(SUMS, qbytes) \
	SUMS \
	VCVTDQ2PS    Y2, Y2 \
	VCVTDQ2PS    Y3, Y3 \
	VCVTPH2PS    (DX), Y4 \
	VCVTPH2PS    16(DX), Y5 \
	VBROADCASTSS (R9)(BX*4), Y6 \
	VMULPS       Y6, Y4, Y4 \
	VMULPS       Y6, Y5, Y5 \
	VFMADD231PS  Y4, Y2, Y0 \
	VFMADD231PS  Y5, Y3, Y1 \
	ADDQ         $qbytes, SI \
	ADDQ         $32, DX \
	ADDQ         $32, R13 \
	INCQ         BX

// Four rows of x at once (q4GroupDot4AVX2, q8GroupDot4AVX2), eight rows of the group at a time:
// sixteen would want 16 accumulators and leave no register for the work. So a group goes by in
// two halves, the second reading the other 32 bytes of each step (from cache: the first read
// them in); the weights' share of the work is still a quarter. x's rows are ActRow plain forms
// xstride bytes apart (R13 row 0 and R15 row 3 at the current block, R14 the stride); their
// blocks' sums and scales come packed four to a block (xs4, xd4: AX and CX at the current
// block). Y0-Y3 the results of x's rows 0-3, Y4-Y7 their integer sums, Y12 the half's weight
// scales, Y8-Y13 temporaries.

#define HALFSTART4 \
	VXORPS Y0, Y0, Y0 \
	VXORPS Y1, Y1, Y1 \
	VXORPS Y2, Y2, Y2 \
	VXORPS Y3, Y3, Y3 \
	XORQ   BX, BX \
	MOVQ   DI, R13 \
	LEAQ   (DI)(R14*2), R15 \
	ADDQ   R14, R15 \
	MOVQ   R8, AX \
	MOVQ   R9, CX

#define ZERO4 \
	VPXOR Y4, Y4, Y4 \
	VPXOR Y5, Y5, Y5 \
	VPXOR Y6, Y6, Y6 \
	VPXOR Y7, Y7, Y7

// Q4_0: the unpacked nibbles (Y8 low, Y9 high) against a row of x's bytes broadcast (Y10 low,
// Y11 high), into ACC's int16 lanes.
#define Q4MAC4(ACC) \
	VPMADDUBSW Y10, Y8, Y10 \
	VPMADDUBSW Y11, Y9, Y11 \
	VPADDW     Y11, Y10, Y10 \
	VPADDW     Y10, ACC, ACC

#define Q4STEP4(s) \
	VMOVDQU      (64*s)(SI), Y8 \
	VPSRLW       $4, Y8, Y9 \
	VPAND        Y14, Y8, Y8 \
	VPAND        Y14, Y9, Y9 \
	VPBROADCASTD (4*s)(R13), Y10 \
	VPBROADCASTD (16+4*s)(R13), Y11 \
	Q4MAC4(Y4) \
	VPBROADCASTD (4*s)(R13)(R14*1), Y10 \
	VPBROADCASTD (16+4*s)(R13)(R14*1), Y11 \
	Q4MAC4(Y5) \
	VPBROADCASTD (4*s)(R13)(R14*2), Y10 \
	VPBROADCASTD (16+4*s)(R13)(R14*2), Y11 \
	Q4MAC4(Y6) \
	VPBROADCASTD (4*s)(R15), Y10 \
	VPBROADCASTD (16+4*s)(R15), Y11 \
	Q4MAC4(Y7)

// Q8_0: the weights (Y8) and their magnitudes (Y9) against a row of x's bytes broadcast (Y10),
// into ACC's int32 lanes.
#define Q8MAC4(ACC) \
	VPSIGNB    Y8, Y10, Y10 \
	VPMADDUBSW Y10, Y9, Y10 \
	VPMADDWD   Y15, Y10, Y10 \
	VPADDD     Y10, ACC, ACC

#define Q8STEP4(s) \
	VMOVDQU      (64*s)(SI), Y8 \
	VPABSB       Y8, Y9 \
	VPBROADCASTD (4*s)(R13), Y10 \
	Q8MAC4(Y4) \
	VPBROADCASTD (4*s)(R13)(R14*1), Y10 \
	Q8MAC4(Y5) \
	VPBROADCASTD (4*s)(R13)(R14*2), Y10 \
	Q8MAC4(Y6) \
	VPBROADCASTD (4*s)(R15), Y10 \
	Q8MAC4(Y7)

// Q4_0: row i's int16 sums into int32, less its offset 8·Σx.
#define Q4FIX4(i, ACC) \
	VPMADDWD     Y15, ACC, ACC \
	VPBROADCASTD (4*i)(AX), Y10 \
	VPSUBD       Y10, ACC, ACC

// Row i's scaling: its sums as float times the weights' scales (Y12) times its own, into RES.
#define SCALE4(i, ACC, RES) \
	VCVTDQ2PS    ACC, ACC \
	VBROADCASTSS (4*i)(CX), Y11 \
	VMULPS       Y11, Y12, Y11 \
	VFMADD231PS  Y11, ACC, RES

#define NEXTBLOCK4(qbytes) \
	ADDQ $qbytes, SI \
	ADDQ $32, DX \
	ADDQ $32, R13 \
	ADDQ $32, R15 \
	ADDQ $16, AX \
	ADDQ $16, CX \
	INCQ BX

#define Q4BLOCKEND4 \
	VCVTPH2PS (DX), Y12 \
	Q4FIX4(0, Y4) \
	SCALE4(0, Y4, Y0) \
	Q4FIX4(1, Y5) \
	SCALE4(1, Y5, Y1) \
	Q4FIX4(2, Y6) \
	SCALE4(2, Y6, Y2) \
	Q4FIX4(3, Y7) \
	SCALE4(3, Y7, Y3) \
	NEXTBLOCK4(256)

#define Q8BLOCKEND4 \
	VCVTPH2PS (DX), Y12 \
	SCALE4(0, Y4, Y0) \
	SCALE4(1, Y5, Y1) \
	SCALE4(2, Y6, Y2) \
	SCALE4(3, Y7, Y3) \
	NEXTBLOCK4(512)

// The half's eight results of each row of x, ystride bytes apart; then the group's other half
// (its values 32 bytes on, its scales 16), or, after the second, the next group.
#define STORE4(shift) \
	MOVQ    ystride+56(FP), R13 \
	VMOVUPS Y0, (R10) \
	VMOVUPS Y1, (R10)(R13*1) \
	VMOVUPS Y2, (R10)(R13*2) \
	LEAQ    (R13)(R13*2), R13 \
	VMOVUPS Y3, (R10)(R13*1) \
	ADDQ    $32, R10 \
	MOVQ    R12, BX \
	SHLQ    $shift, BX \
	SUBQ    BX, SI \
	MOVQ    R12, BX \
	SHLQ    $5, BX \
	SUBQ    BX, DX \
	ADDQ    $32, SI \
	ADDQ    $16, DX \
	MOVQ    half-8(SP), BX \
	INCQ    BX \
	MOVQ    BX, half-8(SP)

// After both halves SI and DX are 64 and 32 bytes past the group's start: on to the next.
#define NEXTGROUP(shift) \
	MOVQ R12, BX \
	SHLQ $shift, BX \
	LEAQ -64(SI)(BX*1), SI \
	MOVQ R12, BX \
	SHLQ $5, BX \
	LEAQ -32(DX)(BX*1), DX \
	DECQ R11

// func q4GroupDotAVX2(gq *uint8, gd *uint16, xq *int8, xs *int32, xd *float32, y *float32, groups int, nb int)
TEXT ·q4GroupDotAVX2(SB), NOSPLIT, $0-64
	ARGS
	CONSTS

q4group:
	TESTQ  R11, R11
	JZ     q4done
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	XORQ   BX, BX
	MOVQ   DI, R13

q4block:
	CMPQ  BX, R12
	JAE   q4store
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	Q4STEP(0)
	Q4STEP(1)
	Q4STEP(2)
	Q4STEP(3)
	BLOCKEND(Q4SUMS, 256)
	JMP   q4block

q4store:
	VMOVUPS Y0, (R10)
	VMOVUPS Y1, 32(R10)
	ADDQ    $64, R10
	DECQ    R11
	JMP     q4group

q4done:
	VZEROUPPER
	RET

// func q8GroupDotAVX2(gq *int8, gd *uint16, xq *int8, xs *int32, xd *float32, y *float32, groups int, nb int)
TEXT ·q8GroupDotAVX2(SB), NOSPLIT, $0-64
	ARGS
	CONSTS

q8group:
	TESTQ  R11, R11
	JZ     q8done
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	XORQ   BX, BX
	MOVQ   DI, R13

q8block:
	CMPQ  BX, R12
	JAE   q8store
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	Q8STEP(0)
	Q8STEP(1)
	Q8STEP(2)
	Q8STEP(3)
	Q8STEP(4)
	Q8STEP(5)
	Q8STEP(6)
	Q8STEP(7)
	BLOCKEND(Q8SUMS, 512)
	JMP   q8block

q8store:
	VMOVUPS Y0, (R10)
	VMOVUPS Y1, 32(R10)
	ADDQ    $64, R10
	DECQ    R11
	JMP     q8group

q8done:
	VZEROUPPER
	RET

// func q4GroupDot4AVX2(gq *uint8, gd *uint16, xq *int8, xstride int, xs4 *int32, xd4 *float32, y *float32, ystride int, groups int, nb int)
TEXT ·q4GroupDot4AVX2(SB), NOSPLIT, $8-80
	ARGS4
	CONSTS

q4g4group:
	TESTQ R11, R11
	JZ    q4g4done
	MOVQ  $0, half-8(SP)

q4g4half:
	HALFSTART4

q4g4block:
	CMPQ BX, R12
	JAE  q4g4store
	ZERO4
	Q4STEP4(0)
	Q4STEP4(1)
	Q4STEP4(2)
	Q4STEP4(3)
	Q4BLOCKEND4
	JMP  q4g4block

q4g4store:
	STORE4(8)
	CMPQ BX, $2
	JB   q4g4half
	NEXTGROUP(8)
	JMP  q4g4group

q4g4done:
	VZEROUPPER
	RET

// func q8GroupDot4AVX2(gq *int8, gd *uint16, xq *int8, xstride int, xs4 *int32, xd4 *float32, y *float32, ystride int, groups int, nb int)
TEXT ·q8GroupDot4AVX2(SB), NOSPLIT, $8-80
	ARGS4
	CONSTS

q8g4group:
	TESTQ R11, R11
	JZ    q8g4done
	MOVQ  $0, half-8(SP)

q8g4half:
	HALFSTART4

q8g4block:
	CMPQ BX, R12
	JAE  q8g4store
	ZERO4
	Q8STEP4(0)
	Q8STEP4(1)
	Q8STEP4(2)
	Q8STEP4(3)
	Q8STEP4(4)
	Q8STEP4(5)
	Q8STEP4(6)
	Q8STEP4(7)
	Q8BLOCKEND4
	JMP  q8g4block

q8g4store:
	STORE4(9)
	CMPQ BX, $2
	JB   q8g4half
	NEXTGROUP(9)
	JMP  q8g4group

q8g4done:
	VZEROUPPER
	RET
