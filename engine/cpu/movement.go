package cpu

// movement.go: the data-movement kernels of the cpu backend (transpose, broadcast, slice,
// concatenate, pad, reverse, gather, scatter, dynamic slices) as plain functions over raw
// row-major buffers, kept apart from the op lowering so that they can be tested (and tuned)
// against GoMLX's simplego backend on their own.
//
// Almost all of them are strided walks: the element at multi-index i of an iteration space
// moves from src[srcOff + Σ i_k·srcStride_k] to dst[dstOff + Σ i_k·dstStride_k]. Before walking,
// size-1 axes are dropped and neighbouring axes that stay contiguous in both buffers are merged
// (mvSimplify), so that the innermost axis is as long as possible; when it is contiguous on both
// sides it moves with one copy (memmove) per run. Everything else is typed per element size, so
// an element moves as one load and one store. Transposes that move the innermost axis go through
// cache tiles. Gather and scatter plan their window once per call and only compute the start
// offset per index vector; whole-row gathers and scatters (an embedding lookup, its scatter-add
// gradient, a KV cache row update) are one clamp or bounds check plus one row copy or add per index.
//
// Out-of-range indices follow XLA: gather and dynamic slices clamp the start so that the slice
// fits; scatter skips an update whose window does not fit entirely.

import (
	"slices"
	"unsafe"

	"github.com/gomlx/gomlx/backends"
	"github.com/posformer/posformer/engine/cpu/kernels"
)

// mvStack: ranks up to this many axes use stack scratch space (no allocation per call).
const mvStack = 8

// mvTileSize is the side of the square tiles used by transposes.
const mvTileSize = 32

// mvE16 stands for a 16-byte element (complex128).
type mvE16 [2]uint64

// product returns the number of elements of dims.
func product(dims []int) int {
	n := 1
	for _, d := range dims {
		n *= d
	}
	return n
}

// mvStrides writes the row-major strides (in elements) of dims into st and returns it.
func mvStrides(st, dims []int) []int {
	s := 1
	for i := len(dims) - 1; i >= 0; i-- {
		st[i] = s
		s *= dims[i]
	}
	return st
}

// mvInts returns a zeroed slice of n ints, using buf when it is large enough.
func mvInts(buf []int, n int) []int {
	if n <= cap(buf) {
		s := buf[:n]
		clear(s)
		return s
	}
	return make([]int, n)
}

// mvView reinterprets raw bytes as elements of type T.
func mvView[T any](b []byte) []T {
	if len(b) == 0 {
		return nil
	}
	var z T
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/int(unsafe.Sizeof(z)))
}

// mvAxes is a simplified iteration space: extents dims, with strides a (destination) and b
// (source), in elements. The last axis is the innermost.
type mvAxes struct {
	dims, a, b []int
}

// mvSimplify builds the iteration space over dims with strides a and b, dropping size-1 axes and
// merging an axis into the previous one when both walks are contiguous across them. buf is
// scratch space (3·len(dims) ints are used when it is large enough). ok is false when the space is
// empty.
func mvSimplify(buf []int, dims, a, b []int) (ax mvAxes, ok bool) {
	n := len(dims)
	if cap(buf) < 3*n {
		buf = make([]int, 3*n)
	}
	buf = buf[:3*n]
	d, sa, sb := buf[0:0:n], buf[n:n:2*n], buf[2*n:2*n:3*n]
	for k, m := range dims {
		if m == 0 {
			return mvAxes{}, false
		}
		if m == 1 {
			continue
		}
		if j := len(d) - 1; j >= 0 && sa[j] == a[k]*m && sb[j] == b[k]*m {
			d[j] *= m
			sa[j], sb[j] = a[k], b[k]
			continue
		}
		d, sa, sb = append(d, m), append(sa, a[k]), append(sb, b[k])
	}
	return mvAxes{d, sa, sb}, true
}

// inner returns the innermost axis (extent 1 with zero strides when there is none).
func (ax *mvAxes) inner() (n, a, b int) {
	if l := len(ax.dims) - 1; l >= 0 {
		return ax.dims[l], ax.a[l], ax.b[l]
	}
	return 1, 0, 0
}

// outer calls fn with the offsets of every position of all axes but the innermost (once when
// there are none).
func (ax *mvAxes) outer(aOff, bOff int, fn func(aOff, bOff int)) {
	ax.walk(0, len(ax.dims)-1, aOff, bOff, fn)
}

// each calls fn with the offsets of every position of the space.
func (ax *mvAxes) each(aOff, bOff int, fn func(aOff, bOff int)) {
	ax.walk(0, len(ax.dims), aOff, bOff, fn)
}

