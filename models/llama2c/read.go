package llama2c

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"unsafe"

	"github.com/posformer/posformer/models/regular"
)

// chunkBytes bounds the scratch buffer used to convert bytes to floats.
const chunkBytes = 1 << 20

// Reader streams a checkpoint's tensors in file order: Next names the next weight, Read fills
// a caller's slice with it, so that the values land directly where they will live.
type Reader struct {
	h       Header
	r       io.Reader
	entries []Entry
	next    int    // index of the entry after the current one
	cur     *Entry // returned by Next and not read yet
	buf     []byte
}

// ReadHeader parses and checks the header at the start of r. size is the whole file's length
// in bytes (-1 when unknown); when known, a file that is shorter than the header implies is
// reported naming the first tensor that does not fit, and a longer one is refused too.
func ReadHeader(r io.Reader, size int64) (Header, error) {
	var b [versionedHeaderSize]byte
	if _, err := io.ReadFull(r, b[:4]); err != nil {
		return Header{}, fmt.Errorf("file of %d bytes is shorter than a llama2.c header (%d bytes)", max(size, 0), legacyHeaderSize)
	}
	i32 := func(off int) int { return int(int32(binary.LittleEndian.Uint32(b[off:]))) }
	var h Header
	switch magic := binary.LittleEndian.Uint32(b[:4]); {
	case magic == Magic:
		if _, err := io.ReadFull(r, b[4:]); err != nil {
			return Header{}, fmt.Errorf("file starts with the magic \"ak42\" but is shorter than its %d-byte header", versionedHeaderSize)
		}
		h.Version = i32(4)
		if h.Version != 1 && h.Version != 2 {
			return Header{}, fmt.Errorf("unsupported llama2.c version %d (known: 0 without magic, 1 float32, 2 int8 Q8_0)", h.Version)
		}
		h.Dim, h.HiddenDim, h.NumLayers, h.NumHeads, h.NumKVHeads, h.VocabSize, h.SeqLen = i32(8), i32(12), i32(16), i32(20), i32(24), i32(28), i32(32)
		switch b[36] {
		case 0, 1:
			h.SharedClassifier = b[36] == 1
		default:
			return Header{}, fmt.Errorf("shared-classifier flag is %d; want 0 or 1", b[36])
		}
		if h.Version == 2 {
			h.GroupSize = i32(37)
		}
	case magic == 0x32346b61: // "ak42" in the other byte order
		return Header{}, fmt.Errorf("bad magic: the file starts with \"ak42\" in big-endian order; llama2.c files are little-endian")
	default:
		if _, err := io.ReadFull(r, b[4:legacyHeaderSize]); err != nil {
			return Header{}, fmt.Errorf("file of %d bytes is shorter than a llama2.c header (%d bytes)", max(size, 0), legacyHeaderSize)
		}
		h.Dim, h.HiddenDim, h.NumLayers, h.NumHeads, h.NumKVHeads, h.VocabSize, h.SeqLen = i32(0), i32(4), i32(8), i32(12), i32(16), i32(20), i32(24)
		// export.py's legacy format signals an unshared classifier with a negative vocab_size.
		h.SharedClassifier = h.VocabSize > 0
		if h.VocabSize < 0 && h.VocabSize > math.MinInt32 {
			h.VocabSize = -h.VocabSize
		}
	}
	if err := h.validate(); err != nil {
		if h.Version == 0 {
			return Header{}, fmt.Errorf("version-0 header (the file has no \"ak42\" magic): %w", err)
		}
		return Header{}, fmt.Errorf("version-%d header: %w", h.Version, err)
	}
	if size >= 0 {
		if err := h.checkSize(size); err != nil {
			return Header{}, err
		}
	}
	return h, nil
}

