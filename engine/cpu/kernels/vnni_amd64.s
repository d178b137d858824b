// AVX-512 VNNI kernels for products with int8 activations (vnni.go): rows of Q8_0 or Q4_0
// weights against one row of x quantized to Q8_0 and laid out by layoutAct. Hand-written.
//
// A pair of blocks (64 weights) fills a zmm of bytes. One vpdpbusd adds the products of each
// lane's four bytes to that lane, which starts at the x-only correction of the offset that made
// the weights unsigned (xc); the lane sums, exact integers, are converted to float and
// FMA'd with the lane's d_x (xd) times the weight row's d of the lane's block: a broadcast of
// block A's d, merged with a broadcast of block B's into B's lanes (mask K1). Four weight rows
// per pass share the loads of x; a last odd block reads half a pair and meets the zeros that pad
// x (its B lanes are zeroed by mask K2). Registers:
//
//	SI, R12  rows 0 and 3 of the weights at the current pair; R13 the row stride in bytes
//	DX, BX   rows 0 and 3 of the weight scales; R14 their row stride (4·nb)
//	DI, R8, R9 + AX   x's bytes, corrections and scales, AX the offset of the current pair
//	R15      the prefetch pointer, PFDIST bytes ahead in the group's rows
//	Z0-Z3    the rows' float accumulators; Z16-Z18 x's pair; Z20-Z28 temporaries
//	Z31      (Q8_0) 0x80 in every byte; Z30, Z29 (Q4_0) 0x0F in every byte, word shifts 0 | 4
//
// The four rows are read in turns (64 bytes of each, then the next 64 of each), a pattern the
// hardware prefetcher follows poorly: weights streamed from memory (200000 rows of 288, 65 MB)
// took 2.3 ms on one thread without the software prefetch and 1.8-1.9 ms with it (4096 bytes
// ahead; 2048 to 8192 measured alike; Q4_0 1.39 -> 1.26 ms), and matrices in cache are not
// slowed. A prefetch past the end of the matrix does not fault.

#include "textflag.h"

#define PFDIST 4096

// Horizontal sum of Z0 into X0.
#define HSUM1 \
	VEXTRACTF32X8 $1, Z0, Y1 \
	VADDPS        Y1, Y0, Y0 \
	VEXTRACTF32X4 $1, Y0, X1 \
	VADDPS        X1, X0, X0 \
	VPERMILPS     $0x4e, X0, X1 \
	VADDPS        X1, X0, X0 \
	VPERMILPS     $0xb1, X0, X1 \
	VADDPS        X1, X0, X0

// Horizontal sums of Z0, Z1, Z2, Z3 into the four floats of X0 (vhaddps has only a VEX form,
// hence accumulators in the low registers).
#define HSUM4 \
	VEXTRACTF64X4 $1, Z0, Y4 \
	VADDPS        Y4, Y0, Y0 \
	VEXTRACTF64X4 $1, Z1, Y5 \
	VADDPS        Y5, Y1, Y1 \
	VEXTRACTF64X4 $1, Z2, Y6 \
	VADDPS        Y6, Y2, Y2 \
	VEXTRACTF64X4 $1, Z3, Y7 \
	VADDPS        Y7, Y3, Y3 \
	VHADDPS       Y1, Y0, Y0 \
	VHADDPS       Y3, Y2, Y2 \
	VHADDPS       Y2, Y0, Y0 \
	VEXTRACTF128  $1, Y0, X1 \
	VADDPS        X1, X0, X0

// x's pair at offset AX: bytes, corrections, scales.
#define XPAIR \
	VMOVDQU64 (DI)(AX*1), Z16 \
	VMOVDQU64 (R8)(AX*1), Z17 \
	VMOVUPS   (R9)(AX*1), Z18

// ACC += (the lane sums of U against x, from the corrections) · xd · d_w, d_w of block A at SA
// and of block B at SB.
#define SCALE(U, SA, SB, T, S, ACC) \
	VMOVDQA64    Z17, T \
	VPDPBUSD     Z16, U, T \
	VCVTDQ2PS    T, T \
	VBROADCASTSS SA, S \
	VBROADCASTSS SB, K1, S \
	VMULPS       Z18, S, S \
	VFMADD231PS  S, T, ACC

