package kernels

// The amd64 dispatch: which kernel sets the CPU can run (golang.org/x/sys/cpu), and for each
// kernel a switch on the selected set that calls the assembly (kernels_amd64.s, declared in
// stubs_amd64.go) directly, so that slices passed in do not escape. The exported wrappers have
// already checked the bounds; the assembly handles any length, including the last partial
// vector.

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

var (
	hasAVX512 = cpu.X86.HasAVX512F && cpu.X86.HasAVX512DQ && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VL
	hasAVX2   = cpu.X86.HasAVX2 && cpu.X86.HasFMA
	hasBF16   = hasAVX512 && cpu.X86.HasAVX512BF16
)

func supported(lv int32) bool {
	switch lv {
	case lvAVX512:
		return hasAVX512
	case lvAVX2:
		return hasAVX2
	}
	return lv == lvGeneric
}

func ptr(s []float32) *float32 { return unsafe.SliceData(s) }

func vecMat(x, b []float32, ldb int, y []float32) {
	switch level.Load() {
	case lvAVX512:
		vecMatAVX512(ptr(x), ptr(b), ldb, ptr(y), len(x), len(y))
	case lvAVX2:
		vecMatAVX2(ptr(x), ptr(b), ldb, ptr(y), len(x), len(y))
	default:
		vecMatGo(x, b, ldb, y)
	}
}

func sum(a []float32) float32 {
	switch level.Load() {
	case lvAVX512:
		return sumAVX512(ptr(a), len(a))
	case lvAVX2:
		return sumAVX2(ptr(a), len(a))
	}
	return sumGo(a)
}

func maxOf(a []float32) float32 {
	switch level.Load() {
	case lvAVX512:
		return maxAVX512(ptr(a), len(a))
	case lvAVX2:
		return maxAVX2(ptr(a), len(a))
	}
	return maxGo(a)
}

func binary(o op, a, b, out []float32) {
	pa, pb, po, n := ptr(a), ptr(b), ptr(out), len(out)
	switch level.Load() {
	case lvAVX512:
		switch o {
		case opAdd:
			addAVX512(pa, pb, po, n)
		case opSub:
			subAVX512(pa, pb, po, n)
		case opMul:
			mulAVX512(pa, pb, po, n)
		case opDiv:
			divAVX512(pa, pb, po, n)
		case opMax:
			maximumAVX512(pa, pb, po, n)
		case opMin:
			minimumAVX512(pa, pb, po, n)
		}
	case lvAVX2:
		switch o {
		case opAdd:
			addAVX2(pa, pb, po, n)
		case opSub:
			subAVX2(pa, pb, po, n)
		case opMul:
			mulAVX2(pa, pb, po, n)
		case opDiv:
			divAVX2(pa, pb, po, n)
		case opMax:
			maximumAVX2(pa, pb, po, n)
		case opMin:
			minimumAVX2(pa, pb, po, n)
		}
	default:
		binaryGo(o, a, b, out)
	}
}

func scalarOp(o op, a []float32, s float32, out []float32) {
	pa, po, n := ptr(a), ptr(out), len(out)
	switch level.Load() {
	case lvAVX512:
		switch o {
		case opAdd:
			addScalarAVX512(pa, s, po, n)
		case opMul:
			mulScalarAVX512(pa, s, po, n)
		case opMax:
			maximumScalarAVX512(pa, s, po, n)
		case opMin:
			minimumScalarAVX512(pa, s, po, n)
		case opRDiv:
			rdivScalarAVX512(pa, s, po, n)
		}
	case lvAVX2:
		switch o {
		case opAdd:
			addScalarAVX2(pa, s, po, n)
		case opMul:
			mulScalarAVX2(pa, s, po, n)
		case opMax:
			maximumScalarAVX2(pa, s, po, n)
		case opMin:
			minimumScalarAVX2(pa, s, po, n)
		case opRDiv:
			rdivScalarAVX2(pa, s, po, n)
		}
	default:
		scalarOpGo(o, a, s, out)
	}
}

