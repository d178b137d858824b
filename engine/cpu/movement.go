package cpu

// Data movement (transpose, broadcast, slice, pad, reverse, concatenate, gather, scatter,
// dynamic slices) on raw row-major bytes. Every one of them is a strided copy: an element of
// the destination at multi-index i comes from src[off + Σ i_k·srcStride_k]. stridedCopy merges
// axes that stay contiguous and moves whole contiguous runs with copy, so the common cases
// (head transposes that keep the head dimension, row gathers, broadcasts of rows) cost one
// memmove per run rather than an index computation per element.

import (
	"github.com/gomlx/gomlx/backends"
)

func rowMajorStrides(dims []int) []int {
	st := make([]int, len(dims))
	s := 1
	for i := len(dims) - 1; i >= 0; i-- {
		st[i] = s
		s *= dims[i]
	}
	return st
}

func product(dims []int) int {
	n := 1
	for _, d := range dims {
		n *= d
	}
	return n
}

// stridedCopy copies the elements (es bytes each) of a dims-shaped index space: element i goes
// from src[srcOff + Σ i_k·ss_k] to dst[dstOff + Σ i_k·ds_k] (offsets and strides in elements).
func stridedCopy(es int, src []byte, srcOff int, ss []int, dst []byte, dstOff int, ds []int, dims []int) {
	// Drop size-1 axes and merge an axis into the next when both strides allow it.
	var d, s, t []int
	for k, n := range dims {
		if n == 0 {
			return
		}
		if n == 1 {
			continue
		}
		if j := len(d) - 1; j >= 0 && s[j] == ss[k]*n && t[j] == ds[k]*n {
			d[j] *= n
			s[j], t[j] = ss[k], ds[k]
			continue
		}
		d, s, t = append(d, n), append(s, ss[k]), append(t, ds[k])
	}
	if len(d) == 0 {
		copy(dst[dstOff*es:dstOff*es+es], src[srcOff*es:srcOff*es+es])
		return
	}
	r := len(d) - 1
	inner, si, di := d[r], s[r], t[r]
	idx := make([]int, r)
	outer := product(d[:r])
	so, do := srcOff, dstOff
	for range outer {
		switch {
		case si == 1 && di == 1:
			copy(dst[do*es:(do+inner)*es], src[so*es:(so+inner)*es])
		case es == 4:
			sv, dv := typed[uint32](src), typed[uint32](dst)
			for i := range inner {
				dv[do+i*di] = sv[so+i*si]
			}
		case es == 8:
			sv, dv := typed[uint64](src), typed[uint64](dst)
			for i := range inner {
				dv[do+i*di] = sv[so+i*si]
			}
		case es == 2:
			sv, dv := typed[uint16](src), typed[uint16](dst)
			for i := range inner {
				dv[do+i*di] = sv[so+i*si]
			}
		default:
			for i := range inner {
				copy(dst[(do+i*di)*es:(do+i*di+1)*es], src[(so+i*si)*es:(so+i*si+1)*es])
			}
		}
		for k := r - 1; k >= 0; k-- {
			idx[k]++
			so += s[k]
			do += t[k]
			if idx[k] < d[k] {
				break
			}
			so -= s[k] * d[k]
			do -= t[k] * d[k]
			idx[k] = 0
		}
	}
}

func transposeBytes(es int, in []byte, inDims []int, perm []int, out []byte) {
	ist := rowMajorStrides(inDims)
	dims := make([]int, len(perm))
	ss := make([]int, len(perm))
	for i, p := range perm {
		dims[i], ss[i] = inDims[p], ist[p]
	}
	stridedCopy(es, in, 0, ss, out, 0, rowMajorStrides(dims), dims)
}

func broadcastInDimBytes(es int, in []byte, inDims []int, outDims []int, axes []int, out []byte) {
	ist := rowMajorStrides(inDims)
	ss := make([]int, len(outDims))
	for i, a := range axes {
		if inDims[i] != 1 {
			ss[a] = ist[i]
		}
	}
	stridedCopy(es, in, 0, ss, out, 0, rowMajorStrides(outDims), outDims)
}

func sliceBytes(es int, in []byte, inDims, starts, limits, strides []int, out []byte) {
	ist := rowMajorStrides(inDims)
	dims := make([]int, len(inDims))
	ss := make([]int, len(inDims))
	off := 0
	for i := range inDims {
		dims[i] = (limits[i] - starts[i] + strides[i] - 1) / strides[i]
		ss[i] = ist[i] * strides[i]
		off += starts[i] * ist[i]
	}
	stridedCopy(es, in, off, ss, out, 0, rowMajorStrides(dims), dims)
}

