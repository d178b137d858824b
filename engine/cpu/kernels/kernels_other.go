//go:build !amd64

package kernels

// Off amd64 only the portable kernels exist: every kernel goes straight to its Go version.

func supported(lv int32) bool { return lv == lvGeneric }

func sum(a []float32) float32                              { return sumGo(a) }
func maxOf(a []float32) float32                            { return maxGo(a) }
func binary(o op, a, b, out []float32)                     { binaryGo(o, a, b, out) }
func scalarOp(o op, a []float32, s float32, out []float32) { scalarOpGo(o, a, s, out) }
func exp(a, out []float32)                                 { expGo(a, out) }
func logistic(a, out []float32)                            { logisticGo(a, out) }
func sign(a, out []float32)                                { signGo(a, out) }

func vecMat(x, b []float32, ldb int, y []float32) { vecMatGo(x, b, ldb, y) }

func matMulNT(m, n, k int, x []float32, ldx int, w []float32, ldw int, y []float32, ldy int) {
	matMulNTGo(m, n, k, x, ldx, w, ldw, y, ldy)
}

func tileOf(lv int32) (mr, nr int) { return 4, 4 }

func microKernel(lv int32, k int, a, b, c []float32, ldc int, accumulate bool) {
	if !(k >= 1 && len(a) >= 4*k && len(b) >= 4*k && ldc >= 4 && len(c) >= 3*ldc+4) {
		fail("Sgemm: micro-kernel operands out of bounds")
	}
	gemm4x4Go(k, a, b, c, ldc, accumulate)
}

func directA(lv int32, transA bool, lda int) bool { return false }

// PacksA reports whether Sgemm packs A: always, off amd64.
func PacksA(transA bool, lda int) bool { return true }

func microKernelDirect(lv int32, k int, a []float32, rs, cs int, b, c []float32, ldc int, accumulate bool) {
	fail("Sgemm: no direct micro-kernel off amd64")
}

func pack8(a []float32, lda int, dst []float32, ldd, n16 int) bool { return false }

func bf16Ready(lv int32) bool { return false }

func tileBF16(lv int32) (mr, nr int) { return 4, 4 }

func microKernelBF16(lv int32, kp int, a, b []uint32, c []float32, ldc int, accumulate bool) {
	if !(kp >= 1 && len(a) >= 4*kp && len(b) >= 4*kp && ldc >= 4 && len(c) >= 3*ldc+4) {
		fail("SgemmBF16: micro-kernel operands out of bounds")
	}
	gemmBF16Go(kp, a, b, c, ldc, accumulate)
}

func packingBF16(lv int32) int { return packGo }

// The AVX512_BF16 and AVX2 packing, never called here (packingBF16 is packGo).
func packPairsAVX2(a []float32, lda int, dst []uint32, width, kp int)  { panic("unreachable") }
func packRows4AVX2(a []float32, lda int, dst []uint32, stride, n8 int) { panic("unreachable") }
func packRowsBF16(a []float32, lda int, dst []uint32, stride, n32 int) { panic("unreachable") }
func packPairsBF16(a []float32, lda int, dst []uint32, width, kp int)  { panic("unreachable") }

func packPairs2x8BF16(a []float32, lda int, dst []uint32, pstride, kp int) {
	panic("unreachable")
}

func transposeAdd8(dst []float32, ldd int, src []float32, lds int) {
	transposeAdd8Go(dst, ldd, src, lds)
}
