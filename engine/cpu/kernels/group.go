package kernels

// Products of rows of x with a matrix stored in row groups (layers/quant's Group: sixteen rows
// interleaved, scales as half floats): the layout where a block's scaling is one vector op for
// sixteen rows and the weights are one stream. On one thread (BenchmarkGroupDotRows, against
// ActDotRows on Split's layout, both with x quantized to int8): with VNNI, Q4_0 in cache (2048
// rows of 768) 3x the rate, from memory (200000 rows of 288) 1.5x, Q8_0 1.6x and 1.3x; on AVX2's
// byte products (POSFORMER_KERNELS=avx2 on the same Zen 4), Q4_0 1.6-2.1x and 1.3x, Q8_0
// 1.35-1.5x and 1.25x.

import (
	"fmt"

	"github.com/posformer/posformer/layers/quant"
)

// GroupKernels reports whether GroupDotRows runs on assembly here (VNNI, or AVX2's byte
// products); elsewhere it runs a portable loop, slower than ActDotRows on Split's layout, and a
// caller should ungroup rows instead.
func GroupKernels() bool { return quantKernels() != noQuantAsm }

// GroupDotRows computes y[r] = x·W[r] for the rows of y (a multiple of quant.GroupRows), W the
// first len(y) rows of a Q8_0 or Q4_0 matrix of rows of k in row groups (gq, gd), x quantized in
// its plain form (QuantizeAct without layout).
func GroupDotRows(typ quant.Type, gq []byte, gd []uint16, k int, a *ActRow, y []float32) {
	nb := k / 32
	vb := typ.BlockBytes() - 2
	if (typ != quant.Q8_0 && typ != quant.Q4_0) || k%32 != 0 || len(y)%quant.GroupRows != 0 {
		panic(fmt.Sprintf("GroupDotRows: %d rows of %d as %v", len(y), k, typ))
	}
	if len(gq) < len(y)*nb*vb || len(gd) < len(y)*nb {
		panic(fmt.Sprintf("GroupDotRows: %d rows of %d blocks, got %d bytes and %d scales", len(y), nb, len(gq), len(gd)))
	}
	if a.q == nil || len(a.q) < k || len(a.d) < nb || len(a.s) < nb {
		panic(fmt.Sprintf("GroupDotRows: x of %d wants its plain form", k))
	}
	if len(y) == 0 {
		return
	}
	if nb == 0 {
		clear(y)
		return
	}
	if !GroupKernels() {
		groupDotRowsGo(typ, gq, gd, a.q, a.d, y, nb)
		return
	}
	groups := len(y) / quant.GroupRows
	switch vnni := VNNI(); {
	case typ == quant.Q8_0 && vnni:
		q8GroupDotVNNI(&bytesAs[int8](gq)[0], &gd[0], &a.q[0], &a.s[0], &a.d[0], &y[0], groups, nb)
	case typ == quant.Q8_0:
		q8GroupDotAVX2(&bytesAs[int8](gq)[0], &gd[0], &a.q[0], &a.s[0], &a.d[0], &y[0], groups, nb)
	case vnni:
		q4GroupDotVNNI(&gq[0], &gd[0], &a.q[0], &a.s[0], &a.d[0], &y[0], groups, nb)
	default:
		q4GroupDotAVX2(&gq[0], &gd[0], &a.q[0], &a.s[0], &a.d[0], &y[0], groups, nb)
	}
}

// Pack4Bytes is the scratch Pack4 fills for four rows of x of k: their blocks' sums and scales,
// four to a block.
func Pack4Bytes(k int) int { return 32 * (k / 32) }

// Pack4 packs the blocks' sums and scales of four rows of x of k, in their plain forms stride
// bytes apart in xa, four to a block into buf (Pack4Bytes(k)), as GroupDotRows4 reads them.
func Pack4(xa []byte, stride, k int, buf []byte) {
	nb := k / 32
	xs4, xd4 := bytesAs[int32](buf[:16*nb]), bytesAs[float32](buf[16*nb:32*nb])
	for i := range 4 {
		a := ActView(xa[i*stride:], k, false)
		for b := range nb {
			xs4[4*b+i], xd4[4*b+i] = a.s[b], a.d[b]
		}
	}
}