func concatenateBytes(es int, ins [][]byte, insDims [][]int, axis int, out []byte) {
	outDims := append([]int(nil), insDims[0]...)
	outDims[axis] = 0
	for _, d := range insDims {
		outDims[axis] += d[axis]
	}
	ost := rowMajorStrides(outDims)
	at := 0
	for i, in := range ins {
		stridedCopy(es, in, 0, rowMajorStrides(insDims[i]), out, at*ost[axis], ost, insDims[i])
		at += insDims[i][axis]
	}
}

func padBytes(es int, in []byte, inDims []int, fill []byte, axes []backends.PadAxis, out []byte, outDims []int) {
	for i := 0; i < len(out); i += es {
		copy(out[i:i+es], fill)
	}
	ist, ost := rowMajorStrides(inDims), rowMajorStrides(outDims)
	dims := make([]int, len(inDims))
	ss, ds := make([]int, len(inDims)), make([]int, len(inDims))
	srcOff, dstOff := 0, 0
	for k, n := range inDims {
		step := axes[k].Interior + 1
		// Input indices i whose output position Start + i·step lies in [0, outDims[k]).
		lo := 0
		if axes[k].Start < 0 {
			lo = (-axes[k].Start + step - 1) / step
		}
		hi := n
		if outDims[k] == 0 {
			return
		}
		hi = min(hi, (outDims[k]-1-axes[k].Start)/step+1)
		if axes[k].Start > outDims[k]-1 || hi <= lo {
			return
		}
		dims[k] = hi - lo
		ss[k], ds[k] = ist[k], ost[k]*step
		srcOff += lo * ist[k]
		dstOff += (axes[k].Start + lo*step) * ost[k]
	}
	stridedCopy(es, in, srcOff, ss, out, dstOff, ds, dims)
}

func reverseBytes(es int, in []byte, inDims []int, axes []int, out []byte) {
	ist := rowMajorStrides(inDims)
	ss := append([]int(nil), ist...)
	off := 0
	for _, a := range axes {
		ss[a] = -ist[a]
		off += (inDims[a] - 1) * ist[a]
	}
	stridedCopy(es, in, off, ss, out, 0, rowMajorStrides(inDims), inDims)
}

// batchIter walks the batch positions of a gather or scatter: the axes of the index tensor
// other than indexVectorAxis, in order; for each it yields the offset of its index vector.
func batchIter(indicesDims []int, indexVectorAxis int, fn func(batch []int, off int)) {
	ist := rowMajorStrides(indicesDims)
	var bd, bs []int
	for k, d := range indicesDims {
		if k != indexVectorAxis {
			bd, bs = append(bd, d), append(bs, ist[k])
		}
	}
	idx := make([]int, len(bd))
	for range product(bd) {
		off := 0
		for k, v := range idx {
			off += v * bs[k]
		}
		fn(idx, off)
		for k := len(idx) - 1; k >= 0; k-- {
			idx[k]++
			if idx[k] < bd[k] {
				break
			}
			idx[k] = 0
		}
	}
}

func gatherBytes(es int, operand []byte, operandDims []int, indices []int, indicesDims []int,
	indexVectorAxis int, offsetOutputAxes, collapsedSliceAxes, startIndexMap, sliceSizes []int,
	out []byte, outDims []int) {
	opSt, outSt := rowMajorStrides(operandDims), rowMajorStrides(outDims)
	vecStride := 0
	if indexVectorAxis < len(indicesDims) {
		vecStride = rowMajorStrides(indicesDims)[indexVectorAxis]
	}
	isOffset := make([]bool, len(outDims))
	for _, a := range offsetOutputAxes {
		isOffset[a] = true
	}
	var batchOutSt []int
	for a := range outDims {
		if !isOffset[a] {
			batchOutSt = append(batchOutSt, outSt[a])
		}
	}
	// The window: the operand's non-collapsed axes, in order, land on the offset output axes.
	collapsed := make([]bool, len(operandDims))
	for _, a := range collapsedSliceAxes {
		collapsed[a] = true
	}
	var wDims, wSrc, wDst []int
	j := 0
	for a := range operandDims {
		if collapsed[a] {
			continue
		}
		wDims = append(wDims, sliceSizes[a])
		wSrc = append(wSrc, opSt[a])
		wDst = append(wDst, outSt[offsetOutputAxes[j]])
		j++
	}
	batchIter(indicesDims, indexVectorAxis, func(batch []int, off int) {
		src := 0
		for k, a := range startIndexMap {
			s := indices[off+k*vecStride]
			s = min(max(s, 0), operandDims[a]-sliceSizes[a])
			src += s * opSt[a]
		}
		dst := 0
		for k, v := range batch {
			dst += v * batchOutSt[k]
		}
		stridedCopy(es, operand, src, wSrc, out, dst, wDst, wDims)
	})
}

