package cpu

// binary.go: the binary arithmetic and bitwise ops (Add, Sub, Mul, Div, Max, Min, Pow, Rem, the
// bitwise ops and shifts), with size-1 and scalar broadcasting planned once per op (bcast). The
// contiguous and scalar float32 cases go to the SIMD kernels; lowerBinary also routes comparisons
// and logical ops to compare.go.

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/posformer/posformer/engine/cpu/kernels"
)

// bcast is a binary op's iteration plan: the output's dimensions with adjacent axes merged where
// both operands allow it, and each operand's stride per axis (0 where it is broadcast).
type bcast struct {
	dims   []int
	sa, sb []int
	size   int
}

func operandStrides(dims []int, in []int) []int {
	st := make([]int, len(dims))
	if len(in) == 0 {
		return st // a scalar: stride 0 everywhere
	}
	s := 1
	for i := len(dims) - 1; i >= 0; i-- {
		if in[i] != 1 || dims[i] == 1 {
			st[i] = s
		}
		s *= in[i]
	}
	return st
}

func newBcast(out, a, b []int) *bcast {
	sa, sb := operandStrides(out, a), operandStrides(out, b)
	bc := &bcast{size: 1}
	for _, d := range out {
		bc.size *= d
	}
	for i := range out {
		if out[i] == 1 {
			continue
		}
		k := len(bc.dims) - 1
		if k >= 0 && bc.sa[k] == sa[i]*out[i] && bc.sb[k] == sb[i]*out[i] {
			bc.dims[k] *= out[i]
			bc.sa[k], bc.sb[k] = sa[i], sb[i]
			continue
		}
		bc.dims = append(bc.dims, out[i])
		bc.sa = append(bc.sa, sa[i])
		bc.sb = append(bc.sb, sb[i])
	}
	if len(bc.dims) == 0 {
		bc.dims, bc.sa, bc.sb = []int{1}, []int{0}, []int{0}
	}
	return bc
}

// applyRuns computes runs [lo, hi) of a binary op: out[run] = fn(a, b) over each contiguous run
// of the output (operand strides within a run are 0 or 1).
func applyRuns[T, O any](bc *bcast, lo, hi int, a, b []T, out []O, fn func(a, b []T, out []O, sa, sb int)) {
	r := len(bc.dims) - 1
	inner := bc.dims[r]
	sa, sb := bc.sa[r], bc.sb[r]
	var buf [8]int
	var idx []int
	if r > len(buf) {
		idx = make([]int, r)
	} else {
		idx = buf[:r]
	}
	rem := lo
	for k := r - 1; k >= 0; k-- {
		idx[k] = rem % bc.dims[k]
		rem /= bc.dims[k]
	}
	for run := lo; run < hi; run++ {
		ao, bo := 0, 0
		for k := 0; k < r; k++ {
			ao += idx[k] * bc.sa[k]
			bo += idx[k] * bc.sb[k]
		}
		fn(a[ao:], b[bo:], out[run*inner:(run+1)*inner], sa, sb)
		for k := r - 1; k >= 0; k-- {
			idx[k]++
			if idx[k] < bc.dims[k] {
				break
			}
			idx[k] = 0
		}
	}
}

// applyBinary runs a binary op over the whole output, in parallel when it is large.
func applyBinary[T, O any](bc *bcast, p *pool, a, b []T, out []O, fn func(a, b []T, out []O, sa, sb int)) {
	r := len(bc.dims) - 1
	inner := bc.dims[r]
	if bc.size == 0 {
		return
	}
	runs := bc.size / max(inner, 1)
	if bc.size < 2*elementwiseGrain {
		applyRuns(bc, 0, runs, a, b, out, fn)
		return
	}
	if runs == 1 {
		sa, sb := bc.sa[r], bc.sb[r]
		p.parallelFor(inner, elementwiseGrain, func(lo, hi int) { fn(a[lo*sa:], b[lo*sb:], out[lo:hi], sa, sb) })
		return
	}
	p.parallelFor(runs, max(1, elementwiseGrain/max(inner, 1)), func(lo, hi int) { applyRuns(bc, lo, hi, a, b, out, fn) })
}

