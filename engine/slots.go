package engine

// Rows as slots: a server keeps one Session of N rows and gives each request a row for as long
// as it runs (cmd/serve). When a request ends, its row must be emptied before another request
// takes it, while the other rows go on decoding.

import (
	"fmt"

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
		if err := s.clearRow(t, row); err != nil {
			return fmt.Errorf("freeing row %d of cache tensor %d: %w", row, i, err)
		}
	}
	return nil
}

// clearRow zeroes row's block of t. On a backend that shares its memory with the host the
// buffer is written in place; going through Tensor.MutableBytes there would copy the whole
// cache to the host and back at every request's end.
func (s *Session) clearRow(t *tensors.Tensor, row int) error {
	per := t.Shape().Size() / s.batch // elements per row
	// A host copy beside the device buffer would go stale: only a device-only (or shared)
	// tensor is written through its buffer.
	if s.e.Backend.HasSharedBuffers() && t.IsOnDevice(0) && (t.IsShared() || !t.IsLocal()) {
		buf, err := t.Buffer(s.e.Backend, 0)
		if err != nil {
			return err
		}
		flat, err := s.e.Backend.BufferData(buf)
		if err != nil {
			return err
		}
		switch f := flat.(type) {
		case []float32:
			clear(f[row*per : (row+1)*per])
			return nil
		case []int32:
			clear(f[row*per : (row+1)*per])
			return nil
		case []bool:
			clear(f[row*per : (row+1)*per])
			return nil
		}
		// Another dtype: the portable path below.
	}
	size := t.Shape().DType.Size()
	return t.MutableBytes(func(b []byte) { clear(b[row*per*size : (row+1)*per*size]) })
}

// SequenceLimit is the most tokens one row can hold: the context size, or less when the
// positional scheme encodes fewer positions (a learned table, say). Generate stops there.
func (e *Engine) SequenceLimit() int {
	if l := e.positionLimit(); l > 0 {
		return min(e.Capacity, l)
	}
	return e.Capacity
}
