package cpu

// movementops.go: the lowerings of the data-movement ops (transpose, broadcast, slice, concatenate,
// pad, reverse, gather, scatter, dynamic slices): each reads its attributes once at compile time
// and returns a step that calls the kernel of movement.go on the frame's buffers.

import (
	"fmt"
	"math"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/posformer/posformer/layers/quant"
)

func elemSize(n *node) int { return n.shape.DType.Size() }

func lowerTranspose(lw *lowering) (stepFn, error) {
	in := lw.n.inputs[0]
	perm := lw.n.attr.([]int)
	size, dims, ia, io := elemSize(in), in.shape.Dimensions, lw.in[0], lw.out
	if len(dims) > 1 && perm[0] == 0 && dims[0] > 1 && in.shape.Size() >= 2*elementwiseGrain {
		// A leading axis kept in place: its items are independent transposes.
		item, rest, sub := in.shape.Size()/dims[0]*size, dims[1:], withoutLeading(perm)
		return perLeadingItem(lw, size, dims[0], item, item, func(src, dst []byte) { transposeBytes(size, src, rest, sub, dst) }), nil
	}
	return func(f *frame) { transposeBytes(size, f.slots[ia], dims, perm, f.slots[io]) }, nil
}

func lowerBroadcast(lw *lowering) (stepFn, error) {
	in := lw.n.inputs[0]
	axes := lw.n.attr.([]int)
	size, inDims, outDims, ia, io := elemSize(in), in.shape.Dimensions, lw.n.shape.Dimensions, lw.in[0], lw.out
	if len(axes) > 0 && axes[0] == 0 && inDims[0] == outDims[0] && inDims[0] > 1 && lw.n.shape.Size() >= 2*elementwiseGrain {
		// A leading axis kept: each of its items broadcasts on its own.
		d0 := inDims[0]
		subIn, subOut, sub := inDims[1:], outDims[1:], withoutLeading(axes)
		return perLeadingItem(lw, size, d0, in.shape.Size()/d0*size, lw.n.shape.Size()/d0*size, func(src, dst []byte) {
			broadcastInDimBytes(size, src, subIn, subOut, sub, dst)
		}), nil
	}
	return func(f *frame) { broadcastInDimBytes(size, f.slots[ia], inDims, outDims, axes, f.slots[io]) }, nil
}

// perLeadingItem is the step of a move that keeps its leading axis of d0 items in place: each
// item (inItem bytes in, outItem out, elements of size bytes) moves on its own, split across the
// pool, whose threads would otherwise wait while the caller moves data written by all of them.
func perLeadingItem(lw *lowering, size, d0, inItem, outItem int, move func(src, dst []byte)) stepFn {
	pool, ia, io := lw.e.backend.pool, lw.in[0], lw.out
	grain := max(1, elementwiseGrain*size/outItem)
	return func(f *frame) {
		src, dst := f.slots[ia], f.slots[io]
		pool.parallelFor(d0, grain, func(lo, hi int) {
			for b := lo; b < hi; b++ {
				move(src[b*inItem:(b+1)*inItem], dst[b*outItem:(b+1)*outItem])
			}
		})
	}
}

// withoutLeading is axes (a permutation or a broadcast's axes) without its first, axis 0, and
// the others renumbered for an item of that axis.
func withoutLeading(axes []int) []int {
	sub := make([]int, len(axes)-1)
	for i, a := range axes[1:] {
		sub[i] = a - 1
	}
	return sub
}

func lowerSlice(lw *lowering) (stepFn, error) {
	in := lw.n.inputs[0]
	a := lw.n.attr.(*sliceAttr)
	size, dims, ia, io := elemSize(in), in.shape.Dimensions, lw.in[0], lw.out
	return func(f *frame) { sliceBytes(size, f.slots[ia], dims, a.starts, a.limits, a.strides, f.slots[io]) }, nil
}

