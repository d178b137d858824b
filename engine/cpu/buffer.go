package cpu

// Buffers: every value the backend holds is a run of bytes (8-byte aligned) plus its shape. Ops
// work on typed views of those bytes (unsafe.Slice), so one planner and one pool serve every
// dtype, and a reshape is the same bytes under another shape.

import (
	"fmt"
	"reflect"
	"sync/atomic"
	"unsafe"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/posformer/posformer/engine/cpu/internal/freelist"
)

// Buffer is the backend's backends.Buffer.
type Buffer struct {
	shape shapes.Shape
	data  []byte // exactly shape.Memory() bytes
	valid bool
	// hostMade: the buffer was made from the host (BufferFromFlatData, NewSharedBuffer), like
	// a model's weights, and has not yet been read by an executable; the first read that does
	// not donate it collapses its pages into huge pages (hugePagesAround).
	hostMade atomic.Bool
}

// minHugeAround is the smallest buffer made from the host that is collapsed into huge pages at
// its first read (hugePagesAround): smaller ones are a decoding step's inputs, not worth a copy.
const minHugeAround = 256 << 10

// byteSize is the storage a shape takes (bool and 1-byte types are one byte an element).
func byteSize(s shapes.Shape) int {
	return s.Size() * s.DType.Size()
}

// alloc returns n zeroed bytes, 8-byte aligned.
func alloc(n int) []byte {
	if n == 0 {
		return []byte{}
	}
	words := make([]uint64, (n+7)/8)
	b := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), n)
	hugePages(b)
	return b
}

// newBufferPool returns the free list that recycles the bytes of finalized buffers, handed out
// by exact size: a decoding loop asks for the same few sizes at every step. It survives garbage
// collections (see freelist): under a tight memory limit a pool emptied at every cycle would
// turn each step's buffers into fresh garbage.
func newBufferPool() *freelist.List[byte] {
	return freelist.New(freelist.Config[byte]{Max: maxPooledBuffers, Budget: maxPooledBytes, Exact: true, Alloc: alloc})
}

// maxPooledBytes bounds what the pool keeps: enough for every per-step buffer of a decoding
// loop, not for a training run's worth of gradients. maxPooledBuffers only keeps the list
// short when the buffers are tiny.
const (
	maxPooledBytes   = 32 << 20
	maxPooledBuffers = 1024
)

// view returns data as a Go slice of the dtype's Go type ([]float32 for Float32, ...).
func view(dt dtypes.DType, data []byte) any {
	n := 0
	if sz := dt.Size(); sz > 0 {
		n = len(data) / sz
	}
	var p unsafe.Pointer
	if len(data) > 0 {
		p = unsafe.Pointer(&data[0])
	}
	switch dt {
	case dtypes.Float32:
		return unsafe.Slice((*float32)(p), n)
	case dtypes.Float64:
		return unsafe.Slice((*float64)(p), n)
	case dtypes.Int32:
		return unsafe.Slice((*int32)(p), n)
	case dtypes.Int64:
		return unsafe.Slice((*int64)(p), n)
	case dtypes.Bool:
		return unsafe.Slice((*bool)(p), n)
	case dtypes.Uint8:
		return unsafe.Slice((*uint8)(p), n)
	case dtypes.Uint32:
		return unsafe.Slice((*uint32)(p), n)
	case dtypes.Uint64:
		return unsafe.Slice((*uint64)(p), n)
	}
	t := dt.GoType()
	if p == nil {
		return reflect.MakeSlice(reflect.SliceOf(t), 0, 0).Interface()
	}
	return reflect.SliceAt(t, p, n).Interface()
}

// bytesOf returns the bytes behind a flat Go slice and its element type.
func bytesOf(flat any) ([]byte, reflect.Type, error) {
	v := reflect.ValueOf(flat)
	if v.Kind() != reflect.Slice {
		return nil, nil, fmt.Errorf("flat data is a %T, not a slice", flat)
	}
	elem := v.Type().Elem()
	n := v.Len() * int(elem.Size())
	if n == 0 {
		return []byte{}, elem, nil
	}
	return unsafe.Slice((*byte)(v.UnsafePointer()), n), elem, nil
}

