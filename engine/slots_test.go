package engine

import (
	"github.com/posformer/posformer/models"
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
	for i, pe := range []map[string]any{{"name": "rope"}, {"name": "alibi"}, {"name": "shaw"}, {"name": "rope"}} {
		cfg := windowConfig(pe)
		if i == 3 {
			cfg = wideHeads(cfg) // the other cache layout
		}
		e := newTestEngine(t, cfg)
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

// A row copied into a session of the same shape computes exactly what the original computes:
// CopyRow moves every slot's key, value, position and validity.
func TestCopyRowExact(t *testing.T) {
	for _, l := range cacheLayouts {
		t.Run(l.name, func(t *testing.T) { testCopyRowExact(t, l.of) })
	}
}

func testCopyRowExact(t *testing.T, layout func(models.Config) models.Config) {
	r := rand.New(rand.NewPCG(51, 52))
	e := newTestEngine(t, layout(windowConfig(map[string]any{"name": "rope"})))
	seqs := [][]int{randomTokens(r, 120), randomTokens(r, 120), randomTokens(r, 120)}
	lens := []int{70, 9, 33}
	a := e.NewSession(3)
	if _, err := a.AppendLast([][]int{seqs[0][:70], seqs[1][:9], seqs[2][:33]}, [][]int{iota(0, 70), iota(0, 9), iota(0, 33)}); err != nil {
		t.Fatal(err)
	}
	b := e.NewSession(3)
	for i := range 3 {
		if err := a.CopyRow(i, b, i); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(a.Used, b.Used) {
		t.Fatalf("Used %v after copying %v", b.Used, a.Used)
	}
	for step := range 40 {
		rows, pos := make([][]int, 3), make([][]int, 3)
		for i := range 3 {
			rows[i], pos[i] = seqs[i][lens[i]:lens[i]+1], []int{lens[i]}
			lens[i]++
		}
		got, err := b.AppendLast(rows, pos)
		if err != nil {
			t.Fatal(err)
		}
		want, err := a.AppendLast(rows, pos)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if !slices.Equal(got[i], want[i]) {
				t.Fatalf("step %d, row %d: the copy's logits differ from the original's by %g", step, i, maxAbsDiff(got[i], want[i]))
			}
		}
	}
}

// Rows moved into smaller sessions, at other row indices and with a smaller window, go on
// giving the logits of recomputing their sequence from scratch, across window growths.
func TestCopyRowAcrossSessions(t *testing.T) {
	r := rand.New(rand.NewPCG(53, 54))
	for i, pe := range []map[string]any{{"name": "rope"}, {"name": "alibi"}, {"name": "rope"}} {
		cfg := windowConfig(pe)
		if i == 2 {
			cfg = wideHeads(cfg) // the other cache layout
		}
		e := newTestEngine(t, cfg)
		seqs := [][]int{randomTokens(r, 150), randomTokens(r, 150), randomTokens(r, 150), randomTokens(r, 150)}
		lens := []int{100, 20, 50, 60}
		a := e.NewSession(4)
		pos := make([][]int, 4)
		rows := make([][]int, 4)
		for i := range 4 {
			rows[i], pos[i] = seqs[i][:lens[i]], iota(0, lens[i])
		}
		if _, err := a.AppendLast(rows, pos); err != nil {
			t.Fatal(err)
		}
		// Rows 1 and 3 into a two-row session (as rows 0 and 1), row 2 into a one-row session.
		b, c := e.NewSession(2), e.NewSession(1)
		for _, m := range []struct {
			from int
			to   *Session
			at   int
		}{{1, b, 0}, {3, b, 1}, {2, c, 0}} {
			if err := a.CopyRow(m.from, m.to, m.at); err != nil {
				t.Fatal(err)
			}
		}
		a.Close()
		if b.window != 64 {
			t.Errorf("%v: rows of 20 and 60 tokens copied into a window of %d slots, want 64", pe, b.window)
		}
		moved := []struct {
			s    *Session
			rows []int // the sequences of its rows
		}{{b, []int{1, 3}}, {c, []int{2}}}
		for step := range 80 {
			for _, m := range moved {
				in, at := make([][]int, len(m.rows)), make([][]int, len(m.rows))
				for k, seq := range m.rows {
					in[k], at[k] = seqs[seq][lens[seq]:lens[seq]+1], []int{lens[seq]}
				}
				out, err := m.s.AppendLast(in, at)
				if err != nil {
					t.Fatal(err)
				}
				for k, seq := range m.rows {
					lens[seq]++
					n := lens[seq]
					if step%20 != 0 && n != 65 && n != 129 {
						continue // check a few steps, and each window edge
					}
					full, err := e.Forward([][]int{seqs[seq][:n]}, [][]int{iota(0, n)})
					if err != nil {
						t.Fatal(err)
					}
					if d := maxAbsDiff(out[k], full[0][n-1]); d > 1e-4 {
						t.Errorf("%v: sequence %d moved, %d tokens: logits differ from the full pass by %g", pe, seq, n, d)
					}
				}
			}
		}
	}
}

func TestCopyRowErrors(t *testing.T) {
	cfg := tinyConfig("decoder", 1, map[string]any{"name": "rope"})
	e := newTestEngine(t, cfg)
	a, b := e.NewSession(2), e.NewSession(1)
	if _, err := a.AppendLast([][]int{{1, 2}, {3}}, [][]int{{0, 1}, {0}}); err != nil {
		t.Fatal(err)
	}
	if err := a.CopyRow(0, b, 0); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		err  error
		want string
	}{
		{a.CopyRow(1, b, 0), "free it first"},
		{a.CopyRow(2, b, 0), "rows 0 to 1"},
		{a.CopyRow(0, b, 1), "rows 0 to 0"},
		{a.CopyRow(0, newTestEngine(t, cfg).NewSession(1), 0), "different engines"},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%v, want an error saying %q", c.err, c.want)
		}
	}
}