func sign(a, out []float32) {
	switch level.Load() {
	case lvAVX512:
		signAVX512(ptr(a), ptr(out), len(out))
	case lvAVX2:
		signAVX2(ptr(a), ptr(out), len(out))
	default:
		signGo(a, out)
	}
}

func logistic(a, out []float32) {
	switch level.Load() {
	case lvAVX512:
		logisticAVX512(ptr(a), ptr(out), len(out))
	case lvAVX2:
		logisticAVX2(ptr(a), ptr(out), len(out))
	default:
		logisticGo(a, out)
	}
}

func exp(a, out []float32) {
	switch level.Load() {
	case lvAVX512:
		expAVX512(ptr(a), ptr(out), len(out))
	case lvAVX2:
		expAVX2(ptr(a), ptr(out), len(out))
	default:
		expGo(a, out)
	}
}

// streamDepth is the shortest row for which one row of x goes through W a row at a time
// (mmnt1Stream): a model's weights (rows of its width, 256 and more), which decoding reads from
// memory, stream faster that way (the 15M shape's float32 decode 1.3-1.5x on Zen 4); the
// attention's rows of keys (a head's width) and a tiny model's rows, read from cache, run faster
// eight at a time.
const streamDepth = 256

// matMulNT runs the assembly on blocks of up to 8 rows of x (bounds checked by the caller).
func matMulNT(m, n, k int, x []float32, ldx int, w []float32, ldw int, y []float32, ldy int) {
	lv := level.Load()
	if lv == lvGeneric {
		matMulNTGo(m, n, k, x, ldx, w, ldw, y, ldy)
		return
	}
	if lv == lvAVX512 && k <= 8 && hasAVX2 {
		// Rows this short fill half a zmm at most: the ymm kernels do the same work with
		// cheaper reductions (attention heads of 8: 1.4x faster).
		lv = lvAVX2
	}
	pw := ptr(w)
	for i0 := 0; i0 < m; i0 += 8 {
		px, py := &x[i0*ldx], &y[i0*ldy]
		if lv == lvAVX512 {
			switch min(8, m-i0) {
			case 1:
				if k >= streamDepth {
					mmnt1StreamAVX512(px, ldx, pw, ldw, py, ldy, n, k)
				} else {
					mmnt1AVX512(px, ldx, pw, ldw, py, ldy, n, k)
				}
			case 2:
				mmnt2AVX512(px, ldx, pw, ldw, py, ldy, n, k)
			case 3:
				mmnt3AVX512(px, ldx, pw, ldw, py, ldy, n, k)
			case 4:
				mmnt4AVX512(px, ldx, pw, ldw, py, ldy, n, k)
			case 5:
				mmnt5AVX512(px, ldx, pw, ldw, py, ldy, n, k)
			case 6:
				mmnt6AVX512(px, ldx, pw, ldw, py, ldy, n, k)
			case 7:
				mmnt7AVX512(px, ldx, pw, ldw, py, ldy, n, k)
			case 8:
				mmnt8AVX512(px, ldx, pw, ldw, py, ldy, n, k)
			}
			continue
		}
		switch min(8, m-i0) {
		case 1:
			mmnt1AVX2(px, ldx, pw, ldw, py, ldy, n, k)
		case 2:
			mmnt2AVX2(px, ldx, pw, ldw, py, ldy, n, k)
		case 3:
			mmnt3AVX2(px, ldx, pw, ldw, py, ldy, n, k)
		case 4:
			mmnt4AVX2(px, ldx, pw, ldw, py, ldy, n, k)
		case 5:
			mmnt5AVX2(px, ldx, pw, ldw, py, ldy, n, k)
		case 6:
			mmnt6AVX2(px, ldx, pw, ldw, py, ldy, n, k)
		case 7:
			mmnt7AVX2(px, ldx, pw, ldw, py, ldy, n, k)
		case 8:
			mmnt8AVX2(px, ldx, pw, ldw, py, ldy, n, k)
		}
	}
}