// binaryOf returns fn(a, b, out, sa, sb) computing out[i] = a[i*sa] op b[i*sb] for T.
func binaryOf[T number](op backends.OpType) (func(a, b, out []T, sa, sb int), error) {
	var f func(x, y T) T
	isFloat := false
	var zero T
	switch any(zero).(type) {
	case float32, float64:
		isFloat = true
	}
	switch op {
	case backends.OpTypeAdd:
		return func(a, b, out []T, sa, sb int) {
			if sa == 1 && sb == 1 {
				for i := range out {
					out[i] = a[i] + b[i]
				}
				return
			}
			for i := range out {
				out[i] = a[i*sa] + b[i*sb]
			}
		}, nil
	case backends.OpTypeSub:
		return func(a, b, out []T, sa, sb int) {
			for i := range out {
				out[i] = a[i*sa] - b[i*sb]
			}
		}, nil
	case backends.OpTypeMul:
		return func(a, b, out []T, sa, sb int) {
			if sa == 1 && sb == 1 {
				for i := range out {
					out[i] = a[i] * b[i]
				}
				return
			}
			for i := range out {
				out[i] = a[i*sa] * b[i*sb]
			}
		}, nil
	case backends.OpTypeDiv:
		if isFloat {
			return func(a, b, out []T, sa, sb int) {
				for i := range out {
					out[i] = a[i*sa] / b[i*sb]
				}
			}, nil
		}
		f = func(x, y T) T {
			if y == 0 {
				return allOnes[T]() // XLA: x/0 is -1 (all bits set)
			}
			return x / y
		}
	case backends.OpTypeMax:
		return func(a, b, out []T, sa, sb int) {
			for i := range out {
				out[i] = max(a[i*sa], b[i*sb])
			}
		}, nil
	case backends.OpTypeMin:
		return func(a, b, out []T, sa, sb int) {
			for i := range out {
				out[i] = min(a[i*sa], b[i*sb])
			}
		}, nil
	case backends.OpTypePow:
		if isFloat {
			f = func(x, y T) T { return T(math.Pow(float64(x), float64(y))) }
		} else {
			f = intPow[T]
		}
	case backends.OpTypeRem:
		if isFloat {
			f = func(x, y T) T { return T(math.Mod(float64(x), float64(y))) }
		} else {
			f = func(x, y T) T {
				if y == 0 {
					return x
				}
				return intRem(x, y)
			}
		}
	default:
		return nil, fmt.Errorf("backend %s: op %s not implemented for %T", BackendName, op, zero)
	}
	return func(a, b, out []T, sa, sb int) {
		for i := range out {
			out[i] = f(a[i*sa], b[i*sb])
		}
	}, nil
}

// intRem is x % y, with y != 0 (a generic % would not compile for the float members of number).
func intRem[T number](x, y T) T {
	switch v := any(x).(type) {
	case int8:
		return T(v % int8(y))
	case int16:
		return T(v % int16(y))
	case int32:
		return T(v % int32(y))
	case int64:
		return T(v % int64(y))
	case uint8:
		return T(v % uint8(y))
	case uint16:
		return T(v % uint16(y))
	case uint32:
		return T(v % uint32(y))
	case uint64:
		return T(v % uint64(y))
	}
	return 0
}

func intPow[T number](x, y T) T {
	if y < 0 {
		switch x {
		case 1:
			return 1
		case allOnes[T](): // -1 for signed types
			if int64(y)%2 == 0 {
				return 1
			}
			return x
		}
		return 0
	}
	r := T(1)
	for e := uint64(y); e > 0; e >>= 1 {
		if e&1 == 1 {
			r *= x
		}
		x *= x
	}
	return r
}

// bitwiseOf is binaryOf for the integer-only ops.
func bitwiseOf[T integer](op backends.OpType) (func(a, b, out []T, sa, sb int), error) {
	var zero T
	width := uint64(unsafe.Sizeof(zero)) * 8
	signed := ^T(0) < 0
	var f func(x, y T) T
	switch op {
	case backends.OpTypeBitwiseAnd:
		f = func(x, y T) T { return x & y }
	case backends.OpTypeBitwiseOr:
		f = func(x, y T) T { return x | y }
	case backends.OpTypeBitwiseXor:
		f = func(x, y T) T { return x ^ y }
	case backends.OpTypeShiftLeft:
		f = func(x, y T) T {
			if uint64(y) >= width {
				return 0
			}
			return x << uint64(y)
		}
	case backends.OpTypeShiftRightLogical:
		f = func(x, y T) T {
			if uint64(y) >= width {
				return 0
			}
			return T(uint64(x) & (math.MaxUint64 >> (64 - width)) >> uint64(y))
		}
	case backends.OpTypeShiftRightArithmetic:
		f = func(x, y T) T {
			if uint64(y) >= width {
				if signed && x < 0 {
					return ^T(0)
				}
				return 0
			}
			return x >> uint64(y)
		}
	default:
		return binaryOf[T](op)
	}
	return func(a, b, out []T, sa, sb int) {
		for i := range out {
			out[i] = f(a[i*sa], b[i*sb])
		}
	}, nil
}