func lowerConcatenate(lw *lowering) (stepFn, error) {
	axis := lw.n.attr.(int)
	dims := make([][]int, len(lw.n.inputs))
	for i, in := range lw.n.inputs {
		dims[i] = in.shape.Dimensions
	}
	size, ins, io := elemSize(lw.n), lw.in, lw.out
	return func(f *frame) {
		parts := make([][]byte, len(ins))
		for i, s := range ins {
			parts[i] = f.slots[s]
		}
		concatenateBytes(size, parts, dims, axis, f.slots[io])
	}, nil
}

func lowerPad(lw *lowering) (stepFn, error) {
	in := lw.n.inputs[0]
	axes := lw.n.attr.([]backends.PadAxis)
	size, inDims, outDims, ia, iv, io := elemSize(in), in.shape.Dimensions, lw.n.shape.Dimensions, lw.in[0], lw.in[1], lw.out
	return func(f *frame) { padBytes(size, f.slots[ia], inDims, f.slots[iv], axes, f.slots[io], outDims) }, nil
}

func lowerReverse(lw *lowering) (stepFn, error) {
	in := lw.n.inputs[0]
	axes := lw.n.attr.([]int)
	size, dims, ia, io := elemSize(in), in.shape.Dimensions, lw.in[0], lw.out
	return func(f *frame) { reverseBytes(size, f.slots[ia], dims, axes, f.slots[io]) }, nil
}

// indexReader reads integer indices of any integer dtype as ints.
func indexReader(dt dtypes.DType) (func(b []byte, dst []int), error) {
	if dt == dtypes.Int32 { // the usual dtype: no call per index
		return func(b []byte, dst []int) {
			src := typed[int32](b)[:len(dst)]
			for i, v := range src {
				dst[i] = int(v)
			}
		}, nil
	}
	load, err := intLoader(dt)
	if err != nil {
		return nil, fmt.Errorf("backend %s: indices of dtype %s not implemented", BackendName, dt)
	}
	return func(b []byte, dst []int) {
		for i := range dst {
			dst[i] = int(load(b, i))
		}
	}, nil
}

func lowerGather(lw *lowering) (stepFn, error) {
	operand, indices := lw.n.inputs[0], lw.n.inputs[1]
	a := lw.n.attr.(*gatherAttr)
	read, err := indexReader(indices.shape.DType)
	if err != nil {
		return nil, err
	}
	size, opDims, idxDims, outDims := elemSize(operand), operand.shape.Dimensions, indices.shape.Dimensions, lw.n.shape.Dimensions
	ia, ii, io := lw.in[0], lw.in[1], lw.out
	if rowSize, ok := mvWholeRows(opDims, idxDims, a.indexVectorAxis, a.collapsedSliceAxes, a.startIndexMap,
		a.offsetOutputAxes, a.sizes[1:], len(outDims)); ok && rowSize*size == 4 && indices.shape.DType == dtypes.Int32 {
		// Single 4-byte elements picked by int32 indices (Shaw's and DeBERTa's relative terms,
		// one per query-key pair, millions a training step): read the indices as they are
		// instead of widening them all to int in a scratch first.
		last := opDims[0] - 1
		return func(f *frame) {
			idx := typed[int32](f.slots[ii])
			src, dst := typed[uint32](f.slots[ia]), typed[uint32](f.slots[io])[:len(idx)]
			for i, v := range idx {
				dst[i] = src[min(max(int(v), 0), last)]
			}
		}, nil
	}
	is := lw.intScratch(indices.shape.Size())
	return func(f *frame) {
		idx := typed[int](f.slots[is])
		read(f.slots[ii], idx)
		gatherBytes(size, f.slots[ia], opDims, idx, idxDims, a.indexVectorAxis, a.offsetOutputAxes, a.collapsedSliceAxes,
			a.startIndexMap, a.sizes, f.slots[io], outDims)
	}, nil
}