// The same for a last odd block: B's lanes of the scale are zero.
#define SCALEHALF(U, SA, T, S, ACC) \
	VMOVDQA64      Z17, T \
	VPDPBUSD       Z16, U, T \
	VCVTDQ2PS      T, T \
	VBROADCASTSS.Z SA, K2, S \
	VMULPS         Z18, S, S \
	VFMADD231PS    S, T, ACC

// Q8_0 weights at W as unsigned bytes: q + 128 is q with its top bit flipped.
#define Q8PAIR(W, U) \
	VPXORD W, Z31, U

// Half a pair: [A, A]; the copy meets x's zero padding.
#define Q8HALF(W, U) \
	VBROADCASTI64X4 W, U \
	VPXORD          U, Z31, U

// Q4_0 nibbles of two blocks at W (32 bytes) as bytes: low nibbles of A and B, then their high
// nibbles (the word shift brings in a neighbour's bits, which the mask drops).
#define Q4PAIR(W, U) \
	VBROADCASTI64X4 W, U \
	VPSRLVW         Z29, U, U \
	VPANDD          Z30, U, U

// Half a pair (16 bytes): [A, A, A>>4, A>>4]; the copies meet x's zero padding.
#define Q4HALF(W, U) \
	VBROADCASTI32X4 W, U \
	VPSRLVW         Z29, U, U \
	VPANDD          Z30, U, U

// The argument registers, and the row strides R13 (weights) and R14 (scales).
#define ARGS(wrow) \
	MOVQ q+0(FP), SI \
	MOVQ d+8(FP), DX \
	MOVQ xq+16(FP), DI \
	MOVQ xc+24(FP), R8 \
	MOVQ xd+32(FP), R9 \
	MOVQ y+40(FP), R10 \
	MOVQ rows+48(FP), R11 \
	MOVQ nb+56(FP), R14 \
	MOVQ R14, R13 \
	SHLQ $wrow, R13 \
	SHLQ $2, R14

// Pointers of a group of four rows: R12 and BX at row 3, R15 to prefetch; the pair counter CX.
#define GROUP \
	LEAQ   PFDIST(SI), R15 \
	XORQ   AX, AX \
	LEAQ   (SI)(R13*2), R12 \
	ADDQ   R13, R12 \
	LEAQ   (DX)(R14*2), BX \
	ADDQ   R14, BX \
	MOVQ   nb+56(FP), CX \
	SHRQ   $1, CX \
	VXORPS Z0, Z0, Z0 \
	VXORPS Z1, Z1, Z1 \
	VXORPS Z2, Z2, Z2 \
	VXORPS Z3, Z3, Z3

// Quantizing a row of x to Q8_0 blocks straight into the kernels' layout (layoutAct), with
// models/quant's rounding bit for bit: d = max|x|/127 (float32), id = 1/d (0 when d is 0),
// q = round(x·id) half away from zero, d kept as a half float. Registers: SI x, DI R8 R9 the
// layout's bytes, corrections and scales, CX the pairs left; Z31 0x7fffffff, Z30 0.5, Z29 1
// (int32), Z28 the correction's factor in every byte, X27 127.0, X26 1.0.

// P's floats rounded half away from zero into int32 T (uses U, K1): trunc, then one more
// step away from zero where the dropped fraction is at least one half.
#define ROUNDAWAY(P, T, U) \
	VRNDSCALEPS $0x0b, P, T \
	VSUBPS      T, P, U \
	VANDPS      Z31, U, U \
	VCMPPS      $0x1d, Z30, U, K1 \
	VCVTTPS2DQ  T, T \
	VPSRAD      $31, P, U \
	VPORD       Z29, U, U \
	VPADDD      U, T, K1, T

