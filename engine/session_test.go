package engine

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/posformer/posformer/models"
)

// windowConfig is a tiny decoder whose context spans several cache windows (steps of 64).
func windowConfig(pe map[string]any) models.Config {
	cfg := tinyConfig(models.Decoder, 2, pe)
	cfg.MaxSeqLen = 200
	return cfg
}

// The cache grows window by window; decoding across the window edges, in a batch of ragged
// rows, gives the logits of recomputing each row from scratch, and AppendLast gives Append's
// last row. With the caches reserved ahead (Reserve), the same, and growing uses them all.
func TestCachedEqualsFullAcrossWindows(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for i, pe := range []map[string]any{
		{"name": "rope", "layout": "interleaved"}, {"name": "alibi"}, {"name": "shaw"}, {"name": "t5"}, {"name": "rope"},
	} {
		reserve := i == 4
		cfg := windowConfig(pe)
		if i%2 == 1 {
			cfg = wideHeads(cfg) // the other cache layout
		}
		e := newTestEngine(t, cfg)
		if got := e.window(1); got != 64 {
			t.Fatalf("first window is %d slots, want 64", got)
		}
		lens := []int{50, 7}
		rows := [][]int{randomTokens(r, 150), randomTokens(r, 140)}
		s := e.NewSession(2)
		if reserve {
			if err := s.Reserve(150); err != nil {
				t.Fatal(err)
			}
			if len(s.spare) != 3 {
				t.Fatalf("Reserve(150) holds caches of %d windows, want 3 (64, 128, 200)", len(s.spare))
			}
		}
		prompt := [][]int{rows[0][:lens[0]], rows[1][:lens[1]]}
		last, err := s.AppendLast(prompt, [][]int{iota(0, lens[0]), iota(0, lens[1])})
		if err != nil {
			t.Fatal(err)
		}
		check := func(row, n int, got []float32) {
			t.Helper()
			full, err := e.Forward([][]int{rows[row][:n]}, [][]int{iota(0, n)})
			if err != nil {
				t.Fatal(err)
			}
			if d := maxAbsDiff(got, full[0][n-1]); d > 1e-4 {
				t.Errorf("%v, heads of %d, row %d, %d tokens (window %d): cached vs full logits differ by %g", pe, cfg.Dim/cfg.NumHeads, row, n, s.window, d)
			}
		}
		check(0, lens[0], last[0])
		check(1, lens[1], last[1])
		decodeRows(t, s, rows, lens, func(i, n int, logits []float32) {
			switch n {
			case 64, 65, 100, 128, 129, 140, 150:
				check(i, n, logits)
			}
		})
		// Windows double from 64 up to the context: 64, 128, then the context's 200.
		if s.window != 200 {
			t.Errorf("%v: after 150 tokens the window is %d slots, want 200", pe, s.window)
		}
		if len(s.spare) != 0 {
			t.Errorf("%v: %d reserved caches left unused after growing to the last window", pe, len(s.spare))
		}
	}
}

// decodeRows feeds the rest of each row of rows into s one token a step (all rows at once, a row
// that is done sitting out), lens[i] being how much of row i s holds already, and hands visit
// each new token's logits with the row's length after it.
func decodeRows(t *testing.T, s *Session, rows [][]int, lens []int, visit func(row, n int, logits []float32)) {
	t.Helper()
	for {
		next, pos := make([][]int, len(rows)), make([][]int, len(rows))
		more := false
		for i, row := range rows {
			if lens[i] < len(row) {
				next[i], pos[i], more = []int{row[lens[i]]}, []int{lens[i]}, true
			}
		}
		if !more {
			return
		}
		out, err := s.Append(next, pos)
		if err != nil {
			t.Fatal(err)
		}
		for i := range rows {
			if len(next[i]) > 0 {
				lens[i]++
				visit(i, lens[i], out[i][0])
			}
		}
	}
}

