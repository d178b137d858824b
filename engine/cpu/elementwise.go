package cpu

// Elementwise ops: unary, binary (with size-1 and scalar broadcasting), comparisons, Where,
// Clamp, ConvertDType and Iota. The hot float32 cases go to the SIMD kernels; every other dtype
// runs a typed Go loop. Large ops are split over the worker pool.

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/dtypes/bfloat16"
	"github.com/posformer/posformer/engine/cpu/kernels"
	"github.com/x448/float16"
)

// elementwiseGrain is the fewest elements worth handing to another thread.
const elementwiseGrain = 16 << 10

type number interface {
	~float32 | ~float64 | ~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64
}

type integer interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64
}

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

// compareOf and logicalOf return fn(a, b, out, sa, sb) computing out[i] = a[i*sa] op b[i*sb].
// Attention's masks run them over every cache slot at every step, so the contiguous and
// scalar-operand cases are plain loops (a call per element cost more than the comparison).
func compareOf[T number](op backends.OpType) (func(a, b []T, out []bool, sa, sb int), error) {
	// mirror is op with its operands swapped: a scalar first operand becomes a scalar second.
	mirror := map[backends.OpType]backends.OpType{
		backends.OpTypeEqual: backends.OpTypeEqual, backends.OpTypeNotEqual: backends.OpTypeNotEqual,
		backends.OpTypeLessThan: backends.OpTypeGreaterThan, backends.OpTypeGreaterThan: backends.OpTypeLessThan,
		backends.OpTypeLessOrEqual: backends.OpTypeGreaterOrEqual, backends.OpTypeGreaterOrEqual: backends.OpTypeLessOrEqual,
	}
	if _, ok := mirror[op]; !ok {
		return nil, fmt.Errorf("backend %s: comparison %s not implemented", BackendName, op)
	}
	return func(a, b []T, out []bool, sa, sb int) {
		op := op
		if sa == 0 && sb == 1 {
			a, b, sa, sb, op = b, a, 1, 0, mirror[op]
		}
		switch {
		case sa == 1 && sb == 1:
			a, b := a[:len(out)], b[:len(out)]
			switch op {
			case backends.OpTypeEqual:
				for i := range out {
					out[i] = a[i] == b[i]
				}
			case backends.OpTypeNotEqual:
				for i := range out {
					out[i] = a[i] != b[i]
				}
			case backends.OpTypeLessThan:
				for i := range out {
					out[i] = a[i] < b[i]
				}
			case backends.OpTypeLessOrEqual:
				for i := range out {
					out[i] = a[i] <= b[i]
				}
			case backends.OpTypeGreaterThan:
				for i := range out {
					out[i] = a[i] > b[i]
				}
			case backends.OpTypeGreaterOrEqual:
				for i := range out {
					out[i] = a[i] >= b[i]
				}
			}
		case sa == 1 && sb == 0:
			a, y := a[:len(out)], b[0]
			switch op {
			case backends.OpTypeEqual:
				for i, x := range a {
					out[i] = x == y
				}
			case backends.OpTypeNotEqual:
				for i, x := range a {
					out[i] = x != y
				}
			case backends.OpTypeLessThan:
				for i, x := range a {
					out[i] = x < y
				}
			case backends.OpTypeLessOrEqual:
				for i, x := range a {
					out[i] = x <= y
				}
			case backends.OpTypeGreaterThan:
				for i, x := range a {
					out[i] = x > y
				}
			case backends.OpTypeGreaterOrEqual:
				for i, x := range a {
					out[i] = x >= y
				}
			}
		default: // both scalar-strided: one element repeated
			var r bool
			x, y := a[0], b[0]
			switch op {
			case backends.OpTypeEqual:
				r = x == y
			case backends.OpTypeNotEqual:
				r = x != y
			case backends.OpTypeLessThan:
				r = x < y
			case backends.OpTypeLessOrEqual:
				r = x <= y
			case backends.OpTypeGreaterThan:
				r = x > y
			case backends.OpTypeGreaterOrEqual:
				r = x >= y
			}
			for i := range out {
				out[i] = r
			}
		}
	}, nil
}

