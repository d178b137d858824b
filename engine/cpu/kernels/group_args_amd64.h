// The arguments of the row-group kernels (group_amd64.s, group_avx2_amd64.s) in the registers
// both files' kernels use: one row of x (ARGS) and four (ARGS4).

#define ARGS \
	MOVQ gq+0(FP), SI \
	MOVQ gd+8(FP), DX \
	MOVQ xq+16(FP), DI \
	MOVQ xs+24(FP), R8 \
	MOVQ xd+32(FP), R9 \
	MOVQ y+40(FP), R10 \
	MOVQ groups+48(FP), R11 \
	MOVQ nb+56(FP), R12

#define ARGS4 \
	MOVQ gq+0(FP), SI \
	MOVQ gd+8(FP), DX \
	MOVQ xq+16(FP), DI \
	MOVQ xstride+24(FP), R14 \
	MOVQ xs4+32(FP), R8 \
	MOVQ xd4+40(FP), R9 \
	MOVQ y+48(FP), R10 \
	MOVQ groups+64(FP), R11 \
	MOVQ nb+72(FP), R12
