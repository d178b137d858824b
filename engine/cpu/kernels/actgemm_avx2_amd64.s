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