func logicalOf(op backends.OpType) (func(a, b, out []bool, sa, sb int), error) {
	switch op {
	case backends.OpTypeLogicalAnd, backends.OpTypeLogicalOr, backends.OpTypeLogicalXor, backends.OpTypeNotEqual, backends.OpTypeEqual:
	default:
		return nil, fmt.Errorf("backend %s: op %s not implemented for bool", BackendName, op)
	}
	return func(a, b, out []bool, sa, sb int) {
		if sa == 0 && sb == 1 {
			a, b, sa, sb = b, a, 1, 0 // every one of these ops is symmetric
		}
		if sa == 1 && sb == 1 {
			a, b := a[:len(out)], b[:len(out)]
			switch op {
			case backends.OpTypeLogicalAnd:
				for i := range out {
					out[i] = a[i] && b[i]
				}
			case backends.OpTypeLogicalOr:
				for i := range out {
					out[i] = a[i] || b[i]
				}
			case backends.OpTypeLogicalXor, backends.OpTypeNotEqual:
				for i := range out {
					out[i] = a[i] != b[i]
				}
			case backends.OpTypeEqual:
				for i := range out {
					out[i] = a[i] == b[i]
				}
			}
			return
		}
		// b is one value: each op is then a copy, a negation or a constant.
		y := b[0]
		for i := range out {
			x := a[i*sa]
			switch op {
			case backends.OpTypeLogicalAnd:
				out[i] = x && y
			case backends.OpTypeLogicalOr:
				out[i] = x || y
			case backends.OpTypeLogicalXor, backends.OpTypeNotEqual:
				out[i] = x != y
			case backends.OpTypeEqual:
				out[i] = x == y
			}
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

// numberVisitor lets one generic body serve every numeric dtype (see dispatchNumber).
type numberVisitor interface {
	f32() (stepFn, error)
	f64() (stepFn, error)
	i8() (stepFn, error)
	i16() (stepFn, error)
	i32() (stepFn, error)
	i64() (stepFn, error)
	u8() (stepFn, error)
	u16() (stepFn, error)
	u32() (stepFn, error)
	u64() (stepFn, error)
}

func dispatchNumber(dt dtypes.DType, v numberVisitor) (stepFn, error) {
	switch dt {
	case dtypes.Float32:
		return v.f32()
	case dtypes.Float64:
		return v.f64()
	case dtypes.Int8:
		return v.i8()
	case dtypes.Int16:
		return v.i16()
	case dtypes.Int32:
		return v.i32()
	case dtypes.Int64:
		return v.i64()
	case dtypes.Uint8:
		return v.u8()
	case dtypes.Uint16:
		return v.u16()
	case dtypes.Uint32:
		return v.u32()
	case dtypes.Uint64:
		return v.u64()
	}
	return nil, fmt.Errorf("backend %s: dtype %s not implemented", BackendName, dt)
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
func (s binaryStep) i8() (stepFn, error)  { return bitwiseStepT[int8](s.lw) }
func (s binaryStep) i16() (stepFn, error) { return bitwiseStepT[int16](s.lw) }
func (s binaryStep) i32() (stepFn, error) { return bitwiseStepT[int32](s.lw) }
func (s binaryStep) i64() (stepFn, error) { return bitwiseStepT[int64](s.lw) }
func (s binaryStep) u8() (stepFn, error)  { return bitwiseStepT[uint8](s.lw) }
func (s binaryStep) u16() (stepFn, error) { return bitwiseStepT[uint16](s.lw) }
func (s binaryStep) u32() (stepFn, error) { return bitwiseStepT[uint32](s.lw) }
func (s binaryStep) u64() (stepFn, error) { return bitwiseStepT[uint64](s.lw) }

type compareStep struct{ lw *lowering }

func compareStepT[T number](lw *lowering) (stepFn, error) {
	fn, err := compareOf[T](lw.n.op)
	if err != nil {
		return nil, err
	}
	return lowerBinaryT(lw, fn), nil
}

func (s compareStep) f32() (stepFn, error) { return compareStepT[float32](s.lw) }
func (s compareStep) f64() (stepFn, error) { return compareStepT[float64](s.lw) }
func (s compareStep) i8() (stepFn, error)  { return compareStepT[int8](s.lw) }
func (s compareStep) i16() (stepFn, error) { return compareStepT[int16](s.lw) }
func (s compareStep) i32() (stepFn, error) { return compareStepT[int32](s.lw) }
func (s compareStep) i64() (stepFn, error) { return compareStepT[int64](s.lw) }
func (s compareStep) u8() (stepFn, error)  { return compareStepT[uint8](s.lw) }
func (s compareStep) u16() (stepFn, error) { return compareStepT[uint16](s.lw) }
func (s compareStep) u32() (stepFn, error) { return compareStepT[uint32](s.lw) }
func (s compareStep) u64() (stepFn, error) { return compareStepT[uint64](s.lw) }

// Unary ops.

func floatUnary[T ~float32 | ~float64](op backends.OpType) (func(x T) T, error) {
	switch op {
	case backends.OpTypeAbs:
		return func(x T) T { return T(math.Abs(float64(x))) }, nil
	case backends.OpTypeNeg:
		return func(x T) T { return -x }, nil
	case backends.OpTypeSign:
		return func(x T) T {
			switch {
			case x > 0:
				return 1
			case x < 0:
				return -1
			}
			return x // 0, -0 and NaN stay
		}, nil
	case backends.OpTypeExp:
		return func(x T) T { return T(math.Exp(float64(x))) }, nil
	case backends.OpTypeExpm1:
		return func(x T) T { return T(math.Expm1(float64(x))) }, nil
	case backends.OpTypeLog:
		return func(x T) T { return T(math.Log(float64(x))) }, nil
	case backends.OpTypeLog1p:
		return func(x T) T { return T(math.Log1p(float64(x))) }, nil
	case backends.OpTypeSqrt:
		return func(x T) T { return T(math.Sqrt(float64(x))) }, nil
	case backends.OpTypeRsqrt:
		return func(x T) T { return T(1 / math.Sqrt(float64(x))) }, nil
	case backends.OpTypeTanh:
		return func(x T) T { return T(math.Tanh(float64(x))) }, nil
	case backends.OpTypeLogistic:
		return func(x T) T {
			// Written so that neither branch overflows.
			if x >= 0 {
				return T(1 / (1 + math.Exp(-float64(x))))
			}
			e := math.Exp(float64(x))
			return T(e / (1 + e))
		}, nil
	case backends.OpTypeSin:
		return func(x T) T { return T(math.Sin(float64(x))) }, nil
	case backends.OpTypeCos:
		return func(x T) T { return T(math.Cos(float64(x))) }, nil
	case backends.OpTypeErf:
		return func(x T) T { return T(math.Erf(float64(x))) }, nil
	case backends.OpTypeFloor:
		return func(x T) T { return T(math.Floor(float64(x))) }, nil
	case backends.OpTypeCeil:
		return func(x T) T { return T(math.Ceil(float64(x))) }, nil
	case backends.OpTypeRound:
		return func(x T) T { return T(math.RoundToEven(float64(x))) }, nil
	}
	return nil, fmt.Errorf("backend %s: op %s not implemented for floats", BackendName, op)
}

func intUnary[T integer](op backends.OpType) (func(x T) T, error) {
	switch op {
	case backends.OpTypeAbs:
		return func(x T) T {
			if x < 0 {
				return -x
			}
			return x
		}, nil
	case backends.OpTypeNeg:
		return func(x T) T { return -x }, nil
	case backends.OpTypeSign:
		return func(x T) T {
			switch {
			case x > 0:
				return 1
			case x < 0:
				return ^T(0)
			}
			return 0
		}, nil
	case backends.OpTypeBitwiseNot:
		return func(x T) T { return ^x }, nil
	}
	return nil, fmt.Errorf("backend %s: op %s not implemented for integers", BackendName, op)
}

func lowerMap[T, O any](lw *lowering, fn func(x T) O) stepFn {
	ia, io := lw.in[0], lw.out
	p := lw.e.backend.pool
	return func(f *frame) {
		a, out := typed[T](f.slots[ia]), typed[O](f.slots[io])
		if len(out) < 2*elementwiseGrain {
			mapRange(a, out, fn)
			return
		}
		p.parallelFor(len(out), elementwiseGrain, func(lo, hi int) { mapRange(a[lo:hi], out[lo:hi], fn) })
	}
}

func mapRange[T, O any](a []T, out []O, fn func(x T) O) {
	for i := range out {
		out[i] = fn(a[i])
	}
}

type unaryStep struct{ lw *lowering }

func floatUnaryStep[T ~float32 | ~float64](lw *lowering) (stepFn, error) {
	switch lw.n.op {
	case backends.OpTypeIsFinite:
		return lowerMap(lw, func(x T) bool { return !math.IsInf(float64(x), 0) && !math.IsNaN(float64(x)) }), nil
	case backends.OpTypeIsNaN:
		return lowerMap(lw, func(x T) bool { return x != x }), nil
	}
	if vec := vecUnary32[lw.n.op]; vec != nil && isFloat32[T]() {
		ia, io := lw.in[0], lw.out
		p := lw.e.backend.pool
		return func(f *frame) {
			a, out := typed[float32](f.slots[ia]), typed[float32](f.slots[io])
			if len(out) < 2*elementwiseGrain {
				vec(a, out)
				return
			}
			p.parallelFor(len(out), elementwiseGrain, func(lo, hi int) { vec(a[lo:hi], out[lo:hi]) })
		}, nil
	}
	fn, err := floatUnary[T](lw.n.op)
	if err != nil {
		return nil, err
	}
	return lowerMap(lw, fn), nil
}

// vecUnary32 are the float32 unary ops with a slice function (vector kernels or mathf32.go's
// loops), in place of floatUnary's float64 call per element.
var vecUnary32 = map[backends.OpType]func(a, out []float32){
	backends.OpTypeExp: kernels.Exp, backends.OpTypeLogistic: kernels.Logistic, backends.OpTypeSign: kernels.Sign,
	backends.OpTypeTanh: tanh32, backends.OpTypeLog: log32, backends.OpTypeLog1p: log1p32,
	backends.OpTypeSin: sin32, backends.OpTypeCos: cos32,
}

func isFloat32[T any]() bool {
	_, ok := any(*new(T)).(float32)
	return ok
}

func intUnaryStep[T integer](lw *lowering) (stepFn, error) {
	fn, err := intUnary[T](lw.n.op)
	if err != nil {
		return nil, err
	}
	return lowerMap(lw, fn), nil
}

func (s unaryStep) f32() (stepFn, error) { return floatUnaryStep[float32](s.lw) }
func (s unaryStep) f64() (stepFn, error) { return floatUnaryStep[float64](s.lw) }
func (s unaryStep) i8() (stepFn, error)  { return intUnaryStep[int8](s.lw) }
func (s unaryStep) i16() (stepFn, error) { return intUnaryStep[int16](s.lw) }
func (s unaryStep) i32() (stepFn, error) { return intUnaryStep[int32](s.lw) }
func (s unaryStep) i64() (stepFn, error) { return intUnaryStep[int64](s.lw) }
func (s unaryStep) u8() (stepFn, error)  { return intUnaryStep[uint8](s.lw) }
func (s unaryStep) u16() (stepFn, error) { return intUnaryStep[uint16](s.lw) }
func (s unaryStep) u32() (stepFn, error) { return intUnaryStep[uint32](s.lw) }
func (s unaryStep) u64() (stepFn, error) { return intUnaryStep[uint64](s.lw) }

func lowerUnary(lw *lowering) (stepFn, error) {
	dt := lw.n.inputs[0].shape.DType
	if dt == dtypes.Bool {
		if lw.n.op != backends.OpTypeLogicalNot {
			return nil, fmt.Errorf("backend %s: op %s not implemented for bool", BackendName, lw.n.op)
		}
		return lowerMap(lw, func(x bool) bool { return !x }), nil
	}
	return dispatchNumber(dt, unaryStep{lw})
}

// Where: cond, onTrue and onFalse are each either a scalar or of the output's shape.
func lowerWhere(lw *lowering) (stepFn, error) {
	n := lw.n
	sc, st, sf := 1, 1, 1
	if n.inputs[0].shape.IsScalar() {
		sc = 0
	}
	if n.inputs[1].shape.IsScalar() {
		st = 0
	}
	if n.inputs[2].shape.IsScalar() {
		sf = 0
	}
	size := n.shape.DType.Size()
	ic, it, iff, io := lw.in[0], lw.in[1], lw.in[2], lw.out
	p := lw.e.backend.pool
	return func(f *frame) {
		c, t, fa, out := typed[bool](f.slots[ic]), f.slots[it], f.slots[iff], f.slots[io]
		if size == 4 && len(out) < 4*elementwiseGrain {
			// int32 and float32 (the attention mask and the cache's positions): no copy calls.
			t, fa, out := typed[uint32](t), typed[uint32](fa), typed[uint32](out)
			for i := range out {
				if c[i*sc] {
					out[i] = t[i*st]
				} else {
					out[i] = fa[i*sf]
				}
			}
			return
		}
		p.parallelFor(len(out)/max(size, 1), elementwiseGrain, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				src, j := fa, i*sf
				if c[i*sc] {
					src, j = t, i*st
				}
				copy(out[i*size:(i+1)*size], src[j*size:(j+1)*size])
			}
		})
	}, nil
}

// Clamp: the bounds are scalars or of the operand's shape.
type clampStep struct{ lw *lowering }

func clampStepT[T number](lw *lowering) (stepFn, error) {
	n := lw.n
	slo, shi := 1, 1
	if n.inputs[0].shape.IsScalar() {
		slo = 0
	}
	if n.inputs[2].shape.IsScalar() {
		shi = 0
	}
	ilo, ix, ihi, io := lw.in[0], lw.in[1], lw.in[2], lw.out
	return func(f *frame) {
		lo, x, hi, out := typed[T](f.slots[ilo]), typed[T](f.slots[ix]), typed[T](f.slots[ihi]), typed[T](f.slots[io])
		for i := range out {
			out[i] = min(max(x[i], lo[i*slo]), hi[i*shi])
		}
	}, nil
}

func (s clampStep) f32() (stepFn, error) { return clampStepT[float32](s.lw) }
func (s clampStep) f64() (stepFn, error) { return clampStepT[float64](s.lw) }
func (s clampStep) i8() (stepFn, error)  { return clampStepT[int8](s.lw) }
func (s clampStep) i16() (stepFn, error) { return clampStepT[int16](s.lw) }
func (s clampStep) i32() (stepFn, error) { return clampStepT[int32](s.lw) }
func (s clampStep) i64() (stepFn, error) { return clampStepT[int64](s.lw) }
func (s clampStep) u8() (stepFn, error)  { return clampStepT[uint8](s.lw) }
func (s clampStep) u16() (stepFn, error) { return clampStepT[uint16](s.lw) }
func (s clampStep) u32() (stepFn, error) { return clampStepT[uint32](s.lw) }
func (s clampStep) u64() (stepFn, error) { return clampStepT[uint64](s.lw) }

// ConvertDType goes through float64 (exact for every dtype here but 64-bit integers beyond
// 2^53, which take an integer path). Float to integer truncates toward zero and saturates;
// NaN becomes 0.
func lowerConvert(lw *lowering) (stepFn, error) {
	from, to := lw.n.inputs[0].shape.DType, lw.n.shape.DType
	load, err := loader(from)
	if err != nil {
		return nil, err
	}
	store, err := storer(to)
	if err != nil {
		return nil, err
	}
	ia, io := lw.in[0], lw.out
	count := lw.n.shape.Size()
	if from == to {
		return func(f *frame) { copy(f.slots[io], f.slots[ia]) }, nil
	}
	// The common conversions of the model graphs (masks and one-hot targets to float32, cache
	// slots between int32 and float32) as plain loops: two calls per element cost more.
	switch {
	case from == dtypes.Bool && to == dtypes.Float32:
		return func(f *frame) { convertSlice(f.slots[ia][:count], typed[float32](f.slots[io])) }, nil
	case from == dtypes.Bool && to == dtypes.Int32:
		return func(f *frame) { convertSlice(f.slots[ia][:count], typed[int32](f.slots[io])) }, nil
	case from == dtypes.Int32 && to == dtypes.Float32:
		return func(f *frame) { convertSlice(typed[int32](f.slots[ia])[:count], typed[float32](f.slots[io])) }, nil
	// Positions to float64 and angles back (the sinusoidal schemes form angles in float64):
	// Transformer-XL's [b, 1, s, d] sines and cosines took 3.7 ns an element the general way.
	case from == dtypes.Int32 && to == dtypes.Float64:
		return func(f *frame) { convertSlice(typed[int32](f.slots[ia])[:count], typed[float64](f.slots[io])) }, nil
	case from == dtypes.Float64 && to == dtypes.Float32:
		return func(f *frame) { convertSlice(typed[float64](f.slots[ia])[:count], typed[float32](f.slots[io])) }, nil
	case from == dtypes.Float32 && to == dtypes.Float64:
		return func(f *frame) { convertSlice(typed[float32](f.slots[ia])[:count], typed[float64](f.slots[io])) }, nil
	}
	// Between integers (and bool) the conversion is exact or wraps, as Go's and XLA's do; through
	// float64 a narrowing would saturate instead (int32 -974 must become uint8 50).
	if intLike(from) && intLike(to) {
		il, errL := intLoader(from)
		is, errS := intStorer(to)
		if errL == nil && errS == nil {
			return func(f *frame) {
				a, out := f.slots[ia], f.slots[io]
				for i := range count {
					is(out, i, il(a, i))
				}
			}, nil
		}
	}
	return func(f *frame) {
		a, out := f.slots[ia], f.slots[io]
		for i := range count {
			store(out, i, load(a, i))
		}
	}, nil
}

// convertSlice sets out[i] = T(in[i]); a bool is its byte, 0 or 1.
func convertSlice[F uint8 | int32 | float32 | float64, T int32 | float32 | float64](in []F, out []T) {
	out = out[:len(in)]
	for i, v := range in {
		out[i] = T(v)
	}
}

func intLike(dt dtypes.DType) bool { return dt.IsInt() || dt == dtypes.Bool }

func loader(dt dtypes.DType) (func(b []byte, i int) float64, error) {
	switch dt {
	case dtypes.Float32:
		return func(b []byte, i int) float64 { return float64(typed[float32](b)[i]) }, nil
	case dtypes.Float64:
		return func(b []byte, i int) float64 { return typed[float64](b)[i] }, nil
	case dtypes.Float16:
		return func(b []byte, i int) float64 { return float64(typed[float16.Float16](b)[i].Float32()) }, nil
	case dtypes.BFloat16:
		return func(b []byte, i int) float64 { return float64(typed[bfloat16.BFloat16](b)[i].Float32()) }, nil
	case dtypes.Bool:
		return func(b []byte, i int) float64 {
			if b[i] != 0 {
				return 1
			}
			return 0
		}, nil
	case dtypes.Int8:
		return func(b []byte, i int) float64 { return float64(int8(b[i])) }, nil
	case dtypes.Uint8:
		return func(b []byte, i int) float64 { return float64(b[i]) }, nil
	case dtypes.Int16:
		return func(b []byte, i int) float64 { return float64(typed[int16](b)[i]) }, nil
	case dtypes.Uint16:
		return func(b []byte, i int) float64 { return float64(typed[uint16](b)[i]) }, nil
	case dtypes.Int32:
		return func(b []byte, i int) float64 { return float64(typed[int32](b)[i]) }, nil
	case dtypes.Uint32:
		return func(b []byte, i int) float64 { return float64(typed[uint32](b)[i]) }, nil
	case dtypes.Int64:
		return func(b []byte, i int) float64 { return float64(typed[int64](b)[i]) }, nil
	case dtypes.Uint64:
		return func(b []byte, i int) float64 { return float64(typed[uint64](b)[i]) }, nil
	}
	return nil, fmt.Errorf("backend %s: op ConvertDType: dtype %s not implemented", BackendName, dt)
}

// satInt converts a float to an integer in [lo, hi], truncating; NaN gives 0.
func satInt(x float64, lo, hi float64) float64 {
	switch {
	case x != x:
		return 0
	case x <= lo:
		return lo
	case x >= hi:
		return hi
	}
	return math.Trunc(x)
}

func storer(dt dtypes.DType) (func(b []byte, i int, x float64), error) {
	switch dt {
	case dtypes.Float32:
		return func(b []byte, i int, x float64) { typed[float32](b)[i] = float32(x) }, nil
	case dtypes.Float64:
		return func(b []byte, i int, x float64) { typed[float64](b)[i] = x }, nil
	case dtypes.Float16:
		return func(b []byte, i int, x float64) { typed[float16.Float16](b)[i] = float16.Fromfloat32(float32(x)) }, nil
	case dtypes.BFloat16:
		return func(b []byte, i int, x float64) { typed[bfloat16.BFloat16](b)[i] = bfloat16.FromFloat64(x) }, nil
	case dtypes.Bool:
		return func(b []byte, i int, x float64) {
			b[i] = 0
			if x != 0 {
				b[i] = 1
			}
		}, nil
	case dtypes.Int8:
		return func(b []byte, i int, x float64) { b[i] = byte(int8(satInt(x, math.MinInt8, math.MaxInt8))) }, nil
	case dtypes.Uint8:
		return func(b []byte, i int, x float64) { b[i] = uint8(satInt(x, 0, math.MaxUint8)) }, nil
	case dtypes.Int16:
		return func(b []byte, i int, x float64) { typed[int16](b)[i] = int16(satInt(x, math.MinInt16, math.MaxInt16)) }, nil
	case dtypes.Uint16:
		return func(b []byte, i int, x float64) { typed[uint16](b)[i] = uint16(satInt(x, 0, math.MaxUint16)) }, nil
	case dtypes.Int32:
		return func(b []byte, i int, x float64) { typed[int32](b)[i] = int32(satInt(x, math.MinInt32, math.MaxInt32)) }, nil
	case dtypes.Uint32:
		return func(b []byte, i int, x float64) { typed[uint32](b)[i] = uint32(satInt(x, 0, math.MaxUint32)) }, nil
	case dtypes.Int64:
		return func(b []byte, i int, x float64) {
			typed[int64](b)[i] = int64(satInt(x, math.MinInt64, math.MaxInt64))
		}, nil
	case dtypes.Uint64:
		return func(b []byte, i int, x float64) { typed[uint64](b)[i] = uint64(satInt(x, 0, math.MaxUint64)) }, nil
	}
	return nil, fmt.Errorf("backend %s: op ConvertDType: dtype %s not implemented", BackendName, dt)
}

// intLoader and intStorer convert between integer types (and bool) exactly, as Go's conversions do.
func intLoader(dt dtypes.DType) (func(b []byte, i int) int64, error) {
	switch dt {
	case dtypes.Bool, dtypes.Uint8:
		return func(b []byte, i int) int64 { return int64(b[i]) }, nil
	case dtypes.Int8:
		return func(b []byte, i int) int64 { return int64(int8(b[i])) }, nil
	case dtypes.Int16:
		return func(b []byte, i int) int64 { return int64(typed[int16](b)[i]) }, nil
	case dtypes.Uint16:
		return func(b []byte, i int) int64 { return int64(typed[uint16](b)[i]) }, nil
	case dtypes.Int32:
		return func(b []byte, i int) int64 { return int64(typed[int32](b)[i]) }, nil
	case dtypes.Uint32:
		return func(b []byte, i int) int64 { return int64(typed[uint32](b)[i]) }, nil
	case dtypes.Int64:
		return func(b []byte, i int) int64 { return typed[int64](b)[i] }, nil
	case dtypes.Uint64:
		return func(b []byte, i int) int64 { return int64(typed[uint64](b)[i]) }, nil
	}
	return nil, fmt.Errorf("not an integer dtype: %s", dt)
}

func intStorer(dt dtypes.DType) (func(b []byte, i int, x int64), error) {
	switch dt {
	case dtypes.Bool:
		return func(b []byte, i int, x int64) {
			b[i] = 0
			if x != 0 {
				b[i] = 1
			}
		}, nil
	case dtypes.Int8, dtypes.Uint8:
		return func(b []byte, i int, x int64) { b[i] = byte(x) }, nil
	case dtypes.Int16, dtypes.Uint16:
		return func(b []byte, i int, x int64) { typed[uint16](b)[i] = uint16(x) }, nil
	case dtypes.Int32, dtypes.Uint32:
		return func(b []byte, i int, x int64) { typed[uint32](b)[i] = uint32(x) }, nil
	case dtypes.Int64, dtypes.Uint64:
		return func(b []byte, i int, x int64) { typed[int64](b)[i] = x }, nil
	}
	return nil, fmt.Errorf("not an integer dtype: %s", dt)
}

// Iota: values count along axis.
func lowerIota(lw *lowering) (stepFn, error) {
	data, err := iotaBytes(lw.n)
	if err != nil {
		return nil, err
	}
	io := lw.out
	return func(f *frame) { copy(f.slots[io], data) }, nil
}

// iotaBytes is the value of an Iota node: it depends on nothing, so Compile turns it into a
// constant (attention numbers its cache slots with one at every decoding step).
func iotaBytes(n *node) ([]byte, error) {
	s := n.shape
	axis := n.attr.(int)
	inner := 1
	for _, d := range s.Dimensions[axis+1:] {
		inner *= d
	}
	dim := s.Dimensions[axis]
	store, err := storer(s.DType)
	if err != nil {
		return nil, err
	}
	data := make([]byte, byteSize(s))
	for i := range s.Size() {
		store(data, i, float64((i/inner)%dim))
	}
	return data, nil
}