// GroupDotRows4 is GroupDotRows for four rows of x at once, in their plain forms stride bytes
// apart in xa (row i is ActView(xa[i·stride:], k, false)) with their sums and scales packed in
// pack (Pack4), into y[i·ldy:] for row i: each vector of weights meets the four rows, so the
// weights' share of the work is a quarter.
func GroupDotRows4(typ quant.Type, gq []byte, gd []uint16, k int, xa []byte, stride int, pack []byte, y []float32, ldy, rows int) {
	nb := k / 32
	if !GroupKernels() || nb == 0 || rows == 0 {
		for i := range 4 {
			a := ActView(xa[i*stride:], k, false)
			GroupDotRows(typ, gq, gd, k, &a, y[i*ldy:i*ldy+rows])
		}
		return
	}
	vb := typ.BlockBytes() - 2
	if (typ != quant.Q8_0 && typ != quant.Q4_0) || k%32 != 0 || rows%quant.GroupRows != 0 || len(gq) < rows*nb*vb || len(gd) < rows*nb ||
		len(y) < 3*ldy+rows || len(pack) < Pack4Bytes(k) || len(xa) < 3*stride+ActRowBytes(k) {
		panic(fmt.Sprintf("GroupDotRows4: %d rows of %d as %v, %d bytes, %d scales, %d results %d apart, x %d bytes %d apart, %d packed", rows, k, typ, len(gq), len(gd), len(y), ldy, len(xa), stride, len(pack)))
	}
	xs4, xd4 := &bytesAs[int32](pack)[0], &bytesAs[float32](pack[16*nb:])[0]
	xq, groups := &bytesAs[int8](xa[:1])[0], rows/quant.GroupRows
	switch vnni := VNNI(); {
	case typ == quant.Q8_0 && vnni:
		q8GroupDot4VNNI(&bytesAs[int8](gq)[0], &gd[0], xq, stride, xs4, xd4, &y[0], 4*ldy, groups, nb)
	case typ == quant.Q8_0:
		q8GroupDot4AVX2(&bytesAs[int8](gq)[0], &gd[0], xq, stride, xs4, xd4, &y[0], 4*ldy, groups, nb)
	case vnni:
		q4GroupDot4VNNI(&gq[0], &gd[0], xq, stride, xs4, xd4, &y[0], 4*ldy, groups, nb)
	default:
		q4GroupDot4AVX2(&gq[0], &gd[0], xq, stride, xs4, xd4, &y[0], 4*ldy, groups, nb)
	}
}

// groupDotRowsGo is the portable path: per block an exact int32 sum, then scaled, in the order
// of q8ActDotRowsGo and q4ActDotRowsGo.
func groupDotRowsGo(typ quant.Type, gq []byte, gd []uint16, xq []int8, xd []float32, y []float32, nb int) {
	const G = quant.GroupRows
	vb := typ.BlockBytes() - 2
	for r := range y {
		g, lane := r/G, r%G
		var s float32
		for b := range nb {
			blk := gq[(g*nb+b)*G*vb:]
			xb := xq[32*b : 32*b+32]
			var sum int32
			for st := range vb / 4 {
				w := blk[(st*G+lane)*4:][:4]
				for k, v := range w {
					j := 4*st + k
					if typ == quant.Q8_0 {
						sum += int32(int8(v)) * int32(xb[j])
					} else {
						sum += (int32(v&15)-8)*int32(xb[j]) + (int32(v>>4)-8)*int32(xb[j+16])
					}
				}
			}
			s += float32(sum) * (xd[b] * quant.F16ToF32(gd[(g*nb+b)*G+lane]))
		}
		y[r] = s
	}
}

// blockSums writes 8·Σ q over each block of 32 into s, as quantizeRowAsm does.
func blockSums(q []int8, s []int32) {
	for b := range s {
		var sum int32
		for _, v := range q[32*b : 32*b+32] {
			sum += int32(v)
		}
		s[b] = 8 * sum
	}
}
