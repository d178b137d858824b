// Package safetensors reads and writes the safetensors tensor file format.
//
// A safetensors file is an 8-byte little-endian header length N, N bytes of
// JSON header describing every tensor (dtype, shape and byte offsets relative
// to the end of the header), then the raw little-endian tensor data.
//
// Reading is lazy: Open parses and validates only the header, and tensors are
// read on demand in bounded chunks, so multi-gigabyte checkpoints never have
// to fit in memory. Writing is atomic so a crash never leaves a half-written
// checkpoint under the final name; it stores F32, or F16/BF16 rounded to
// nearest-even, as PyTorch's .half() and .bfloat16() do.
package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"

	"github.com/posformer/posformer/models/atomicfile"
	"github.com/posformer/posformer/models/regular"
)

// maxHeaderLen guards against allocating an absurd buffer when the length
// prefix is garbage (e.g. the file is not safetensors at all).
const maxHeaderLen = 100 << 20

// metadataKey is the reserved header entry holding free-form string metadata.
const metadataKey = "__metadata__"

// dataAlignment is the alignment of the data section the spec recommends, so
// that the data can be memory-mapped and viewed as any dtype in place.
const dataAlignment = 8

// chunkBytes bounds the scratch buffer used while converting tensors, which
// keeps memory use independent of the tensor size.
const chunkBytes = 1 << 20

// dtypeSizes lists the dtypes of the safetensors spec and their element size
// in bytes; anything else in a header is rejected at Open.
var dtypeSizes = map[string]int64{
	"BOOL":    1,
	"U8":      1,
	"I8":      1,
	"F8_E5M2": 1,
	"F8_E4M3": 1,
	"I16":     2,
	"U16":     2,
	"F16":     2,
	"BF16":    2,
	"I32":     4,
	"U32":     4,
	"F32":     4,
	"I64":     8,
	"U64":     8,
	"F64":     8,
}

// Info describes one tensor stored in a file.
type Info struct {
	Name       string
	DType      string // "F32", "F16", "BF16", "F64", "I32", "I64", "U8", "I8", "BOOL", ...
	Shape      []int
	Begin, End int64 // byte offsets relative to the data section
}

// File is an open safetensors file. Tensors are read on demand with ReadAt,
// so a File may be shared by goroutines reading different tensors.
type File struct {
	path      string
	r         io.ReaderAt
	closer    io.Closer // nil for OpenReader
	dataStart int64     // absolute file offset of the data section
	infos     []Info
	byName    map[string]int
	metadata  map[string]string
}

// headerEntry mirrors one tensor entry of the JSON header.
type headerEntry struct {
	DType       string  `json:"dtype"`
	Shape       []int64 `json:"shape"`
	DataOffsets []int64 `json:"data_offsets"`
}

// Open opens path and reads and validates its header. Tensor data is not read.
func Open(path string) (*File, error) {
	f, err := regular.Open(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("safetensors: %s: %w", path, err)
	}
	sf, err := OpenReader(path, f, st.Size())
	if err != nil {
		f.Close()
		return nil, err
	}
	sf.closer = f
	return sf, nil
}

// OpenReader is Open on size bytes of r; name is used in messages. It lets
// the header parser be fuzzed and used on data that is not a file.
func OpenReader(name string, r io.ReaderAt, size int64) (*File, error) {
	return readHeader(name, r, size)
}

