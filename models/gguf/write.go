package gguf

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"

	"github.com/posformer/posformer/layers/quant"
	"github.com/posformer/posformer/models/atomicfile"
)

// Tensor is a tensor to write.
type Tensor struct {
	Name  string
	Shape []int // outermost first ([out, in] for a matrix); the file stores it reversed
	Type  quant.Type
	Data  []byte // Type's bytes for the shape, ggml's layout
	// Fill, when Data is nil, makes the bytes as the tensor is written, so that a writer
	// holds one converted tensor at a time rather than the whole model twice.
	Fill func() ([]byte, error)
}

// Write writes a GGUF file at path through a temporary file beside it and a rename, so that a
// crash never leaves half a file under the final name.
func Write(path string, kvs []KV, tensors []Tensor) error {
	err := atomicfile.Write(path, func(f io.Writer) error {
		w := bufio.NewWriterSize(f, 1<<20)
		if err := Encode(w, kvs, tensors); err != nil {
			return err
		}
		return w.Flush()
	})
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// Encode writes a GGUF version 3 file to w: the metadata in the order given, then the tensors
// in the order given, each at an offset aligned to general.alignment (DefaultAlignment when
// kvs has none). Everything is checked before the first byte is written, except the sizes of
// data made by Fill, checked as it comes.
func Encode(w io.Writer, kvs []KV, tensors []Tensor) error {
	alignment := uint64(DefaultAlignment)
	seen := map[string]bool{}
	for _, kv := range kvs {
		if kv.Key == "" || len(kv.Key) > math.MaxUint16 || seen[kv.Key] {
			return fmt.Errorf("metadata key %q is empty, too long or repeated", kv.Key)
		}
		seen[kv.Key] = true
		if err := checkValue(kv.Value, 0); err != nil {
			return fmt.Errorf("metadata %q: %w", kv.Key, err)
		}
		if kv.Key == KeyAlignment {
			a, ok := kv.Value.V.(uint32)
			if !ok || a == 0 || a&(a-1) != 0 {
				return fmt.Errorf("metadata %q must be a uint32 power of two, got %v", KeyAlignment, kv.Value)
			}
			alignment = uint64(a)
		}
	}
	offsets := make([]uint64, len(tensors))
	sizes := make([]int, len(tensors))
	var off uint64
	names := map[string]bool{}
	for i, t := range tensors {
		if t.Name == "" || len(t.Name) > MaxNameLen || names[t.Name] {
			return fmt.Errorf("tensor name %q is empty, longer than %d bytes or repeated", t.Name, MaxNameLen)
		}
		names[t.Name] = true
		if _, ok := ggmlTypes[ggmlID(t.Type)]; !ok {
			return fmt.Errorf("tensor %s: type %v cannot be written", t.Name, t.Type)
		}
		if len(t.Shape) < 1 || len(t.Shape) > MaxDims {
			return fmt.Errorf("tensor %s: shape %v has %d dimensions (want 1 to %d)", t.Name, t.Shape, len(t.Shape), MaxDims)
		}
		n := 1
		for _, d := range t.Shape {
			if d < 1 {
				return fmt.Errorf("tensor %s: shape %v has a dimension < 1", t.Name, t.Shape)
			}
			n *= d
		}
		if row := t.Shape[len(t.Shape)-1]; row%t.Type.BlockSize() != 0 {
			return fmt.Errorf("tensor %s: rows of %d values are not whole %v blocks of %d", t.Name, row, t.Type, t.Type.BlockSize())
		}
		size, err := t.Type.Bytes(n)
		if err != nil {
			return fmt.Errorf("tensor %s: %w", t.Name, err)
		}
		if t.Data != nil && len(t.Data) != size {
			return fmt.Errorf("tensor %s %v as %v takes %d bytes; got %d", t.Name, t.Shape, t.Type, size, len(t.Data))
		}
		if t.Data == nil && t.Fill == nil {
			return fmt.Errorf("tensor %s has neither Data nor Fill", t.Name)
		}
		offsets[i], sizes[i] = off, size
		off = alignTo(off+uint64(size), alignment)
	}

	e := &encoder{w: w}
	e.raw([]byte(Magic))
	e.u32(Version)
	e.u64(uint64(len(tensors)))
	e.u64(uint64(len(kvs)))
	for _, kv := range kvs {
		e.str(kv.Key)
		e.u32(uint32(kv.Value.Type))
		e.value(kv.Value)
	}
	for i, t := range tensors {
		e.str(t.Name)
		e.u32(uint32(len(t.Shape)))
		for j := len(t.Shape) - 1; j >= 0; j-- { // innermost first
			e.u64(uint64(t.Shape[j]))
		}
		e.u32(ggmlID(t.Type))
		e.u64(offsets[i])
	}
	e.pad(alignment)
	for i, t := range tensors {
		data := t.Data
		if data == nil && e.err == nil {
			var err error
			if data, err = t.Fill(); err != nil {
				return fmt.Errorf("tensor %s: %w", t.Name, err)
			}
			if len(data) != sizes[i] {
				return fmt.Errorf("tensor %s %v as %v takes %d bytes; its data has %d", t.Name, t.Shape, t.Type, sizes[i], len(data))
			}
		}
		e.raw(data)
		e.pad(alignment)
	}
	return e.err
}

func alignTo(off, a uint64) uint64 { return (off + a - 1) / a * a }

// ggmlID is GGMLType without the panic, for validation (an unknown type maps to an id that
// is not in ggmlTypes).
func ggmlID(t quant.Type) uint32 {
	for id, q := range ggmlTypes {
		if q == t {
			return id
		}
	}
	return math.MaxUint32
}

// checkValue verifies that v holds what its type says, so that encoding cannot fail halfway.
func checkValue(v Value, depth int) error {
	if v.Type != TypeArray {
		if !scalarMatches(v.Type, v.V) {
			return fmt.Errorf("a %v value holds %T", v.Type, v.V)
		}
		return nil
	}
	if depth+1 >= maxArrayDepth && v.Elem == TypeArray {
		return fmt.Errorf("arrays nested deeper than %d", maxArrayDepth)
	}
	if v.Elem == TypeArray {
		vs, ok := v.V.([]Value)
		if !ok {
			return fmt.Errorf("an array of arrays holds %T, want []Value", v.V)
		}
		for i, x := range vs {
			if x.Type != TypeArray {
				return fmt.Errorf("element %d is a %v in an array of arrays", i, x.Type)
			}
			if err := checkValue(x, depth+1); err != nil {
				return fmt.Errorf("element %d: %w", i, err)
			}
		}
		return nil
	}
	if v.Elem.minSize() == 0 {
		return fmt.Errorf("array of unknown type %d", uint32(v.Elem))
	}
	ok := false
	switch v.V.(type) {
	case []uint8:
		ok = v.Elem == TypeUint8
	case []int8:
		ok = v.Elem == TypeInt8
	case []uint16:
		ok = v.Elem == TypeUint16
	case []int16:
		ok = v.Elem == TypeInt16
	case []uint32:
		ok = v.Elem == TypeUint32
	case []int32:
		ok = v.Elem == TypeInt32
	case []float32:
		ok = v.Elem == TypeFloat32
	case []bool:
		ok = v.Elem == TypeBool
	case []string:
		ok = v.Elem == TypeString
	case []uint64:
		ok = v.Elem == TypeUint64
	case []int64:
		ok = v.Elem == TypeInt64
	case []float64:
		ok = v.Elem == TypeFloat64
	}
	if !ok {
		return fmt.Errorf("an array of %v holds %T", v.Elem, v.V)
	}
	return nil
}

func scalarMatches(t ValueType, x any) bool {
	switch x.(type) {
	case uint8:
		return t == TypeUint8
	case int8:
		return t == TypeInt8
	case uint16:
		return t == TypeUint16
	case int16:
		return t == TypeInt16
	case uint32:
		return t == TypeUint32
	case int32:
		return t == TypeInt32
	case float32:
		return t == TypeFloat32
	case bool:
		return t == TypeBool
	case string:
		return t == TypeString
	case uint64:
		return t == TypeUint64
	case int64:
		return t == TypeInt64
	case float64:
		return t == TypeFloat64
	}
	return false
}

// encoder writes little-endian fields, remembering the first error and the offset.
type encoder struct {
	w   io.Writer
	off uint64
	err error
	b   [8]byte
}

func (e *encoder) raw(b []byte) {
	if e.err != nil {
		return
	}
	n, err := e.w.Write(b)
	e.off += uint64(n)
	e.err = err
}

func (e *encoder) u32(v uint32) { binary.LittleEndian.PutUint32(e.b[:], v); e.raw(e.b[:4]) }
func (e *encoder) u64(v uint64) { binary.LittleEndian.PutUint64(e.b[:], v); e.raw(e.b[:8]) }
func (e *encoder) str(s string) { e.u64(uint64(len(s))); e.raw([]byte(s)) }

func (e *encoder) pad(a uint64) {
	var zeros [64]byte
	for n := alignTo(e.off, a) - e.off; n > 0 && e.err == nil; {
		k := min(n, uint64(len(zeros)))
		e.raw(zeros[:k])
		n -= k
	}
}

// value writes v's payload (its type has been written by the caller); checkValue has passed.
func (e *encoder) value(v Value) {
	switch x := v.V.(type) {
	case uint8:
		e.raw([]byte{x})
	case int8:
		e.raw([]byte{byte(x)})
	case uint16:
		binary.LittleEndian.PutUint16(e.b[:], x)
		e.raw(e.b[:2])
	case int16:
		binary.LittleEndian.PutUint16(e.b[:], uint16(x))
		e.raw(e.b[:2])
	case uint32:
		e.u32(x)
	case int32:
		e.u32(uint32(x))
	case float32:
		e.u32(math.Float32bits(x))
	case bool:
		b := byte(0)
		if x {
			b = 1
		}
		e.raw([]byte{b})
	case string:
		e.str(x)
	case uint64:
		e.u64(x)
	case int64:
		e.u64(uint64(x))
	case float64:
		e.u64(math.Float64bits(x))
	default:
		e.u32(uint32(v.Elem))
		e.u64(uint64(arrayLen(v.V)))
		e.elements(v)
	}
}

func (e *encoder) elements(v Value) {
	switch xs := v.V.(type) {
	case []Value:
		for _, x := range xs {
			e.u32(uint32(x.Elem))
			e.u64(uint64(arrayLen(x.V)))
			e.elements(x)
		}
	case []uint8:
		e.raw(xs)
	case []int8:
		for _, x := range xs {
			e.value(Value{V: x})
		}
	case []uint16:
		for _, x := range xs {
			e.value(Value{V: x})
		}
	case []int16:
		for _, x := range xs {
			e.value(Value{V: x})
		}
	case []uint32:
		for _, x := range xs {
			e.u32(x)
		}
	case []int32:
		for _, x := range xs {
			e.u32(uint32(x))
		}
	case []float32:
		for _, x := range xs {
			e.u32(math.Float32bits(x))
		}
	case []bool:
		for _, x := range xs {
			e.value(Value{V: x})
		}
	case []string:
		for _, x := range xs {
			e.str(x)
		}
	case []uint64:
		for _, x := range xs {
			e.u64(x)
		}
	case []int64:
		for _, x := range xs {
			e.u64(uint64(x))
		}
	case []float64:
		for _, x := range xs {
			e.u64(math.Float64bits(x))
		}
	}
}
