package gguf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/posformer/posformer/layers/quant"
	"github.com/posformer/posformer/models/regular"
)

// TensorInfo describes one tensor of a file.
type TensorInfo struct {
	Name   string
	Dims   []uint64 // innermost first, as the file stores them (ggml's ne)
	Type   quant.Type
	Offset uint64 // of its data, from the start of the data section
	Bytes  int64  // size of its data
}

// Shape is the tensor's shape outermost first, as PyTorch and posformer write shapes: a
// matrix stored with dims (in, out) is [out, in].
func (t TensorInfo) Shape() []int {
	s := make([]int, len(t.Dims))
	for i, d := range t.Dims {
		s[len(t.Dims)-1-i] = int(d)
	}
	return s
}

// Numel is the number of values.
func (t TensorInfo) Numel() int {
	n := 1
	for _, d := range t.Dims {
		n *= int(d)
	}
	return n
}

// File is a parsed GGUF file: its metadata and tensor infos, and the means to read tensors.
type File struct {
	Version    uint32
	KV         []KV // in file order
	Tensors    []TensorInfo
	Alignment  int64
	DataOffset int64 // where the data section starts in the file
	Size       int64 // of the whole file

	r       io.ReaderAt
	closer  io.Closer
	kv      map[string]int
	tensors map[string]int
}