func readHeader(path string, f io.ReaderAt, size int64) (*File, error) {
	if size < 8 {
		return nil, fmt.Errorf("safetensors: %s: file is %d bytes, shorter than the 8-byte header length", path, size)
	}
	var prefix [8]byte
	if _, err := f.ReadAt(prefix[:], 0); err != nil {
		return nil, fmt.Errorf("safetensors: %s: reading header length: %w", path, err)
	}
	n := binary.LittleEndian.Uint64(prefix[:])
	if n > maxHeaderLen {
		return nil, fmt.Errorf("safetensors: %s: header length %d exceeds the %d byte limit", path, n, maxHeaderLen)
	}
	if int64(n) > size-8 {
		return nil, fmt.Errorf("safetensors: %s: header length %d is larger than the %d bytes after the length prefix", path, n, size-8)
	}
	raw := make([]byte, n)
	if _, err := f.ReadAt(raw, 8); err != nil {
		return nil, fmt.Errorf("safetensors: %s: reading header: %w", path, err)
	}

	var entries map[string]json.RawMessage
	if err := json.Unmarshal(raw, &entries); err != nil {
		return nil, fmt.Errorf("safetensors: %s: header is not a JSON object: %w", path, err)
	}

	sf := &File{
		path:      path,
		r:         f,
		dataStart: 8 + int64(n),
		byName:    make(map[string]int, len(entries)),
		metadata:  map[string]string{},
	}
	dataSize := size - sf.dataStart

	for name, msg := range entries {
		if name == metadataKey {
			if err := json.Unmarshal(msg, &sf.metadata); err != nil {
				return nil, fmt.Errorf("safetensors: %s: %s is not a JSON object of strings: %w", path, metadataKey, err)
			}
			continue
		}
		info, err := parseEntry(name, msg)
		if err != nil {
			return nil, fmt.Errorf("safetensors: %s: %w", path, err)
		}
		sf.infos = append(sf.infos, info)
	}

	// Checking overlap needs the tensors in data order; reporting truncation
	// in that order also names the first tensor that was cut off.
	sort.Slice(sf.infos, func(i, j int) bool {
		a, b := sf.infos[i], sf.infos[j]
		if a.Begin != b.Begin {
			return a.Begin < b.Begin
		}
		return a.End < b.End
	})
	var prev *Info
	for i := range sf.infos {
		info := &sf.infos[i]
		if prev != nil && info.Begin < prev.End {
			return nil, fmt.Errorf("safetensors: %s: tensor %q bytes [%d, %d) overlap tensor %q bytes [%d, %d)",
				path, info.Name, info.Begin, info.End, prev.Name, prev.Begin, prev.End)
		}
		if info.End > dataSize {
			return nil, fmt.Errorf("safetensors: %s: truncated: tensor %q needs bytes [%d, %d) of the data section but the file holds only %d",
				path, info.Name, info.Begin, info.End, dataSize)
		}
		prev = info
	}

	sort.Slice(sf.infos, func(i, j int) bool { return sf.infos[i].Name < sf.infos[j].Name })
	for i, info := range sf.infos {
		sf.byName[info.Name] = i
	}
	return sf, nil
}

// parseEntry decodes and validates one tensor entry in isolation; checks that
// involve other tensors or the file size are done by the caller.
func parseEntry(name string, msg json.RawMessage) (Info, error) {
	var e headerEntry
	if err := json.Unmarshal(msg, &e); err != nil {
		return Info{}, fmt.Errorf("tensor %q: malformed header entry: %w", name, err)
	}
	elemSize, ok := dtypeSizes[e.DType]
	if !ok {
		return Info{}, fmt.Errorf("tensor %q: unknown dtype %q", name, e.DType)
	}
	if len(e.DataOffsets) != 2 {
		return Info{}, fmt.Errorf("tensor %q: data_offsets has %d values, want 2", name, len(e.DataOffsets))
	}
	begin, end := e.DataOffsets[0], e.DataOffsets[1]
	if begin < 0 || end < begin {
		return Info{}, fmt.Errorf("tensor %q: data_offsets [%d, %d) are out of order", name, begin, end)
	}
	shape := make([]int, len(e.Shape))
	nbytes := elemSize
	for i, d := range e.Shape {
		if d < 0 {
			return Info{}, fmt.Errorf("tensor %q: negative dimension %d in shape %v", name, d, e.Shape)
		}
		if d > math.MaxInt32 || (d != 0 && nbytes > math.MaxInt64/d) {
			return Info{}, fmt.Errorf("tensor %q: shape %v is too large", name, e.Shape)
		}
		nbytes *= d
		shape[i] = int(d)
	}
	if nbytes != end-begin {
		return Info{}, fmt.Errorf("tensor %q: shape %v of %s needs %d bytes but data_offsets [%d, %d) span %d",
			name, e.Shape, e.DType, nbytes, begin, end, end-begin)
	}
	return Info{Name: name, DType: e.DType, Shape: shape, Begin: begin, End: end}, nil
}

