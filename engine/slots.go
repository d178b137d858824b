package engine

// Rows as slots: a server keeps a Session and gives each request a row for as long as it runs
// (engine/serve). When a request ends, its row must be emptied before another request takes it,
// while the other rows go on decoding. And since every step computes every row, empty ones
// included, a server sizes its session to the requests it has: it moves the running rows into
// a smaller or larger session (CopyRow) as requests come and go.

import "fmt"

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
	s.Used[row] = 0
	if s.cache == nil {
		return nil
	}
	for i, sh := range s.e.cacheShapes(s.batch, s.window) {
		per := sh.Size() / s.batch * sh.DType.Size() // bytes per row
		buf, err := s.e.withBytes(s.cache[i], true, func(b []byte) { clear(b[row*per : (row+1)*per]) })
		if err != nil {
			return fmt.Errorf("freeing row %d of cache tensor %d: %w", row, i, err)
		}
		s.cache[i] = buf
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
	if used == 0 || s.cache == nil {
		return nil // nothing in the row
	}
	if w := s.e.window(used); dst.cache == nil || w > dst.window {
		if err := dst.grow(max(w, dst.window)); err != nil {
			return fmt.Errorf("copying row %d: %w", from, err)
		}
	}
	// A row of every cache tensor is runs of window slots (slotRuns), of which the first used
	// ones are filled (slots fill in order from 0).
	for i, sh := range s.e.cacheShapes(s.batch, s.window) {
		runs, unit := s.e.slotRuns(i, sh)
		size := sh.DType.Size() * unit
		var readErr error
		buf, err := s.e.withBytes(dst.cache[i], true, func(out []byte) {
			_, readErr = s.e.withBytes(s.cache[i], false, func(in []byte) {
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
		dst.cache[i] = buf
	}
	dst.Used[to] = used
	return nil
}

// Close releases the session's cache now rather than when the garbage collector finds it:
// a server that replaces its session would otherwise hold two caches for a while.
func (s *Session) Close() {
	s.e.release(s.cache)
	for _, bufs := range s.spare {
		s.e.release(bufs)
	}
	for _, in := range s.inputs {
		s.e.release(in.bufs)
	}
	s.cache, s.spare, s.inputs = nil, nil, nil
	clear(s.Used)
}

// SequenceLimit is the most tokens one row can hold: the context size, or less when the
// positional scheme encodes fewer positions (a learned table, say). Generate stops there.
func (e *Engine) SequenceLimit() int {
	if l := e.positionLimit(); l > 0 {
		return min(e.Capacity, l)
	}
	return e.Capacity
}
