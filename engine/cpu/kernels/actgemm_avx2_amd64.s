// AVX2 integer kernels for products with int8 activations (actgemm.go): rows of x quantized to
// Q8_0 blocks against Q8_0 or Q4_0 weight rows, every block an exact integer dot product.
// Hand-written; the Go wrappers (actgemm_amd64.go) check every length.
//
// AVX2 has no unsigned-by-signed dot product into int32 (VNNI's vpdpbusd), so a block takes
// ggml's route (mul_sum_i8_pairs): VPMADDUBSW multiplies unsigned bytes by signed bytes into
// pairwise int16 sums, so the weight goes in as |w| and x takes w's sign (VPSIGNB), which keeps
// every product w·x; VPMADDWD against ones then sums the int16 pairs into eight int32 lanes,
// lane l holding the four products of elements 4l..4l+3. No sum saturates: |w| ≤ 128 and
// |x| ≤ 127 (ggml's rounding of x), so a pair is at most 2·128·127 = 32,512 < 32,767.
//
// Each lane is converted to float and added to its accumulator times d_x·d_w with one FMA, lane
// by lane across the blocks; the eight lanes are summed at the end in a fixed order. The Go
// reference (actGemmGo) does exactly these operations, so the two agree to the bit.
//
// The four-row kernel keeps the four rows of x in L1 and loads each weight block once for all
// four: per row and block eight instructions for 32 multiply-adds. The scales of a group of
// four rows are interleaved ([block][row]), so one pointer walks them.

#include "textflag.h"

// Y15 = 1 in every int16 lane (VPMADDWD's pair sum).
#define ONES \
	MOVL         $0x00010001, AX \
	VMOVD        AX, X15 \
	VPBROADCASTD X15, Y15

// Y14 = 0x0f and Y13 = 8 in every byte (Q4_0's nibbles).
#define NIBBLECONSTS \
	MOVL         $0x0f0f0f0f, AX \
	VMOVD        AX, X14 \
	VPBROADCASTD X14, Y14 \
	MOVL         $0x08080808, AX \
	VMOVD        AX, X13 \
	VPBROADCASTD X13, Y13

// A Q8_0 weight block at (SI): Y4 its values, Y5 their magnitudes, Y6 its scale from (DX).
#define WQ8 \
	VMOVDQU      (SI), Y4 \
	VPABSB       Y4, Y5 \
	VBROADCASTSS (DX), Y6

// A Q4_0 weight block at (SI) (byte j: element j in the low nibble, j+16 in the high one),
// widened to signed bytes n−8 in element order: low nibbles in the lower half, high in the upper.
#define WQ4 \
	VMOVDQU      (SI), X4 \
	VPSRLW       $4, X4, X7 \
	VINSERTI128  $1, X7, Y4, Y4 \
	VPAND        Y14, Y4, Y4 \
	VPSUBB       Y13, Y4, Y4 \
	VPABSB       Y4, Y5 \
	VBROADCASTSS (DX), Y6

// One row of x against the weight block: ACC += (d_x·d_w) · lanes(x·w), x's block at xa, its
// scale at da.
#define ROW(xa, da, ACC) \
	VMOVDQU      xa, Y7 \
	VPSIGNB      Y4, Y7, Y7 \
	VPMADDUBSW   Y7, Y5, Y7 \
	VPMADDWD     Y15, Y7, Y7 \
	VCVTDQ2PS    Y7, Y7 \
	VBROADCASTSS da, Y8 \
	VMULPS       Y6, Y8, Y8 \
	VFMADD231PS  Y8, Y7, ACC

// The sum of ACC's eight lanes into X of ACC's number: (l0+l4)+(l2+l6) + (l1+l5)+(l3+l7), the
// order actGemmGo follows.
#define HSUM(Y, X) \
	VEXTRACTF128 $1, Y, X9 \
	VADDPS       X9, X, X \
	VPERMILPS    $0x4e, X, X9 \
	VADDPS       X9, X, X \
	VPERMILPS    $0xb1, X, X9 \
	VADDPS       X9, X, X

// The four-row kernel's body: for each of n weight rows (SI values, DX scales), the four rows
// of x (R8 values with row stride R12, R9 scales interleaved by four) into y (DI, stride R10
// bytes; R15 and R13 get three strides of each). WLOAD loads a weight block and WSTEP is its
// size in bytes.
#define GEMM4(WLOAD, WSTEP) \
	MOVQ   R12, R15 \
	SHLQ   $1, R15 \
	ADDQ   R12, R15 \
	MOVQ   R10, R13 \
	SHLQ   $1, R13 \
	ADDQ   R10, R13 \
	TESTQ  CX, CX \
	JZ     done4 \