// Close closes the underlying file.
func (f *File) Close() error {
	if f.closer == nil {
		return nil
	}
	if err := f.closer.Close(); err != nil {
		return fmt.Errorf("safetensors: closing %s: %w", f.path, err)
	}
	return nil
}

// Infos returns all tensors sorted by name. The result is a copy the caller
// may modify.
func (f *File) Infos() []Info {
	out := make([]Info, len(f.infos))
	for i, info := range f.infos {
		out[i] = cloneInfo(info)
	}
	return out
}

// Info returns the named tensor's description.
func (f *File) Info(name string) (Info, bool) {
	i, ok := f.byName[name]
	if !ok {
		return Info{}, false
	}
	return cloneInfo(f.infos[i]), true
}

func cloneInfo(info Info) Info {
	info.Shape = append([]int{}, info.Shape...)
	return info
}

// Metadata returns a copy of the file's __metadata__ (empty if absent).
func (f *File) Metadata() map[string]string {
	out := make(map[string]string, len(f.metadata))
	for k, v := range f.metadata {
		out[k] = v
	}
	return out
}

// ReadFloat32 reads a tensor and converts F32, F16, BF16 and F64 to float32
// (F16 and BF16 converted exactly, including subnormals, inf and nan). Other
// dtypes are an error naming the tensor and dtype.
func (f *File) ReadFloat32(name string) ([]float32, error) {
	info, err := f.floatInfo(name)
	if err != nil {
		return nil, err
	}
	dst := make([]float32, (info.End-info.Begin)/dtypeSizes[info.DType])
	if err := f.readRange(info, 0, dst); err != nil {
		return nil, err
	}
	return dst, nil
}

// ReadFloat32Into is ReadFloat32 into a caller-provided slice of exactly the
// tensor's element count, so callers can stream into preallocated storage.
func (f *File) ReadFloat32Into(name string, dst []float32) error {
	info, err := f.floatInfo(name)
	if err != nil {
		return err
	}
	if count := (info.End - info.Begin) / dtypeSizes[info.DType]; int64(len(dst)) != count {
		return fmt.Errorf("safetensors: %s: tensor %q has %d elements but the destination holds %d", f.path, name, count, len(dst))
	}
	return f.readRange(info, 0, dst)
}

// ReadFloat32Range reads len(dst) elements of a tensor, starting at element
// offset of its row-major data, converting as ReadFloat32 does. It serves
// loaders that take a slice of a fused tensor or transpose one row at a time.
func (f *File) ReadFloat32Range(name string, offset int64, dst []float32) error {
	info, err := f.floatInfo(name)
	if err != nil {
		return err
	}
	count := (info.End - info.Begin) / dtypeSizes[info.DType]
	if offset < 0 || offset > count || int64(len(dst)) > count-offset {
		return fmt.Errorf("safetensors: %s: elements [%d, %d) are outside tensor %q of %d elements", f.path, offset, offset+int64(len(dst)), name, count)
	}
	return f.readRange(info, offset, dst)
}

func (f *File) floatInfo(name string) (Info, error) {
	i, ok := f.byName[name]
	if !ok {
		return Info{}, fmt.Errorf("safetensors: %s: no tensor %q", f.path, name)
	}
	info := f.infos[i]
	if !isFloat(info.DType) {
		return Info{}, fmt.Errorf("safetensors: %s: tensor %q has dtype %s, cannot read as float32", f.path, name, info.DType)
	}
	return info, nil
}

// readRange converts elements [offset, offset+len(dst)) of a float tensor.
func (f *File) readRange(info Info, offset int64, dst []float32) error {
	size := dtypeSizes[info.DType]
	count := int64(len(dst))
	// Chunks are a whole number of elements so no element straddles two reads.
	perChunk := max(chunkBytes/size, 1)
	buf := make([]byte, min(perChunk, count)*size)
	start := f.dataStart + info.Begin + offset*size
	for done := int64(0); done < count; {
		n := min(perChunk, count-done)
		b := buf[:n*size]
		if _, err := f.r.ReadAt(b, start+done*size); err != nil {
			return fmt.Errorf("safetensors: %s: reading tensor %q: %w", f.path, info.Name, err)
		}
		decode(info.DType, b, dst[done:done+n])
		done += n
	}
	return nil
}