func (ax *mvAxes) walk(k, end, aOff, bOff int, fn func(aOff, bOff int)) {
	if k >= end {
		fn(aOff, bOff)
		return
	}
	n, sa, sb := ax.dims[k], ax.a[k], ax.b[k]
	if k == end-1 {
		for range n {
			fn(aOff, bOff)
			aOff += sa
			bOff += sb
		}
		return
	}
	for range n {
		ax.walk(k+1, end, aOff, bOff, fn)
		aOff += sa
		bOff += sb
	}
}

// mvCopy copies, for every multi-index i of dims, src[sOff + Σ i_k·sb_k] to dst[dOff + Σ i_k·da_k]
// (offsets and strides in elements of es bytes).
func mvCopy(es int, dst []byte, dOff int, da []int, src []byte, sOff int, sb []int, dims []int) {
	switch es {
	case 1:
		mvCopyT(dst, dOff, da, src, sOff, sb, dims)
	case 2:
		mvCopyT(mvView[uint16](dst), dOff, da, mvView[uint16](src), sOff, sb, dims)
	case 4:
		mvCopyT(mvView[uint32](dst), dOff, da, mvView[uint32](src), sOff, sb, dims)
	case 8:
		mvCopyT(mvView[uint64](dst), dOff, da, mvView[uint64](src), sOff, sb, dims)
	case 16:
		mvCopyT(mvView[mvE16](dst), dOff, da, mvView[mvE16](src), sOff, sb, dims)
	default:
		panic("cpu: data movement of elements of unsupported size")
	}
}

func mvCopyT[T any](dst []T, dOff int, da []int, src []T, sOff int, sb []int, dims []int) {
	var buf [3 * mvStack]int
	ax, ok := mvSimplify(buf[:0], dims, da, sb)
	if ok {
		mvRun(dst, dOff, src, sOff, &ax)
	}
}

// mvRun executes the (simplified) copy plan ax.
func mvRun[T any](dst []T, dOff int, src []T, sOff int, ax *mvAxes) {
	n, ai, bi := ax.inner()
	switch {
	case ai == 1 && bi == 1:
		ax.outer(dOff, sOff, func(d, s int) { copy(dst[d:d+n], src[s:s+n]) })
		return
	case ai == 1 && bi == 0:
		ax.outer(dOff, sOff, func(d, s int) { mvFill(dst[d:d+n], src[s]) })
		return
	case ai == 1:
		// The destination is contiguous along the innermost axis but the source is not: if the
		// source is contiguous along another axis, this is a transpose, done in tiles.
		if q := slices.Index(ax.b[:len(ax.b)-1], 1); q >= 0 && ax.dims[q] > 1 {
			mvTiled(dst, dOff, src, sOff, ax, q)
			return
		}
		ax.outer(dOff, sOff, func(d, s int) {
			r := dst[d : d+n]
			for i := range r {
				r[i] = src[s]
				s += bi
			}
		})
		return
	}
	ax.outer(dOff, sOff, func(d, s int) {
		for range n {
			dst[d] = src[s]
			d += ai
			s += bi
		}
	})
}

// mvTiled runs a plan whose innermost axis is contiguous in the destination only, and whose axis q
// is contiguous in the source only, as 2-D tiled transposes over those two axes.
func mvTiled[T any](dst []T, dOff int, src []T, sOff int, ax *mvAxes, q int) {
	var buf [3 * mvStack]int
	r := len(ax.dims) - 2 // the other axes
	st := mvInts(buf[:], 3*r)
	rest := mvAxes{st[:0:r], st[r : r : 2*r], st[2*r : 2*r : 3*r]}
	for k := range len(ax.dims) - 1 {
		if k != q {
			rest.dims, rest.a, rest.b = append(rest.dims, ax.dims[k]), append(rest.a, ax.a[k]), append(rest.b, ax.b[k])
		}
	}
	n0, da0 := ax.dims[q], ax.a[q]
	n1, _, sb1 := ax.inner()
	rest.each(dOff, sOff, func(d, s int) {
		for i0 := 0; i0 < n0; i0 += mvTileSize {
			i1 := min(i0+mvTileSize, n0)
			for j0 := 0; j0 < n1; j0 += mvTileSize {
				j1 := min(j0+mvTileSize, n1)
				i := i0
				// Four destination rows at a time: their source elements are adjacent.
				for ; i+4 <= i1; i += 4 {
					r0 := dst[d+i*da0+j0 : d+i*da0+j1]
					r1 := dst[d+(i+1)*da0+j0 : d+(i+1)*da0+j1]
					r2 := dst[d+(i+2)*da0+j0 : d+(i+2)*da0+j1]
					r3 := dst[d+(i+3)*da0+j0 : d+(i+3)*da0+j1]
					r1, r2, r3 = r1[:len(r0)], r2[:len(r0)], r3[:len(r0)]
					p := s + i + j0*sb1
					for j := range r0 {
						c := src[p : p+4]
						r0[j], r1[j], r2[j], r3[j] = c[0], c[1], c[2], c[3]
						p += sb1
					}
				}
				for ; i < i1; i++ {
					row := dst[d+i*da0+j0 : d+i*da0+j1]
					p := s + i + j0*sb1
					for j := range row {
						row[j] = src[p]
						p += sb1
					}
				}
			}
		}
	})
}

