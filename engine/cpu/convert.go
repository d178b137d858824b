package cpu

// convert.go: ConvertDType, and the loaders and storers that read and write an element of any
// dtype as a float64 or an int64 (also used by Iota, ArgMinMax and the index reads of gather,
// scatter and dynamic slices).

import (
	"fmt"
	"math"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/dtypes/bfloat16"
	"github.com/posformer/posformer/engine/cpu/kernels"
	"github.com/x448/float16"
)

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
	// Quantized weights' values where a product does not read them itself: the embedding rows
	// a prompt gathers (Q8_0's int8, Q4_0's nibble bytes).
	case from == dtypes.Int8 && to == dtypes.Float32:
		return func(f *frame) { convertSlice(typed[int8](f.slots[ia])[:count], typed[float32](f.slots[io])) }, nil
	case from == dtypes.Uint8 && to == dtypes.Float32:
		return func(f *frame) { convertSlice(f.slots[ia][:count], typed[float32](f.slots[io])) }, nil
	// Positions to float64 and angles back (the sinusoidal schemes form angles in float64):
	// Transformer-XL's [b, 1, s, d] sines and cosines took 3.7 ns an element the general way.
	case from == dtypes.Int32 && to == dtypes.Float64:
		return func(f *frame) { convertSlice(typed[int32](f.slots[ia])[:count], typed[float64](f.slots[io])) }, nil
	case from == dtypes.Float64 && to == dtypes.Float32:
		return func(f *frame) { convertSlice(typed[float64](f.slots[ia])[:count], typed[float32](f.slots[io])) }, nil
	case from == dtypes.Float32 && to == dtypes.Float64:
		return func(f *frame) { convertSlice(typed[float32](f.slots[ia])[:count], typed[float64](f.slots[io])) }, nil
	// A half-precision KV cache: keys and values narrowed as they are written, widened where a
	// product does not read them itself (the widening is exact).
	case from == dtypes.Float16 && to == dtypes.Float32:
		return func(f *frame) { kernels.WidenF16(typed[float32](f.slots[io]), typed[uint16](f.slots[ia])[:count]) }, nil
	case from == dtypes.BFloat16 && to == dtypes.Float32:
		return func(f *frame) { kernels.WidenBF16(typed[float32](f.slots[io]), typed[uint16](f.slots[ia])[:count]) }, nil
	case from == dtypes.Float32 && to == dtypes.Float16:
		return func(f *frame) { kernels.NarrowF16(typed[uint16](f.slots[io]), typed[float32](f.slots[ia])[:count]) }, nil
	case from == dtypes.Float32 && to == dtypes.BFloat16:
		return func(f *frame) {
			out := typed[bfloat16.BFloat16](f.slots[io])[:count]
			for i, v := range typed[float32](f.slots[ia])[:count] {
				out[i] = bfloat16.FromFloat64(float64(v))
			}
		}, nil
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
func convertSlice[F int8 | uint8 | int32 | float32 | float64, T int32 | float32 | float64](in []F, out []T) {
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
