// AVX2 integer kernels for products with int8 activations (actgemm.go): rows of x quantized to
// Q8_0 blocks against Q8_0 or Q4_0 weights, every block an exact integer dot product.
// Hand-written; the Go wrappers (actgemm_amd64.go) check every length.
//
// AVX2 has no unsigned-by-signed dot product into int32 (VNNI's vpdpbusd), so a block takes
// ggml's route (mul_sum_i8_pairs): VPMADDUBSW multiplies unsigned bytes by signed bytes into
// pairwise int16 sums, so the weight goes in as |w| and x takes w's sign (VPSIGNB), which keeps
// every product w·x; VPMADDWD against ones then sums the int16 pairs into int32 lanes. No sum
// saturates: |w| ≤ 128 and |x| ≤ 127 (ggml's rounding of x), so a pair is at most
// 2·128·127 = 32,512 < 32,767.
//
// The GEMM (actGemm4x8AVX2) computes a tile of four rows of x by eight weight rows from a
// panel of the weights repacked by packPanel: for each block, eight chunks of 32 bytes, chunk c
// holding elements 4c..4c+3 of each of the eight weight rows. A chunk is loaded once for the four
// rows of x; each row broadcasts its own four bytes of x to every lane, so lane r of the int32
// result is weight row r's four products, and adding the eight chunks gives each weight row's
// exact block sum in its lane. The block then costs one conversion and one FMA (times
// d_x·d_w, the eight weight scales a vector) per row of x for all eight weight rows: about
// 4.4 instructions per row and chunk of 32 multiply-adds, against 8 for a block-by-block dot
// product. actGemmGo does the same operations in the same order, so the two agree to the bit.
// Q4_0 weights take their own tile (q4ActGemm4x8AVX2, below), on unsigned nibbles.
//
// The one-row kernels (decoding without VNNI) dot a row of x with each weight row in place, with
// no repacking: per block int32 lanes of exact products (Q8_0: eight lanes of four elements;
// Q4_0: four lanes of eight), each lane converted and added to an accumulator times d_x·d_w
// with one FMA, into two or four accumulators by turns (a single chain of FMAs would wait on
// each FMA's latency, four cycles, longer than the rest of a block's work), the accumulators
// added lane by lane and the lanes summed at the end in a fixed order (actDotLanesGo states
// it). Eight blocks share one VMULPS of their scales, and Q4_0's kernel takes two blocks a
// load, with x arranged to match when it is quantized (pairQ4).

#include "textflag.h"

// The 32-bit constant val in every lane of Y (X its lower half); uses AX.
#define BCAST(val, Y, X) \
	MOVL         val, AX \
	VMOVD        AX, X \
	VPBROADCASTD X, Y

// Y15 = 1 in every int16 lane (VPMADDWD's pair sum).
#define ONES BCAST($0x00010001, Y15, X15)

// One Q8_0 block's eight int32 lanes as floats in Y4: weights at wa, x's block at xa.
// AVX2 has no signed-by-signed byte product, so x takes w's sign (VPSIGNB) and w enters
// VPMADDUBSW as |w|.
#define Q8LANES(wa, xa) \
	VMOVDQU    wa, Y5 \
	VPABSB     Y5, Y6 \
	VMOVDQU    xa, Y4 \
	VPSIGNB    Y5, Y4, Y4 \
	VPMADDUBSW Y4, Y6, Y4 \
	VPMADDWD   Y15, Y4, Y4 \
	VCVTDQ2PS  Y4, Y4

// The sum of ACC's eight lanes into X of ACC's number: (l0+l4)+(l2+l6) + (l1+l5)+(l3+l7), the
// order actGemmGo follows.
#define HSUM(Y, X) \
	VEXTRACTF128 $1, Y, X9 \
	VADDPS       X9, X, X \
	VPERMILPS    $0x4e, X, X9 \
	VADDPS       X9, X, X \
	VPERMILPS    $0xb1, X, X9 \
	VADDPS       X9, X, X

// A block's lanes (Y4) times its d_w·d_x into ACC. Eight blocks at a time share one VMULPS of
// their eight weight scales by x's eight (both consecutive float32): Y10 holds the products of
// blocks 0-3 in both halves, Y11 those of blocks 4-7, and VPERMILPS hands block k its product
// (imm, k%4 in every lane's selector) in every lane. The products are the ones a block's own
// VMULPS made, so the result is the same to the bit.
#define FMA8(imm, H, ACC) \
	VPERMILPS   imm, H, Y8 \
	VFMADD231PS Y8, Y4, ACC

