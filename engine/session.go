package engine

import (
	"fmt"

	"github.com/gomlx/gomlx/backends"
	"sort"
	"time"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/posformer/posformer/models"
)

// Session is the state of a batch of sequences being decoded: a KV cache (keys and values
// [batch, kvHeads, headDim, window] per layer, slots last so that attention reads them in rows,
// plus each slot's position and validity), so that every step runs one already-compiled graph.
//
// The cache holds window slots, not the full context: attention costs O(window), so a short
// sequence does not pay for the whole context. The window doubles (copying the cache) up to the
// context size; each window size is one compiled graph.
type Session struct {
	e      *Engine
	batch  int
	window int
	cache  []*tensors.Tensor // pos, valid, then K and V of each layer; nil until the first Append
	// raw holds the cache as backend buffers instead while generation steps token by token
	// (stepOne); cache is then nil, and run converts back (materialize).
	raw    []backends.Buffer
	step   *stepInputs // stepOne's input buffers, written in place at every step
	Used   []int       // slots filled, per row
	logits []float32   // appendOne's result, reused
	// spare holds caches allocated ahead by Reserve, by window size: zero and already touched,
	// so growing into one is a copy.
	spare map[int][]*tensors.Tensor
}

// stepInputs are the four inputs of a one-token step (token, position, validity, slot), as
// backend buffers that share their memory with the host, with those slices.
type stepInputs struct {
	bufs           [4]backends.Buffer
	tok, pos, slot []int32
	valid          []bool
	donate         []bool
	args           []backends.Buffer
}

// NewSession starts an empty cache for batch sequences.
func (e *Engine) NewSession(batch int) *Session {
	return &Session{e: e, batch: batch, Used: make([]int, batch)}
}

// minWindow is the smallest cache window.
const minWindow = 64

// window is the cache size that holds n slots: the next power of two from minWindow on, at most
// the context size. Attention then costs at most twice what the tokens need whatever the
// context (-c 16384 decodes a short sequence as fast as -c 1024), for about log2(context/64)
// compiled window sizes and a cache copy at each doubling.
func (e *Engine) window(n int) int {
	w := minWindow
	for w < n {
		w *= 2
	}
	return min(e.Capacity, w)
}

// cacheShapes are the shapes of a cache of window slots for batch rows, in argument order.
func (e *Engine) cacheShapes(batch, window int) []shapes.Shape {
	c := e.Model.Config
	b := c.Block()
	out := []shapes.Shape{shapes.Make(dtypes.Int32, batch, window), shapes.Make(dtypes.Bool, batch, window)}
	for range c.NumLayers {
		out = append(out,
			shapes.Make(models.DType, batch, b.NumKVHeads, b.HeadDim, window),
			shapes.Make(models.DType, batch, b.NumKVHeads, b.HeadDim, window))
	}
	return out
}

// cachedKey identifies a compiled KV-cache graph.
type cachedKey struct {
	pick               bool
	batch, seq, window int
}

// precompile compiles exe for the shapes of args unless done before, and times it, so that
// the rates Generate reports exclude compilation.
func (e *Engine) precompile(exe interface{ PreCompile(...any) error }, key cachedKey, args []any) error {
	if _, done := e.compiled.Load(key); done {
		return nil
	}
	start := time.Now()
	if err := exe.PreCompile(args...); err != nil {
		return err
	}
	e.compiling.Add(int64(time.Since(start)))
	e.compiled.Store(key, true)
	return nil
}

// KVBytes is the size of a full KV cache for batch rows (keys, values, slot positions and
// validity), what a session grows to when it fills the context.
func (e *Engine) KVBytes(batch int) int64 {
	var n int64
	for _, sh := range e.cacheShapes(batch, e.Capacity) {
		n += int64(sh.Memory())
	}
	return n
}

// slotAxis is the axis of cache tensor i that runs over slots.
func slotAxis(i int) int {
	if i < 2 {
		return 1 // pos, valid [b, c]
	}
	return 3 // keys and values [b, kvh, hd, c]
}