col4: \
	VXORPS Y0, Y0, Y0 \
	VXORPS Y1, Y1, Y1 \
	VXORPS Y2, Y2, Y2 \
	VXORPS Y3, Y3, Y3 \
	MOVQ   R8, R11 \
	MOVQ   R9, R14 \
	MOVQ   BX, AX \
blk4: \
	WLOAD \
	ROW((R11), (R14), Y0) \
	ROW((R11)(R12*1), 4(R14), Y1) \
	ROW((R11)(R12*2), 8(R14), Y2) \
	ROW((R11)(R15*1), 12(R14), Y3) \
	ADDQ   $WSTEP, SI \
	ADDQ   $4, DX \
	ADDQ   $32, R11 \
	ADDQ   $16, R14 \
	DECQ   AX \
	JNZ    blk4 \
	HSUM(Y0, X0) \
	HSUM(Y1, X1) \
	HSUM(Y2, X2) \
	HSUM(Y3, X3) \
	VMOVSS X0, (DI) \
	VMOVSS X1, (DI)(R10*1) \
	VMOVSS X2, (DI)(R10*2) \
	VMOVSS X3, (DI)(R13*1) \
	ADDQ   $4, DI \
	DECQ   CX \
	JNZ    col4 \
done4: \
	VZEROUPPER \
	RET

// The one-row kernel's body: y[j] (DI, consecutive) for n weight rows against one row of x (R8
// values, R9 scales).
#define GEMM1(WLOAD, WSTEP) \
	TESTQ  CX, CX \
	JZ     done1 \
col1: \
	VXORPS Y0, Y0, Y0 \
	MOVQ   R8, R11 \
	MOVQ   R9, R14 \
	MOVQ   BX, AX \
blk1: \
	WLOAD \
	ROW((R11), (R14), Y0) \
	ADDQ   $WSTEP, SI \
	ADDQ   $4, DX \
	ADDQ   $32, R11 \
	ADDQ   $4, R14 \
	DECQ   AX \
	JNZ    blk1 \
	HSUM(Y0, X0) \
	VMOVSS X0, (DI) \
	ADDQ   $4, DI \
	DECQ   CX \
	JNZ    col1 \
done1: \
	VZEROUPPER \
	RET

#define ARGS4 \
	MOVQ w+0(FP), SI \
	MOVQ wd+8(FP), DX \
	MOVQ xq+16(FP), R8 \
	MOVQ xd+24(FP), R9 \
	MOVQ y+32(FP), DI \
	MOVQ ldy+40(FP), R10 \
	SHLQ $2, R10 \
	MOVQ n+48(FP), CX \
	MOVQ nb+56(FP), BX \
	MOVQ BX, R12 \
	SHLQ $5, R12

#define ARGS1 \
	MOVQ w+0(FP), SI \
	MOVQ wd+8(FP), DX \
	MOVQ xq+16(FP), R8 \
	MOVQ xd+24(FP), R9 \
	MOVQ y+32(FP), DI \
	MOVQ n+40(FP), CX \
	MOVQ nb+48(FP), BX

// func q8ActGemm4AVX2(w *int8, wd *float32, xq *int8, xd *float32, y *float32, ldy int, n int, nb int)
TEXT ·q8ActGemm4AVX2(SB), NOSPLIT, $0-64
	ARGS4
	ONES
	GEMM4(WQ8, 32)

// func q4ActGemm4AVX2(w *uint8, wd *float32, xq *int8, xd *float32, y *float32, ldy int, n int, nb int)
TEXT ·q4ActGemm4AVX2(SB), NOSPLIT, $0-64
	ARGS4
	ONES
	NIBBLECONSTS
	GEMM4(WQ4, 16)

// func q8ActGemm1AVX2(w *int8, wd *float32, xq *int8, xd *float32, y *float32, n int, nb int)
TEXT ·q8ActGemm1AVX2(SB), NOSPLIT, $0-56
	ARGS1
	ONES
	GEMM1(WQ8, 32)

// func q4ActGemm1AVX2(w *uint8, wd *float32, xq *int8, xd *float32, y *float32, n int, nb int)
TEXT ·q4ActGemm1AVX2(SB), NOSPLIT, $0-56
	ARGS1
	ONES
	NIBBLECONSTS
	GEMM1(WQ4, 16)