// The blocks past the last eight take their product one at a time: d_w at wda, d_x at xda.
#define FMA1(wda, xda, ACC) \
	VBROADCASTSS wda, Y6 \
	VBROADCASTSS xda, Y8 \
	VMULPS       Y6, Y8, Y8 \
	VFMADD231PS  Y8, Y4, ACC

// Block k (0-7) of the eight at SI (weights, WSTEP bytes a block) and R11 (x): even blocks go
// to Y0, odd ones to Y1.
#define OCT(LANES, WSTEP, k, imm, H, ACC) \
	LANES(k*WSTEP(SI), k*32(R11)) \
	FMA8(imm, H, ACC)

// The Q8_0 one-row kernel's body: y[j] (DI, consecutive) for the n weight rows (CX; weights at
// SI, WSTEP bytes a block, scales at DX) against one row of x (R8 values, R9 scales) of BX
// blocks. LANES(wa, xa) makes a block's lanes; blocks 0, 2, 4... go to Y0, blocks 1, 3, 5... to
// Y1, eight a loop turn, then the rest two and one at a time.
#define GEMM1(LANES, WSTEP) \
	TESTQ  CX, CX \
	JZ     done1 \
row1: \
	VXORPS Y0, Y0, Y0 \
	VXORPS Y1, Y1, Y1 \
	MOVQ   R8, R11 \
	MOVQ   R9, R14 \
	MOVQ   BX, AX \
	SHRQ   $3, AX \
	JZ     tail1 \
oct1: \
	VMOVUPS    (DX), Y9 \
	VMULPS     (R14), Y9, Y9 \
	VPERM2F128 $0x00, Y9, Y9, Y10 \
	VPERM2F128 $0x11, Y9, Y9, Y11 \
	OCT(LANES, WSTEP, 0, $0x00, Y10, Y0) \
	OCT(LANES, WSTEP, 1, $0x55, Y10, Y1) \
	OCT(LANES, WSTEP, 2, $0xaa, Y10, Y0) \
	OCT(LANES, WSTEP, 3, $0xff, Y10, Y1) \
	OCT(LANES, WSTEP, 4, $0x00, Y11, Y0) \
	OCT(LANES, WSTEP, 5, $0x55, Y11, Y1) \
	OCT(LANES, WSTEP, 6, $0xaa, Y11, Y0) \
	OCT(LANES, WSTEP, 7, $0xff, Y11, Y1) \
	ADDQ   $(8*WSTEP), SI \
	ADDQ   $32, DX \
	ADDQ   $256, R11 \
	ADDQ   $32, R14 \
	DECQ   AX \
	JNZ    oct1 \
tail1: \
	MOVQ   BX, AX \
	ANDQ   $7, AX \
pair1: \
	CMPQ   AX, $2 \
	JB     one1 \
	LANES((SI), (R11)) \
	FMA1((DX), (R14), Y0) \
	LANES(WSTEP(SI), 32(R11)) \
	FMA1(4(DX), 4(R14), Y1) \
	ADDQ   $(2*WSTEP), SI \
	ADDQ   $8, DX \
	ADDQ   $64, R11 \
	ADDQ   $8, R14 \
	SUBQ   $2, AX \
	JMP    pair1 \
one1: \
	TESTQ  AX, AX \
	JZ     sum1 \
	LANES((SI), (R11)) \
	FMA1((DX), (R14), Y0) \
	ADDQ   $WSTEP, SI \
	ADDQ   $4, DX \
sum1: \
	VADDPS Y1, Y0, Y0 \
	HSUM(Y0, X0) \
	VMOVSS X0, (DI) \
	ADDQ   $4, DI \
	DECQ   CX \
	JNZ    row1 \
done1: \
	VZEROUPPER \
	RET