// One block of 32 floats at off(SI): its values as int8 in Q0 (elements 0-15) and Q1 (16-31),
// its scale, rounded to a half float and widened, in D. max|x| compares the bits of |x| as
// unsigned integers: the same order for numbers, and a NaN beats everything, so that (as Go's
// max does) it makes the scale NaN instead of being dropped as vmaxps would.
#define QBLOCK(off, Q0, Q1, D) \
	VMOVUPS       off(SI), Z0 \
	VMOVUPS       off+64(SI), Z1 \
	VANDPS        Z31, Z0, Z2 \
	VANDPS        Z31, Z1, Z3 \
	VPMAXUD       Z3, Z2, Z2 \
	VEXTRACTF64X4 $1, Z2, Y3 \
	VPMAXUD       Y3, Y2, Y2 \
	VEXTRACTF128  $1, Y2, X3 \
	VPMAXUD       X3, X2, X2 \
	VPERMILPS     $0x4e, X2, X3 \
	VPMAXUD       X3, X2, X2 \
	VPERMILPS     $0xb1, X2, X3 \
	VPMAXUD       X3, X2, X2 \
	VDIVSS        X27, X2, X2 \
	VDIVSS        X2, X26, X3 \
	VXORPS        X4, X4, X4 \
	VCMPSS        $4, X4, X2, X5 \
	VANDPS        X5, X3, X3 \
	VBROADCASTSS  X3, Z3 \
	VMULPS        Z3, Z0, Z0 \
	VMULPS        Z3, Z1, Z1 \
	ROUNDAWAY(Z0, Z4, Z5) \
	ROUNDAWAY(Z1, Z15, Z5) \
	VPMOVSDB      Z4, Q0 \
	VPMOVSDB      Z15, Q1 \
	VCVTPS2PH     $0, X2, X2 \
	VCVTPH2PS     X2, D

// The pair's bytes are in Z8: store them, their lanes' corrections −f·Σ (f the byte in every
// lane of Z28) and the lanes' scales, X6 for block A and X7 for block B's lanes (mask K2).
#define STOREPAIR \
	VMOVDQU64    Z8, (DI) \
	VPXORD       Z12, Z12, Z12 \
	VPDPBUSD     Z8, Z28, Z12 \
	VPXORD       Z13, Z13, Z13 \
	VPSUBD       Z12, Z13, Z12 \
	VMOVDQU32    Z12, (R8) \
	VBROADCASTSS X6, Z14 \
	VBROADCASTSS X7, K2, Z14 \
	VMOVUPS      Z14, (R9) \
	ADDQ         $256, SI \
	ADDQ         $64, DI \
	ADDQ         $64, R8 \
	ADDQ         $64, R9

// Q8_0 order: A's 32 bytes, then B's.
#define Q8ORDER \
	VINSERTI128   $1, X9, Y8, Y8 \
	VINSERTI128   $1, X11, Y10, Y10 \
	VINSERTI64X4  $1, Y10, Z8, Z8

// Q4_0 order: A[0:16], B[0:16], A[16:32], B[16:32].
#define Q4ORDER \
	VINSERTI128   $1, X10, Y8, Y12 \
	VINSERTI128   $1, X11, Y9, Y13 \
	VINSERTI64X4  $1, Y13, Z12, Z8

// The arguments and constants of a quantizer; CX = the number of whole pairs.
#define QSETUP(factor, bmask) \
	MOVQ         x+0(FP), SI \
	MOVQ         vq+8(FP), DI \
	MOVQ         vc+16(FP), R8 \
	MOVQ         vd+24(FP), R9 \
	MOVQ         nb+32(FP), CX \
	SHRQ         $1, CX \
	MOVL         $0x7fffffff, AX \
	VPBROADCASTD AX, Z31 \
	MOVL         $0x3f000000, AX \
	VPBROADCASTD AX, Z30 \
	MOVL         $1, AX \
	VPBROADCASTD AX, Z29 \
	MOVL         $factor, AX \
	VPBROADCASTD AX, Z28 \
	MOVL         $0x42fe0000, AX \
	VMOVD        AX, X27 \
	MOVL         $0x3f800000, AX \
	VMOVD        AX, X26 \
	MOVL         $bmask, AX \
	KMOVW        AX, K2

// A last odd block: B is absent (zero bytes, zero scale).
#define QHALF \
	QBLOCK(0, X8, X9, X6) \
	VPXOR X10, X10, X10 \
	VPXOR X11, X11, X11 \
	VPXOR X7, X7, X7

// func q8ActDotRowsVNNI(q *int8, d *float32, xq *int8, xc *int32, xd *float32, y *float32, rows int, nb int)
TEXT ·q8ActDotRowsVNNI(SB), NOSPLIT, $0-64
	ARGS(5)
	MOVL         $0x80808080, AX
	VPBROADCASTD AX, Z31
	MOVL         $0xff00, AX
	KMOVW        AX, K1
	MOVL         $0x00ff, AX
	KMOVW        AX, K2