// mvReplicate fills buf with copies of its first unit elements, doubling the copied span.
func mvReplicate[T any](buf []T, unit int) {
	for k := unit; k < len(buf); k *= 2 {
		copy(buf[k:], buf[:k])
	}
}

// mvFill sets every element of r to v.
func mvFill[T any](r []T, v T) {
	if len(r) <= 32 {
		for i := range r {
			r[i] = v
		}
		return
	}
	r[0] = v
	mvReplicate(r, 1)
}

func transposeBytes(elemSize int, in []byte, inDims []int, perm []int, out []byte) {
	if len(out) == 0 {
		return
	}
	// When the axes longer than 1 keep their order, the bytes do not move.
	last, moves := -1, false
	for _, p := range perm {
		if inDims[p] != 1 {
			moves = moves || p < last
			last = p
		}
	}
	if !moves {
		n := product(inDims) * elemSize
		copy(out[:n], in[:n])
		return
	}
	n := len(perm)
	var buf [3 * mvStack]int
	st := mvInts(buf[:], 3*n)
	ist, dims, ss := mvStrides(st[:n], inDims), st[n:2*n], st[2*n:]
	for i, p := range perm {
		dims[i], ss[i] = inDims[p], ist[p]
	}
	var obuf [mvStack]int
	mvCopy(elemSize, out, 0, mvStrides(mvInts(obuf[:], n), dims), in, 0, ss, dims)
}

func broadcastInDimBytes(elemSize int, in []byte, inDims []int, outDims []int, broadcastAxes []int, out []byte) {
	switch elemSize {
	case 1:
		mvBroadcastT(in, inDims, outDims, broadcastAxes, out)
	case 2:
		mvBroadcastT(mvView[uint16](in), inDims, outDims, broadcastAxes, mvView[uint16](out))
	case 4:
		mvBroadcastT(mvView[uint32](in), inDims, outDims, broadcastAxes, mvView[uint32](out))
	case 8:
		mvBroadcastT(mvView[uint64](in), inDims, outDims, broadcastAxes, mvView[uint64](out))
	case 16:
		mvBroadcastT(mvView[mvE16](in), inDims, outDims, broadcastAxes, mvView[mvE16](out))
	default:
		panic("cpu: data movement of elements of unsupported size")
	}
}

func mvBroadcastT[T any](in []T, inDims []int, outDims []int, broadcastAxes []int, out []T) {
	if len(out) == 0 {
		return
	}
	n := len(outDims)
	var buf, sbuf [3 * mvStack]int
	st := mvInts(buf[:], 2*n+len(inDims))
	ost, ss, ist := mvStrides(st[:n], outDims), st[n:2*n], mvStrides(st[2*n:], inDims)
	for i, a := range broadcastAxes {
		if inDims[i] != 1 {
			ss[a] = ist[i]
		}
	}
	ax, _ := mvSimplify(sbuf[:0], outDims, ost, ss)
	if len(ax.dims) == 0 {
		out[0] = in[0]
		return
	}
	mvBroadcastLevel(out, in, &ax, 0, 0, 0)
}

// mvBroadcastLevel fills the block of the output at offset d for axis k onwards. Axes the source
// does not move along (stride 0) are produced once and then replicated with block copies.
func mvBroadcastLevel[T any](dst, src []T, ax *mvAxes, k, d, s int) {
	n, sa, sb := ax.dims[k], ax.a[k], ax.b[k]
	if k == len(ax.dims)-1 {
		r := dst[d : d+n]
		switch sb {
		case 0:
			mvFill(r, src[s])
		case 1:
			copy(r, src[s:s+n])
		default:
			for i := range r {
				r[i] = src[s]
				s += sb
			}
		}
		return
	}
	if sb == 0 {
		mvBroadcastLevel(dst, src, ax, k+1, d, s)
		mvReplicate(dst[d:d+n*sa], sa)
		return
	}
	for range n {
		mvBroadcastLevel(dst, src, ax, k+1, d, s)
		d += sa
		s += sb
	}
}