// func q8ActGemm1AVX2(w *int8, wd *float32, xq *int8, xd *float32, y *float32, n int, nb int)
TEXT ·q8ActGemm1AVX2(SB), NOSPLIT, $0-56
	MOVQ w+0(FP), SI
	MOVQ wd+8(FP), DX
	MOVQ xq+16(FP), R8
	MOVQ xd+24(FP), R9
	MOVQ y+32(FP), DI
	MOVQ n+40(FP), CX
	MOVQ nb+48(FP), BX
	ONES
	GEMM1(Q8LANES, 32)

// The Q4_0 one-row kernel takes a shorter route than ggml's sign trick: a nibble n is already an
// unsigned byte, so VPMADDUBSW takes it as it is against x, and the offset comes off the int16
// pair sums: (n₀−8)·x₀ + (n₁−8)·x₁ = (n₀x₀ + n₁x₁) − 8·(x₀ + x₁). Two blocks A, B go at a time:
// their 32 bytes of nibbles are one load, the low nibbles (a mask) elements 0-15 of A then B, the
// high ones (a shift and the mask) elements 16-31; x is stored in the same order (pairQ4). The
// two vectors of pair sums are added (VPADDW: word i of A's half then holds elements 2i, 2i+1,
// 2i+16 and 2i+17), and the offset of those four elements, which depends on x alone, comes off
// from memory (pairQ4 stores it with the row): each word at most 2·2·15·127 + 4·8·127 = 11,684
// in magnitude, so nothing saturates, and VPMADDWD makes exact lanes of eight products, A's in
// lanes 0-3 and B's in 4-7. The pair's scale vector holds A's d_w·d_x in lanes 0-3 and B's in
// 4-7: one conversion and one FMA a pair, six instructions a block against nine for Q8_0.
// q4DotLanesGo states the order.

// Y4 (32 bytes of nibbles of a pair of blocks) against x's pair at xa, offsets at oa: the pair's
// lanes as floats in Y4.
#define Q4PAIR(xa, oa) \
	VPSRLW     $4, Y4, Y5 \
	VPAND      Y14, Y4, Y4 \
	VPAND      Y14, Y5, Y5 \
	VPMADDUBSW xa, Y4, Y4 \
	VPMADDUBSW 32+xa, Y5, Y5 \
	VPADDW     Y5, Y4, Y4 \
	VPSUBW     oa, Y4, Y4 \
	VPMADDWD   Y15, Y4, Y4 \
	VCVTDQ2PS  Y4, Y4

// Pair k (0-3) of the eight blocks at SI, R11 (x), R15 (offsets) into accumulator Y<k>; Y9
// holds the eight blocks' products as 0, 2, 4, 6, 1, 3, 5, 7, so VPERMILPS (imm: k in every
// selector) puts block 2k's in lanes 0-3 and 2k+1's in 4-7.
#define Q4OCT(k, imm, ACC) \
	VMOVDQU     k*32(SI), Y4 \
	Q4PAIR(k*64(R11), k*32(R15)) \
	VPERMILPS   imm, Y9, Y8 \
	VFMADD231PS Y8, Y4, ACC

// A pair past the last eight blocks: the two products, A's then B's, spread by Y13.
#define Q4TAILPAIR(ACC) \
	VMOVDQU     (SI), Y4 \
	Q4PAIR(0(R11), 0(R15)) \
	VMOVQ       (DX), X6 \
	VMOVQ       (R14), X8 \
	VMULPS      X6, X8, X8 \
	VPERMPS     Y8, Y13, Y8 \
	VFMADD231PS Y8, Y4, ACC \
	ADDQ        $32, SI \
	ADDQ        $8, DX \
	ADDQ        $64, R11 \
	ADDQ        $8, R14 \
	ADDQ        $32, R15

// The last block without a B: a 16-byte load leaves zeros for B's nibbles (and pairQ4 zeros for
// its x and offsets), and A's product goes to every lane.
#define Q4LONE(ACC) \
	VMOVDQU      (SI), X4 \
	Q4PAIR(0(R11), 0(R15)) \
	VBROADCASTSS (DX), Y6 \
	VBROADCASTSS (R14), Y8 \
	VMULPS       Y6, Y8, Y8 \
	VFMADD231PS  Y8, Y4, ACC \
	ADDQ         $16, SI \
	ADDQ         $4, DX

