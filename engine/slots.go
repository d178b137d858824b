package engine

// Rows as slots: a server keeps a Session and gives each request a row for as long as it runs
// (cmd/serve). When a request ends, its row must be emptied before another request takes it,
// while the other rows go on decoding. And since every step computes every row, empty ones
// included, a server sizes its session to the requests it has: it moves the running rows into
// a smaller or larger session (CopyRow) as requests come and go.

import (
	"fmt"
	"reflect"
	"unsafe"

	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// Rows is the number of sequences the session decodes together.
func (s *Session) Rows() int { return s.batch }

// FreeRow empties row so that a new sequence can start in it at position 0 (Used[row] = 0),
// leaving the other rows as they are. Clearing the row's slot validity alone would not do: the
// cache write adds each new key into its slot (layers.CacheWrite: "slots start at zero and are
// written once"), so stale keys and values would be summed into the new sequence's. The row's
// whole block of every cache tensor is zeroed, which is contiguous because the row is the first
// axis of all of them.
func (s *Session) FreeRow(row int) error {
	if row < 0 || row >= s.batch {
		return fmt.Errorf("freeing row %d: the session has rows 0 to %d", row, s.batch-1)
	}
	if err := s.materialize(); err != nil {
		return fmt.Errorf("freeing row %d: %w", row, err)
	}
	s.Used[row] = 0
	for i, t := range s.cache {
		per := t.Shape().Size() / s.batch * t.Shape().DType.Size() // bytes per row
		if err := s.e.withBytes(t, true, func(b []byte) { clear(b[row*per : (row+1)*per]) }); err != nil {
			return fmt.Errorf("freeing row %d of cache tensor %d: %w", row, i, err)
		}
	}
	return nil
}

// CopyRow copies row from of s into row to of dst, a session of the same engine whose row to
// is empty (new, or freed): the row's keys, values, slot positions and validity, and its Used
// count, so that dst continues the sequence where s left it. The sessions may differ in rows
// and in window size; dst's window grows to hold the row.
func (s *Session) CopyRow(from int, dst *Session, to int) error {
	switch {
	case dst.e != s.e:
		return fmt.Errorf("copying row %d: the sessions belong to different engines", from)
	case from < 0 || from >= s.batch:
		return fmt.Errorf("copying row %d: the session has rows 0 to %d", from, s.batch-1)
	case to < 0 || to >= dst.batch:
		return fmt.Errorf("copying into row %d: the session has rows 0 to %d", to, dst.batch-1)
	case dst.Used[to] != 0:
		return fmt.Errorf("copying into row %d: it holds %d tokens; free it first", to, dst.Used[to])
	}
	used := s.Used[from]
	if used == 0 || s.cache == nil && s.raw == nil {
		return nil // nothing in the row
	}
	if err := s.materialize(); err != nil {
		return fmt.Errorf("copying row %d: %w", from, err)
	}
	if err := dst.materialize(); err != nil {
		return fmt.Errorf("copying row %d: %w", from, err)
	}
	if w := s.e.window(used); dst.cache == nil || w > dst.window {
		if err := dst.grow(max(w, dst.window)); err != nil {
			return fmt.Errorf("copying row %d: %w", from, err)
		}
	}
	// Every cache tensor is [rows, ..., window] with the slots last: a row is runs of window
	// slots, of which the first used ones are filled (slots fill in order from 0).
	for i, src := range s.cache {
		dt := dst.cache[i]
		size := src.Shape().DType.Size()
		runs := src.Shape().Size() / s.batch / s.window
		var readErr error
		err := s.e.withBytes(dt, true, func(out []byte) {
			readErr = s.e.withBytes(src, false, func(in []byte) {
				for r := range runs {
					at := (from*runs + r) * s.window * size
					into := (to*runs + r) * dst.window * size
					copy(out[into:into+used*size], in[at:at+used*size])
				}
			})
		})
		if err == nil {
			err = readErr
		}
		if err != nil {
			return fmt.Errorf("copying row %d of cache tensor %d: %w", from, i, err)
		}
	}
	dst.Used[to] = used
	return nil
}

// Close releases the session's cache now rather than when the garbage collector finds it:
// a server that replaces its session would otherwise hold two caches for a while.
func (s *Session) Close() {
	for _, t := range s.cache {
		t.FinalizeAll()
	}
	for _, b := range s.raw {
		s.e.Backend.BufferFinalize(b)
	}
	s.cache, s.raw = nil, nil
	clear(s.Used)
}

// withBytes calls fn with t's bytes. On a backend that shares its memory with the host they
// are the device buffer itself: going through Tensor.MutableBytes would copy the whole cache to
// the host and back. write says fn changes them.
func (e *Engine) withBytes(t *tensors.Tensor, write bool, fn func([]byte)) error {
	// A host copy beside the device buffer would go stale: only a device-only (or shared)
	// tensor is used through its buffer.
	if e.Backend.HasSharedBuffers() && t.IsOnDevice(0) && (t.IsShared() || !t.IsLocal()) {
		buf, err := t.Buffer(e.Backend, 0)
		if err != nil {
			return err
		}
		flat, err := e.Backend.BufferData(buf)
		if err != nil {
			return err
		}
		if b, ok := flatBytes(flat); ok {
			fn(b)
			return nil
		}
	}
	if write {
		return t.MutableBytes(fn)
	}
	return t.ConstBytes(fn)
}

// flatBytes views a flat slice of any element type as its bytes.
func flatBytes(flat any) ([]byte, bool) {
	v := reflect.ValueOf(flat)
	if v.Kind() != reflect.Slice {
		return nil, false
	}
	if v.Len() == 0 {
		return []byte{}, true
	}
	return unsafe.Slice((*byte)(v.Index(0).Addr().UnsafePointer()), v.Len()*int(v.Type().Elem().Size())), true
}

// SequenceLimit is the most tokens one row can hold: the context size, or less when the
// positional scheme encodes fewer positions (a learned table, say). Generate stops there.
func (e *Engine) SequenceLimit() int {
	if l := e.positionLimit(); l > 0 {
		return min(e.Capacity, l)
	}
	return e.Capacity
}