// deviceTensor is a zeroed tensor of shape sh made in the backend's memory when the backend
// shares it with the host, so that donating it to the next step copies nothing (a host tensor
// would be transferred, a copy of the whole cache at every growth).
func (e *Engine) deviceTensor(sh shapes.Shape) (*tensors.Tensor, error) {
	if !e.Backend.HasSharedBuffers() {
		return tensors.FromShape(sh), nil
	}
	buf, flat, err := e.Backend.NewSharedBuffer(0, sh)
	if err != nil {
		return nil, err
	}
	t, err := tensors.FromBuffer(e.Backend, buf)
	if err != nil {
		return nil, err
	}
	// Shared buffers may come from a pool: zero them (empty slots must read as zero).
	if b, ok := flatBytes(flat); ok {
		clear(b)
	} else if err := t.MutableBytes(func(b []byte) { clear(b) }); err != nil {
		return nil, err
	}
	return t, nil
}

// Reserve allocates now every cache the session will grow through to hold tokens slots a row,
// as llama.cpp allocates its whole KV cache when it creates a context. Growing into a fresh
// cache mid-decode faults its pages in while the worker thread runs, which is slow on a virtual
// machine (the grow to 256 slots of the 15M shape took 7-10 ms there; reserving every window
// before the first token took 1 ms, benchmarks/SPEED.md). The reserved caches of all windows up
// to the last coexist, about twice the last one's memory, until the session grows through
// them; so Reserve stops at maxReserveBytes, and larger windows are allocated when reached
// (a long -c whose generation ends early does not pay for the whole context).
func (s *Session) Reserve(tokens int) error {
	last := s.e.window(min(max(tokens, 1), s.e.Capacity))
	reserved := 0
	for w := s.e.window(1); ; w = s.e.window(w + 1) {
		if w > s.window && s.spare[w] == nil {
			bytes := 0
			for _, sh := range s.e.cacheShapes(s.batch, w) {
				bytes += int(sh.Memory())
			}
			if reserved += bytes; reserved > maxReserveBytes && w > s.e.window(1) {
				return nil
			}
			ts, err := s.e.newCache(s.batch, w)
			if err != nil {
				return fmt.Errorf("reserving the KV cache: %w", err)
			}
			if s.spare == nil {
				s.spare = map[int][]*tensors.Tensor{}
			}
			s.spare[w] = ts
		}
		if w >= last {
			return nil
		}
	}
}

// maxReserveBytes bounds what Reserve allocates ahead.
var maxReserveBytes = 256 << 20 // a variable for tests

// newCache allocates the (zero) cache tensors of window slots.
func (e *Engine) newCache(batch, window int) ([]*tensors.Tensor, error) {
	shs := e.cacheShapes(batch, window)
	ts := make([]*tensors.Tensor, len(shs))
	for i, sh := range shs {
		t, err := e.deviceTensor(sh)
		if err != nil {
			for _, t := range ts[:i] {
				t.FinalizeAll()
			}
			return nil, err
		}
		ts[i] = t
	}
	return ts, nil
}

// grow enlarges the cache to window slots, keeping its content; new slots are zero (empty).
func (s *Session) grow(window int) error {
	prev := s.cache
	next, ok := s.spare[window]
	delete(s.spare, window)
	if !ok {
		var err error
		if next, err = s.e.newCache(s.batch, window); err != nil {
			return fmt.Errorf("growing the KV cache: %w", err)
		}
	}
	s.cache = next
	for i, sh := range s.e.cacheShapes(s.batch, window) {
		t := next[i]
		if prev != nil {
			old := prev[i]
			axis := slotAxis(i)
			outer, inner := 1, 1
			for a, d := range sh.Dimensions {
				if a < axis {
					outer *= d
				} else if a > axis {
					inner *= d
				}
			}
			from, to := s.window*inner, window*inner
			esize := sh.DType.Size()
			var readErr error
			err := s.e.withBytes(t, true, func(dst []byte) {
				readErr = s.e.withBytes(old, false, func(src []byte) {
					for o := range outer {
						copy(dst[o*to*esize:(o*to+from)*esize], src[o*from*esize:(o+1)*from*esize])
					}
				})
			})
			if err == nil {
				err = readErr
			}
			if err != nil {
				return fmt.Errorf("growing the KV cache: %w", err)
			}
			old.FinalizeAll()
		}
	}
	s.window = window
	return nil
}