func typed[T any](data []byte) []T {
	if len(data) == 0 {
		return nil
	}
	var z T
	return unsafe.Slice((*T)(unsafe.Pointer(&data[0])), len(data)/int(unsafe.Sizeof(z)))
}

func (b *Backend) buffer(buf backends.Buffer) (*Buffer, error) {
	bb, ok := buf.(*Buffer)
	if !ok || bb == nil {
		return nil, fmt.Errorf("backend %s: buffer is a %T, not one of this backend's", BackendName, buf)
	}
	if !bb.valid {
		return nil, fmt.Errorf("backend %s: buffer used after it was finalized or donated", BackendName)
	}
	return bb, nil
}

func (b *Backend) newBuffer(s shapes.Shape) *Buffer {
	return &Buffer{shape: s, data: b.bufs.Get(byteSize(s)), valid: true}
}

// BufferFinalize implements backends.DataInterface.
func (b *Backend) BufferFinalize(buf backends.Buffer) error {
	bb, err := b.buffer(buf)
	if err != nil {
		return err
	}
	bb.valid = false
	b.bufs.Put(bb.data)
	bb.data = nil
	return nil
}

// BufferShape implements backends.DataInterface.
func (b *Backend) BufferShape(buf backends.Buffer) (shapes.Shape, error) {
	bb, err := b.buffer(buf)
	if err != nil {
		return shapes.Invalid(), err
	}
	return bb.shape, nil
}

// BufferDeviceNum implements backends.DataInterface.
func (b *Backend) BufferDeviceNum(buf backends.Buffer) (backends.DeviceNum, error) {
	if _, err := b.buffer(buf); err != nil {
		return 0, err
	}
	return 0, nil
}

// BufferToFlatData implements backends.DataInterface.
func (b *Backend) BufferToFlatData(buf backends.Buffer, flat any) error {
	bb, err := b.buffer(buf)
	if err != nil {
		return err
	}
	dst, elem, err := bytesOf(flat)
	if err != nil {
		return err
	}
	if elem != bb.shape.DType.GoType() || len(dst) != len(bb.data) {
		return fmt.Errorf("backend %s: flat %T of %d bytes does not fit buffer %s", BackendName, flat, len(dst), bb.shape)
	}
	copy(dst, bb.data)
	return nil
}

// BufferFromFlatData implements backends.DataInterface.
func (b *Backend) BufferFromFlatData(dev backends.DeviceNum, flat any, s shapes.Shape) (backends.Buffer, error) {
	if dev != 0 {
		return nil, fmt.Errorf("backend %s: only device 0 exists, not %d", BackendName, dev)
	}
	src, elem, err := bytesOf(flat)
	if err != nil {
		return nil, err
	}
	if elem != s.DType.GoType() || len(src) != byteSize(s) {
		return nil, fmt.Errorf("backend %s: flat %T of %d bytes does not fit shape %s", BackendName, flat, len(src), s)
	}
	buf := b.newBuffer(s)
	copy(buf.data, src)
	buf.hostMade.Store(len(buf.data) >= minHugeAround)
	return buf, nil
}

// HasSharedBuffers implements backends.DataInterface: buffers are host memory.
func (b *Backend) HasSharedBuffers() bool { return true }

// NewSharedBuffer implements backends.DataInterface.
func (b *Backend) NewSharedBuffer(dev backends.DeviceNum, s shapes.Shape) (backends.Buffer, any, error) {
	if dev != 0 {
		return nil, nil, fmt.Errorf("backend %s: only device 0 exists, not %d", BackendName, dev)
	}
	buf := &Buffer{shape: s, data: alloc(byteSize(s)), valid: true}
	buf.hostMade.Store(len(buf.data) >= minHugeAround)
	return buf, view(s.DType, buf.data), nil
}

// BufferData implements backends.DataInterface.
func (b *Backend) BufferData(buf backends.Buffer) (any, error) {
	bb, err := b.buffer(buf)
	if err != nil {
		return nil, err
	}
	return view(bb.shape.DType, bb.data), nil
}

// BufferCopyToDevice implements backends.DataInterface.
func (b *Backend) BufferCopyToDevice(src backends.Buffer, dev backends.DeviceNum) (backends.Buffer, error) {
	return nil, fmt.Errorf("backend %s: one device only, cannot copy to device %d", BackendName, dev)
}