func sliceBytes(elemSize int, in []byte, inDims, starts, limits, strides []int, out []byte) {
	if len(out) == 0 {
		return
	}
	n := len(inDims)
	var buf [4 * mvStack]int
	st := mvInts(buf[:], 4*n)
	ist, dims, ss, ost := mvStrides(st[:n], inDims), st[n:2*n], st[2*n:3*n], st[3*n:]
	off := 0
	for i := range inDims {
		dims[i] = max(0, (limits[i]-starts[i]+strides[i]-1)/strides[i])
		ss[i] = ist[i] * strides[i]
		off += starts[i] * ist[i]
	}
	mvCopy(elemSize, out, 0, mvStrides(ost, dims), in, off, ss, dims)
}

func concatenateBytes(elemSize int, ins [][]byte, insDims [][]int, axis int, out []byte) {
	if len(out) == 0 {
		return
	}
	n := len(insDims[0])
	var buf [3 * mvStack]int
	st := mvInts(buf[:], 3*n)
	outDims, ost, ist := st[:n], st[n:2*n], st[2*n:]
	copy(outDims, insDims[0])
	outDims[axis] = 0
	for _, d := range insDims {
		outDims[axis] += d[axis]
	}
	mvStrides(ost, outDims)
	at := 0
	for i, in := range ins {
		mvCopy(elemSize, out, at*ost[axis], ost, in, 0, mvStrides(ist, insDims[i]), insDims[i])
		at += insDims[i][axis]
	}
}

func padBytes(elemSize int, in []byte, inDims []int, fill []byte, axes []backends.PadAxis, out []byte, outDims []int) {
	if len(out) == 0 {
		return
	}
	// Fill everything, then copy the operand's elements that land inside the output.
	out = out[:product(outDims)*elemSize]
	copy(out, fill[:elemSize])
	mvReplicate(out, elemSize)
	n := len(inDims)
	var buf [5 * mvStack]int
	st := mvInts(buf[:], 5*n)
	ist, ost, dims, ss, ds := mvStrides(st[:n], inDims), mvStrides(st[n:2*n], outDims), st[2*n:3*n], st[3*n:4*n], st[4*n:]
	srcOff, dstOff := 0, 0
	for k, m := range inDims {
		var p backends.PadAxis
		if k < len(axes) {
			p = axes[k]
		}
		step := p.Interior + 1
		// Input index i lands at output position p.Start + i·step; keep those in [0, outDims[k]).
		lo := 0
		if p.Start < 0 {
			lo = (-p.Start + step - 1) / step
		}
		last := outDims[k] - 1 - p.Start
		if last < 0 {
			return
		}
		hi := min(m, last/step+1)
		if hi <= lo {
			return
		}
		dims[k] = hi - lo
		ss[k], ds[k] = ist[k], ost[k]*step
		srcOff += lo * ist[k]
		dstOff += (p.Start + lo*step) * ost[k]
	}
	mvCopy(elemSize, out, dstOff, ds, in, srcOff, ss, dims)
}

func reverseBytes(elemSize int, in []byte, inDims []int, axes []int, out []byte) {
	if len(out) == 0 {
		return
	}
	n := len(inDims)
	var buf [2 * mvStack]int
	st := mvInts(buf[:], 2*n)
	ist, ss := mvStrides(st[:n], inDims), st[n:]
	copy(ss, ist)
	off := 0
	for _, a := range axes {
		if ss[a] > 0 { // an axis listed twice is reversed once
			ss[a] = -ist[a]
			off += (inDims[a] - 1) * ist[a]
		}
	}
	mvCopy(elemSize, out, 0, ist, in, off, ss, inDims)
}

func dynamicSliceBytes(elemSize int, in []byte, inDims []int, starts []int, sizes []int, out []byte) {
	if len(out) == 0 {
		return
	}
	n := len(inDims)
	var buf [2 * mvStack]int
	st := mvInts(buf[:], 2*n)
	ist, ost := mvStrides(st[:n], inDims), mvStrides(st[n:], sizes)
	off := 0
	for i := range inDims {
		off += min(max(starts[i], 0), inDims[i]-sizes[i]) * ist[i]
	}
	mvCopy(elemSize, out, 0, ost, in, off, ist, sizes)
}

func dynamicUpdateSliceBytes(elemSize int, operand []byte, dims []int, update []byte, updateDims []int, starts []int) {
	if len(update) == 0 {
		return
	}
	n := len(dims)
	var buf [2 * mvStack]int
	st := mvInts(buf[:], 2*n)
	ost, ust := mvStrides(st[:n], dims), mvStrides(st[n:], updateDims)
	off := 0
	for i := range dims {
		off += min(max(starts[i], 0), dims[i]-updateDims[i]) * ost[i]
	}
	mvCopy(elemSize, operand, off, ost, update, 0, ust, updateDims)
}