// copyOperand copies input 0 into the output unless they are the same bytes (the op was given a
// donated buffer to update in place).
func copyOperand(f *frame, in, out int) {
	src, dst := f.slots[in], f.slots[out]
	if len(src) > 0 && &src[0] == &dst[0] {
		return
	}
	copy(dst, src)
}

type scatterStep struct{ lw *lowering }

// scatterPlan is what a scatter step takes from its node, whatever its element type: the
// index reader, the combination, the attributes and dimensions, the slots. The operand is
// combined into in place (the donated cache buffer when it is one).
type scatterPlan struct {
	read                    func(b []byte, dst []int)
	kind                    scatterKind
	a                       *scatterAttr
	opDims, idxDims, upDims []int
	ia, ii, iu, io          int
}

func planScatter(lw *lowering) (scatterPlan, error) {
	operand, indices, updates := lw.n.inputs[0], lw.n.inputs[1], lw.n.inputs[2]
	read, err := indexReader(indices.shape.DType)
	if err != nil {
		return scatterPlan{}, err
	}
	kind := map[backends.OpType]scatterKind{
		backends.OpTypeScatterSum: scatterSum, backends.OpTypeScatterMax: scatterMax, backends.OpTypeScatterMin: scatterMin,
	}[lw.n.op]
	lw.inPlaceOperand = true
	return scatterPlan{read, kind, lw.n.attr.(*scatterAttr), operand.shape.Dimensions, indices.shape.Dimensions,
		updates.shape.Dimensions, lw.in[0], lw.in[1], lw.in[2], lw.out}, nil
}

func scatterStepT[T number](lw *lowering) (stepFn, error) {
	p, err := planScatter(lw)
	if err != nil {
		return nil, err
	}
	read, kind, a := p.read, p.kind, p.a
	opDims, idxDims, upDims := p.opDims, p.idxDims, p.upDims
	ia, ii, iu, io := p.ia, p.ii, p.iu, p.io
	indices := lw.n.inputs[1]
	if n, ok := scatterRowSize(opDims, idxDims, upDims, a.indexVectorAxis, a.updateWindowAxes, a.insertedWindowAxes,
		a.scatterAxesToOperandAxes); ok && n == 1 && kind == scatterSum && indices.shape.DType == dtypes.Int32 {
		// The gradient of the single-element gather above: the same int32 indices, read as they
		// are instead of widened to int in a scratch first.
		rows := opDims[0]
		return func(f *frame) {
			copyOperand(f, ia, io)
			addSingles(typed[T](f.slots[io]), rows, typed[int32](f.slots[ii]), typed[T](f.slots[iu]))
		}, nil
	}
	is := lw.intScratch(indices.shape.Size())
	return func(f *frame) {
		copyOperand(f, ia, io)
		idx := typed[int](f.slots[is])
		read(f.slots[ii], idx)
		scatterInto(kind, typed[T](f.slots[io]), opDims, idx, idxDims, typed[T](f.slots[iu]), upDims,
			a.indexVectorAxis, a.updateWindowAxes, a.insertedWindowAxes, a.scatterAxesToOperandAxes)
	}, nil
}

func (s scatterStep) f32() (stepFn, error) { return scatterStepT[float32](s.lw) }

func (s scatterStep) f64() (stepFn, error) { return scatterStepT[float64](s.lw) }

func (s scatterStep) i8() (stepFn, error) { return scatterStepT[int8](s.lw) }

func (s scatterStep) i16() (stepFn, error) { return scatterStepT[int16](s.lw) }

func (s scatterStep) i32() (stepFn, error) { return scatterStepT[int32](s.lw) }

func (s scatterStep) i64() (stepFn, error) { return scatterStepT[int64](s.lw) }

func (s scatterStep) u8() (stepFn, error) { return scatterStepT[uint8](s.lw) }

func (s scatterStep) u16() (stepFn, error) { return scatterStepT[uint16](s.lw) }