// Open parses the GGUF file at path; Close releases it. Errors do not repeat the path beyond
// what the operating system says, so that callers wrap them once ("loading PATH: ...").
func Open(path string) (*File, error) {
	if info, err := os.Stat(path); err == nil && info.IsDir() {
		return nil, fmt.Errorf("is a directory, not a GGUF file")
	}
	f, err := regular.Open(path)
	if err != nil {
		return nil, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	g, err := Read(f, info.Size())
	if err != nil {
		f.Close()
		return nil, err
	}
	g.closer = f
	return g, nil
}

// Close closes the file Open opened.
func (f *File) Close() error {
	if f.closer == nil {
		return nil
	}
	return f.closer.Close()
}

// IsFile reports whether path is a GGUF file: a regular file that starts with the magic
// "GGUF", or a path ending in .gguf that is missing or no regular file (so that its error
// comes from this package's loader). A named pipe is never opened here: open(2) would block.
func IsFile(path string) bool {
	f, err := regular.Open(path)
	if err != nil {
		return strings.HasSuffix(path, ".gguf")
	}
	defer f.Close()
	var b [4]byte
	_, err = io.ReadFull(f, b[:])
	return err == nil && string(b[:]) == Magic
}

// Get returns the metadata value of key.
func (f *File) Get(key string) (Value, bool) {
	i, ok := f.kv[key]
	if !ok {
		return Value{}, false
	}
	return f.KV[i].Value, true
}

// Tensor returns the info of the tensor called name.
func (f *File) Tensor(name string) (TensorInfo, bool) {
	i, ok := f.tensors[name]
	if !ok {
		return TensorInfo{}, false
	}
	return f.Tensors[i], true
}

// ReadTensor returns the raw bytes of a tensor (ggml's layout of its type). Read has checked
// that they lie inside the file, so the allocation is bounded by the file's size.
func (f *File) ReadTensor(t TensorInfo) ([]byte, error) {
	buf := make([]byte, t.Bytes)
	if err := f.ReadTensorInto(t, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// ReadTensorInto reads the raw bytes of t into buf, which must be t.Bytes long.
func (f *File) ReadTensorInto(t TensorInfo, buf []byte) error {
	if int64(len(buf)) != t.Bytes {
		return fmt.Errorf("tensor %s takes %d bytes; got a buffer of %d", t.Name, t.Bytes, len(buf))
	}
	n, err := f.r.ReadAt(buf, f.DataOffset+int64(t.Offset))
	if n == len(buf) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		return fmt.Errorf("tensor %s: the file ends after %d of its %d bytes (truncated while reading?)", t.Name, n, len(buf))
	}
	return fmt.Errorf("reading tensor %s: %w", t.Name, err)
}

// ReadFloat32 returns a tensor's values widened to float32.
func (f *File) ReadFloat32(t TensorInfo) ([]float32, error) {
	raw, err := f.ReadTensor(t)
	if err != nil {
		return nil, err
	}
	out := make([]float32, t.Numel())
	if err := quant.Dequantize(t.Type, raw, out); err != nil {
		return nil, fmt.Errorf("tensor %s: %w", t.Name, err)
	}
	return out, nil
}

// cursor reads the header sequentially, knowing how many bytes the file has left, so that
// every length can be checked against them before anything is allocated from it.
type cursor struct {
	r    *bufio.Reader
	off  int64
	size int64
	b    [8]byte
}

func (c *cursor) left() int64 { return c.size - c.off }

// errShort says that n bytes do not fit; callers add which field it was.
func (c *cursor) short(n int64) error {
	return fmt.Errorf("needs %d bytes at offset %d but the file has %d left (truncated or corrupt)", n, c.off, max(c.left(), 0))
}

func (c *cursor) fixed(n int) ([]byte, error) {
	if int64(n) > c.left() {
		return nil, c.short(int64(n))
	}
	if _, err := io.ReadFull(c.r, c.b[:n]); err != nil {
		return nil, fmt.Errorf("reading at offset %d: %w", c.off, err)
	}
	c.off += int64(n)
	return c.b[:n], nil
}

func (c *cursor) u32() (uint32, error) {
	b, err := c.fixed(4)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (c *cursor) u64() (uint64, error) {
	b, err := c.fixed(8)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

// str reads a string whose length must fit in the bytes left.
func (c *cursor) str() (string, error) {
	n, err := c.u64()
	if err != nil {
		return "", err
	}
	if n > uint64(max(c.left(), 0)) {
		return "", fmt.Errorf("string length %d exceeds the %d bytes left in the file", n, max(c.left(), 0))
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(c.r, buf); err != nil {
		return "", fmt.Errorf("reading at offset %d: %w", c.off, err)
	}
	c.off += int64(n)
	return string(buf), nil
}

// maxArrayDepth bounds arrays of arrays: no real file nests them, and a hostile one could
// otherwise nest them as deep as its bytes allow.
const maxArrayDepth = 4

// Minimum sizes of the records counted in the header: a metadata entry (key length, value
// type, one byte of value) and a tensor info (name length, n_dims, type, offset).
const (
	minKVBytes     = 8 + 4 + 1
	minTensorBytes = 8 + 4 + 4 + 8
)

// Read parses a GGUF file of size bytes from r: header, metadata and tensor infos, all checked
// (see the package comment). Tensor data is read later, on demand.
func Read(r io.ReaderAt, size int64) (*File, error) {
	c := &cursor{r: bufio.NewReaderSize(io.NewSectionReader(r, 0, size), 1<<16), size: size}
	magic, err := c.fixed(4)
	if err != nil {
		return nil, fmt.Errorf("file of %d bytes is too short for a GGUF header (24 bytes)", size)
	}
	if string(magic) != Magic {
		return nil, fmt.Errorf("not a GGUF file: it starts with %q, not %q", magic, Magic)
	}
	f := &File{Size: size, r: r, kv: map[string]int{}, tensors: map[string]int{}, Alignment: DefaultAlignment}
	if f.Version, err = c.u32(); err != nil {
		return nil, fmt.Errorf("header: version %w", err)
	}
	switch {
	case f.Version == 0x03000000 || f.Version == 0x02000000:
		return nil, fmt.Errorf("GGUF version %d is big-endian; posformer reads little-endian files (convert it on a little-endian machine)", f.Version>>24)
	case f.Version != 2 && f.Version != 3:
		return nil, fmt.Errorf("unsupported GGUF version %d (posformer reads versions 2 and 3; re-convert the model with a current llama.cpp)", f.Version)
	}
	nTensors, err := c.u64()
	if err != nil {
		return nil, fmt.Errorf("header: tensor_count %w", err)
	}
	nKV, err := c.u64()
	if err != nil {
		return nil, fmt.Errorf("header: metadata_kv_count %w", err)
	}
	if need := mulLimit(nKV, minKVBytes); need > uint64(c.left()) {
		return nil, fmt.Errorf("header: metadata_kv_count %d cannot fit: that many entries take at least %d bytes and %d are left (corrupt header)", nKV, need, c.left())
	}
	if need := mulLimit(nTensors, minTensorBytes); need > uint64(c.left()) {
		return nil, fmt.Errorf("header: tensor_count %d cannot fit: that many tensor infos take at least %d bytes and %d are left (corrupt header)", nTensors, need, c.left())
	}

	f.KV = make([]KV, 0, nKV)
	for i := range nKV {
		key, err := c.str()
		if err != nil {
			return nil, fmt.Errorf("metadata entry %d: key %w", i, err)
		}
		if key == "" || len(key) > math.MaxUint16 {
			return nil, fmt.Errorf("metadata entry %d: key of %d bytes (want 1 to 65535)", i, len(key))
		}
		if _, dup := f.kv[key]; dup {
			return nil, fmt.Errorf("metadata key %q appears twice", key)
		}
		typ, err := c.u32()
		if err != nil {
			return nil, fmt.Errorf("metadata %q: value type %w", key, err)
		}
		v, err := c.value(ValueType(typ), 0)
		if err != nil {
			return nil, fmt.Errorf("metadata %q: %w", key, err)
		}
		f.kv[key] = len(f.KV)
		f.KV = append(f.KV, KV{Key: key, Value: v})
	}
	if v, ok := f.Get(KeyAlignment); ok {
		a, isU32 := v.V.(uint32)
		if !isU32 || a == 0 || a&(a-1) != 0 {
			return nil, fmt.Errorf("metadata %q is %v (%v); want a uint32 power of two (default %d)", KeyAlignment, v, v.Type, DefaultAlignment)
		}
		f.Alignment = int64(a)
	}

	f.Tensors = make([]TensorInfo, 0, nTensors)
	for i := range nTensors {
		t, err := c.tensorInfo(f.Alignment)
		if err != nil {
			if t.Name != "" {
				return nil, fmt.Errorf("tensor %q: %w", t.Name, err)
			}
			return nil, fmt.Errorf("tensor info %d: %w", i, err)
		}
		if _, dup := f.tensors[t.Name]; dup {
			return nil, fmt.Errorf("tensor %q appears twice", t.Name)
		}
		f.tensors[t.Name] = len(f.Tensors)
		f.Tensors = append(f.Tensors, t)
	}
	f.DataOffset = alignUp(c.off, f.Alignment)
	data := max(size-f.DataOffset, 0)
	for _, t := range f.Tensors {
		if t.Offset > uint64(data) || uint64(t.Bytes) > uint64(data)-t.Offset {
			return nil, fmt.Errorf("tensor %q %v (%v, %d bytes at data offset %d) ends past the end of the file, which has %d bytes of data: truncated file",
				t.Name, t.Shape(), t.Type, t.Bytes, t.Offset, data)
		}
	}
	if err := f.checkContiguous(); err != nil {
		return nil, err
	}
	return f, nil
}

// checkContiguous refuses tensor data that overlaps, or leaves gaps, as llama.cpp's reader
// (gguf_init_from_file) does: the first tensor starts at data offset 0 and each next one, in
// file order, where the previous one ends padded to the alignment. Overlapping tensors (all at
// offset 0, or one inside another) would otherwise load as weights no writer meant, and run
// as garbage.
func (f *File) checkContiguous() error {
	var end uint64 // where the next tensor must start; Read has bounded every extent by the file
	for i, t := range f.Tensors {
		if t.Offset == end {
			end = t.Offset + uint64(alignUp(t.Bytes, f.Alignment))
			continue
		}
		const rule = "GGUF tensor data must be contiguous and disjoint, in file order, as llama.cpp requires (re-convert the model)"
		if i == 0 {
			return fmt.Errorf("tensor %q starts at data offset %d but the first tensor must start at 0: %s", t.Name, t.Offset, rule)
		}
		prev := f.Tensors[i-1]
		how := "overlapping it"
		if t.Offset > end {
			how = fmt.Sprintf("leaving a gap of %d bytes", t.Offset-end)
		}
		return fmt.Errorf("tensor %q starts at data offset %d but tensor %q before it ends at %d (%d bytes at %d, padded to the alignment %d), %s: %s",
			t.Name, t.Offset, prev.Name, end, prev.Bytes, prev.Offset, f.Alignment, how, rule)
	}
	return nil
}

func alignUp(off, a int64) int64 { return (off + a - 1) / a * a }

// tensorInfo reads one tensor info; the returned info carries the name once it is known, for
// the caller's message.
func (c *cursor) tensorInfo(alignment int64) (TensorInfo, error) {
	var t TensorInfo
	name, err := c.str()
	if err != nil {
		return t, fmt.Errorf("name %w", err)
	}
	if name == "" || len(name) > MaxNameLen {
		return t, fmt.Errorf("name %q has %d bytes (want 1 to %d)", name, len(name), MaxNameLen)
	}
	t.Name = name
	nd, err := c.u32()
	if err != nil {
		return t, fmt.Errorf("n_dimensions %w", err)
	}
	if nd < 1 || nd > MaxDims {
		return t, fmt.Errorf("has %d dimensions (want 1 to %d)", nd, MaxDims)
	}
	t.Dims = make([]uint64, nd)
	numel := uint64(1)
	for j := range t.Dims {
		if t.Dims[j], err = c.u64(); err != nil {
			return t, fmt.Errorf("dimension %d %w", j, err)
		}
		if t.Dims[j] == 0 {
			return t, fmt.Errorf("dimension %d is 0", j)
		}
		numel = mulLimit(numel, t.Dims[j])
	}
	if numel > sizeLimit {
		return t, fmt.Errorf("dimensions %v (innermost first): their product overflows", t.Dims)
	}
	id, err := c.u32()
	if err != nil {
		return t, fmt.Errorf("type %w", err)
	}
	typ, ok := ggmlTypes[id]
	if !ok {
		return t, fmt.Errorf("type %s, which posformer does not read (supported: F32, F16, BF16, Q8_0, Q4_0); requantize the model to one of them with llama.cpp's llama-quantize", typeName(id))
	}
	t.Type = typ
	if bs := uint64(typ.BlockSize()); t.Dims[0]%bs != 0 {
		return t, fmt.Errorf("rows of %d values are not whole %v blocks of %d", t.Dims[0], typ, bs)
	}
	bytes := mulLimit(numel/uint64(typ.BlockSize()), uint64(typ.BlockBytes()))
	if bytes > sizeLimit {
		return t, fmt.Errorf("dimensions %v of %v: the size overflows", t.Dims, typ)
	}
	t.Bytes = int64(bytes)
	if t.Offset, err = c.u64(); err != nil {
		return t, fmt.Errorf("offset %w", err)
	}
	if t.Offset%uint64(alignment) != 0 {
		return t, fmt.Errorf("data offset %d is not a multiple of the alignment %d", t.Offset, alignment)
	}
	return t, nil
}

// value reads a value of type t; depth counts enclosing arrays.
func (c *cursor) value(t ValueType, depth int) (Value, error) {
	v := Value{Type: t}
	switch t {
	case TypeArray:
		elem, err := c.u32()
		if err != nil {
			return v, fmt.Errorf("array element type %w", err)
		}
		v.Elem = ValueType(elem)
		if v.Elem.minSize() == 0 {
			return v, fmt.Errorf("array of unknown value type %d", elem)
		}
		if v.Elem == TypeArray && depth+1 >= maxArrayDepth {
			return v, fmt.Errorf("arrays nested deeper than %d", maxArrayDepth)
		}
		n, err := c.u64()
		if err != nil {
			return v, fmt.Errorf("array length %w", err)
		}
		if need := mulLimit(n, uint64(v.Elem.minSize())); need > uint64(max(c.left(), 0)) {
			return v, fmt.Errorf("array of %d %v elements needs at least %d bytes but the file has %d left", n, v.Elem, need, max(c.left(), 0))
		}
		v.V, err = c.array(v.Elem, int(n), depth)
		return v, err
	case TypeString:
		s, err := c.str()
		if err != nil {
			return v, err
		}
		v.V = s
		return v, nil
	}
	size := t.minSize()
	if size == 0 {
		return v, fmt.Errorf("unknown value type %d", uint32(t))
	}
	b, err := c.fixed(int(size))
	if err != nil {
		return v, fmt.Errorf("%v value %w", t, err)
	}
	v.V, err = scalar(t, b)
	return v, err
}

// scalar decodes a fixed-size value.
func scalar(t ValueType, b []byte) (any, error) {
	le := binary.LittleEndian
	switch t {
	case TypeUint8:
		return b[0], nil
	case TypeInt8:
		return int8(b[0]), nil
	case TypeUint16:
		return le.Uint16(b), nil
	case TypeInt16:
		return int16(le.Uint16(b)), nil
	case TypeUint32:
		return le.Uint32(b), nil
	case TypeInt32:
		return int32(le.Uint32(b)), nil
	case TypeFloat32:
		return math.Float32frombits(le.Uint32(b)), nil
	case TypeBool:
		if b[0] > 1 {
			return nil, fmt.Errorf("bool value is %d (want 0 or 1)", b[0])
		}
		return b[0] == 1, nil
	case TypeUint64:
		return le.Uint64(b), nil
	case TypeInt64:
		return int64(le.Uint64(b)), nil
	case TypeFloat64:
		return math.Float64frombits(le.Uint64(b)), nil
	}
	return nil, fmt.Errorf("unknown value type %d", uint32(t))
}

// array reads n elements of type t into a typed slice; n has been checked against the file.
func (c *cursor) array(t ValueType, n, depth int) (any, error) {
	switch t {
	case TypeString:
		out := make([]string, n)
		for i := range out {
			var err error
			if out[i], err = c.str(); err != nil {
				return nil, fmt.Errorf("element %d: %w", i, err)
			}
		}
		return out, nil
	case TypeArray:
		out := make([]Value, n)
		for i := range out {
			var err error
			if out[i], err = c.value(TypeArray, depth+1); err != nil {
				return nil, fmt.Errorf("element %d: %w", i, err)
			}
		}
		return out, nil
	}
	le := binary.LittleEndian
	switch t {
	case TypeUint8:
		return fixedArray(c, n, 1, func(b []byte) (uint8, error) { return b[0], nil })
	case TypeInt8:
		return fixedArray(c, n, 1, func(b []byte) (int8, error) { return int8(b[0]), nil })
	case TypeUint16:
		return fixedArray(c, n, 2, func(b []byte) (uint16, error) { return le.Uint16(b), nil })
	case TypeInt16:
		return fixedArray(c, n, 2, func(b []byte) (int16, error) { return int16(le.Uint16(b)), nil })
	case TypeUint32:
		return fixedArray(c, n, 4, func(b []byte) (uint32, error) { return le.Uint32(b), nil })
	case TypeInt32:
		return fixedArray(c, n, 4, func(b []byte) (int32, error) { return int32(le.Uint32(b)), nil })
	case TypeFloat32:
		return fixedArray(c, n, 4, func(b []byte) (float32, error) { return math.Float32frombits(le.Uint32(b)), nil })
	case TypeBool:
		return fixedArray(c, n, 1, func(b []byte) (bool, error) {
			if b[0] > 1 {
				return false, fmt.Errorf("bool value is %d (want 0 or 1)", b[0])
			}
			return b[0] == 1, nil
		})
	case TypeUint64:
		return fixedArray(c, n, 8, func(b []byte) (uint64, error) { return le.Uint64(b), nil })
	case TypeInt64:
		return fixedArray(c, n, 8, func(b []byte) (int64, error) { return int64(le.Uint64(b)), nil })
	case TypeFloat64:
		return fixedArray(c, n, 8, func(b []byte) (float64, error) { return math.Float64frombits(le.Uint64(b)), nil })
	}
	return nil, fmt.Errorf("unknown value type %d", uint32(t))
}

// fixedArray reads n values of size bytes each, decoded by dec.
func fixedArray[T any](c *cursor, n, size int, dec func(b []byte) (T, error)) ([]T, error) {
	out := make([]T, n)
	for i := range out {
		b, err := c.fixed(size)
		if err == nil {
			out[i], err = dec(b)
		}
		if err != nil {
			return nil, fmt.Errorf("element %d: %w", i, err)
		}
	}
	return out, nil
}