func isFloat(dtype string) bool {
	switch dtype {
	case "F32", "F16", "BF16", "F64":
		return true
	}
	return false
}

// decode converts little-endian elements of dtype in src to dst; len(dst)
// must equal the number of elements in src.
func decode(dtype string, src []byte, dst []float32) {
	le := binary.LittleEndian
	switch dtype {
	case "F32":
		for i := range dst {
			dst[i] = math.Float32frombits(le.Uint32(src[4*i:]))
		}
	case "F64":
		for i := range dst {
			dst[i] = float32(math.Float64frombits(le.Uint64(src[8*i:])))
		}
	case "F16":
		for i := range dst {
			dst[i] = float16ToFloat32(le.Uint16(src[2*i:]))
		}
	case "BF16":
		for i := range dst {
			dst[i] = bfloat16ToFloat32(le.Uint16(src[2*i:]))
		}
	}
}

// bfloat16ToFloat32 is exact because bfloat16 is the top half of a float32.
func bfloat16ToFloat32(h uint16) float32 {
	return math.Float32frombits(uint32(h) << 16)
}

// float16ToFloat32 converts an IEEE 754 half exactly; every half value,
// including subnormals, is representable as a normal float32.
func float16ToFloat32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch exp {
	case 0:
		// Zero or subnormal: mant * 2^-24, which float32 holds exactly.
		v := float32(math.Ldexp(float64(mant), -24))
		return math.Float32frombits(math.Float32bits(v) | sign)
	case 0x1f:
		// Inf or NaN; shifting keeps the NaN payload (and quiet bit).
		return math.Float32frombits(sign | 0xff<<23 | mant<<13)
	default:
		return math.Float32frombits(sign | (exp-15+127)<<23 | mant<<13)
	}
}

// float32ToBFloat16 keeps the top 16 bits of x, rounded to nearest-even; a
// NaN stays a (quiet) NaN instead of rounding into infinity.
func float32ToBFloat16(x float32) uint16 {
	b := math.Float32bits(x)
	if x != x {
		return uint16(b>>16) | 0x40
	}
	return uint16((b + 0x7fff + (b>>16)&1) >> 16)
}

// float32ToFloat16 rounds x to the nearest IEEE 754 half (ties to even),
// giving subnormals below 2^-14 and infinity above 65504.
func float32ToFloat16(x float32) uint16 {
	b := math.Float32bits(x)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	mant := b & 0x7fffff
	switch {
	case exp == 0xff && mant != 0: // NaN: keep the top payload bits, force quiet
		return sign | 0x7e00 | uint16(mant>>13)
	case exp == 0xff:
		return sign | 0x7c00
	}
	e := exp - 127 + 15 // the half's biased exponent
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		// Subnormal half (or zero): value = m * 2^-24 with m = full mantissa
		// shifted right by 14-e bits (the implicit 1 made explicit first).
		if e < -10 {
			return sign // below half the smallest subnormal: rounds to zero
		}
		m := mant | 0x800000
		shift := uint32(14 - e)
		h := m >> shift
		rem := m & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || (rem == half && h&1 == 1) {
			h++ // may carry into the smallest normal, which is the right answer
		}
		return sign | uint16(h)
	}
	h := uint32(e)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++ // a carry into the exponent (up to infinity) is the right answer
	}
	return sign | uint16(h)
}

// Tensor is a float32 tensor to be written.
type Tensor struct {
	Name  string
	Shape []int
	Data  []float32
	// DType is how the tensor is stored: "F32" (or empty), "F16" or "BF16".
	// The narrow types round to nearest-even.
	DType string
}

// storedDType is t's dtype on disk.
func (t Tensor) storedDType() string {
	if t.DType == "" {
		return "F32"
	}
	return t.DType
}

