package cpu

// unary.go: the unary math ops (Abs, Neg, Exp, Log, Tanh, Logistic, Sin, Erf, Floor, Round,
// IsFinite, IsNaN, LogicalNot, BitwiseNot, ...). float32 Exp, Logistic, Sign, Tanh, Log, Log1p,
// Sin and Cos run a slice kernel; every other case maps a scalar function over the operand.

import (
	"fmt"
	"math"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/posformer/posformer/engine/cpu/kernels"
)

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

func intUnaryStep[T integer](lw *lowering) (stepFn, error) {
	fn, err := intUnary[T](lw.n.op)
	if err != nil {
		return nil, err
	}
	return lowerMap(lw, fn), nil
}

func (s unaryStep) f32() (stepFn, error) { return floatUnaryStep[float32](s.lw) }

func (s unaryStep) f64() (stepFn, error) { return floatUnaryStep[float64](s.lw) }

func (s unaryStep) i8() (stepFn, error) { return intUnaryStep[int8](s.lw) }

func (s unaryStep) i16() (stepFn, error) { return intUnaryStep[int16](s.lw) }

func (s unaryStep) i32() (stepFn, error) { return intUnaryStep[int32](s.lw) }

func (s unaryStep) i64() (stepFn, error) { return intUnaryStep[int64](s.lw) }

func (s unaryStep) u8() (stepFn, error) { return intUnaryStep[uint8](s.lw) }

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

func isFloat32[T any]() bool {
	_, ok := any(*new(T)).(float32)
	return ok
}
