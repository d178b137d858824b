// The GEMM tiles of actgemm_avx2_amd64.s on AVX-512 VNNI (with AVX512VL, on ymm registers):
// the same panels but for Q8_0's bias, the same arguments, the same integers, so the same
// floats. Hand-written.
//
// VPDPBUSD adds the products of four unsigned bytes by four signed bytes to each int32 lane,
// where AVX2 needs VPMADDUBSW (pairs to int16), VPMADDWD (to int32) and VPADDD, and a sign trick
// for Q8_0's signed weights. Here the weights are unsigned in the panel (Q4_0's nibbles n as
// stored, Q8_0's w + 128, ActGemm's XOR 0x80 after packing) and x's four bytes meet them as an
// embedded broadcast: one instruction per row and chunk, against 3 (Q4_0) and 5 (Q8_0) on AVX2.
// The bias comes off once per block: Σ n·x − 8·Σx, Σ (w + 128)·x − 128·Σx, from x's 8·Σx per
// block (ActRows.s). Each row has two accumulators (even and odd chunks, the second in Y16-Y19,
// which only EVEX instructions reach) so that a block's eight chunks are two chains of four
// dependent VPDPBUSDs rather than one of eight.
//
// Registers as in the AVX2 tiles: SI the panel, DX its scales, R8 x's four rows (row stride
// R12, R15 = 3·R12), R9 their scales, R11 their 8·Σx, DI y (row stride R10, R13 = 3·R10), CX the
// blocks; Y8-Y11 the rows' float accumulators, Y12 the panel's scales.

#include "textflag.h"

// The setup of actgemm_avx2_amd64.s's TILESETUP without its int16 ones.
#define VTILESETUP \
	SHLQ   $2, R10 \
	MOVQ   CX, R12 \
	SHLQ   $5, R12 \
	LEAQ   (R12)(R12*2), R15 \
	LEAQ   (R10)(R10*2), R13 \
	VXORPS Y8, Y8, Y8 \
	VXORPS Y9, Y9, Y9 \
	VXORPS Y10, Y10, Y10 \
	VXORPS Y11, Y11, Y11

#define VTILESTORE \
	VMOVUPS Y8, (DI) \
	VMOVUPS Y9, (DI)(R10*1) \
	VMOVUPS Y10, (DI)(R10*2) \
	VMOVUPS Y11, (DI)(R13*1) \
	VZEROUPPER

// Zero the eight int32 accumulators of a block.
#define ZEROACC \
	VPXORD Y4, Y4, Y4 \
	VPXORD Y5, Y5, Y5 \
	VPXORD Y6, Y6, Y6 \
	VPXORD Y7, Y7, Y7 \
	VPXORD Y16, Y16, Y16 \
	VPXORD Y17, Y17, Y17 \
	VPXORD Y18, Y18, Y18 \
	VPXORD Y19, Y19, Y19

// The odd chunks' sums added to the even ones'.
#define FOLDACC \
	VPADDD Y16, Y4, Y4 \
	VPADDD Y17, Y5, Y5 \
	VPADDD Y18, Y6, Y6 \
	VPADDD Y19, Y7, Y7

// Row i's block sums (int32, ACC) into F: F += float(ACC) · (d_x · d_w), as SCALE does.
#define VSCALE(da, ACC, F) \
	VCVTDQ2PS    ACC, ACC \
	VBROADCASTSS da, Y13 \
	VMULPS       Y12, Y13, Y13 \
	VFMADD231PS  Y13, ACC, F

// Chunk c of unsigned weights (Y0) against the four rows' bytes, broadcast from memory.
#define VCHUNK(c, A0, A1, A2, A3) \
	VMOVDQU       c*32(SI), Y0 \
	VPDPBUSD.BCST c*4(R8), Y0, A0 \
	VPDPBUSD.BCST c*4(R8)(R12*1), Y0, A1 \
	VPDPBUSD.BCST c*4(R8)(R12*2), Y0, A2 \
	VPDPBUSD.BCST c*4(R8)(R15*1), Y0, A3

// Row i's biased sums (ACC) less bias·Σx (8·Σx at sa, shifted left by SH: 0 for Q4_0's bias
// of 8, 4 for Q8_0's 128), scaled into F.
#define UNBIAS(SH, sa, da, ACC, F) \
	VPBROADCASTD sa, Y13 \
	VPSLLD       $SH, Y13, Y13 \
	VPSUBD       Y13, ACC, ACC \
	VSCALE(da, ACC, F)

// The tile's loop over blocks, labelled L, with the bias shift SH.
#define VTILE(L, SH) \
L: \
	ZEROACC \
	VCHUNK(0, Y4, Y5, Y6, Y7) \
	VCHUNK(1, Y16, Y17, Y18, Y19) \
	VCHUNK(2, Y4, Y5, Y6, Y7) \
	VCHUNK(3, Y16, Y17, Y18, Y19) \
	VCHUNK(4, Y4, Y5, Y6, Y7) \
	VCHUNK(5, Y16, Y17, Y18, Y19) \
	VCHUNK(6, Y4, Y5, Y6, Y7) \
	VCHUNK(7, Y16, Y17, Y18, Y19) \
	FOLDACC \
	VMOVUPS (DX), Y12 \
	UNBIAS(SH, (R11), (R9), Y4, Y8) \
	UNBIAS(SH, 4(R11), 4(R9), Y5, Y9) \
	UNBIAS(SH, 8(R11), 8(R9), Y6, Y10) \
	UNBIAS(SH, 12(R11), 12(R9), Y7, Y11) \
	ADDQ $256, SI \
	ADDQ $32, DX \
	ADDQ $32, R8 \
	ADDQ $16, R9 \
	ADDQ $16, R11 \
	DECQ CX \
	JNZ  L

#define VARGS \
	MOVQ pq+0(FP), SI \
	MOVQ pd+8(FP), DX \
	MOVQ xq+16(FP), R8 \
	MOVQ xd+24(FP), R9 \
	MOVQ xs+32(FP), R11 \
	MOVQ y+40(FP), DI \
	MOVQ ldy+48(FP), R10 \
	MOVQ nb+56(FP), CX

// func q8ActGemm4x8VNNI(pq *int8, pd *float32, xq *int8, xd *float32, xs *int32, y *float32, ldy int, nb int)
TEXT ·q8ActGemm4x8VNNI(SB), NOSPLIT, $0-64
	VARGS
	VTILESETUP
	VTILE(q8vtile, 4)
	VTILESTORE
	RET

// func q4ActGemm4x8VNNI(pq *int8, pd *float32, xq *int8, xd *float32, xs *int32, y *float32, ldy int, nb int)
TEXT ·q4ActGemm4x8VNNI(SB), NOSPLIT, $0-64
	VARGS
	VTILESETUP
	VTILE(q4vtile, 0)
	VTILESTORE
	RET