q8group:
	CMPQ R11, $4
	JB   q8rows
	GROUP

q8pair:
	TESTQ CX, CX
	JZ    q8half
	XPAIR
	PREFETCHT0 (R15)
	PREFETCHT0 64(R15)
	PREFETCHT0 128(R15)
	PREFETCHT0 192(R15)
	ADDQ       $256, R15 // as many bytes as the four rows take
	Q8PAIR((SI), Z20)
	Q8PAIR((SI)(R13*1), Z21)
	Q8PAIR((SI)(R13*2), Z22)
	Q8PAIR((R12), Z23)
	SCALE(Z20, (DX), 4(DX), Z24, Z25, Z0)
	SCALE(Z21, (DX)(R14*1), 4(DX)(R14*1), Z26, Z27, Z1)
	SCALE(Z22, (DX)(R14*2), 4(DX)(R14*2), Z24, Z25, Z2)
	SCALE(Z23, (BX), 4(BX), Z26, Z27, Z3)
	ADDQ $64, SI
	ADDQ $64, R12
	ADDQ $8, DX
	ADDQ $8, BX
	ADDQ $64, AX
	DECQ CX
	JMP  q8pair

q8half:
	TESTQ $1, nb+56(FP)
	JZ    q8store4
	XPAIR
	PREFETCHT0 (R15)
	PREFETCHT0 64(R15)
	Q8HALF((SI), Z20)
	Q8HALF((SI)(R13*1), Z21)
	Q8HALF((SI)(R13*2), Z22)
	Q8HALF((R12), Z23)
	SCALEHALF(Z20, (DX), Z24, Z25, Z0)
	SCALEHALF(Z21, (DX)(R14*1), Z26, Z27, Z1)
	SCALEHALF(Z22, (DX)(R14*2), Z24, Z25, Z2)
	SCALEHALF(Z23, (BX), Z26, Z27, Z3)
	ADDQ $32, R12
	ADDQ $4, BX

q8store4:
	HSUM4
	VMOVUPS X0, (R10)
	ADDQ    $16, R10
	MOVQ    R12, SI // row 3 ended where the next group starts
	MOVQ    BX, DX
	SUBQ    $4, R11
	JMP     q8group

q8rows:
	TESTQ R11, R11
	JZ    q8done
	XORQ  AX, AX
	MOVQ  nb+56(FP), CX
	SHRQ  $1, CX
	VXORPS Z0, Z0, Z0

q8rowpair:
	TESTQ CX, CX
	JZ    q8rowhalf
	XPAIR
	Q8PAIR((SI), Z20)
	SCALE(Z20, (DX), 4(DX), Z24, Z25, Z0)
	ADDQ $64, SI
	ADDQ $8, DX
	ADDQ $64, AX
	DECQ CX
	JMP  q8rowpair

q8rowhalf:
	TESTQ $1, nb+56(FP)
	JZ    q8store1
	XPAIR
	Q8HALF((SI), Z20)
	SCALEHALF(Z20, (DX), Z24, Z25, Z0)
	ADDQ $32, SI
	ADDQ $4, DX

q8store1:
	HSUM1
	MOVSS X0, (R10)
	ADDQ  $4, R10
	DECQ  R11
	JMP   q8rows

q8done:
	VZEROUPPER
	RET

// func q4ActDotRowsVNNI(q *uint8, d *float32, xq *int8, xc *int32, xd *float32, y *float32, rows int, nb int)
TEXT ·q4ActDotRowsVNNI(SB), NOSPLIT, $0-64
	ARGS(4)
	MOVL         $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z30
	MOVL         $0xffff0000, AX // the high 16 words shift by 4
	KMOVD        AX, K3
	MOVL         $4, AX
	VPBROADCASTW.Z AX, K3, Z29
	MOVL         $0xf0f0, AX
	KMOVW        AX, K1
	MOVL         $0x0f0f, AX
	KMOVW        AX, K2

q4group:
	CMPQ R11, $4
	JB   q4rows
	GROUP