// Append feeds one chunk per row (rows may differ in length; a row may be empty) at explicit
// positions, writes it into the cache, and returns the logits of each row's chunk tokens.
func (s *Session) Append(tokens, positions [][]int) ([][][]float32, error) {
	outs, err := s.run(tokens, positions, false)
	if err != nil {
		return nil, err
	}
	defer outs.FinalizeAll() // copied out: its buffer goes back to the backend's pool
	return unpackLogits(outs, tokens), nil
}

// appendOne is Append for a one-row session and one token, returning its logits in a buffer
// that the next call reuses: generation reads them once, and a fresh vocabulary-sized slice
// per token (128 KB for a 32000-token vocabulary) kept the garbage collector busy.
func (s *Session) appendOne(tok, pos int) ([]float32, error) {
	if logits, ok, err := s.stepOne(tok, pos); ok || err != nil {
		return logits, err
	}
	outs, err := s.run([][]int{{tok}}, [][]int{{pos}}, false)
	if err != nil {
		return nil, err
	}
	defer outs.FinalizeAll()
	tensors.MustConstFlatData(outs, func(flat []float32) {
		s.logits = append(s.logits[:0], flat[:outs.Shape().Dim(2)]...)
	})
	return s.logits, nil
}

// AppendLast is Append returning only the logits of each row's last token (nil for an empty
// row): what generation needs after a prompt, without running the output head on every token.
func (s *Session) AppendLast(tokens, positions [][]int) ([][]float32, error) {
	outs, err := s.run(tokens, positions, true)
	if err != nil {
		return nil, err
	}
	defer outs.FinalizeAll()
	last := make([][]float32, len(tokens))
	picked := outs.Shape().Dim(1) == 1
	tensors.MustConstFlatData(outs, func(flat []float32) {
		vocab := outs.Shape().Dim(2)
		seq := outs.Shape().Dim(1)
		for i, row := range tokens {
			if len(row) == 0 {
				continue
			}
			j := len(row) - 1
			if picked {
				j = 0
			}
			start := (i*seq + j) * vocab
			last[i] = append([]float32(nil), flat[start:start+vocab]...)
		}
	})
	return last, nil
}

// run executes one chunk and returns the logits tensor: [b, seq, vocab], or [b, 1, vocab] with
// pick (one-token chunks always run the plain graph: its one token is the last).
func (s *Session) run(tokens, positions [][]int, pick bool) (*tensors.Tensor, error) {
	if err := s.materialize(); err != nil {
		return nil, err
	}
	if len(tokens) != s.batch {
		return nil, fmt.Errorf("session has %d rows, got %d", s.batch, len(tokens))
	}
	need := 0
	for i, row := range tokens {
		if s.Used[i]+len(row) > s.e.Capacity {
			return nil, fmt.Errorf("context full: row %d would hold %d tokens but the context size is %d; raise -c / --ctx-size", i, s.Used[i]+len(row), s.e.Capacity)
		}
		need = max(need, s.Used[i]+len(row))
	}
	if err := s.e.checkPositions(positions); err != nil {
		return nil, err
	}
	tok, pos, valid, seq, err := s.e.batchInputs(tokens, positions, false) // the cache keeps a row of positions per sequence
	if err != nil {
		return nil, err
	}
	if w := s.e.window(need); w > s.window || s.cache == nil {
		if err := s.grow(max(w, s.window)); err != nil {
			return nil, err
		}
	}
	slots, err := s.e.deviceTensor(shapes.Make(dtypes.Int32, s.batch, seq))
	if err != nil {
		return nil, err
	}
	tensors.MustMutableFlatData(slots, func(flat []int32) {
		for i := range s.batch {
			for j := range seq {
				// Padding past the window is clamped in: it writes zeros.
				flat[i*seq+j] = int32(min(s.Used[i]+j, s.window-1))
			}
		}
	})
	var last *tensors.Tensor
	if pick && seq > 1 {
		if last, err = s.e.deviceTensor(shapes.Make(dtypes.Int32, s.batch)); err != nil {
			return nil, err
		}
		tensors.MustMutableFlatData(last, func(flat []int32) {
			for i, row := range tokens {
				flat[i] = int32(max(len(row)-1, 0))
			}
		})
	}
	outs, err := s.exec(tok, pos, valid, slots, last)
	if err != nil {
		return nil, err
	}
	for i, row := range tokens {
		s.Used[i] += len(row)
	}
	return outs, nil
}