// tileOf is the Sgemm micro-kernel tile (rows, columns) of a kernel set.
func tileOf(lv int32) (mr, nr int) {
	switch lv {
	case lvAVX512:
		return 8, 32
	case lvAVX2:
		return 6, 16
	}
	return 4, 4
}

// microKernel computes the tile of kernel set lv from packed panels a (mr per k) and b (nr per
// k) into c (row stride ldc), overwriting it or adding to it.
func microKernel(lv int32, k int, a, b, c []float32, ldc int, accumulate bool) {
	mr, nr := tileOf(lv)
	if !(k >= 1 && len(a) >= mr*k && len(b) >= nr*k && ldc >= nr && len(c) >= (mr-1)*ldc+nr) {
		fail("Sgemm: micro-kernel operands out of bounds")
	}
	acc := 0
	if accumulate {
		acc = 1
	}
	switch lv {
	case lvAVX512:
		gemm8x32AVX512(k, ptr(a), ptr(b), ptr(c), ldc, acc)
	case lvAVX2:
		gemm6x16AVX2(k, ptr(a), ptr(b), ptr(c), ldc, acc)
	default:
		gemm4x4Go(k, a, b, c, ldc, accumulate)
	}
}

// directA reports whether Sgemm reads op(A) in place under kernel set lv (gemmDirect) instead
// of packing it: always on AVX2, whose 6-row panels have no vector packing routine; on AVX-512
// except for a transposed A whose rows lie a multiple of 2 KB apart. Read in place, the K slice
// of such an A falls on two of L1's 64 sets and evicts itself (the weight gradient x·dy with
// 512 features: 68-81 GFLOP/s in place against 67-81 packed, where every other product of a
// training step gains, attention's most: BenchmarkSgemmTrainShapes).
func directA(lv int32, transA bool, lda int) bool {
	return lv == lvAVX2 || lv == lvAVX512 && !(transA && lda%512 == 0)
}

// PacksA reports whether Sgemm packs op(A) (A transposed or not, its row stride lda) under the
// kernel set in use, so that packing it once (PackA) for several products saves work; where it
// reads A in place there is nothing to share.
func PacksA(transA bool, lda int) bool { return !directA(level.Load(), transA, lda) }

// microKernelDirect is microKernel with A read in place: element (i, p) of the tile's rows at
// a[i·rs+p·cs].
func microKernelDirect(lv int32, k int, a []float32, rs, cs int, b, c []float32, ldc int, accumulate bool) {
	mr, nr := tileOf(lv)
	if !((lv == lvAVX2 || lv == lvAVX512) && k >= 1 && rs >= 0 && cs >= 0 && len(a) > (mr-1)*rs+(k-1)*cs && len(b) >= nr*k && ldc >= nr && len(c) >= (mr-1)*ldc+nr) {
		fail("Sgemm: direct micro-kernel operands out of bounds")
	}
	acc := 0
	if accumulate {
		acc = 1
	}
	if lv == lvAVX512 {
		gemmDirect8x32AVX512(k, ptr(a), rs, cs, ptr(b), ptr(c), ldc, acc)
		return
	}
	gemmDirect6x16AVX2(k, ptr(a), rs, cs, ptr(b), ptr(c), ldc, acc)
}

