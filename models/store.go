package models

// Weights stored in a narrower type than float32 (layers.SetWeightType): loaders hand every
// tensor over as float32 (SetParam) or, when the file holds it quantized already, as raw ggml
// blocks (StoreTensor), and the matrix lands in the context's type without a float32 copy of
// the whole model ever existing.

import (
	"fmt"
	"unsafe"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/dtypes/bfloat16"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/posformer/posformer/layers"
	"github.com/posformer/posformer/layers/quant"
	"github.com/x448/float16"
)

// StoreTensor stores the checkpoint tensor name of the given shape, whose values raw holds in
// type t (ggml's layouts, see layers/quant), as ctx holds it: blocks of the context's own
// type are kept as they are (not requantized, so a Q8_0 file runs exactly its stored numbers),
// anything else is widened to float32 and goes through SetParam.
func StoreTensor(ctx *context.Context, backend backends.Backend, name string, shape []int, t quant.Type, raw []byte) error {
	n := 1
	for _, d := range shape {
		n *= d
	}
	if want, err := t.Bytes(n); err != nil || want != len(raw) {
		return fmt.Errorf("tensor %s %v as %v: %d bytes do not hold it (%v)", name, shape, t, len(raw), err)
	}
	scope, v := VariablePath(name)
	if typ := layers.MatrixType(ctx, shape); v == "weight" && typ != quant.F32 && typ == t {
		if err := storeQuantized(ctx.InAbsPath(scope), backend, typ, shape, nil, raw); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		return nil
	}
	tt, err := NewTensor(backend, shape, func(dst []float32) error {
		if err := quant.Dequantize(t, raw, dst); err != nil {
			return err
		}
		return CheckFinite(name, dst)
	})
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return SetParam(ctx, backend, name, tt)
}

// StoreQ8 stores a matrix given in the split Q8_0 layout (int8 values, one float32 scale per
// block of 32) into a Q8_0 context as it is: llama2.c's version-2 files hold their matrices so,
// with float32 scales that ggml's half-float blocks would round.
func StoreQ8(ctx *context.Context, backend backends.Backend, name string, shape []int, q []int8, d []float32) error {
	scope, v := VariablePath(name)
	if v != "weight" || layers.MatrixType(ctx, shape) != quant.Q8_0 || len(q) != shape[0]*shape[1] || len(d) != len(q)/32 {
		return fmt.Errorf("%s %v: not a matrix this context holds as q8_0", name, shape)
	}
	names, types, dims := layers.QuantizedVars(quant.Q8_0, shape[0], shape[1])
	vt, err := newTensorOf(backend, dims[0], types[0], func(flat any) error { copy(flat.([]int8), q); return nil })
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	dt, err := newTensorOf(backend, dims[1], types[1], func(flat any) error { copy(flat.([]float32), d); return nil })
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	sc := ctx.InAbsPath(scope)
	sc.VariableWithValue(names[0], vt)
	sc.VariableWithValue(names[1], dt)
	return nil
}

// storeQuantized sets the variables of a matrix dims [out, in] held as typ in scope, from
// float32 values or (when values is nil) from raw blocks of typ.
func storeQuantized(scope *context.Context, backend backends.Backend, typ quant.Type, dims []int, values []float32, raw []byte) error {
	out, in := dims[0], dims[1]
	names, types, shapes := layers.QuantizedVars(typ, out, in)
	fills := make([]func(flat any) error, len(names))
	switch typ {
	case quant.BF16:
		fills[0] = func(flat any) error {
			w := flatUint16(flat)
			for i := range w {
				if values != nil {
					w[i] = quant.F32ToBF16(values[i])
				} else {
					w[i] = uint16(raw[2*i]) | uint16(raw[2*i+1])<<8
				}
			}
			return nil
		}
	case quant.Q8_0, quant.Q4_0:
		if p, ok := backend.(RowGroupsPreferrer); ok && p.PrefersRowGroups() && layers.Groupable(typ, out, in) {
			// Split into scratch first, then grouped into the variables' memory.
			q, d := make([]byte, out*in/32*(typ.BlockBytes()-2)), make([]float32, out*in/32)
			if err := splitBlocks(typ, values, raw, q, d); err != nil {
				return err
			}
			names, types, shapes = layers.GroupedVars(typ, out, in)
			gd := make([]uint16, len(d))
			fills = []func(flat any) error{
				// Never fails for blocks from a file or from Quantize, whose scales are half floats.
				func(flat any) error { return quant.Group(typ, q, d, out, in/32, flatBytes(flat), gd) },
				func(flat any) error { copy(flatUint16(flat), gd); return nil },
			}
			break
		}
		// The values and the scales are made in one pass: scales first into a scratch slice.
		d := make([]float32, out*in/32)
		fills[0] = func(flat any) error { return splitBlocks(typ, values, raw, flatBytes(flat), d) }
		fills[1] = func(flat any) error { copy(flat.([]float32), d); return nil }
	default:
		return fmt.Errorf("weights cannot be held as %v", typ)
	}
	for i, name := range names {
		t, err := newTensorOf(backend, shapes[i], types[i], fills[i])
		if err != nil {
			return err
		}
		scope.VariableWithValue(name, t)
	}
	return nil
}

// RowGroupsPreferrer is a backend that reads Q8_0 and Q4_0 matrices faster in row groups
// (layers.GroupedVars) than in rows: the loaders hold them so for it. Any backend runs either
// form; the choice only changes the speed.
type RowGroupsPreferrer interface {
	PrefersRowGroups() bool
}

// splitBlocks writes a matrix's blocks in Split's layout into q and d, from float32 values or
// (values nil) raw blocks, and refuses scales that are not finite.
func splitBlocks(typ quant.Type, values []float32, raw []byte, q []byte, d []float32) error {
	var err error
	if values == nil {
		err = quant.Split(typ, raw, q, d)
	} else {
		err = quant.QuantizeSplit(typ, values, q, d)
	}
	if err != nil {
		return err
	}
	return CheckFinite(fmt.Sprintf("%s scales", typ), d)
}

// newTensorOf is NewTensor for any dtype: fill gets the flat slice (as GoMLX types it).
func newTensorOf(backend backends.Backend, dims []int, dtype dtypes.DType, fill func(flat any) error) (*tensors.Tensor, error) {
	s := shapes.Make(dtype, dims...)
	if backend != nil && backend.HasSharedBuffers() {
		buf, flat, err := backend.NewSharedBuffer(0, s)
		if err != nil {
			return nil, err
		}
		if err := fill(flat); err != nil {
			backend.BufferFinalize(buf)
			return nil, err
		}
		return tensors.FromBuffer(backend, buf)
	}
	t := tensors.FromShape(s)
	var err error
	t.MustMutableFlatData(func(flat any) { err = fill(flat) })
	return t, err
}

// flatBytes views an int8 or uint8 flat slice as bytes.
func flatBytes(flat any) []byte {
	switch f := flat.(type) {
	case []uint8:
		return f
	case []int8:
		return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(f))), len(f))
	}
	panic(fmt.Sprintf("models: %T is not a byte slice", flat))
}

// flatUint16 views GoMLX's bfloat16 or float16 flat slice (a uint16 underneath) as uint16.
func flatUint16(flat any) []uint16 {
	switch f := flat.(type) {
	case []bfloat16.BFloat16:
		return unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(f))), len(f))
	case []float16.Float16:
		return unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(f))), len(f))
	}
	panic(fmt.Sprintf("models: %T is not a 16-bit float slice", flat))
}