DATA q4Odd<>+0(SB)/4, $0
DATA q4Odd<>+4(SB)/4, $2
DATA q4Odd<>+8(SB)/4, $4
DATA q4Odd<>+12(SB)/4, $6
DATA q4Odd<>+16(SB)/4, $1
DATA q4Odd<>+20(SB)/4, $3
DATA q4Odd<>+24(SB)/4, $5
DATA q4Odd<>+28(SB)/4, $7
GLOBL q4Odd<>(SB), RODATA|NOPTR, $32

DATA q4Spread<>+0(SB)/8, $0
DATA q4Spread<>+8(SB)/8, $0
DATA q4Spread<>+16(SB)/8, $0x0000000100000001
DATA q4Spread<>+24(SB)/8, $0x0000000100000001
GLOBL q4Spread<>(SB), RODATA|NOPTR, $32

// func q4ActGemm1AVX2(w *uint8, wd *float32, xq *int8, xd *float32, xo *int16, y *float32, n int, nb int)
TEXT ·q4ActGemm1AVX2(SB), NOSPLIT, $0-64
	MOVQ w+0(FP), SI
	MOVQ wd+8(FP), DX
	MOVQ xq+16(FP), R8
	MOVQ xd+24(FP), R9
	MOVQ xo+32(FP), R10
	MOVQ y+40(FP), DI
	MOVQ n+48(FP), CX
	MOVQ nb+56(FP), BX
	ONES
	BCAST($0x0f0f0f0f, Y14, X14)
	VMOVDQU      q4Odd<>(SB), Y12
	VMOVDQU      q4Spread<>(SB), Y13
	TESTQ        CX, CX
	JZ           q4done

q4row:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ   R8, R11
	MOVQ   R9, R14
	MOVQ   R10, R15
	MOVQ   BX, AX
	SHRQ   $3, AX
	JZ     q4tail

q4oct:
	VMOVUPS (DX), Y9
	VMULPS  (R14), Y9, Y9
	VPERMPS Y9, Y12, Y9
	Q4OCT(0, $0x00, Y0)
	Q4OCT(1, $0x55, Y1)
	Q4OCT(2, $0xaa, Y2)
	Q4OCT(3, $0xff, Y3)
	ADDQ    $128, SI
	ADDQ    $32, DX
	ADDQ    $256, R11
	ADDQ    $32, R14
	ADDQ    $128, R15
	DECQ    AX
	JNZ     q4oct

q4tail:
	// Up to seven blocks: pairs into Y0, Y1, Y2 in turn, and a last block into the next.
	MOVQ BX, AX
	ANDQ $7, AX
	CMPQ AX, $2
	JB   q4lone0
	Q4TAILPAIR(Y0)
	CMPQ AX, $4
	JB   q4lone1
	Q4TAILPAIR(Y1)
	CMPQ AX, $6
	JB   q4lone2
	Q4TAILPAIR(Y2)
	TESTQ $1, AX
	JZ    q4sum
	Q4LONE(Y3)
	JMP   q4sum

q4lone2:
	TESTQ $1, AX
	JZ    q4sum
	Q4LONE(Y2)
	JMP   q4sum

q4lone1:
	TESTQ $1, AX
	JZ    q4sum
	Q4LONE(Y1)
	JMP   q4sum

q4lone0:
	TESTQ $1, AX
	JZ    q4sum
	Q4LONE(Y0)

q4sum:
	VADDPS Y2, Y0, Y0
	VADDPS Y3, Y1, Y1
	VADDPS Y1, Y0, Y0
	HSUM(Y0, X0)
	VMOVSS X0, (DI)
	ADDQ   $4, DI
	DECQ   CX
	JNZ    q4row

q4done:
	VZEROUPPER
	RET

// x paired for the Q4_0 kernel (pairQ4): per pair of blocks A, B their low halves (one
// VPERM2I128) and their high halves (another), and the offsets: 8·(x₀ + x₁) of each half (one
// VPMADDUBSW of eights, unsigned, by the bytes) added word by word, as the kernel adds the two
// halves' pair sums. A last block alone takes zeros for B.
// func pairQ4AVX2(q *int8, q4 *int8, o *int16, nb int)
TEXT ·pairQ4AVX2(SB), NOSPLIT, $0-32
	MOVQ         q+0(FP), SI
	MOVQ         q4+8(FP), DI
	MOVQ         o+16(FP), DX
	MOVQ         nb+24(FP), BX
	BCAST($0x08080808, Y13, X13)
	MOVQ         BX, CX
	SHRQ         $1, CX
	JZ           pqlone