// mvBatchAxes lists, for the indices' batch axes in order, their extents and strides into indices
// (into dims and ib), and the strides of the matching axes (the non-window axes of other, in order)
// into ia. It returns the index vector stride.
func mvBatchAxes(indicesDims []int, indexVectorAxis int, otherStrides []int, isWindow func(int) bool,
	dims, ia, ib []int) (vecStride int) {
	s, j := 1, len(indicesDims)-1
	for k := len(indicesDims) - 1; k >= 0; k-- {
		if k == indexVectorAxis {
			vecStride = s
		} else {
			dims[j], ib[j] = indicesDims[k], s
			j--
		}
		s *= indicesDims[k]
	}
	if indexVectorAxis < len(indicesDims) {
		// One fewer batch axis than indices axes: shift the batch axes down.
		copy(dims, dims[1:])
		copy(ib, ib[1:])
	}
	j = 0
	for a, st := range otherStrides {
		if !isWindow(a) {
			ia[j] = st
			j++
		}
	}
	return vecStride
}

// mvWholeRows reports whether a gather or scatter moves whole sub-tensors operand[i, ...] (each
// rowSize elements) along axis 0, one per index, the index vector being of size 1 and last (or
// implicit), and the rows landing (or coming from) the trailing axes of the output (or updates),
// so that index i goes with row i of the output (updates). windowDims are the extents of the
// window along the operand's axes 1...; windowAxes are the output's offset axes (the updates'
// window axes), and outRank the output's (updates') rank.
func mvWholeRows(operandDims, indicesDims []int, indexVectorAxis int, droppedAxes, indexMap, windowAxes,
	windowDims []int, outRank int) (rowSize int, ok bool) {
	r := len(indicesDims)
	if len(operandDims) == 0 || len(droppedAxes) != 1 || droppedAxes[0] != 0 || len(indexMap) != 1 || indexMap[0] != 0 ||
		!(indexVectorAxis == r || indexVectorAxis == r-1 && indicesDims[r-1] == 1) ||
		len(windowAxes) != len(operandDims)-1 || len(windowDims) != len(windowAxes) {
		return 0, false
	}
	rowSize = 1
	for k, a := range windowAxes {
		if a != outRank-len(windowAxes)+k || windowDims[k] != operandDims[k+1] {
			return 0, false
		}
		rowSize *= windowDims[k]
	}
	return rowSize, true
}

func gatherBytes(elemSize int, operand []byte, operandDims []int, indices []int, indicesDims []int,
	indexVectorAxis int, offsetOutputAxes, collapsedSliceAxes, startIndexMap, sliceSizes []int,
	out []byte, outDims []int) {
	if rowSize, ok := mvWholeRows(operandDims, indicesDims, indexVectorAxis, collapsedSliceAxes, startIndexMap,
		offsetOutputAxes, sliceSizes[1:], len(outDims)); ok {
		// An embedding lookup: whole sub-tensors along axis 0, in the order of the indices.
		n, last := rowSize*elemSize, operandDims[0]-1
		if n == 4 {
			// Single float32 or int32 elements (Shaw's relative table picked per query-key pair):
			// a copy call per 4 bytes cost more than the move.
			src, dst := mvView[uint32](operand), mvView[uint32](out)[:len(indices)]
			for i, v := range indices {
				dst[i] = src[min(max(v, 0), last)]
			}
			return
		}
		for i, v := range indices {
			s := min(max(v, 0), last) * n
			copy(out[i*n:(i+1)*n], operand[s:s+n])
		}
		return
	}
	switch elemSize {
	case 1:
		mvGatherT(operand, operandDims, indices, indicesDims, indexVectorAxis, offsetOutputAxes,
			collapsedSliceAxes, startIndexMap, sliceSizes, out, outDims)
	case 2:
		mvGatherT(mvView[uint16](operand), operandDims, indices, indicesDims, indexVectorAxis, offsetOutputAxes,
			collapsedSliceAxes, startIndexMap, sliceSizes, mvView[uint16](out), outDims)
	case 4:
		mvGatherT(mvView[uint32](operand), operandDims, indices, indicesDims, indexVectorAxis, offsetOutputAxes,
			collapsedSliceAxes, startIndexMap, sliceSizes, mvView[uint32](out), outDims)
	case 8:
		mvGatherT(mvView[uint64](operand), operandDims, indices, indicesDims, indexVectorAxis, offsetOutputAxes,
			collapsedSliceAxes, startIndexMap, sliceSizes, mvView[uint64](out), outDims)
	case 16:
		mvGatherT(mvView[mvE16](operand), operandDims, indices, indicesDims, indexVectorAxis, offsetOutputAxes,
			collapsedSliceAxes, startIndexMap, sliceSizes, mvView[mvE16](out), outDims)
	default:
		panic("cpu: data movement of elements of unsupported size")
	}
}

