package cpu

// Reductions. The reduced axes are brought together (by viewing the input as [outer, R, inner]
// when they are adjacent, else by a transpose into scratch that puts them last), then each
// output is folded over R: rows of a contiguous run when inner is 1, whole rows of inner
// elements otherwise (vectorizable adds for float32 sums).

import (
	"fmt"
	"math"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/posformer/posformer/engine/cpu/kernels"
)

type reducePlan struct {
	outer, r, inner int
	perm            []int // non-nil: transpose the input with it first (into scratch)
	inDims          []int
}

func planReduce(dims, axes []int) reducePlan {
	p := reducePlan{outer: 1, r: 1, inner: 1, inDims: dims}
	adjacent := true
	for i := 1; i < len(axes); i++ {
		if axes[i] != axes[i-1]+1 {
			adjacent = false
		}
	}
	if len(axes) == 0 {
		for _, d := range dims {
			p.outer *= d
		}
		return p
	}
	if adjacent {
		for i, d := range dims {
			switch {
			case i < axes[0]:
				p.outer *= d
			case i > axes[len(axes)-1]:
				p.inner *= d
			default:
				p.r *= d
			}
		}
		return p
	}
	reduced := make([]bool, len(dims))
	for _, a := range axes {
		reduced[a] = true
	}
	for i, d := range dims {
		if !reduced[i] {
			p.perm = append(p.perm, i)
			p.outer *= d
		}
	}
	for _, a := range axes {
		p.perm = append(p.perm, a)
		p.r *= dims[a]
	}
	return p
}

type reduceStep struct{ lw *lowering }

func reduceStepT[T number](lw *lowering) (stepFn, error) {
	var init T
	var fold func(acc, x T) T
	switch lw.n.op {
	case backends.OpTypeReduceSum:
		fold = func(a, x T) T { return a + x }
	case backends.OpTypeReduceProduct:
		init = 1
		fold = func(a, x T) T { return a * x }
	case backends.OpTypeReduceMax:
		init = lowest[T]()
		fold = func(a, x T) T { return max(a, x) }
	case backends.OpTypeReduceMin:
		init = highest[T]()
		fold = func(a, x T) T { return min(a, x) }
	default:
		return nil, fmt.Errorf("backend %s: op %s not implemented for %s", BackendName, lw.n.op, lw.n.shape.DType)
	}
	var row func(x []T) T     // folds a contiguous run (inner == 1)
	var rows func(acc, x []T) // acc[i] = fold(acc[i], x[i])
	if f32, ok := any(&row).(*func([]float32) float32); ok {
		switch lw.n.op {
		case backends.OpTypeReduceSum:
			*f32 = kernels.Sum
			*any(&rows).(*func([]float32, []float32)) = func(acc, x []float32) { kernels.Add(acc, x, acc) }
		case backends.OpTypeReduceMax:
			*f32 = kernels.Max
		}
	}
	if row == nil {
		row = func(x []T) T {
			acc := init
			for _, v := range x {
				acc = fold(acc, v)
			}
			return acc
		}
	}
	if rows == nil {
		rows = func(acc, x []T) {
			for i, v := range x {
				acc[i] = fold(acc[i], v)
			}
		}
	}
	p := planReduce(lw.n.inputs[0].shape.Dimensions, lw.n.attr.(*reduceAttr).axes)
	return lowerReduce(lw, p, init, row, rows), nil
}

func lowerReduce[T any](lw *lowering, p reducePlan, init T, row func([]T) T, rows func(acc, x []T)) stepFn {
	ia, io := lw.in[0], lw.out
	size := lw.n.inputs[0].shape.DType.Size()
	scratch := -1
	if p.perm != nil {
		scratch = lw.scratch(byteSize(lw.n.inputs[0].shape))
	}
	pool := lw.e.backend.pool
	return func(f *frame) {
		src := f.slots[ia]
		if scratch >= 0 {
			transposeBytes(size, src, p.inDims, p.perm, f.slots[scratch])
			src = f.slots[scratch]
		}
		x, out := typed[T](src), typed[T](f.slots[io])
		small := p.outer*p.r*p.inner < 2*elementwiseGrain
		if p.inner == 1 {
			if small {
				reduceRows(x, out, p.r, 0, p.outer, row)
				return
			}
			pool.parallelFor(p.outer, max(1, elementwiseGrain/max(p.r, 1)), func(lo, hi int) { reduceRows(x, out, p.r, lo, hi, row) })
			return
		}
		// Columns of inner, split over threads; each folds its columns over R for every outer.
		if small {
			reduceColumns(x, out, p, 0, p.inner, init, rows)
			return
		}
		pool.parallelFor(p.inner, max(16, (elementwiseGrain+p.r*p.outer-1)/max(p.r*p.outer, 1)), func(lo, hi int) {
			reduceColumns(x, out, p, lo, hi, init, rows)
		})
	}
}

func reduceRows[T any](x, out []T, r, lo, hi int, row func([]T) T) {
	for o := lo; o < hi; o++ {
		out[o] = row(x[o*r : (o+1)*r])
	}
}

func reduceColumns[T any](x, out []T, p reducePlan, lo, hi int, init T, rows func(acc, x []T)) {
	for o := range p.outer {
		acc := out[o*p.inner+lo : o*p.inner+hi]
		for i := range acc {
			acc[i] = init
		}
		base := o * p.r * p.inner
		for r := range p.r {
			rows(acc, x[base+r*p.inner+lo:base+r*p.inner+hi])
		}
	}
}