pqpair:
	VMOVDQU    (SI), Y0
	VMOVDQU    32(SI), Y1
	VPERM2I128 $0x20, Y1, Y0, Y2
	VPERM2I128 $0x31, Y1, Y0, Y3
	VMOVDQU    Y2, (DI)
	VMOVDQU    Y3, 32(DI)
	VPMADDUBSW Y2, Y13, Y2
	VPMADDUBSW Y3, Y13, Y3
	VPADDW     Y3, Y2, Y2
	VMOVDQU    Y2, (DX)
	ADDQ       $64, SI
	ADDQ       $64, DI
	ADDQ       $32, DX
	DECQ       CX
	JNZ        pqpair

pqlone:
	TESTQ      $1, BX
	JZ         pqdone
	VMOVDQU    (SI), X2
	VMOVDQU    16(SI), X3
	VMOVDQU    Y2, (DI)
	VMOVDQU    Y3, 32(DI)
	VPMADDUBSW Y2, Y13, Y2
	VPMADDUBSW Y3, Y13, Y3
	VPADDW     Y3, Y2, Y2
	VMOVDQU    Y2, (DX)

pqdone:
	VZEROUPPER
	RET

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

// func q8QuantizeAVX2(x *float32, q *int8, d *float32, s *int32, nb int)
TEXT ·q8QuantizeAVX2(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), SI
	MOVQ q+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ s+24(FP), R8
	MOVQ nb+32(FP), CX
	BCAST($0x80808080, Y9, X9)
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
	TESTQ        R8, R8
	JZ           qnext
	// 8·Σq of the block (the offsets of Q4_0's nibbles and of VNNI's biased Q8_0 values):
	// bytes made unsigned by adding 128, summed eight at a time by VPSADBW.
	VPXOR        Y9, Y0, Y6
	VPXOR        Y7, Y7, Y7
	VPSADBW      Y7, Y6, Y6
	VEXTRACTI128 $1, Y6, X7
	VPADDQ       X7, X6, X6
	VPSHUFD      $0x4e, X6, X7
	VPADDQ       X7, X6, X6
	VMOVD        X6, AX
	SUBL         $4096, AX
	SHLL         $3, AX
	MOVL         AX, (R8)
	ADDQ         $4, R8

qnext:
	ADDQ         $128, SI
	ADDQ         $32, DI
	ADDQ         $4, DX
	DECQ         CX
	JNZ          qblock

qdone:
	VZEROUPPER
	RET

// One chunk c of the panel's block against row i of x: Y0 the chunk, Y1 its magnitudes, xa the
// row's four bytes; the lanes' sums go to (first chunk) or are added to ACC. T is a temporary.
#define CHUNK0(xa, T, ACC) \
	VPBROADCASTD xa, T \
	VPSIGNB      Y0, T, T \
	VPMADDUBSW   T, Y1, T \
	VPMADDWD     Y15, T, ACC

#define CHUNK(xa, T, ACC) \
	VPBROADCASTD xa, T \
	VPSIGNB      Y0, T, T \
	VPMADDUBSW   T, Y1, T \
	VPMADDWD     Y15, T, T \
	VPADDD       T, ACC, ACC

// The four rows of x (R8, row stride R12, R15 = 3·R12) against chunk c of the block at (SI).
#define CHUNKS(c) \
	VMOVDQU c*32(SI), Y0 \
	VPABSB  Y0, Y1 \
	CHUNK(c*4(R8), Y2, Y4) \
	CHUNK(c*4(R8)(R12*1), Y3, Y5) \
	CHUNK(c*4(R8)(R12*2), Y2, Y6) \
	CHUNK(c*4(R8)(R15*1), Y3, Y7)

// The tiles' common set-up, with R10 = ldy (floats) and CX = nb loaded: R10 and R13 = 3·R10
// the rows of y in bytes, R12 and R15 = 3·R12 the rows of x, Y15 the int16 ones, Y8-Y11 the
// four rows' float accumulators zeroed.
#define TILESETUP \
	SHLQ   $2, R10 \
	MOVQ   CX, R12 \
	SHLQ   $5, R12 \
	LEAQ   (R12)(R12*2), R15 \
	LEAQ   (R10)(R10*2), R13 \
	ONES \
	VXORPS Y8, Y8, Y8 \
	VXORPS Y9, Y9, Y9 \
	VXORPS Y10, Y10, Y10 \
	VXORPS Y11, Y11, Y11

