package kernels

// Go declarations of actgemm_avx2_amd64.s and actgemm_vnni_amd64.s, and the checked wrappers
// that call them.

import (
	"fmt"

	"github.com/posformer/posformer/layers/quant"
	cpuid "golang.org/x/sys/cpu"
)

const haveActGemmAsm = true

//go:noescape
func actGemm4x8AVX2(pq *int8, pd *float32, xq *int8, xd *float32, y *float32, ldy int, nb int)

//go:noescape
func q4ActGemm4x8AVX2(pq *int8, pd *float32, xq *int8, xd *float32, xs *int32, y *float32, ldy int, nb int)

//go:noescape
func q8ActGemm4x8VNNI(pq *int8, pd *float32, xq *int8, xd *float32, xs *int32, y *float32, ldy int, nb int)

//go:noescape
func q4ActGemm4x8VNNI(pq *int8, pd *float32, xq *int8, xd *float32, xs *int32, y *float32, ldy int, nb int)

// vnniTiles reports whether the GEMM tiles run on AVX-512 VNNI (ymm registers, so AVX512VL
// too) rather than AVX2: the CPU has them and the AVX-512 kernel set is in use (tests run the
// AVX2 tiles on such a CPU with SetPath(AVX2)).
func vnniTiles() bool {
	return vnniCPU && cpuid.X86.HasAVX512VL && quantKernels() == quantAVX512
}

//go:noescape
func q8ActGemm1AVX2(w *int8, wd *float32, xq *int8, xd *float32, y *float32, n int, nb int)

//go:noescape
func q4ActGemm1AVX2(w *uint8, wd *float32, xq *int8, xd *float32, xo *int16, y *float32, n int, nb int)

//go:noescape
func pairQ4AVX2(q *int8, q4 *int8, o *int16, nb int)

// pairQ4Asm is pairQ4 for the nb = len(q)/32 blocks of q.
func pairQ4Asm(q, q4 []int8, o []int16) {
	nb := len(q) / 32
	np := actPairs(len(q))
	if len(q) != 32*nb || len(q4) < 64*np || len(o) < 16*np {
		panic(fmt.Sprintf("pairQ4Asm: %d values (want whole blocks), got %d paired and %d offsets", len(q), len(q4), len(o)))
	}
	if nb > 0 {
		pairQ4AVX2(&q[0], &q4[0], &o[0], nb)
	}
}

//go:noescape
func q8QuantizeAVX2(x *float32, q *int8, d *float32, s *int32, nb int)

// quantizeRowAsm quantizes x (nb blocks) into q and d as quant.QuantizeSplit does, and, when s
// is not nil, writes 8·Σ of each block's values into s (blockSum's).
func quantizeRowAsm(x []float32, q []int8, d []float32, s []int32) {
	nb := len(d)
	if len(x) < 32*nb || len(q) < 32*nb || s != nil && len(s) < nb {
		panic(fmt.Sprintf("quantizeRowAsm: %d blocks, got x of %d, q of %d and %d sums", nb, len(x), len(q), len(s)))
	}
	if nb > 0 {
		var sp *int32
		if s != nil {
			sp = &s[0]
		}
		q8QuantizeAVX2(&x[0], &q[0], &d[0], sp, nb)
	}
}

// checkActGemm panics unless the operands hold n weight rows and mr rows of x of nb blocks.
func checkActGemm(typ quant.Type, q []byte, d []float32, xq []int8, xd []float32, mr, n, nb int) {
	rowBytes := 32 * nb
	if typ == quant.Q4_0 {
		rowBytes = 16 * nb
	}
	if typ != quant.Q8_0 && typ != quant.Q4_0 || nb <= 0 || n <= 0 || len(q) < n*rowBytes || len(d) < n*nb || len(xq) < mr*32*nb || len(xd) < mr*nb {
		panic(fmt.Sprintf("actGemm: %v, %d rows of x and %d of W of %d blocks, got %d bytes, %d scales, x of %d and %d scales", typ, mr, n, nb, len(q), len(d), len(xq), len(xd)))
	}
}

//go:noescape
func q8PackAVX2(q *int8, ldq int, pq *int8, nb int)

//go:noescape
func q8PackBiasedAVX2(q *int8, ldq int, pq *int8, nb int)

//go:noescape
func q4PackAVX2(q *uint8, ldq int, pq *int8, nb int)

