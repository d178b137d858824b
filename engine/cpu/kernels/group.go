package kernels

// Products of one row of x with a matrix stored in row groups (layers/quant's Group: sixteen
// rows interleaved, scales as half floats): decoding's products on the layout where a block's
// scaling is one vector op for sixteen rows and the weights are one stream. On one thread
// (BenchmarkGroupDotRows, against ActDotRows on Split's layout, both with x quantized to int8):
// 2048 rows of 768 in cache 3x the rate; 200000 rows of 288 from memory 1.4-2.2x.

import (
	"fmt"

	"github.com/posformer/posformer/layers/quant"
)

// GroupKernels reports whether GroupDotRows runs on assembly here; elsewhere it runs a portable
// loop, slower than ActDotRows on Split's layout, and a caller should ungroup rows instead.
func GroupKernels() bool { return VNNI() }

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
	if typ == quant.Q8_0 {
		q8GroupDotVNNI(&bytesAs[int8](gq)[0], &gd[0], &a.q[0], &a.s[0], &a.d[0], &y[0], len(y)/quant.GroupRows, nb)
	} else {
		q4GroupDotVNNI(&gq[0], &gd[0], &a.q[0], &a.s[0], &a.d[0], &y[0], len(y)/quant.GroupRows, nb)
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

// blockSums writes Σ q over each block of 32 into s.
func blockSums(q []int8, s []int32) {
	for b := range s {
		var sum int32
		for _, v := range q[32*b : 32*b+32] {
			sum += int32(v)
		}
		s[b] = sum
	}
}