// checkSize compares the file's size with the one the header implies.
func (h Header) checkSize(size int64) error {
	want := h.FileSize()
	if size < want {
		off := h.HeaderSize()
		var err error
		h.walk(func(e Entry) bool {
			end := off + e.bytes(h.GroupSize)
			if end > size {
				err = fmt.Errorf("truncated file: tensor %s %v needs %d bytes at offset %d but only %d are left (file %d bytes, header implies %d)",
					e.Name, e.Shape, end-off, off, max(size-off, 0), size, want)
				return false
			}
			off = end
			return true
		})
		return err
	}
	if size > want {
		hint := ""
		if h.Version == 0 && h.SharedClassifier && size-want == int64(4*h.VocabSize*h.Dim) {
			hint = "; the excess is exactly an unshared classifier, which version 0 marks with a negative vocab_size"
		}
		return fmt.Errorf("file has %d bytes but its version-%d header implies %d; it does not describe this file%s", size, h.Version, want, hint)
	}
	return nil
}

// NewReader reads the header from r (see ReadHeader) and prepares to stream the tensors.
// size, the file's length, is required: checked against the header, it bounds every buffer a
// caller allocates for Read, whatever the header claims.
func NewReader(r io.Reader, size int64) (*Reader, error) {
	if size < 0 {
		return nil, fmt.Errorf("llama2c: NewReader needs the file size")
	}
	h, err := ReadHeader(r, size)
	if err != nil {
		return nil, err
	}
	return &Reader{h: h, r: r, entries: h.Layout()}, nil
}

// Header is the checkpoint's header.
func (rd *Reader) Header() Header { return rd.h }

// Next returns the next weight in file order, skipping the legacy RoPE tables and any weight
// the caller did not Read. It returns io.EOF after the last one.
func (rd *Reader) Next() (Entry, error) {
	if rd.cur != nil {
		if err := rd.discard(*rd.cur); err != nil {
			return Entry{}, err
		}
	}
	for rd.next < len(rd.entries) {
		e := rd.entries[rd.next]
		rd.next++
		if e.Skip {
			if err := rd.discard(e); err != nil {
				return Entry{}, err
			}
			continue
		}
		rd.cur = &rd.entries[rd.next-1]
		return e, nil
	}
	rd.cur = nil
	return Entry{}, io.EOF
}

func (rd *Reader) discard(e Entry) error {
	want := e.bytes(rd.h.GroupSize)
	if n, err := io.CopyN(io.Discard, rd.r, want); err != nil {
		return rd.short(e, n, want, err)
	}
	rd.cur = nil
	return nil
}

func (rd *Reader) short(e Entry, got, want int64, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("truncated file: tensor %s %v ends after %d of its %d bytes", e.Name, e.Shape, got, want)
	}
	return fmt.Errorf("reading tensor %s: %w", e.Name, err)
}

// Read fills dst (Numel values) with the weight Next returned, dequantizing version 2, and
// refuses non-finite values.
func (rd *Reader) Read(dst []float32) error {
	if rd.cur == nil {
		return fmt.Errorf("llama2c: Read without a pending tensor (call Next first)")
	}
	e := *rd.cur
	rd.cur = nil
	if len(dst) != e.Numel() {
		return fmt.Errorf("tensor %s %v has %d values; got a buffer of %d", e.Name, e.Shape, e.Numel(), len(dst))
	}
	if want := min(int(e.bytes(rd.h.GroupSize)), chunkBytes); len(rd.buf) < want {
		rd.buf = make([]byte, want)
	}
	var err error
	if e.Quant {
		err = rd.readQ8(e, dst)
	} else {
		err = rd.readF32(e, dst, 0)
	}
	if err != nil {
		return err
	}
	for i, v := range dst {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("tensor %s has a non-finite value %g at index %d; the checkpoint is corrupt", e.Name, v, i)
		}
	}
	return nil
}

// readF32 reads len(dst) little-endian float32 values; done counts bytes of e already read.
func (rd *Reader) readF32(e Entry, dst []float32, done int64) error {
	want := e.bytes(rd.h.GroupSize)
	for i := 0; i < len(dst); {
		n := min(len(dst)-i, len(rd.buf)/4)
		got, err := io.ReadFull(rd.r, rd.buf[:4*n])
		if err != nil {
			return rd.short(e, done+int64(got), want, err)
		}
		for j := range n {
			dst[i+j] = math.Float32frombits(binary.LittleEndian.Uint32(rd.buf[4*j:]))
		}
		i += n
		done += int64(4 * n)
	}
	return nil
}