q4pair:
	TESTQ CX, CX
	JZ    q4half
	XPAIR
	PREFETCHT0 (R15)
	PREFETCHT0 64(R15)
	ADDQ       $128, R15
	Q4PAIR((SI), Z20)
	Q4PAIR((SI)(R13*1), Z21)
	Q4PAIR((SI)(R13*2), Z22)
	Q4PAIR((R12), Z23)
	SCALE(Z20, (DX), 4(DX), Z24, Z25, Z0)
	SCALE(Z21, (DX)(R14*1), 4(DX)(R14*1), Z26, Z27, Z1)
	SCALE(Z22, (DX)(R14*2), 4(DX)(R14*2), Z24, Z25, Z2)
	SCALE(Z23, (BX), 4(BX), Z26, Z27, Z3)
	ADDQ $32, SI
	ADDQ $32, R12
	ADDQ $8, DX
	ADDQ $8, BX
	ADDQ $64, AX
	DECQ CX
	JMP  q4pair

q4half:
	TESTQ $1, nb+56(FP)
	JZ    q4store4
	XPAIR
	PREFETCHT0 (R15)
	Q4HALF((SI), Z20)
	Q4HALF((SI)(R13*1), Z21)
	Q4HALF((SI)(R13*2), Z22)
	Q4HALF((R12), Z23)
	SCALEHALF(Z20, (DX), Z24, Z25, Z0)
	SCALEHALF(Z21, (DX)(R14*1), Z26, Z27, Z1)
	SCALEHALF(Z22, (DX)(R14*2), Z24, Z25, Z2)
	SCALEHALF(Z23, (BX), Z26, Z27, Z3)
	ADDQ $16, R12
	ADDQ $4, BX

q4store4:
	HSUM4
	VMOVUPS X0, (R10)
	ADDQ    $16, R10
	MOVQ    R12, SI
	MOVQ    BX, DX
	SUBQ    $4, R11
	JMP     q4group

q4rows:
	TESTQ R11, R11
	JZ    q4done
	XORQ  AX, AX
	MOVQ  nb+56(FP), CX
	SHRQ  $1, CX
	VXORPS Z0, Z0, Z0

q4rowpair:
	TESTQ CX, CX
	JZ    q4rowhalf
	XPAIR
	Q4PAIR((SI), Z20)
	SCALE(Z20, (DX), 4(DX), Z24, Z25, Z0)
	ADDQ $32, SI
	ADDQ $8, DX
	ADDQ $64, AX
	DECQ CX
	JMP  q4rowpair

q4rowhalf:
	TESTQ $1, nb+56(FP)
	JZ    q4store1
	XPAIR
	Q4HALF((SI), Z20)
	SCALEHALF(Z20, (DX), Z24, Z25, Z0)
	ADDQ $16, SI
	ADDQ $4, DX

q4store1:
	HSUM1
	MOVSS X0, (R10)
	ADDQ  $4, R10
	DECQ  R11
	JMP   q4rows

q4done:
	VZEROUPPER
	RET

// func q8ActQuantizeVNNI(x *float32, vq *int8, vc *int32, vd *float32, nb int)
TEXT ·q8ActQuantizeVNNI(SB), NOSPLIT, $0-40
	QSETUP(0x80808080, 0xff00) // the correction −128·Σ q; B's lanes 8-15

q8qpair:
	TESTQ CX, CX
	JZ    q8qhalf
	QBLOCK(0, X8, X9, X6)
	QBLOCK(128, X10, X11, X7)
	Q8ORDER
	STOREPAIR
	DECQ  CX
	JMP   q8qpair

q8qhalf:
	TESTQ $1, nb+32(FP)
	JZ    q8qdone
	QHALF
	Q8ORDER
	STOREPAIR

q8qdone:
	VZEROUPPER
	RET

// func q4ActQuantizeVNNI(x *float32, vq *int8, vc *int32, vd *float32, nb int)
TEXT ·q4ActQuantizeVNNI(SB), NOSPLIT, $0-40
	QSETUP(0x08080808, 0xf0f0) // the correction −8·Σ q; B's lanes 4-7 and 12-15

q4qpair:
	TESTQ CX, CX
	JZ    q4qhalf
	QBLOCK(0, X8, X9, X6)
	QBLOCK(128, X10, X11, X7)
	Q4ORDER
	STOREPAIR
	DECQ  CX
	JMP   q4qpair

q4qhalf:
	TESTQ $1, nb+32(FP)
	JZ    q4qdone
	QHALF
	Q4ORDER
	STOREPAIR

q4qdone:
	VZEROUPPER
	RET