// Quantizing a row of x to Q8_0 blocks with layers/quant's rounding bit for bit (the VNNI
// quantizer's, vnni_amd64.s, in AVX2): d = max|x|/127 in float32 (max|x| taken on the bits of
// |x|, so a NaN wins as in Go's max), id = 1/d (0 when d is 0), q = round(x·id) half away from
// zero: truncate, then step one away from zero where the dropped fraction is at least ½. d is
// stored rounded to a half float and widened back. The four vectors of int32 are packed to bytes
// by VPACKSSDW/VPACKSSWB, which interleave 128-bit lanes; VPERMD with actPerm puts them back.

DATA actPerm<>+0(SB)/4, $0
DATA actPerm<>+4(SB)/4, $4
DATA actPerm<>+8(SB)/4, $1
DATA actPerm<>+12(SB)/4, $5
DATA actPerm<>+16(SB)/4, $2
DATA actPerm<>+20(SB)/4, $6
DATA actPerm<>+24(SB)/4, $3
DATA actPerm<>+28(SB)/4, $7
GLOBL actPerm<>(SB), RODATA|NOPTR, $32

// P·id (Y5) rounded half away from zero, as int32 in P (uses Y6-Y8).
#define ROUNDQ(P) \
	VMULPS     Y5, P, P \
	VROUNDPS   $3, P, Y6 \
	VSUBPS     Y6, P, Y7 \
	VANDPS     Y15, Y7, Y7 \
	VCMPPS     $13, Y12, Y7, Y7 \
	VANDPS     Y11, P, Y8 \
	VORPS      Y13, Y8, Y8 \
	VANDPS     Y7, Y8, Y8 \
	VADDPS     Y8, Y6, Y6 \
	VCVTTPS2DQ Y6, P

#define BCAST(val, Y, X) \
	MOVL         val, AX \
	VMOVD        AX, X \
	VPBROADCASTD X, Y

// func q8QuantizeAVX2(x *float32, q *int8, d *float32, nb int)
TEXT ·q8QuantizeAVX2(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ q+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ nb+24(FP), CX
	BCAST($0x7fffffff, Y15, X15)
	BCAST($0x42fe0000, Y14, X14) // 127.0
	BCAST($0x3f800000, Y13, X13) // 1.0
	BCAST($0x3f000000, Y12, X12) // 0.5
	BCAST($0x80000000, Y11, X11)
	VMOVDQU actPerm<>(SB), Y10
	TESTQ CX, CX
	JZ    qdone

qblock:
	VMOVUPS      (SI), Y0
	VMOVUPS      32(SI), Y1
	VMOVUPS      64(SI), Y2
	VMOVUPS      96(SI), Y3
	VANDPS       Y15, Y0, Y4
	VANDPS       Y15, Y1, Y5
	VANDPS       Y15, Y2, Y6
	VANDPS       Y15, Y3, Y7
	VPMAXUD      Y5, Y4, Y4
	VPMAXUD      Y7, Y6, Y6
	VPMAXUD      Y6, Y4, Y4
	VEXTRACTI128 $1, Y4, X5
	VPMAXUD      X5, X4, X4
	VPSHUFD      $0x4e, X4, X5
	VPMAXUD      X5, X4, X4
	VPSHUFD      $0xb1, X4, X5
	VPMAXUD      X5, X4, X4
	VBROADCASTSS X4, Y4
	VDIVPS       Y14, Y4, Y4 // d
	VDIVPS       Y4, Y13, Y5
	VXORPS       Y6, Y6, Y6
	VCMPPS       $4, Y6, Y4, Y6
	VANDPS       Y6, Y5, Y5 // id, 0 where d is 0
	VCVTPS2PH    $0, X4, X6
	VCVTPH2PS    X6, X6
	VMOVSS       X6, (DX)
	ROUNDQ(Y0)
	ROUNDQ(Y1)
	ROUNDQ(Y2)
	ROUNDQ(Y3)
	VPACKSSDW    Y1, Y0, Y0
	VPACKSSDW    Y3, Y2, Y2
	VPACKSSWB    Y2, Y0, Y0
	VPERMD       Y0, Y10, Y0
	VMOVDQU      Y0, (DI)
	ADDQ         $128, SI
	ADDQ         $32, DI
	ADDQ         $4, DX
	DECQ         CX
	JNZ          qblock

qdone:
	VZEROUPPER
	RET