// The four accumulators stored as the tile's rows of y.
#define TILESTORE \
	VMOVUPS Y8, (DI) \
	VMOVUPS Y9, (DI)(R10*1) \
	VMOVUPS Y10, (DI)(R10*2) \
	VMOVUPS Y11, (DI)(R13*1) \
	VZEROUPPER

// Row i's block sums (int32, ACC) into its accumulator F: F += float(ACC) · (d_x · d_w), d_x at
// da, the eight d_w in Y12.
#define SCALE(da, ACC, F) \
	VCVTDQ2PS    ACC, ACC \
	VBROADCASTSS da, Y13 \
	VMULPS       Y12, Y13, Y13 \
	VFMADD231PS  Y13, ACC, F

// func actGemm4x8AVX2(pq *int8, pd *float32, xq *int8, xd *float32, y *float32, ldy int, nb int)
TEXT ·actGemm4x8AVX2(SB), NOSPLIT, $0-56
	MOVQ pq+0(FP), SI
	MOVQ pd+8(FP), DX
	MOVQ xq+16(FP), R8
	MOVQ xd+24(FP), R9
	MOVQ y+32(FP), DI
	MOVQ ldy+40(FP), R10
	MOVQ nb+48(FP), CX
	TILESETUP

tile:
	VMOVDQU (SI), Y0
	VPABSB  Y0, Y1
	CHUNK0((R8), Y2, Y4)
	CHUNK0((R8)(R12*1), Y3, Y5)
	CHUNK0((R8)(R12*2), Y2, Y6)
	CHUNK0((R8)(R15*1), Y3, Y7)
	CHUNKS(1)
	CHUNKS(2)
	CHUNKS(3)
	CHUNKS(4)
	CHUNKS(5)
	CHUNKS(6)
	CHUNKS(7)
	VMOVUPS (DX), Y12
	SCALE((R9), Y4, Y8)
	SCALE(4(R9), Y5, Y9)
	SCALE(8(R9), Y6, Y10)
	SCALE(12(R9), Y7, Y11)
	ADDQ $256, SI
	ADDQ $32, DX
	ADDQ $32, R8
	ADDQ $16, R9
	DECQ CX
	JNZ  tile

	TILESTORE
	RET

// Q4_0's GEMM tile: the panel holds the nibbles n unsigned (w = n − 8), which go into VPMADDUBSW
// as they are against x's signed bytes, with no sign trick; a pair sum is at most
// 2·15·127 = 3,810, so the eight chunks of a block add up in int16 (30,480 < 32,767) and one
// VPMADDWD a block widens them. 8·Σx of the block (xs, interleaved as the scales) then comes off
// the int32 sums: the same integers as Σ (n − 8)·x, so the same floats as actGemmGo's. About 3
// instructions per row and chunk, against actGemm4x8AVX2's 5.

// Row i of x against chunk c (Y0): the first chunk's pair sums go to ACC, the others are added.
#define UCHUNK0(xa, ACC) \
	VPBROADCASTD xa, ACC \
	VPMADDUBSW   ACC, Y0, ACC

#define UCHUNK(xa, T, ACC) \
	VPBROADCASTD xa, T \
	VPMADDUBSW   T, Y0, T \
	VPADDW       T, ACC, ACC

#define UCHUNKS(c) \
	VMOVDQU c*32(SI), Y0 \
	UCHUNK(c*4(R8), Y2, Y4) \
	UCHUNK(c*4(R8)(R12*1), Y3, Y5) \
	UCHUNK(c*4(R8)(R12*2), Y2, Y6) \
	UCHUNK(c*4(R8)(R15*1), Y3, Y7)

// Row i's int16 pair sums (ACC) widened, 8·Σx at sa taken off, then SCALE'd into F.
#define USCALE(sa, da, ACC, F) \
	VPMADDWD     Y15, ACC, ACC \
	VPBROADCASTD sa, Y13 \
	VPSUBD       Y13, ACC, ACC \
	SCALE(da, ACC, F)