func (s scatterStep) u32() (stepFn, error) { return scatterStepT[uint32](s.lw) }

func (s scatterStep) u64() (stepFn, error) { return scatterStepT[uint64](s.lw) }

func lowerScatter(lw *lowering) (stepFn, error) {
	switch lw.n.shape.DType {
	case dtypes.Float16:
		return scatterHalf(lw, quant.F16ToF32, quant.F32ToF16)
	case dtypes.BFloat16:
		// As ConvertDType rounds to bfloat16 (GoMLX's conversion keeps the top half).
		return scatterHalf(lw, quant.BF16ToF32, func(x float32) uint16 { return uint16(math.Float32bits(x) >> 16) })
	}
	return dispatchNumber(lw.n.shape.DType, scatterStep{lw})
}

// scatterHalf is a scatter into float16 or bfloat16 values (a half-precision KV cache being
// written), combined in float32 (halfRuns).
func scatterHalf(lw *lowering, widen func(uint16) float32, narrow func(float32) uint16) (stepFn, error) {
	p, err := planScatter(lw)
	if err != nil {
		return nil, err
	}
	is := lw.intScratch(lw.n.inputs[1].shape.Size())
	return func(f *frame) {
		copyOperand(f, p.ia, p.io)
		idx := typed[int](f.slots[is])
		p.read(f.slots[p.ii], idx)
		if len(f.slots[p.iu]) == 0 || len(f.slots[p.io]) == 0 {
			return
		}
		scatterWalk(p.opDims, idx, p.idxDims, p.upDims, p.a.indexVectorAxis, p.a.updateWindowAxes, p.a.insertedWindowAxes,
			p.a.scatterAxesToOperandAxes, halfRuns{p.kind, typed[uint16](f.slots[p.io]), typed[uint16](f.slots[p.iu]), widen, narrow})
	}, nil
}

// startIndices reads the scalar start indices of a dynamic slice or update.
func startIndices(lw *lowering, first int) (func(f *frame, dst []int), error) {
	var reads []func(b []byte) int
	var slots []int
	for i, in := range lw.n.inputs[first:] {
		load, err := intLoader(in.shape.DType)
		if err != nil {
			return nil, fmt.Errorf("backend %s: start index of dtype %s not implemented", BackendName, in.shape.DType)
		}
		reads = append(reads, func(b []byte) int { return int(load(b, 0)) })
		slots = append(slots, lw.in[first+i])
	}
	return func(f *frame, dst []int) {
		for i, r := range reads {
			dst[i] = r(f.slots[slots[i]])
		}
	}, nil
}

func lowerDynamicSlice(lw *lowering) (stepFn, error) {
	in := lw.n.inputs[0]
	read, err := startIndices(lw, 1)
	if err != nil {
		return nil, err
	}
	size, dims, sizes, ia, io := elemSize(in), in.shape.Dimensions, lw.n.shape.Dimensions, lw.in[0], lw.out
	is := lw.intScratch(len(dims))
	return func(f *frame) {
		starts := typed[int](f.slots[is])
		read(f, starts)
		dynamicSliceBytes(size, f.slots[ia], dims, starts, sizes, f.slots[io])
	}, nil
}

func lowerDynamicUpdateSlice(lw *lowering) (stepFn, error) {
	in, up := lw.n.inputs[0], lw.n.inputs[1]
	read, err := startIndices(lw, 2)
	if err != nil {
		return nil, err
	}
	size, dims, upDims, ia, iu, io := elemSize(in), in.shape.Dimensions, up.shape.Dimensions, lw.in[0], lw.in[1], lw.out
	is := lw.intScratch(len(dims))
	lw.inPlaceOperand = true
	return func(f *frame) {
		copyOperand(f, ia, io)
		starts := typed[int](f.slots[is])
		read(f, starts)
		dynamicUpdateSliceBytes(size, f.slots[io], dims, f.slots[iu], upDims, starts)
	}, nil
}