// pack8 packs the first 16·n16 columns of 8 rows of A (a[i·lda+p]) into dst[p·ldd+i] with the
// AVX-512 transpose, and reports false (doing nothing) on the other kernel sets. ldd is 8 (A's
// panels) or 32 (eight columns of a transposed B's panel, packB).
func pack8(a []float32, lda int, dst []float32, ldd, n16 int) bool {
	if level.Load() != lvAVX512 || n16 == 0 {
		return false
	}
	if !((ldd == 8 || ldd == 32) && lda >= 16*n16 && len(a) >= 7*lda+16*n16 && len(dst) >= (16*n16-1)*ldd+8) {
		fail("pack8: 8 rows of %d (stride %d) into %d floats %d apart, from %d", 16*n16, lda, len(dst), ldd, len(a))
	}
	if ldd == 8 {
		pack8AVX512(&a[0], lda, &dst[0], n16)
	} else {
		pack8x32AVX512(&a[0], lda, &dst[0], n16)
	}
	return true
}

// bf16Ready reports whether SgemmBF16 runs the VDPBF16PS micro-kernel under kernel set lv.
func bf16Ready(lv int32) bool { return lv == lvAVX512 && hasBF16 }

// bf16Emulated reports whether SgemmBF16 widens the bf16 pairs to floats under kernel set lv
// (gemm8x32BF16AVX512F, gemm4x16BF16AVX2): AVX-512F, or AVX2 and FMA, without AVX512_BF16. The
// AVX2 packers serve both.
func bf16Emulated(lv int32) bool {
	return !bf16Ready(lv) && hasAVX2 && (lv == lvAVX512 || lv == lvAVX2)
}

// packingBF16 is the assembly that packs SgemmBF16's panels under kernel set lv.
func packingBF16(lv int32) int {
	switch {
	case bf16Ready(lv):
		return packAVX512BF16
	case bf16Emulated(lv):
		return packAVX2
	}
	return packGo
}

// packPairsAVX2 packs kp pairs of stored rows into width (4, 8, 16 or 32) pairs each,
// rounding with AVX2: dst[t·width+j] = pair(a[2t·lda+j], a[(2t+1)·lda+j]).
func packPairsAVX2(a []float32, lda int, dst []uint32, width, kp int) {
	var pack func(a *float32, lda int, dst *uint32, kp int)
	switch width {
	case 4:
		pack = packPairs4BF16AVX2
	case 8:
		pack = packPairs8BF16AVX2
	case 16:
		pack = packPairs16BF16AVX2
	case 32:
		pack = packPairs32BF16AVX2
	}
	if !(hasAVX2 && pack != nil && kp > 0 && lda >= width && len(a) >= (2*kp-1)*lda+width && len(dst) >= kp*width) {
		fail("packPairsAVX2: %d pairs of rows of %d (stride %d) into %d words, from %d", kp, width, lda, len(dst), len(a))
	}
	pack(&a[0], lda, &dst[0], kp)
}

// packRows4AVX2 packs 4 rows of adjacent pairs, rounding with AVX2: dst[t·stride+i] =
// pair(a[i·lda+2t], a[i·lda+2t+1]) for i < 4 and t < 8·n8.
func packRows4AVX2(a []float32, lda int, dst []uint32, stride, n8 int) {
	if !(hasAVX2 && n8 > 0 && stride >= 4 && lda >= 16*n8 && len(a) >= 3*lda+16*n8 && len(dst) >= (8*n8-1)*stride+4) {
		fail("packRows4AVX2: 4 rows of %d (stride %d) into %d words (stride %d), from %d", 16*n8, lda, len(dst), stride, len(a))
	}
	packRows4BF16AVX2(&a[0], lda, &dst[0], stride, n8)
}

// tileBF16 is the SgemmBF16 micro-kernel tile (rows, columns) under kernel set lv. The
// AVX512_BF16 packing (packRowsBF16, packPairsBF16) assumes 8×32, the AVX2 packing takes 8×32
// or 4×16 tiles, and the Go packing any.
func tileBF16(lv int32) (mr, nr int) {
	switch {
	case lv == lvAVX512 && (bf16Ready(lv) || bf16Emulated(lv)):
		return 8, 32
	case bf16Emulated(lv):
		return 4, 16
	}
	return 4, 4
}