func mvGatherT[T any](operand []T, operandDims []int, indices []int, indicesDims []int,
	indexVectorAxis int, offsetOutputAxes, collapsedSliceAxes, startIndexMap, sliceSizes []int,
	out []T, outDims []int) {
	if len(out) == 0 {
		return
	}
	rOp, rOut, rIdx := len(operandDims), len(outDims), len(indicesDims)
	var buf [12 * mvStack]int
	st := mvInts(buf[:], 4*rOp+rOut+3*rIdx+2*len(startIndexMap))
	take := func(n int) []int {
		s := st[:n:n]
		st = st[n:]
		return s
	}
	opSt, outSt := mvStrides(take(rOp), operandDims), mvStrides(take(rOut), outDims)

	// The window: the operand's non-collapsed axes, in order, land on the offset output axes.
	wDims, wOut, wOp := take(rOp), take(rOp), take(rOp)
	j := 0
	for a := range operandDims {
		if slices.Contains(collapsedSliceAxes, a) {
			continue
		}
		wDims[j], wOut[j], wOp[j] = sliceSizes[a], outSt[offsetOutputAxes[j]], opSt[a]
		j++
	}
	var wBuf [3 * mvStack]int
	win, ok := mvSimplify(wBuf[:0], wDims[:j], wOut[:j], wOp[:j])
	if !ok {
		return
	}

	nb := rIdx
	if indexVectorAxis < rIdx {
		nb--
	}
	bDims, bOut, bIdx := take(rIdx), take(rIdx), take(rIdx)
	vecStride := mvBatchAxes(indicesDims, indexVectorAxis, outSt,
		func(a int) bool { return slices.Contains(offsetOutputAxes, a) }, bDims, bOut, bIdx)
	var bBuf [3 * mvStack]int
	batch, ok := mvSimplify(bBuf[:0], bDims[:nb], bOut[:nb], bIdx[:nb])
	if !ok {
		return
	}
	kSt, kLim := take(len(startIndexMap)), take(len(startIndexMap))
	for k, a := range startIndexMap {
		kSt[k], kLim[k] = opSt[a], operandDims[a]-sliceSizes[a]
	}

	n, ai, bi := win.inner()
	if len(win.dims) <= 1 && ai <= 1 && bi <= 1 {
		// The window is one contiguous run (whole rows, e.g. an embedding lookup) or one element.
		if len(startIndexMap) == 1 {
			st0, lim0 := kSt[0], kLim[0]
			batch.each(0, 0, func(d, x int) {
				s := min(max(indices[x], 0), lim0) * st0
				copy(out[d:d+n], operand[s:s+n])
			})
			return
		}
		batch.each(0, 0, func(d, x int) {
			s := 0
			for k, ks := range kSt {
				s += min(max(indices[x+k*vecStride], 0), kLim[k]) * ks
			}
			copy(out[d:d+n], operand[s:s+n])
		})
		return
	}
	batch.each(0, 0, func(d, x int) {
		s := 0
		for k, ks := range kSt {
			s += min(max(indices[x+k*vecStride], 0), kLim[k]) * ks
		}
		mvRun(out, d, operand, s, &win)
	})
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

// scatterRowSize reports whether a scatter combines whole rows of the operand (along axis 0),
// index i with update row i, and the size of a row.
func scatterRowSize(operandDims, indicesDims, updatesDims []int, indexVectorAxis int, updateWindowAxes, insertedWindowAxes,
	scatterAxesToOperandAxes []int) (int, bool) {
	if len(updateWindowAxes) != len(operandDims)-1 || len(updatesDims) < len(updateWindowAxes) {
		return 0, false
	}
	var wBuf [mvStack]int
	w := mvInts(wBuf[:], len(updateWindowAxes))
	for k, a := range updateWindowAxes {
		w[k] = updatesDims[a]
	}
	return mvWholeRows(operandDims, indicesDims, indexVectorAxis, insertedWindowAxes, scatterAxesToOperandAxes,
		updateWindowAxes, w, len(updatesDims))
}

// addSingles adds updates[i] into operand[indices[i]] (rows elements; indices out of range are
// skipped), with no call per element. Runs of one index (Shaw's clipped distances: every key
// past the window adds into the edge bucket) are summed in a register: adding into memory one
// after another waits on the store before each load.
func addSingles[T scatterNumber, I int | int32](operand []T, rows int, indices []I, updates []T) {
	updates = updates[:len(indices)]
	for i := 0; i < len(indices); {
		v, sum := indices[i], updates[i]
		for i++; i < len(indices) && indices[i] == v; i++ {
			sum += updates[i]
		}
		if v >= 0 && int(v) < rows {
			operand[v] += sum
		}
	}
}

// scatterInto combines updates into operand, in place. As in XLA, an update whose window would not
// lie entirely inside the operand at its (unclamped) start indices is skipped whole.
func scatterInto[T scatterNumber](kind scatterKind, operand []T, operandDims []int, indices []int, indicesDims []int,
	updates []T, updatesDims []int, indexVectorAxis int, updateWindowAxes, insertedWindowAxes, scatterAxesToOperandAxes []int) {
	if len(updates) == 0 || len(operand) == 0 {
		return
	}
	if n, ok := scatterRowSize(operandDims, indicesDims, updatesDims, indexVectorAxis, updateWindowAxes, insertedWindowAxes,
		scatterAxesToOperandAxes); ok && n == 1 && kind == scatterSum {
		addSingles(operand, operandDims[0], indices, updates) // the gradient of a one-element gather
		return
	}
	scatterWalk(operandDims, indices, indicesDims, updatesDims, indexVectorAxis, updateWindowAxes, insertedWindowAxes,
		scatterAxesToOperandAxes, numberRuns[T]{kind, operand, updates})
}

// scatterRuns combines runs of n updates (from u by steps of bi) into the operand (from o by
// steps of ai), for scatterWalk.
type scatterRuns interface {
	run(o, u, n, ai, bi int)
}

// numberRuns combines with T's own arithmetic.
type numberRuns[T scatterNumber] struct {
	kind             scatterKind
	operand, updates []T
}

func (r numberRuns[T]) run(o, u, n, ai, bi int) {
	if ai == 1 && bi == 1 {
		mvCombine(r.kind, r.operand[o:o+n], r.updates[u:u+n])
		return
	}
	for range n {
		switch r.kind {
		case scatterSum:
			r.operand[o] += r.updates[u]
		case scatterMax:
			r.operand[o] = max(r.operand[o], r.updates[u])
		case scatterMin:
			r.operand[o] = min(r.operand[o], r.updates[u])
		}
		o += ai
		u += bi
	}
}

// halfRuns combines float16 or bfloat16 values (their bits) in float32, rounded back as
// ConvertDType rounds: a KV cache kept in half precision. A sum into an empty slot (+0) is the
// update itself, copied without the round trip (but -0, which +0 + -0 turns into +0).
type halfRuns struct {
	kind             scatterKind
	operand, updates []uint16
	widen            func(uint16) float32
	narrow           func(float32) uint16
}

func (r halfRuns) run(o, u, n, ai, bi int) {
	for range n {
		a, b := r.operand[o], r.updates[u]
		switch {
		case r.kind == scatterSum && a == 0 && b != 0x8000:
			r.operand[o] = b
		case r.kind == scatterSum:
			r.operand[o] = r.narrow(r.widen(a) + r.widen(b))
		case r.kind == scatterMax:
			r.operand[o] = r.narrow(max(r.widen(a), r.widen(b)))
		case r.kind == scatterMin:
			r.operand[o] = r.narrow(min(r.widen(a), r.widen(b)))
		}
		o += ai
		u += bi
	}
}

// scatterWalk finds, for every update window inside the operand, the runs of elements it
// combines, and hands each run to r (an update window outside the operand is skipped whole).
func scatterWalk[R scatterRuns](operandDims []int, indices []int, indicesDims []int, updatesDims []int, indexVectorAxis int,
	updateWindowAxes, insertedWindowAxes, scatterAxesToOperandAxes []int, r R) {
	if n, ok := scatterRowSize(operandDims, indicesDims, updatesDims, indexVectorAxis, updateWindowAxes, insertedWindowAxes,
		scatterAxesToOperandAxes); ok {
		// Rows into a table (an embedding's gradient, a KV cache row): index i goes with update row i.
		rows := operandDims[0]
		for i, v := range indices {
			if v >= 0 && v < rows {
				r.run(v*n, i*n, n, 1, 1)
			}
		}
		return
	}
	rOp, rUp, rIdx := len(operandDims), len(updatesDims), len(indicesDims)
	var buf [12 * mvStack]int
	st := mvInts(buf[:], 5*rOp+rUp+3*rIdx+2*len(scatterAxesToOperandAxes))
	take := func(n int) []int {
		s := st[:n:n]
		st = st[n:]
		return s
	}
	opSt, upSt := mvStrides(take(rOp), operandDims), mvStrides(take(rUp), updatesDims)

	// The window: update window axis j lands on the j-th operand axis that is not inserted.
	ext, wDims, wOp, wUp := take(rOp), take(rOp), take(rOp), take(rOp)
	j := 0
	for a := range operandDims {
		ext[a] = 1
		if slices.Contains(insertedWindowAxes, a) {
			continue
		}
		ua := updateWindowAxes[j]
		ext[a] = updatesDims[ua]
		wDims[j], wOp[j], wUp[j] = updatesDims[ua], opSt[a], upSt[ua]
		j++
	}
	var wBuf [3 * mvStack]int
	win, ok := mvSimplify(wBuf[:0], wDims[:j], wOp[:j], wUp[:j])
	if !ok {
		return
	}

	nb := rIdx
	if indexVectorAxis < rIdx {
		nb--
	}
	bDims, bUp, bIdx := take(rIdx), take(rIdx), take(rIdx)
	vecStride := mvBatchAxes(indicesDims, indexVectorAxis, upSt,
		func(a int) bool { return slices.Contains(updateWindowAxes, a) }, bDims, bUp, bIdx)
	var bBuf [3 * mvStack]int
	batch, ok := mvSimplify(bBuf[:0], bDims[:nb], bUp[:nb], bIdx[:nb])
	if !ok {
		return
	}
	kSt, kLim := take(len(scatterAxesToOperandAxes)), take(len(scatterAxesToOperandAxes))
	for k, a := range scatterAxesToOperandAxes {
		kSt[k], kLim[k] = opSt[a], operandDims[a]-ext[a]
	}

	n, ai, bi := win.inner()
	entries := 1
	for _, d := range batch.dims {
		entries *= d
	}
	if nr, ok := any(r).(numberRuns[float32]); ok && nr.kind == scatterSum && ai > 1 && bi == 1 && n >= 8 && entries >= 8 {
		// A transposing sum (a prompt's keys [heads, tokens, dim] into a cache kept [heads,
		// dim, slots]): window element by element, every index's value at once, so that the
		// writes of consecutive slots are consecutive. Index by index, each token's writes
		// stride the cache by a whole row of slots, a power of two of bytes that maps them onto
		// a few cache sets: three times slower at 1,024 slots than at 600.
		bases := make([][2]int, 0, entries)
		batch.each(0, 0, func(u, x int) {
			if o, ok := scatterBase(indices, x, vecStride, kSt, kLim); ok {
				bases = append(bases, [2]int{o, u})
			}
		})
		// Eight window elements at a time: eight indices whose slots are consecutive and whose
		// updates are equally spaced (a prompt's tokens into empty slots) are an 8×8 block
		// transposed in registers (kernels.TransposeAdd8); any other index's eight updates are
		// one read, its eight rows of slots written side by side. One element at a time, every
		// index's updates had been a line read again for each of its elements.
		block := make([]bool, len(bases)) // bases i..i+7 make a block
		for i := 0; i+8 <= len(bases); i++ {
			b, u := bases[i], bases[i+1][1]-bases[i][1]
			block[i] = u >= 8 && ai >= 8
			for k := 1; k < 8 && block[i]; k++ {
				block[i] = bases[i+k][0] == b[0]+k && bases[i+k][1] == b[1]+k*u
			}
		}
		op, up := nr.operand, nr.updates
		win.outer(0, 0, func(wo, wu int) {
			j := 0
			for ; j+8 <= n; j += 8 {
				oj, uj := wo+j*ai, wu+j
				for i := 0; i < len(bases); {
					b := bases[i]
					if block[i] {
						kernels.TransposeAdd8(op[b[0]+oj:], ai, up[b[1]+uj:], bases[i+1][1]-b[1])
						i += 8
						continue
					}
					u, o := up[b[1]+uj:b[1]+uj+8], b[0]+oj
					for k, v := range u {
						op[o+k*ai] += v
					}
					i++
				}
			}
			for ; j < n; j++ {
				oj, uj := wo+j*ai, wu+j
				for _, b := range bases {
					op[b[0]+oj] += up[b[1]+uj]
				}
			}
		})
		return
	}
	batch.each(0, 0, func(u, x int) {
		o, ok := scatterBase(indices, x, vecStride, kSt, kLim)
		if !ok {
			return
		}
		// The window is one contiguous run (whole rows: an embedding gradient, a KV cache row),
		// one element, or runs along its innermost axis.
		win.outer(o, u, func(o, u int) { r.run(o, u, n, ai, bi) })
	})
}

// scatterBase is the operand offset of the window that the index vector at x (components
// vecStride apart) selects, and false when a component is out of range (that window is skipped).
func scatterBase(indices []int, x, vecStride int, kSt, kLim []int) (int, bool) {
	o := 0
	for k, ks := range kSt {
		v := indices[x+k*vecStride]
		if v < 0 || v > kLim[k] {
			return 0, false
		}
		o += v * ks
	}
	return o, true
}

// mvCombine combines the run u into the run o (same length).
func mvCombine[T scatterNumber](kind scatterKind, o, u []T) {
	u = u[:len(o)]
	switch kind {
	case scatterSum:
		for i := range o {
			o[i] += u[i]
		}
	case scatterMax:
		for i := range o {
			o[i] = max(o[i], u[i])
		}
	case scatterMin:
		for i := range o {
			o[i] = min(o[i], u[i])
		}
	}
}
