package cpu

// compare.go: the comparisons (Equal, NotEqual, LessThan, ...) of numbers and the logical ops
// (LogicalAnd, LogicalOr, LogicalXor) of bools, both giving bools.

import (
	"fmt"

	"github.com/gomlx/gomlx/backends"
)

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

func (s compareStep) i8() (stepFn, error) { return compareStepT[int8](s.lw) }

func (s compareStep) i16() (stepFn, error) { return compareStepT[int16](s.lw) }

func (s compareStep) i32() (stepFn, error) { return compareStepT[int32](s.lw) }

func (s compareStep) i64() (stepFn, error) { return compareStepT[int64](s.lw) }

func (s compareStep) u8() (stepFn, error) { return compareStepT[uint8](s.lw) }

func (s compareStep) u16() (stepFn, error) { return compareStepT[uint16](s.lw) }

func (s compareStep) u32() (stepFn, error) { return compareStepT[uint32](s.lw) }

func (s compareStep) u64() (stepFn, error) { return compareStepT[uint64](s.lw) }