// Write writes tensors (sorted by name, data section 8-byte aligned by
// padding the header with spaces) and metadata to path atomically: it writes
// a temporary file in the same directory, fsyncs it and renames it over path.
// On any error the temporary file is removed and path is untouched.
func Write(path string, tensors []Tensor, metadata map[string]string) error {
	header, sorted, err := buildHeader(tensors, metadata)
	if err != nil {
		return fmt.Errorf("safetensors: writing %s: %w", path, err)
	}

	if err := atomicfile.Write(path, func(w io.Writer) error { return writeBody(w, header, sorted) }); err != nil {
		return fmt.Errorf("safetensors: writing %s: %w", path, err)
	}
	return nil
}

// buildHeader validates tensors and returns the padded JSON header and the
// tensors in name order (the order their data is laid out).
func buildHeader(tensors []Tensor, metadata map[string]string) ([]byte, []Tensor, error) {
	sorted := append([]Tensor(nil), tensors...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })

	entries := make(map[string]any, len(sorted)+1)
	var offset int64
	for i, t := range sorted {
		if t.Name == "" || t.Name == metadataKey {
			return nil, nil, fmt.Errorf("tensor name %q is reserved", t.Name)
		}
		if i > 0 && sorted[i-1].Name == t.Name {
			return nil, nil, fmt.Errorf("duplicate tensor name %q", t.Name)
		}
		n := 1
		shape := make([]int64, len(t.Shape)) // non-nil so a scalar encodes as [] not null
		for j, d := range t.Shape {
			if d < 0 {
				return nil, nil, fmt.Errorf("tensor %q: negative dimension %d in shape %v", t.Name, d, t.Shape)
			}
			n *= d
			shape[j] = int64(d)
		}
		if n != len(t.Data) {
			return nil, nil, fmt.Errorf("tensor %q: shape %v has %d elements but data has %d", t.Name, t.Shape, n, len(t.Data))
		}
		dtype := t.storedDType()
		switch dtype {
		case "F32", "F16", "BF16":
		default:
			return nil, nil, fmt.Errorf("tensor %q: cannot write dtype %q (valid: F32, F16, BF16)", t.Name, t.DType)
		}
		end := offset + dtypeSizes[dtype]*int64(n)
		entries[t.Name] = headerEntry{DType: dtype, Shape: shape, DataOffsets: []int64{offset, end}}
		offset = end
	}
	if len(metadata) > 0 {
		entries[metadataKey] = metadata
	}

	header, err := json.Marshal(entries)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding header: %w", err)
	}
	// Trailing spaces are valid JSON whitespace, which is how the spec pads.
	if pad := (dataAlignment - (8+len(header))%dataAlignment) % dataAlignment; pad > 0 {
		header = append(header, bytes.Repeat([]byte{' '}, pad)...)
	}
	return header, sorted, nil
}

// writeBody writes the length prefix, header and tensor data through a
// bounded buffer so large tensors are not duplicated in memory.
func writeBody(w io.Writer, header []byte, tensors []Tensor) error {
	var prefix [8]byte
	binary.LittleEndian.PutUint64(prefix[:], uint64(len(header)))
	if _, err := w.Write(prefix[:]); err != nil {
		return err
	}
	if _, err := w.Write(header); err != nil {
		return err
	}
	buf := make([]byte, 0, chunkBytes)
	for _, t := range tensors {
		dtype := t.storedDType()
		for _, v := range t.Data {
			switch dtype {
			case "F16":
				buf = binary.LittleEndian.AppendUint16(buf, float32ToFloat16(v))
			case "BF16":
				buf = binary.LittleEndian.AppendUint16(buf, float32ToBFloat16(v))
			default:
				buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
			}
			if len(buf) >= cap(buf)-4 {
				if _, err := w.Write(buf); err != nil {
					return fmt.Errorf("tensor %q: %w", t.Name, err)
				}
				buf = buf[:0]
			}
		}
	}
	if len(buf) > 0 {
		if _, err := w.Write(buf); err != nil {
			return err
		}
	}
	return nil
}