func lowest[T number]() T {
	var z T
	switch any(z).(type) {
	case float32:
		return any(float32(math.Inf(-1))).(T)
	case float64:
		return any(math.Inf(-1)).(T)
	case int8:
		return any(int8(math.MinInt8)).(T)
	case int16:
		return any(int16(math.MinInt16)).(T)
	case int32:
		return any(int32(math.MinInt32)).(T)
	case int64:
		return any(int64(math.MinInt64)).(T)
	}
	return 0 // unsigned
}

func highest[T number]() T {
	var z T
	switch any(z).(type) {
	case float32:
		return any(float32(math.Inf(1))).(T)
	case float64:
		return any(math.Inf(1)).(T)
	case int8:
		return any(int8(math.MaxInt8)).(T)
	case int16:
		return any(int16(math.MaxInt16)).(T)
	case int32:
		return any(int32(math.MaxInt32)).(T)
	case int64:
		return any(int64(math.MaxInt64)).(T)
	}
	return allOnes[T]() // unsigned
}

func (s reduceStep) f32() (stepFn, error) { return reduceStepT[float32](s.lw) }
func (s reduceStep) f64() (stepFn, error) { return reduceStepT[float64](s.lw) }
func (s reduceStep) i8() (stepFn, error)  { return reduceStepT[int8](s.lw) }
func (s reduceStep) i16() (stepFn, error) { return reduceStepT[int16](s.lw) }
func (s reduceStep) i32() (stepFn, error) { return reduceStepT[int32](s.lw) }
func (s reduceStep) i64() (stepFn, error) { return reduceStepT[int64](s.lw) }
func (s reduceStep) u8() (stepFn, error)  { return reduceStepT[uint8](s.lw) }
func (s reduceStep) u16() (stepFn, error) { return reduceStepT[uint16](s.lw) }
func (s reduceStep) u32() (stepFn, error) { return reduceStepT[uint32](s.lw) }
func (s reduceStep) u64() (stepFn, error) { return reduceStepT[uint64](s.lw) }

func lowerReduceOp(lw *lowering) (stepFn, error) {
	dt := lw.n.shape.DType
	if dt == dtypes.Bool {
		isAnd := lw.n.op == backends.OpTypeReduceLogicalAnd
		if !isAnd && lw.n.op != backends.OpTypeReduceLogicalOr {
			return nil, fmt.Errorf("backend %s: op %s not implemented for bool", BackendName, lw.n.op)
		}
		p := planReduce(lw.n.inputs[0].shape.Dimensions, lw.n.attr.(*reduceAttr).axes)
		row := func(x []bool) bool {
			for _, v := range x {
				if v != isAnd {
					return !isAnd
				}
			}
			return isAnd
		}
		rows := func(acc, x []bool) {
			for i, v := range x {
				if isAnd {
					acc[i] = acc[i] && v
				} else {
					acc[i] = acc[i] || v
				}
			}
		}
		return lowerReduce(lw, p, isAnd, row, rows), nil
	}
	return dispatchNumber(dt, reduceStep{lw})
}

// ArgMinMax: the index of the first extreme value along the axis; NaN counts as the extreme.
type argStep struct{ lw *lowering }

func argStepT[T number](lw *lowering) (stepFn, error) {
	attr := lw.n.attr.(*argMinMaxAttr)
	dims := lw.n.inputs[0].shape.Dimensions
	p := planReduce(dims, []int{attr.axis})
	store, err := intStorer(lw.n.shape.DType)
	if err != nil {
		return nil, err
	}
	isMin := attr.isMin
	ia, io := lw.in[0], lw.out
	return func(f *frame) {
		x, out := typed[T](f.slots[ia]), f.slots[io]
		for o := range p.outer {
			for in := range p.inner {
				base := o*p.r*p.inner + in
				best, bi := x[base], 0
				for r := 1; r < p.r && best == best; r++ {
					v := x[base+r*p.inner]
					if v != v || (isMin && v < best) || (!isMin && v > best) {
						best, bi = v, r
					}
				}
				store(out, o*p.inner+in, int64(bi))
			}
		}
	}, nil
}

func (s argStep) f32() (stepFn, error) { return argStepT[float32](s.lw) }
func (s argStep) f64() (stepFn, error) { return argStepT[float64](s.lw) }
func (s argStep) i8() (stepFn, error)  { return argStepT[int8](s.lw) }
func (s argStep) i16() (stepFn, error) { return argStepT[int16](s.lw) }
func (s argStep) i32() (stepFn, error) { return argStepT[int32](s.lw) }
func (s argStep) i64() (stepFn, error) { return argStepT[int64](s.lw) }
func (s argStep) u8() (stepFn, error)  { return argStepT[uint8](s.lw) }
func (s argStep) u16() (stepFn, error) { return argStepT[uint16](s.lw) }
func (s argStep) u32() (stepFn, error) { return argStepT[uint32](s.lw) }
func (s argStep) u64() (stepFn, error) { return argStepT[uint64](s.lw) }

// allOnes is -1 for a signed integer type and the largest value for an unsigned one.
func allOnes[T number]() T {
	var z, one T = 0, 1
	return z - one
}
