#include "textflag.h"

// func transposeAdd8AVX2(dst *float32, ldd int, src *float32, lds int)
//
// dst[j·ldd + i] += src[i·lds + j] for i, j < 8: the eight rows of src in Y0-Y7, transposed in
// three rounds (pairs of rows interleaved, pairs of pairs, then 128-bit halves), each column
// added to a row of dst.
TEXT ·transposeAdd8AVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ ldd+8(FP), R9
	MOVQ src+16(FP), SI
	MOVQ lds+24(FP), R10
	SHLQ $2, R9
	SHLQ $2, R10
	VMOVUPS (SI), Y0
	ADDQ    R10, SI
	VMOVUPS (SI), Y1
	ADDQ    R10, SI
	VMOVUPS (SI), Y2
	ADDQ    R10, SI
	VMOVUPS (SI), Y3
	ADDQ    R10, SI
	VMOVUPS (SI), Y4
	ADDQ    R10, SI
	VMOVUPS (SI), Y5
	ADDQ    R10, SI
	VMOVUPS (SI), Y6
	ADDQ    R10, SI
	VMOVUPS (SI), Y7

	// Rows 2r and 2r+1 interleaved: t = (r0[0] r1[0] r0[1] r1[1] | r0[4] r1[4] r0[5] r1[5]), ...
	VUNPCKLPS Y1, Y0, Y8
	VUNPCKHPS Y1, Y0, Y9
	VUNPCKLPS Y3, Y2, Y10
	VUNPCKHPS Y3, Y2, Y11
	VUNPCKLPS Y5, Y4, Y12
	VUNPCKHPS Y5, Y4, Y13
	VUNPCKLPS Y7, Y6, Y14
	VUNPCKHPS Y7, Y6, Y15

	// Four rows' element c and c+4: u0 = (r0[0] r1[0] r2[0] r3[0] | r0[4] r1[4] r2[4] r3[4]), ...
	VSHUFPS $0x44, Y10, Y8, Y0
	VSHUFPS $0xee, Y10, Y8, Y1
	VSHUFPS $0x44, Y11, Y9, Y2
	VSHUFPS $0xee, Y11, Y9, Y3
	VSHUFPS $0x44, Y14, Y12, Y4
	VSHUFPS $0xee, Y14, Y12, Y5
	VSHUFPS $0x44, Y15, Y13, Y6
	VSHUFPS $0xee, Y15, Y13, Y7

	// Columns: the low halves of rows 0-3's and rows 4-7's (columns 0-3), then the high ones.
	VPERM2F128 $0x20, Y4, Y0, Y8
	VPERM2F128 $0x20, Y5, Y1, Y9
	VPERM2F128 $0x20, Y6, Y2, Y10
	VPERM2F128 $0x20, Y7, Y3, Y11
	VPERM2F128 $0x31, Y4, Y0, Y12
	VPERM2F128 $0x31, Y5, Y1, Y13
	VPERM2F128 $0x31, Y6, Y2, Y14
	VPERM2F128 $0x31, Y7, Y3, Y15

	VADDPS  (DI), Y8, Y8
	VMOVUPS Y8, (DI)
	ADDQ    R9, DI
	VADDPS  (DI), Y9, Y9
	VMOVUPS Y9, (DI)
	ADDQ    R9, DI
	VADDPS  (DI), Y10, Y10
	VMOVUPS Y10, (DI)
	ADDQ    R9, DI
	VADDPS  (DI), Y11, Y11
	VMOVUPS Y11, (DI)
	ADDQ    R9, DI
	VADDPS  (DI), Y12, Y12
	VMOVUPS Y12, (DI)
	ADDQ    R9, DI
	VADDPS  (DI), Y13, Y13
	VMOVUPS Y13, (DI)
	ADDQ    R9, DI
	VADDPS  (DI), Y14, Y14
	VMOVUPS Y14, (DI)
	ADDQ    R9, DI
	VADDPS  (DI), Y15, Y15
	VMOVUPS Y15, (DI)
	VZEROUPPER
	RET