// exec runs the cached graph (the picking one when last is not nil) on the session's cache,
// donating the cache buffers so that the backend writes the new cache into them.
func (s *Session) exec(tok, pos, valid, slots, last *tensors.Tensor) (*tensors.Tensor, error) {
	// Inputs go to the device here: given a host-only tensor, GoMLX's Exec first builds an
	// error with a stack trace (Tensor.Device) before transferring it, which costs more than
	// a small model's whole step.
	for _, t := range []*tensors.Tensor{tok, pos, valid, slots, last} {
		if t != nil {
			if err := t.MaterializeOnDevice(s.e.Backend, false, 0); err != nil {
				return nil, fmt.Errorf("decoding inputs: %w", err)
			}
		}
	}
	seq := tok.Shape().Dim(1)
	key := cachedKey{last != nil, s.batch, seq, s.window}
	var outs []*tensors.Tensor
	if d, ok := s.e.directs.Load(key); ok {
		args := append([]*tensors.Tensor{tok, pos, valid, slots}, s.cache...)
		donate := make([]bool, len(args), len(args)+1)
		for i := range s.cache {
			donate[4+i] = true
		}
		if last != nil {
			args, donate = append(args, last), append(donate, false)
		}
		var err error
		if outs, err = d.(*direct).run(s.e.Backend, args, donate); err != nil {
			return nil, fmt.Errorf("decoding: %w", err)
		}
	} else {
		args := []any{tok, pos, valid, slots}
		for _, t := range s.cache {
			d, err := graph.DonateTensorBuffer(t, s.e.Backend, 0)
			if err != nil {
				return nil, fmt.Errorf("donating cache buffer: %w", err)
			}
			args = append(args, d)
		}
		exe := s.e.cached
		if last != nil {
			args = append(args, last)
			exe = s.e.picked
		}
		if err := s.e.precompile(exe, key, args); err != nil {
			return nil, err
		}
		var g *graph.Graph
		var err error
		outs, g, err = exe.ExecWithGraph(args...)
		if err != nil {
			return nil, fmt.Errorf("decoding: %w", err)
		}
		d, err := s.e.newDirect(g, len(args))
		if err != nil {
			return nil, fmt.Errorf("decoding: %w", err)
		}
		s.e.directs.Store(key, d)
	}
	for _, t := range []*tensors.Tensor{tok, pos, valid, slots, last} {
		if t != nil {
			t.FinalizeAll() // their buffers go back to the backend for the next step
		}
	}
	s.cache = outs[1:]
	return outs[0], nil
}