// packValuesAsm lays out the values of eight whole weight rows starting at q (rows ldq bytes
// apart, nb blocks each) into the panel pq, as packPanel does (biased: Q8_0's plus 128).
func packValuesAsm(typ quant.Type, q []byte, ldq int, pq []int8, nb int, biased bool) {
	rowBytes := storedRowBytes(typ, 32*nb)
	if nb <= 0 || len(q) < 7*ldq+rowBytes || len(pq) < 256*nb {
		panic(fmt.Sprintf("packValuesAsm: 8 rows of %d blocks %d bytes apart, got %d bytes and a panel of %d", nb, ldq, len(q), len(pq)))
	}
	switch {
	case typ == quant.Q8_0 && biased:
		q8PackBiasedAVX2(&bytesAs[int8](q)[0], ldq, &pq[0], nb)
	case typ == quant.Q8_0:
		q8PackAVX2(&bytesAs[int8](q)[0], ldq, &pq[0], nb)
	default:
		q4PackAVX2(&q[0], ldq, &pq[0], nb)
	}
}

// actGemm4x8 computes the tile y[r·ldy + c] for four rows r of x (scales interleaved) and the
// eight weight rows c of a panel packed by packPanel.
func actGemm4x8(pq []int8, pd []float32, xq []int8, xd []float32, y []float32, ldy, nb int) {
	if nb <= 0 || len(pq) < 256*nb || len(pd) < 8*nb || len(xq) < 4*32*nb || len(xd) < 4*nb || ldy < 8 || len(y) < 3*ldy+8 {
		panic(fmt.Sprintf("actGemm4x8: %d blocks, got a panel of %d values and %d scales, x of %d and %d scales, y of %d (stride %d)", nb, len(pq), len(pd), len(xq), len(xd), len(y), ldy))
	}
	actGemm4x8AVX2(&pq[0], &pd[0], &xq[0], &xd[0], &y[0], ldy, nb)
}

// q8uActGemm4x8 is actGemm4x8 on the VNNI tile, for a panel of Q8_0 values biased to unsigned
// (biasPanel), with xs the four rows' 8·Σx per block, interleaved as their scales.
func q8uActGemm4x8(pq []int8, pd []float32, xq []int8, xd []float32, xs []int32, y []float32, ldy, nb int) {
	if nb <= 0 || len(pq) < 256*nb || len(pd) < 8*nb || len(xq) < 4*32*nb || len(xd) < 4*nb || len(xs) < 4*nb || ldy < 8 || len(y) < 3*ldy+8 {
		panic(fmt.Sprintf("q8uActGemm4x8: %d blocks, got a panel of %d values and %d scales, x of %d, %d scales and %d sums, y of %d (stride %d)", nb, len(pq), len(pd), len(xq), len(xd), len(xs), len(y), ldy))
	}
	q8ActGemm4x8VNNI(&pq[0], &pd[0], &xq[0], &xd[0], &xs[0], &y[0], ldy, nb)
}

// q4ActGemm4x8 is actGemm4x8 for a panel of Q4_0 nibbles (packPanel's unsigned layout), with
// xs the four rows' 8·Σx per block, interleaved as their scales.
func q4ActGemm4x8(pq []int8, pd []float32, xq []int8, xd []float32, xs []int32, y []float32, ldy, nb int) {
	if nb <= 0 || len(pq) < 256*nb || len(pd) < 8*nb || len(xq) < 4*32*nb || len(xd) < 4*nb || len(xs) < 4*nb || ldy < 8 || len(y) < 3*ldy+8 {
		panic(fmt.Sprintf("q4ActGemm4x8: %d blocks, got a panel of %d values and %d scales, x of %d, %d scales and %d sums, y of %d (stride %d)", nb, len(pq), len(pd), len(xq), len(xd), len(xs), len(y), ldy))
	}
	if vnniTiles() {
		q4ActGemm4x8VNNI(&pq[0], &pd[0], &xq[0], &xd[0], &xs[0], &y[0], ldy, nb)
		return
	}
	q4ActGemm4x8AVX2(&pq[0], &pd[0], &xq[0], &xd[0], &xs[0], &y[0], ldy, nb)
}

// actGemm1 computes y[j] for one row of x (a, its plain form) and the n rows of W.
func actGemm1(typ quant.Type, q []byte, d []float32, a *ActRow, y []float32, nb int) {
	n := len(y)
	if n == 0 {
		return
	}
	checkActGemm(typ, q, d, a.q, a.d, 1, n, nb)
	if typ == quant.Q8_0 {
		q8ActGemm1AVX2(&bytesAs[int8](q)[0], &d[0], &a.q[0], &a.d[0], &y[0], n, nb)
		return
	}
	if np := actPairs(32 * nb); len(a.q4) < 64*np || len(a.o) < 16*np {
		panic(fmt.Sprintf("actGemm1: x of %d blocks wants %d pairs for Q4_0, got %d bytes and %d offsets", nb, np, len(a.q4), len(a.o)))
	}
	q4ActGemm1AVX2(&q[0], &d[0], &a.q4[0], &a.d[0], &a.o[0], &y[0], n, nb)
}