func dynamicSliceBytes(es int, in []byte, inDims []int, starts []int, sizes []int, out []byte) {
	st := make([]int, len(starts))
	lim := make([]int, len(starts))
	one := make([]int, len(starts))
	for i := range starts {
		st[i] = min(max(starts[i], 0), inDims[i]-sizes[i])
		lim[i], one[i] = st[i]+sizes[i], 1
	}
	sliceBytes(es, in, inDims, st, lim, one, out)
}

func dynamicUpdateSliceBytes(es int, operand []byte, dims []int, update []byte, updateDims []int, starts []int) {
	ost := rowMajorStrides(dims)
	off := 0
	for i := range starts {
		off += min(max(starts[i], 0), dims[i]-updateDims[i]) * ost[i]
	}
	stridedCopy(es, update, 0, rowMajorStrides(updateDims), operand, off, ost, updateDims)
}

type scatterKind int

const (
	scatterSum scatterKind = iota
	scatterMax
	scatterMin
)

type scatterNumber interface {
	~float32 | ~float64 | ~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64
}

// scatterInto combines updates into operand (in place). A window that would not fit inside the
// operand at its index is skipped whole.
func scatterInto[T scatterNumber](kind scatterKind, operand []T, operandDims []int, indices []int, indicesDims []int,
	updates []T, updatesDims []int, indexVectorAxis int, updateWindowAxes, insertedWindowAxes, scatterAxesToOperandAxes []int) {
	opSt, upSt := rowMajorStrides(operandDims), rowMajorStrides(updatesDims)
	vecStride := 0
	if indexVectorAxis < len(indicesDims) {
		vecStride = rowMajorStrides(indicesDims)[indexVectorAxis]
	}
	isWindow := make([]bool, len(updatesDims))
	for _, a := range updateWindowAxes {
		isWindow[a] = true
	}
	var batchUpSt []int
	for a := range updatesDims {
		if !isWindow[a] {
			batchUpSt = append(batchUpSt, upSt[a])
		}
	}
	inserted := make([]bool, len(operandDims))
	for _, a := range insertedWindowAxes {
		inserted[a] = true
	}
	// Window axis k of the updates lands on the k-th operand axis that is not inserted.
	wDims := make([]int, len(operandDims)) // extent of the window along each operand axis
	var wUpSt, wOpSt, wOpDims []int
	k := 0
	for a := range operandDims {
		wDims[a] = 1
		if inserted[a] {
			continue
		}
		ua := updateWindowAxes[k]
		k++
		wDims[a] = updatesDims[ua]
		wUpSt, wOpSt, wOpDims = append(wUpSt, upSt[ua]), append(wOpSt, opSt[a]), append(wOpDims, updatesDims[ua])
	}
	wIdx := make([]int, len(wOpDims))
	nWin := product(wOpDims)
	start := make([]int, len(operandDims))
	batchIter(indicesDims, indexVectorAxis, func(batch []int, off int) {
		clear(start)
		for k, a := range scatterAxesToOperandAxes {
			start[a] = indices[off+k*vecStride]
		}
		dst := 0
		for a := range operandDims {
			if start[a] < 0 || start[a]+wDims[a] > operandDims[a] {
				return
			}
			dst += start[a] * opSt[a]
		}
		src := 0
		for k, v := range batch {
			src += v * batchUpSt[k]
		}
		clear(wIdx)
		for range nWin {
			so, do := src, dst
			for k, v := range wIdx {
				so += v * wUpSt[k]
				do += v * wOpSt[k]
			}
			switch kind {
			case scatterSum:
				operand[do] += updates[so]
			case scatterMax:
				operand[do] = max(operand[do], updates[so])
			case scatterMin:
				operand[do] = min(operand[do], updates[so])
			}
			for k := len(wIdx) - 1; k >= 0; k-- {
				wIdx[k]++
				if wIdx[k] < wOpDims[k] {
					break
				}
				wIdx[k] = 0
			}
		}
	})
}
