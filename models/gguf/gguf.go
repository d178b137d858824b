// Package gguf reads and writes GGUF files, the single-file checkpoints of ggml and llama.cpp
// (ggml's docs/gguf.md), and loads the `llama`, `qwen2` and `gpt2` architectures into posformer
// models. Versions 2 and 3 share one layout (little-endian):
//
//	"GGUF"  uint32 version  uint64 tensor_count  uint64 kv_count
//	kv_count × (string key, uint32 value_type, value)          typed metadata, arrays included
//	tensor_count × (string name, uint32 n_dims, n_dims × uint64 dims, uint32 ggml_type, uint64 offset)
//	padding to general.alignment (32 when absent), then the tensor data, each tensor at its
//	offset from the data start, a multiple of the alignment
//
// where a string is a uint64 length and that many bytes. Dims are innermost first (ggml's ne):
// a PyTorch/posformer matrix [out, in] is stored with dims (in, out), and its bytes are the same
// row-major rows. Tensors are F32, F16, BF16, Q8_0 or Q4_0 (ggml's block layouts, layers/quant);
// a file holding any other type is refused, naming the type and the tensor.
//
// Reading treats the file as hostile: every count and length is checked against the bytes left
// in the file before anything is allocated from it, every size product against overflow, and
// every tensor against the end of the file, so that a corrupt or malicious file is a one-line
// error, never a panic or a huge allocation (FuzzRead).
package gguf

import (
	"fmt"
	"strconv"

	"github.com/posformer/posformer/layers/quant"
)

// Magic is "GGUF" as the first four bytes of a file.
const Magic = "GGUF"

// Version is the version this package writes; Read accepts 2 and 3, which differ only in
// that version 3 may be big-endian (and posformer reads little-endian files only).
const Version = 3

// DefaultAlignment applies when general.alignment is absent.
const DefaultAlignment = 32

// MaxDims is ggml's GGML_MAX_DIMS: no tensor of a GGUF file has more dimensions.
const MaxDims = 4

// MaxNameLen is ggml's GGML_MAX_NAME minus its terminating zero: the longest tensor name.
const MaxNameLen = 63

// Keys of the general section.
const (
	KeyArchitecture = "general.architecture"
	KeyAlignment    = "general.alignment"
	KeyName         = "general.name"
	KeyFileType     = "general.file_type"
	KeyQuantVersion = "general.quantization_version"
)

// ValueType is the type of a metadata value (gguf_metadata_value_type).
type ValueType uint32

// The metadata value types.
const (
	TypeUint8 ValueType = iota
	TypeInt8
	TypeUint16
	TypeInt16
	TypeUint32
	TypeInt32
	TypeFloat32
	TypeBool
	TypeString
	TypeArray
	TypeUint64
	TypeInt64
	TypeFloat64
)