// After Warmup, generation compiles nothing, whatever the prompt length (prompts in several
// chunk buckets and window sizes) and however far it decodes.
func TestNoCompilationAfterWarmup(t *testing.T) {
	e := newTestEngine(t, windowConfig(map[string]any{"name": "rope"}))
	if err := e.Warmup(1, 0); err != nil {
		t.Fatal(err)
	}
	warm := e.Compilations()
	sm, err := NewSampler(Sampling{Temp: 0})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(9, 10))
	for _, n := range []int{1, 3, 17, 40, 64, 70, 130, 199} {
		st, err := e.Generate(randomTokens(r, n), 60, sm, nil, func(int) {})
		if err != nil {
			t.Fatal(err)
		}
		if want := min(60, e.Capacity-n+1); st.Generated != want {
			t.Errorf("prompt of %d: generated %d tokens, want %d", n, st.Generated, want)
		}
	}
	if got := e.Compilations(); got != warm {
		t.Errorf("generation compiled %d graphs after warm-up", got-warm)
	}
}

// An engine made from a context in the checkpoint layout (as a trainer leaves it) copies it
// into the inference layout, leaves it untouched, and computes what the loaded checkpoint does.
func TestNewFromTrainedContext(t *testing.T) {
	cfg := windowConfig(map[string]any{"name": "rope"})
	saved := newTestEngine(t, cfg)
	toks := randomTokens(rand.New(rand.NewPCG(1, 1)), 20)
	want, err := saved.Forward([][]int{toks}, [][]int{iota(0, 20)}) // creates the variables
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := models.Save(dir, cfg, saved.Ctx); err != nil {
		t.Fatal(err)
	}
	backend, err := NewBackend("")
	if err != nil {
		t.Fatal(err)
	}
	m, ctx, err := models.Load(dir, backend)
	if err != nil {
		t.Fatal(err)
	}
	params, err := m.Params(backend)
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(backend, m, ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range params {
		scope, name := models.VariablePath(p.Name)
		if v := ctx.InAbsPath(scope).GetVariable(name); v == nil || !slices.Equal(v.Shape().Dimensions, p.Shape) {
			t.Errorf("the trainer's variable %s changed", p.Name)
		}
	}
	got, err := e.Forward([][]int{toks}, [][]int{iota(0, 20)})
	if err != nil {
		t.Fatal(err)
	}
	if d := maxAbsDiff(got[0][19], want[0][19]); d != 0 {
		t.Errorf("logits differ by %g", d)
	}
}

// Generation steps one token at a time through the same compiled steps as a chunk, on backend
// buffers reused from step to step. Across the window edges, and after a chunk in the middle,
// its logits equal a full recomputation's; once a window's step is compiled, a step allocates
// next to nothing (a tensor per input and output was about 80 allocations a token). Every
// scheme kind the hooks cover takes it.
func TestStepsRunOnBuffers(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	for _, pe := range []map[string]any{{"name": "rope", "layout": "interleaved"}, {"name": "alibi"}, {"name": "shaw"}} {
		e := newTestEngine(t, windowConfig(pe))
		toks := randomTokens(r, 150)
		s := e.NewSession(1)
		if _, err := s.AppendLast([][]int{toks[:10]}, [][]int{iota(0, 10)}); err != nil {
			t.Fatal(err)
		}
		check := map[int]bool{10: true, 63: true, 64: true, 65: true, 103: true, 127: true, 128: true, 129: true, 139: true}
		for p := 10; p < 140; p++ {
			if p == 100 { // a chunk in the middle
				if _, err := s.Append([][]int{toks[p : p+3]}, [][]int{iota(p, 3)}); err != nil {
					t.Fatal(err)
				}
				p += 2
				continue
			}
			got, err := s.appendOne(toks[p], p)
			if err != nil {
				t.Fatal(err)
			}
			if !check[p] {
				continue
			}
			full, err := e.Forward([][]int{toks[:p+1]}, [][]int{iota(0, p+1)})
			if err != nil {
				t.Fatal(err)
			}
			if d := maxAbsDiff(got, full[0][p]); d > 1e-4 {
				t.Fatalf("%v, position %d (window %d): stepped vs full logits differ by %g", pe, p, s.window, d)
			}
		}
		p := 140
		allocs := testing.AllocsPerRun(5, func() {
			if _, err := s.appendOne(toks[p], p); err != nil {
				t.Fatal(err)
			}
			p++
		})
		// The backend's Execute makes its output list and buffer headers (8-9 allocations
		// with engine/cpu); wrapping inputs and outputs in tensors would add dozens.
		if allocs > 16 {
			t.Errorf("%v: a one-token step allocates %v times, want at most 16", pe, allocs)
		}
		e.steppers.Range(func(k, st any) bool {
			if st.(*stepper).exe == nil {
				t.Errorf("%v: step %+v runs through Graph.RunWithBuffers: executableOf found no executable", pe, k)
			}
			return true
		})
	}
}

// Reserve allocates ahead only up to maxReserveBytes; the windows past it are grown into when
// reached, and decoding gives the same logits as recomputing from scratch.
func TestReserveStopsAtItsBound(t *testing.T) {
	e := newTestEngine(t, windowConfig(map[string]any{"name": "rope"}))
	bytesOf := func(w int) int {
		n := 0
		for _, sh := range e.cacheShapes(1, w) {
			n += int(sh.Memory())
		}
		return n
	}
	saved := maxReserveBytes
	defer func() { maxReserveBytes = saved }()
	maxReserveBytes = int64(bytesOf(64) + bytesOf(128)) // 64 and 128 fit, 200 does not
	s := e.NewSession(1)
	if err := s.Reserve(200); err != nil {
		t.Fatal(err)
	}
	if len(s.spare) != 2 || s.spare[64] == nil || s.spare[128] == nil {
		t.Fatalf("reserved windows %v, want 64 and 128", len(s.spare))
	}
	r := rand.New(rand.NewPCG(23, 24))
	row := randomTokens(r, 150)
	var last []float32
	for i, tok := range row {
		out, err := s.Append([][]int{{tok}}, [][]int{{i}})
		if err != nil {
			t.Fatal(err)
		}
		last = out[0][0]
	}
	if s.window != 200 || len(s.spare) != 0 {
		t.Errorf("after 150 tokens: window %d, %d reserved caches left; want 200 and 0", s.window, len(s.spare))
	}
	full, err := e.Forward([][]int{row}, [][]int{iota(0, len(row))})
	if err != nil {
		t.Fatal(err)
	}
	if d := maxAbsDiff(last, full[0][len(row)-1]); d > 1e-4 {
		t.Errorf("cached vs full logits differ by %g", d)
	}
}

// Warmup's lengths: 1, 2, then 2^k + 1, where Bucket or window may change; past the largest
// power of two an int holds, none (a capacity near the int range must not loop forever).
func TestNextBoundary(t *testing.T) {
	var got []int
	for n := 1; n <= 40; n = nextBoundary(n) {
		got = append(got, n)
	}
	if want := []int{1, 2, 3, 5, 9, 17, 33}; !slices.Equal(got, want) {
		t.Errorf("lengths %v, want %v", got, want)
	}
	if n := nextBoundary(1<<62 + 1); n != -1 {
		t.Errorf("after 2^62 + 1: %d, want -1 (none)", n)
	}
}

// A prompt whose bucket would be mostly padding runs in chunks (prefillChunks), and AppendLast
// still gives every row's last logits as recomputing it whole does: every decoder scheme, a
// batch of ragged rows (one ending in the first chunk, one in the last).
func TestChunkedPrefillEqualsFull(t *testing.T) {
	if got := prefillChunks(130); len(got) != 2 || got[0] != [2]int{0, 128} || got[1] != [2]int{128, 130} {
		t.Fatalf("prefillChunks(130) = %v, want [0 128] [128 130]", got)
	}
	r := rand.New(rand.NewPCG(23, 24))
	for _, cfg := range inBothLayouts(testSchemes(t, models.Decoder)) {
		cfg.MaxSeqLen = 200
		if pe := cfg.Positional; pe["name"] == "learned" {
			pe["max_positions"] = 200
		}
		e := newTestEngine(t, cfg)
		rows := [][]int{randomTokens(r, 130), randomTokens(r, 100)}
		last, err := e.NewSession(2).AppendLast(rows, [][]int{iota(0, 130), iota(0, 100)})
		if err != nil {
			t.Fatalf("%v: %v", cfg.Positional, err)
		}
		for i, row := range rows {
			full, err := e.Forward([][]int{row}, [][]int{iota(0, len(row))})
			if err != nil {
				t.Fatal(err)
			}
			if d := maxAbsDiff(last[i], full[0][len(row)-1]); d > 1e-4 {
				t.Errorf("%v row %d (%d tokens): chunked prefill vs full logits differ by %g", cfg.Positional, i, len(row), d)
			}
		}
	}
}