// microKernelBF16 computes the tile of kernel set lv from packed pair panels a (mr pairs per
// pair of k) and b (nr pairs) over kp pairs into c (row stride ldc), overwriting or adding.
func microKernelBF16(lv int32, kp int, a, b []uint32, c []float32, ldc int, accumulate bool) {
	mr, nr := tileBF16(lv)
	if !(kp >= 1 && len(a) >= mr*kp && len(b) >= nr*kp && ldc >= nr && len(c) >= (mr-1)*ldc+nr) {
		fail("SgemmBF16: micro-kernel operands out of bounds")
	}
	acc := 0
	if accumulate {
		acc = 1
	}
	switch {
	case bf16Ready(lv):
		gemm8x32BF16(kp, unsafe.SliceData(a), unsafe.SliceData(b), ptr(c), ldc, acc)
	case bf16Emulated(lv) && lv == lvAVX512:
		gemm8x32BF16AVX512F(kp, unsafe.SliceData(a), unsafe.SliceData(b), ptr(c), ldc, acc)
	case bf16Emulated(lv):
		gemm4x16BF16AVX2(kp, unsafe.SliceData(a), unsafe.SliceData(b), ptr(c), ldc, acc)
	default:
		gemmBF16Go(kp, a, b, c, ldc, accumulate)
	}
}

// packRowsBF16 packs 8 rows of pairs of adjacent values (a[i·lda+2t], a[i·lda+2t+1]) for
// t < 16·n32 into dst[t·stride+i], stride 8 (A panels) or 32 (8 columns of a B panel).
func packRowsBF16(a []float32, lda int, dst []uint32, stride, n32 int) {
	if !(hasBF16 && n32 > 0 && lda >= 32*n32 && len(a) >= 7*lda+32*n32 && len(dst) >= (16*n32-1)*stride+8) {
		fail("packRowsBF16: 8 rows of %d (stride %d) into %d words, from %d", 32*n32, lda, len(dst), len(a))
	}
	if stride == 8 {
		packA8BF16(&a[0], lda, &dst[0], n32)
	} else {
		packBT8BF16(&a[0], lda, &dst[0], n32)
	}
}

// packPairsBF16 packs kp pairs of stored rows into width (8 or 32) pairs each:
// dst[t·width+j] = (a[2t·lda+j], a[(2t+1)·lda+j]).
func packPairsBF16(a []float32, lda int, dst []uint32, width, kp int) {
	if !(hasBF16 && kp > 0 && lda >= width && len(a) >= (2*kp-1)*lda+width && len(dst) >= width*kp) {
		fail("packPairsBF16: %d pairs of rows of %d (stride %d) into %d words, from %d", kp, width, lda, len(dst), len(a))
	}
	if width == 8 {
		packAT8BF16(&a[0], lda, &dst[0], kp)
	} else {
		packB32BF16(&a[0], lda, &dst[0], kp)
	}
}

// packPairs2x8BF16 is packPairsBF16 for two panels of 8 pairs at once: columns 0-7 into dst,
// columns 8-15 into dst[pstride:].
func packPairs2x8BF16(a []float32, lda int, dst []uint32, pstride, kp int) {
	if !(hasBF16 && kp > 0 && lda >= 16 && pstride >= 8*kp && len(a) >= (2*kp-1)*lda+16 && len(dst) >= pstride+8*kp) {
		fail("packPairs2x8BF16: %d pairs of rows of 16 (stride %d) into %d words (panel stride %d), from %d", kp, lda, len(dst), pstride, len(a))
	}
	packAT16BF16(&a[0], lda, &dst[0], kp, pstride)
}

//go:noescape
func transposeAdd8AVX2(dst *float32, ldd int, src *float32, lds int)

func transposeAdd8(dst []float32, ldd int, src []float32, lds int) {
	if level.Load() >= lvAVX2 {
		transposeAdd8AVX2(&dst[0], ldd, &src[0], lds)
		return
	}
	transposeAdd8Go(dst, ldd, src, lds)
}