// lowerBinaryT builds the step of a binary op on T with output element type O.
func lowerBinaryT[T, O any](lw *lowering, fn func(a, b []T, out []O, sa, sb int)) stepFn {
	n := lw.n
	bc := newBcast(n.shape.Dimensions, n.inputs[0].shape.Dimensions, n.inputs[1].shape.Dimensions)
	ia, ib, io := lw.in[0], lw.in[1], lw.out
	p := lw.e.backend.pool
	return func(f *frame) {
		applyBinary(bc, p, typed[T](f.slots[ia]), typed[T](f.slots[ib]), typed[O](f.slots[io]), fn)
	}
}

// float32Binary uses the SIMD kernels for the common contiguous and scalar cases.
func float32Binary(op backends.OpType) func(a, b, out []float32, sa, sb int) {
	generic, _ := binaryOf[float32](op)
	var vv func(a, b, out []float32)
	var vs func(a []float32, s float32, out []float32)
	switch op {
	case backends.OpTypeAdd:
		vv, vs = kernels.Add, kernels.AddScalar
	case backends.OpTypeSub:
		vv = kernels.Sub
	case backends.OpTypeMul:
		vv, vs = kernels.Mul, kernels.MulScalar
	case backends.OpTypeDiv:
		vv = kernels.Div
	case backends.OpTypeMax: // both sides NaN-propagating, so operand order does not matter
		vv, vs = kernels.Maximum, kernels.MaximumScalar
	case backends.OpTypeMin:
		vv, vs = kernels.Minimum, kernels.MinimumScalar
	}
	if vv == nil {
		return generic
	}
	return func(a, b, out []float32, sa, sb int) {
		switch {
		case sa == 1 && sb == 1:
			vv(a[:len(out)], b[:len(out)], out)
		case sa == 1 && sb == 0 && vs != nil:
			vs(a[:len(out)], b[0], out)
		case sa == 0 && sb == 1 && vs != nil:
			vs(b[:len(out)], a[0], out)
		case sa == 1 && sb == 0 && op == backends.OpTypeSub:
			// x - s is x + (-s) exactly (IEEE 754 defines subtraction so): softmax's x - max.
			kernels.AddScalar(a[:len(out)], -b[0], out)
		case sa == 1 && sb == 0 && op == backends.OpTypeDiv:
			s := b[0]
			for i, x := range a[:len(out)] {
				out[i] = x / s
			}
		default:
			generic(a, b, out, sa, sb)
		}
	}
}

func lowerBinary(lw *lowering) (stepFn, error) {
	op := lw.n.op
	dt := lw.n.inputs[0].shape.DType
	cmp := lw.n.shape.DType == dtypes.Bool && dt != dtypes.Bool
	if dt == dtypes.Bool {
		fn, err := logicalOf(op)
		if err != nil {
			return nil, err
		}
		return lowerBinaryT(lw, fn), nil
	}
	if cmp {
		return dispatchNumber(dt, compareStep{lw})
	}
	if dt == dtypes.Float32 {
		if _, err := binaryOf[float32](op); err != nil {
			return nil, err
		}
		return lowerBinaryT(lw, float32Binary(op)), nil
	}
	return dispatchNumber(dt, binaryStep{lw})
}

type binaryStep struct{ lw *lowering }

func binaryStepT[T number](lw *lowering) (stepFn, error) {
	fn, err := binaryOf[T](lw.n.op)
	if err != nil {
		return nil, err
	}
	return lowerBinaryT(lw, fn), nil
}

func bitwiseStepT[T integer](lw *lowering) (stepFn, error) {
	fn, err := bitwiseOf[T](lw.n.op)
	if err != nil {
		return nil, err
	}
	return lowerBinaryT(lw, fn), nil
}

func (s binaryStep) f32() (stepFn, error) { return binaryStepT[float32](s.lw) }

func (s binaryStep) f64() (stepFn, error) { return binaryStepT[float64](s.lw) }

func (s binaryStep) i8() (stepFn, error) { return bitwiseStepT[int8](s.lw) }

func (s binaryStep) i16() (stepFn, error) { return bitwiseStepT[int16](s.lw) }

func (s binaryStep) i32() (stepFn, error) { return bitwiseStepT[int32](s.lw) }

func (s binaryStep) i64() (stepFn, error) { return bitwiseStepT[int64](s.lw) }

func (s binaryStep) u8() (stepFn, error) { return bitwiseStepT[uint8](s.lw) }

func (s binaryStep) u16() (stepFn, error) { return bitwiseStepT[uint16](s.lw) }

func (s binaryStep) u32() (stepFn, error) { return bitwiseStepT[uint32](s.lw) }

func (s binaryStep) u64() (stepFn, error) { return bitwiseStepT[uint64](s.lw) }