// func q4ActGemm4x8AVX2(pq *int8, pd *float32, xq *int8, xd *float32, xs *int32, y *float32, ldy int, nb int)
TEXT ·q4ActGemm4x8AVX2(SB), NOSPLIT, $0-64
	MOVQ pq+0(FP), SI
	MOVQ pd+8(FP), DX
	MOVQ xq+16(FP), R8
	MOVQ xd+24(FP), R9
	MOVQ xs+32(FP), R11
	MOVQ y+40(FP), DI
	MOVQ ldy+48(FP), R10
	MOVQ nb+56(FP), CX
	TILESETUP

q4tile:
	VMOVDQU (SI), Y0
	UCHUNK0((R8), Y4)
	UCHUNK0((R8)(R12*1), Y5)
	UCHUNK0((R8)(R12*2), Y6)
	UCHUNK0((R8)(R15*1), Y7)
	UCHUNKS(1)
	UCHUNKS(2)
	UCHUNKS(3)
	UCHUNKS(4)
	UCHUNKS(5)
	UCHUNKS(6)
	UCHUNKS(7)
	VMOVUPS (DX), Y12
	USCALE((R11), (R9), Y4, Y8)
	USCALE(4(R11), 4(R9), Y5, Y9)
	USCALE(8(R11), 8(R9), Y6, Y10)
	USCALE(12(R11), 12(R9), Y7, Y11)
	ADDQ $256, SI
	ADDQ $32, DX
	ADDQ $32, R8
	ADDQ $16, R9
	ADDQ $16, R11
	DECQ CX
	JNZ  q4tile

	TILESTORE
	RET

// Packing a panel of eight weight rows for actGemm4x8AVX2: each block of the eight rows, as 32
// signed bytes in element order, is an 8×8 matrix of four-byte chunks (row r's chunk c), and the
// panel wants it transposed (chunk c of rows 0-7 together): the usual 8×8 transpose of 32-bit
// elements by unpacks, shuffles and 128-bit permutes.

