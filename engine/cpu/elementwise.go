package cpu

// Elementwise ops, one family a file: unary.go (unary math), binary.go (arithmetic and bitwise,
// with size-1 and scalar broadcasting), compare.go (comparisons and logical ops), select.go
// (Where, Clamp), convert.go (ConvertDType) and iota.go (Iota). The hot float32 cases go to the
// SIMD kernels; every other dtype runs a typed Go loop. Large ops are split over the worker pool.
// This file holds what they share: the dtype constraints and the dispatch from a dtype to a
// generic body.

import (
	"fmt"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
)

// elementwiseGrain is the fewest elements worth handing to another thread.
const elementwiseGrain = 16 << 10

type number interface {
	~float32 | ~float64 | ~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64
}

type integer interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64
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