// readQ8 reads Q8_0 values: all int8 values of the tensor, then one float32 scale per group.
// The int8 values are parked in dst and scaled in place once the scales arrive.
func (rd *Reader) readQ8(e Entry, dst []float32) error {
	want := e.bytes(rd.h.GroupSize)
	for i := 0; i < len(dst); {
		n := min(len(dst)-i, len(rd.buf))
		got, err := io.ReadFull(rd.r, rd.buf[:n])
		if err != nil {
			return rd.short(e, int64(i+got), want, err)
		}
		for j := range n {
			dst[i+j] = float32(int8(rd.buf[j]))
		}
		i += n
	}
	gs := rd.h.GroupSize
	scales := make([]float32, len(dst)/gs)
	if err := rd.readF32(e, scales, int64(len(dst))); err != nil {
		return err
	}
	for g, s := range scales {
		for j := g * gs; j < (g+1)*gs; j++ {
			dst[j] *= s
		}
	}
	return nil
}

// ReadBlocks is Read for a version-2 matrix, kept quantized: its int8 values into q and its
// scales into d, one per block of 32 values (a group's scale repeated over its blocks, so the
// group size must be a multiple of 32). The stored numbers are kept exactly.
func (rd *Reader) ReadBlocks(q []int8, d []float32) error {
	if rd.cur == nil || !rd.cur.Quant {
		return fmt.Errorf("llama2c: ReadBlocks without a pending version-2 matrix (call Next first)")
	}
	e := *rd.cur
	rd.cur = nil
	gs := rd.h.GroupSize
	if gs%32 != 0 || len(q) != e.Numel() || len(d) != e.Numel()/32 {
		return fmt.Errorf("tensor %s %v (group size %d) cannot be read as %d values in blocks of 32", e.Name, e.Shape, gs, len(q))
	}
	want := e.bytes(gs)
	if got, err := io.ReadFull(rd.r, unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(q))), len(q))); err != nil {
		return rd.short(e, int64(got), want, err)
	}
	scales := make([]float32, len(q)/gs)
	if err := rd.readF32(e, scales, int64(len(q))); err != nil {
		return err
	}
	for g, s := range scales {
		if math.IsNaN(float64(s)) || math.IsInf(float64(s), 0) {
			return fmt.Errorf("tensor %s has a non-finite scale %g for group %d; the checkpoint is corrupt", e.Name, s, g)
		}
		for b := g * gs / 32; b < (g+1)*gs/32; b++ {
			d[b] = s
		}
	}
	return nil
}

// Weights maps checkpoint tensor names (as models.TensorName gives them) to flat float32
// values; matrices are [out, in] row-major.
type Weights map[string][]float32

// ReadFile reads a whole checkpoint into memory (tests and converters; Load streams instead).
func ReadFile(path string) (Header, Weights, error) {
	f, err := regular.Open(path)
	if err != nil {
		return Header{}, nil, fmt.Errorf("loading %s: %w", path, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return Header{}, nil, fmt.Errorf("loading %s: %w", path, err)
	}
	rd, err := NewReader(bufio.NewReaderSize(f, chunkBytes), info.Size())
	if err != nil {
		return Header{}, nil, fmt.Errorf("loading %s: %w", path, err)
	}
	w := Weights{}
	for {
		e, err := rd.Next()
		if err == io.EOF {
			return rd.Header(), w, nil
		}
		if err == nil {
			w[e.Name] = make([]float32, e.Numel())
			err = rd.Read(w[e.Name])
		}
		if err != nil {
			return Header{}, nil, fmt.Errorf("loading %s: %w", path, err)
		}
	}
}

// ReadHeaderFile reads the header of the checkpoint at path.
func ReadHeaderFile(path string) (Header, error) {
	f, err := regular.Open(path)
	if err != nil {
		return Header{}, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return Header{}, err
	}
	return ReadHeader(bufio.NewReader(f), info.Size())
}