DATA nibbleMask<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA nibbleMask<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA nibbleMask<>+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA nibbleMask<>+24(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL nibbleMask<>(SB), RODATA|NOPTR, $32

// Q4_0 block of 16 bytes at a into Y as its 32 nibbles n, unsigned bytes in element order (X8 a
// temporary): q4ActGemm4x8AVX2 multiplies them as they are.
#define Q4ROW(a, Y, X) \
	VMOVDQU     a, X \
	VPSRLW      $4, X, X8 \
	VINSERTI128 $1, X8, Y, Y \
	VPAND       nibbleMask<>(SB), Y, Y

// Y0-Y7 (rows) transposed as 8×8 dwords and stored as the block's eight chunks at (DI).
#define TRANSPOSE_STORE \
	VUNPCKLPS  Y1, Y0, Y8 \
	VUNPCKHPS  Y1, Y0, Y9 \
	VUNPCKLPS  Y3, Y2, Y10 \
	VUNPCKHPS  Y3, Y2, Y11 \
	VUNPCKLPS  Y5, Y4, Y12 \
	VUNPCKHPS  Y5, Y4, Y13 \
	VUNPCKLPS  Y7, Y6, Y14 \
	VUNPCKHPS  Y7, Y6, Y15 \
	VSHUFPS    $0x44, Y10, Y8, Y0 \
	VSHUFPS    $0xee, Y10, Y8, Y1 \
	VSHUFPS    $0x44, Y11, Y9, Y2 \
	VSHUFPS    $0xee, Y11, Y9, Y3 \
	VSHUFPS    $0x44, Y14, Y12, Y4 \
	VSHUFPS    $0xee, Y14, Y12, Y5 \
	VSHUFPS    $0x44, Y15, Y13, Y6 \
	VSHUFPS    $0xee, Y15, Y13, Y7 \
	VPERM2F128 $0x20, Y4, Y0, Y8 \
	VPERM2F128 $0x20, Y5, Y1, Y9 \
	VPERM2F128 $0x20, Y6, Y2, Y10 \
	VPERM2F128 $0x20, Y7, Y3, Y11 \
	VPERM2F128 $0x31, Y4, Y0, Y12 \
	VPERM2F128 $0x31, Y5, Y1, Y13 \
	VPERM2F128 $0x31, Y6, Y2, Y14 \
	VPERM2F128 $0x31, Y7, Y3, Y15 \
	VMOVDQU    Y8, (DI) \
	VMOVDQU    Y9, 32(DI) \
	VMOVDQU    Y10, 64(DI) \
	VMOVDQU    Y11, 96(DI) \
	VMOVDQU    Y12, 128(DI) \
	VMOVDQU    Y13, 160(DI) \
	VMOVDQU    Y14, 192(DI) \
	VMOVDQU    Y15, 224(DI)

#define PACKARGS \
	MOVQ q+0(FP), SI \
	MOVQ ldq+8(FP), BX \
	MOVQ pq+16(FP), DI \
	MOVQ nb+24(FP), CX \
	LEAQ (BX)(BX*2), R11 \
	LEAQ (BX)(BX*4), R12 \
	LEAQ (R11)(BX*4), R13

// The eight rows' Q8_0 blocks at SI into Y0-Y7.
#define Q8ROWS \
	VMOVDQU (SI), Y0 \
	VMOVDQU (SI)(BX*1), Y1 \
	VMOVDQU (SI)(BX*2), Y2 \
	VMOVDQU (SI)(R11*1), Y3 \
	VMOVDQU (SI)(BX*4), Y4 \
	VMOVDQU (SI)(R12*1), Y5 \
	VMOVDQU (SI)(R11*2), Y6 \
	VMOVDQU (SI)(R13*1), Y7

// func q8PackAVX2(q *int8, ldq int, pq *int8, nb int)
TEXT ·q8PackAVX2(SB), NOSPLIT, $0-32
	PACKARGS
	TESTQ CX, CX
	JZ    q8packdone

q8pack:
	Q8ROWS
	TRANSPOSE_STORE
	ADDQ    $32, SI
	ADDQ    $256, DI
	DECQ    CX
	JNZ     q8pack

q8packdone:
	VZEROUPPER
	RET

DATA signBits<>+0(SB)/8, $0x8080808080808080
DATA signBits<>+8(SB)/8, $0x8080808080808080
DATA signBits<>+16(SB)/8, $0x8080808080808080
DATA signBits<>+24(SB)/8, $0x8080808080808080
GLOBL signBits<>(SB), RODATA|NOPTR, $32

// func q8PackBiasedAVX2(q *int8, ldq int, pq *int8, nb int)
// q8PackAVX2 with 128 added to every value (its sign bit flipped), the unsigned bytes of the
// VNNI tile (actgemm_vnni_amd64.s).
TEXT ·q8PackBiasedAVX2(SB), NOSPLIT, $0-32
	PACKARGS
	TESTQ CX, CX
	JZ    q8bpackdone

q8bpack:
	Q8ROWS
	VPXOR   signBits<>(SB), Y0, Y0
	VPXOR   signBits<>(SB), Y1, Y1
	VPXOR   signBits<>(SB), Y2, Y2
	VPXOR   signBits<>(SB), Y3, Y3
	VPXOR   signBits<>(SB), Y4, Y4
	VPXOR   signBits<>(SB), Y5, Y5
	VPXOR   signBits<>(SB), Y6, Y6
	VPXOR   signBits<>(SB), Y7, Y7
	TRANSPOSE_STORE
	ADDQ    $32, SI
	ADDQ    $256, DI
	DECQ    CX
	JNZ     q8bpack

q8bpackdone:
	VZEROUPPER
	RET

// func q4PackAVX2(q *uint8, ldq int, pq *int8, nb int)
TEXT ·q4PackAVX2(SB), NOSPLIT, $0-32
	PACKARGS
	TESTQ CX, CX
	JZ    q4packdone

q4pack:
	Q4ROW((SI), Y0, X0)
	Q4ROW((SI)(BX*1), Y1, X1)
	Q4ROW((SI)(BX*2), Y2, X2)
	Q4ROW((SI)(R11*1), Y3, X3)
	Q4ROW((SI)(BX*4), Y4, X4)
	Q4ROW((SI)(R12*1), Y5, X5)
	Q4ROW((SI)(R11*2), Y6, X6)
	Q4ROW((SI)(R13*1), Y7, X7)
	TRANSPOSE_STORE
	ADDQ $16, SI
	ADDQ $256, DI
	DECQ CX
	JNZ  q4pack

q4packdone:
	VZEROUPPER
	RET
