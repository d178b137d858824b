package engine

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// A row freed and refilled while its neighbours go on decoding computes exactly what a fresh
// session computes for the new sequence: nothing of the old sequence (keys, values, positions,
// validity) leaks into it, and the other rows are untouched. The old sequence is longer than
// the new one, so stale slots lie both under and past the new sequence's. The reference is a
// fresh session of the same rows whose row 1 held only the new sequence; a fresh single-row
// session must agree to rounding (batched products may sum in another order).
func TestFreeRowRefillEqualsFresh(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	for _, pe := range []map[string]any{{"name": "rope"}, {"name": "alibi"}, {"name": "shaw"}} {
		e := newTestEngine(t, windowConfig(pe))
		old := [][]int{randomTokens(r, 90), randomTokens(r, 80), randomTokens(r, 30)}
		fresh := randomTokens(r, 40) // row 1's new sequence
		used := e.NewSession(3)
		if _, err := used.AppendLast(old, [][]int{iota(0, 90), iota(0, 80), iota(0, 30)}); err != nil {
			t.Fatal(err)
		}
		if err := used.FreeRow(1); err != nil {
			t.Fatal(err)
		}
		if used.Used[1] != 0 || used.Used[0] != 90 || used.Used[2] != 30 {
			t.Fatalf("%v: after FreeRow(1) Used = %v, want [90 0 30]", pe, used.Used)
		}
		// The reference session: rows 0 and 2 as in used, row 1 never filled.
		ref := e.NewSession(3)
		if _, err := ref.AppendLast([][]int{old[0], nil, old[2]}, [][]int{iota(0, 90), nil, iota(0, 30)}); err != nil {
			t.Fatal(err)
		}
		single := e.NewSession(1)
		// Row 1 prefills 10 tokens, then decodes one at a time beside the others.
		step := func(s *Session, rows [][]int, from []int) [][]float32 {
			t.Helper()
			pos := make([][]int, len(rows))
			for i, row := range rows {
				pos[i] = iota(from[i], len(row))
			}
			out, err := s.AppendLast(rows, pos)
			if err != nil {
				t.Fatal(err)
			}
			return out
		}
		n := 10
		for n <= len(fresh) {
			chunk := fresh[:n]
			from := n - len(chunk)
			if n > 10 {
				chunk, from = fresh[n-1:n], n-1
			}
			rows := [][]int{{old[0][n%90]}, chunk, {old[2][n%30]}}
			from3 := []int{used.Used[0], from, used.Used[2]}
			got := step(used, rows, from3)
			want := step(ref, rows, from3)
			for i := range 3 {
				if !slices.Equal(got[i], want[i]) {
					t.Fatalf("%v: after %d tokens of the new sequence, row %d's logits differ from a fresh session's by %g", pe, n, i, maxAbsDiff(got[i], want[i]))
				}
			}
			alone := step(single, [][]int{chunk}, []int{from})
			if d := maxAbsDiff(got[1], alone[0]); d > 1e-4 {
				t.Fatalf("%v: after %d tokens of the new sequence, row 1 differs from a single-row session by %g", pe, n, d)
			}
			n++
		}
	}
}

func TestFreeRowBadRow(t *testing.T) {
	e := newTestEngine(t, tinyConfig("decoder", 1, map[string]any{"name": "rope"}))
	s := e.NewSession(2)
	for _, row := range []int{-1, 2} {
		if err := s.FreeRow(row); err == nil || !strings.Contains(err.Error(), "rows 0 to 1") {
			t.Errorf("FreeRow(%d): %v, want an error naming the rows", row, err)
		}
	}
	// A session that has run nothing yet has nothing to clear.
	if err := s.FreeRow(1); err != nil {
		t.Errorf("FreeRow on an empty session: %v", err)
	}
}

// SequenceLimit is the context size, or the positional table's size when that is smaller.
func TestSequenceLimit(t *testing.T) {
	e := newTestEngine(t, tinyConfig("decoder", 1, map[string]any{"name": "rope"}))
	if got := e.SequenceLimit(); got != e.Capacity {
		t.Errorf("rope: limit %d, want the context size %d", got, e.Capacity)
	}
	cfg := tinyConfig("decoder", 1, map[string]any{"name": "learned", "max_positions": 32})
	if got := newTestEngine(t, cfg).SequenceLimit(); got != 32 {
		t.Errorf("learned, 32 positions in a context of %d: limit %d, want 32", cfg.MaxSeqLen, got)
	}
}