var valueTypeNames = [...]string{"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "bool", "string", "array", "uint64", "int64", "float64"}

func (t ValueType) String() string {
	if int(t) < len(valueTypeNames) {
		return valueTypeNames[t]
	}
	return fmt.Sprintf("value type %d", uint32(t))
}

// minSize is the fewest bytes a value of type t takes in a file: what a count of them must
// fit into before anything is allocated for them.
func (t ValueType) minSize() int64 {
	switch t {
	case TypeUint8, TypeInt8, TypeBool:
		return 1
	case TypeUint16, TypeInt16:
		return 2
	case TypeUint32, TypeInt32, TypeFloat32:
		return 4
	case TypeUint64, TypeInt64, TypeFloat64, TypeString:
		return 8
	case TypeArray:
		return 12 // element type and count
	}
	return 0
}

// Value is a typed metadata value. V holds, by Type: uint8, int8, uint16, int16, uint32, int32,
// float32, bool, string, uint64, int64 or float64; for arrays, a slice of the element type
// ([]string, []float32, []int32, ...), or []Value for arrays of arrays.
type Value struct {
	Type ValueType
	Elem ValueType // element type of an array
	V    any
}

// KV is one metadata entry.
type KV struct {
	Key   string
	Value Value
}

// Constructors of values, for writers.
func String(s string) Value                  { return Value{Type: TypeString, V: s} }
func Uint32(v uint32) Value                  { return Value{Type: TypeUint32, V: v} }
func Uint64(v uint64) Value                  { return Value{Type: TypeUint64, V: v} }
func Int32(v int32) Value                    { return Value{Type: TypeInt32, V: v} }
func Float32(v float32) Value                { return Value{Type: TypeFloat32, V: v} }
func Bool(v bool) Value                      { return Value{Type: TypeBool, V: v} }
func Strings(v []string) Value               { return Value{Type: TypeArray, Elem: TypeString, V: v} }
func Float32s(v []float32) Value             { return Value{Type: TypeArray, Elem: TypeFloat32, V: v} }
func Int32s(v []int32) Value                 { return Value{Type: TypeArray, Elem: TypeInt32, V: v} }
func Array(elem ValueType, v any) Value      { return Value{Type: TypeArray, Elem: elem, V: v} }
func Values(elem ValueType, v []Value) Value { return Value{Type: TypeArray, Elem: elem, V: v} }

// Uint returns an integer value of any integer type, when it is not negative.
func (v Value) Uint() (uint64, bool) {
	switch x := v.V.(type) {
	case uint8:
		return uint64(x), true
	case uint16:
		return uint64(x), true
	case uint32:
		return uint64(x), true
	case uint64:
		return x, true
	case int8:
		return uint64(x), x >= 0
	case int16:
		return uint64(x), x >= 0
	case int32:
		return uint64(x), x >= 0
	case int64:
		return uint64(x), x >= 0
	}
	return 0, false
}

// Float returns a float value. A float32 comes back as the float64 of its shortest decimal
// spelling (1e-5 stays 1e-5, not 9.99999974737875e-06), which is the number its writer meant.
func (v Value) Float() (float64, bool) {
	switch x := v.V.(type) {
	case float32:
		f, err := strconv.ParseFloat(strconv.FormatFloat(float64(x), 'g', -1, 32), 64)
		if err != nil { // NaN and infinities have no shortest decimal
			return float64(x), true
		}
		return f, true
	case float64:
		return x, true
	}
	return 0, false
}

// String is a printable form of the value, arrays abridged, for messages and inspection.
func (v Value) String() string {
	if v.Type == TypeArray {
		return fmt.Sprintf("[%d × %v]", arrayLen(v.V), v.Elem)
	}
	if s, ok := v.V.(string); ok {
		if len(s) > 64 { // a message names a value; it need not repeat a long one
			return strconv.Quote(s[:64]) + "…"
		}
		return strconv.Quote(s)
	}
	return fmt.Sprint(v.V)
}

// ggmlTypes maps ggml's type ids to the formats posformer reads (ggml.h, enum ggml_type).
var ggmlTypes = map[uint32]quant.Type{0: quant.F32, 1: quant.F16, 2: quant.Q4_0, 8: quant.Q8_0, 30: quant.BF16}

// ggmlTypeNames names the other ggml types, so that a refusal says what the file holds.
var ggmlTypeNames = map[uint32]string{
	3: "Q4_1", 4: "Q4_2 (removed)", 5: "Q4_3 (removed)", 6: "Q5_0", 7: "Q5_1", 9: "Q8_1", 10: "Q2_K", 11: "Q3_K", 12: "Q4_K",
	13: "Q5_K", 14: "Q6_K", 15: "Q8_K", 16: "IQ2_XXS", 17: "IQ2_XS", 18: "IQ3_XXS", 19: "IQ1_S",
	20: "IQ4_NL", 21: "IQ3_S", 22: "IQ2_S", 23: "IQ4_XS", 24: "I8", 25: "I16", 26: "I32",
	27: "I64", 28: "F64", 29: "IQ1_M", 31: "Q4_0_4_4", 32: "Q4_0_4_8", 33: "Q4_0_8_8", 34: "TQ1_0",
	35: "TQ2_0", 39: "MXFP4",
}

// typeName names a ggml type id.
func typeName(id uint32) string {
	if t, ok := ggmlTypes[id]; ok {
		return t.String()
	}
	if n, ok := ggmlTypeNames[id]; ok {
		return n
	}
	return fmt.Sprintf("unknown type %d", id)
}

// fileTypes is general.file_type for a file whose matrices are mostly of one format
// (llama.cpp's llama_ftype: ALL_F32, MOSTLY_F16, MOSTLY_Q4_0, MOSTLY_Q8_0, MOSTLY_BF16).
var fileTypes = map[quant.Type]uint32{quant.F32: 0, quant.F16: 1, quant.Q4_0: 2, quant.Q8_0: 7, quant.BF16: 32}

// FileType is general.file_type for a file whose matrices are t.
func FileType(t quant.Type) uint32 { return fileTypes[t] }

func arrayLen(v any) int {
	switch x := v.(type) {
	case []uint8:
		return len(x)
	case []int8:
		return len(x)
	case []uint16:
		return len(x)
	case []int16:
		return len(x)
	case []uint32:
		return len(x)
	case []int32:
		return len(x)
	case []float32:
		return len(x)
	case []bool:
		return len(x)
	case []string:
		return len(x)
	case []uint64:
		return len(x)
	case []int64:
		return len(x)
	case []float64:
		return len(x)
	case []Value:
		return len(x)
	}
	return -1
}

// sizeLimit bounds every size computed from a file: no file is larger, and sums of two values
// below it cannot overflow an int64.
const sizeLimit = 1 << 60

// mulLimit is a·b, or sizeLimit+1 when the product exceeds sizeLimit.
func mulLimit(a, b uint64) uint64 {
	if a != 0 && b > sizeLimit/a {
		return sizeLimit + 1
	}
	return a * b
}