// Warmup compiles, for batch rows, every graph that generation can need: the prefill of any
// prompt of up to maxPrompt tokens (0: the context size) and the decode step at every window
// size. Afterwards, generating with that batch size compiles nothing, whatever the prompt
// length. Graphs are compiled, not run.
func (e *Engine) Warmup(batch, maxPrompt int) error {
	if maxPrompt <= 0 || maxPrompt > e.Capacity {
		maxPrompt = e.Capacity
	}
	type key struct{ seq, window int }
	seen := map[key]bool{}
	var keys []key
	add := func(k key) {
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	for n := 1; n <= e.Capacity; n++ {
		if n <= maxPrompt {
			add(key{Bucket(n), e.window(n)}) // a prompt of n tokens
		}
		add(key{1, e.window(n)}) // a decode step reaching n tokens
	}
	// Arguments only give shapes; keys with the same window share their cache tensors.
	sort.Slice(keys, func(i, j int) bool { return keys[i].window < keys[j].window })
	var cache []any
	for i, k := range keys {
		if i == 0 || k.window != keys[i-1].window {
			cache = cache[:0]
			for _, sh := range e.cacheShapes(batch, k.window) {
				cache = append(cache, tensors.FromShape(sh))
			}
		}
		args := []any{
			tensors.FromShape(shapes.Make(dtypes.Int32, batch, k.seq)),
			tensors.FromShape(shapes.Make(dtypes.Int32, batch, k.seq)),
			tensors.FromShape(shapes.Make(dtypes.Bool, batch, k.seq)),
			tensors.FromShape(shapes.Make(dtypes.Int32, batch, k.seq)),
		}
		args = append(args, cache...)
		exe := e.cached
		if k.seq > 1 {
			args = append(args, tensors.FromShape(shapes.Make(dtypes.Int32, batch)))
			exe = e.picked
		}
		if err := e.precompile(exe, cachedKey{k.seq > 1, batch, k.seq, k.window}, args); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
	}
	return nil
}

// stepOne is appendOne's path once the session's decoding graph has run: the inputs are
// written into reused buffers and the graph runs on buffers (direct.runBuffers), so a step
// allocates almost nothing. ok is false when it cannot take the step (a new window size, a
// batch, a backend whose buffers the host cannot write, or a graph not run yet); run then does.
func (s *Session) stepOne(tok, pos int) (logits []float32, ok bool, err error) {
	e := s.e
	if s.batch != 1 || (s.cache == nil && s.raw == nil) || !e.Backend.HasSharedBuffers() {
		return nil, false, nil
	}
	used := s.Used[0]
	if used+1 > e.Capacity || e.window(used+1) > s.window {
		return nil, false, nil
	}
	if lim := e.positionLimit(); lim > 0 && pos >= lim {
		return nil, false, nil // run reports it
	}
	dv, found := e.directs.Load(cachedKey{false, 1, 1, s.window})
	if !found || dv.(*direct).exe == nil {
		return nil, false, nil
	}
	d := dv.(*direct)
	if s.step == nil {
		if s.step, err = e.newStepInputs(); err != nil {
			return nil, false, err
		}
	}
	in := s.step
	in.tok[0], in.pos[0], in.valid[0], in.slot[0] = int32(tok), int32(pos), true, int32(min(used, s.window-1))
	if s.raw == nil {
		for _, t := range s.cache {
			buf, err := t.DonateBuffer(e.Backend, 0)
			if err != nil {
				return nil, false, fmt.Errorf("decoding: %w", err)
			}
			s.raw = append(s.raw, buf)
		}
		s.cache = nil
	}
	in.args = append(append(in.args[:0], in.bufs[:]...), s.raw...)
	for len(in.donate) < len(in.args) {
		in.donate = append(in.donate, true) // the cache, after the four inputs
	}
	outs, err := d.runBuffers(in.args, in.donate[:len(in.args)])
	if err != nil {
		s.raw = nil // donated: the session cannot go on
		return nil, false, fmt.Errorf("decoding: %w", err)
	}
	if len(s.logits) == 0 {
		sh, err := e.Backend.BufferShape(outs[0])
		if err != nil {
			return nil, false, err
		}
		s.logits = make([]float32, sh.Size())
	}
	if err := e.Backend.BufferToFlatData(outs[0], s.logits); err != nil {
		return nil, false, fmt.Errorf("reading logits: %w", err)
	}
	_ = e.Backend.BufferFinalize(outs[0]) // back to the backend's pool for the next step
	s.raw = append(s.raw[:0], outs[1:]...)
	s.Used[0]++
	return s.logits, true, nil
}

// newStepInputs makes stepOne's input buffers in shared memory.
func (e *Engine) newStepInputs() (*stepInputs, error) {
	in := &stepInputs{donate: []bool{false, false, false, false}}
	for i, dt := range []dtypes.DType{dtypes.Int32, dtypes.Int32, dtypes.Bool, dtypes.Int32} {
		buf, flat, err := e.Backend.NewSharedBuffer(0, shapes.Make(dt, 1, 1))
		if err != nil {
			return nil, fmt.Errorf("decoding inputs: %w", err)
		}
		in.bufs[i] = buf
		switch i {
		case 0:
			in.tok = flat.([]int32)
		case 1:
			in.pos = flat.([]int32)
		case 2:
			in.valid = flat.([]bool)
		case 3:
			in.slot = flat.([]int32)
		}
	}
	return in, nil
}

// materialize turns a cache held as buffers (after stepOne) back into tensors.
func (s *Session) materialize() error {
	if s.raw == nil {
		return nil
	}
	s.cache = make([]*tensors.Tensor, len(s.raw))
	for i, buf := range s.raw {
		t, err := tensors.FromBuffer(s.e.Backend, buf)
		if err != nil {
			return fmt.Errorf("decoding: %w", err)
		}
		s.cache[i] = t
	}
	s.raw = nil
	return nil
}
