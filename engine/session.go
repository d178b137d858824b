package engine

import (
	"fmt"
	"math"
	"reflect"
	"sort"
	"unsafe"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

// Session is the state of a batch of sequences being decoded: a KV cache (keys and values per
// layer, [batch, kvHeads, window, headDim] or for small heads [batch, kvHeads, headDim, window]:
// layers.BlockConfig.CacheSlotAxis; plus each slot's position and validity), so that every step
// runs one already-compiled graph.
//
// The cache holds window slots, not the full context: attention costs O(window), so a short
// sequence does not pay for the whole context. The window doubles (copying the cache) up to the
// context size; each window size is one compiled graph.
//
// The cache lives in backend buffers, donated to each step, which writes the next cache into
// them (stepper.go): it never leaves the backend while the session decodes.
type Session struct {
	e      *Engine
	batch  int
	window int
	cache  []backends.Buffer // the cache inputs of stepArgs, in order; nil until the first Append
	// spare holds caches allocated ahead by Reserve, by window size: zero and already touched,
	// so growing into one is a copy.
	spare  map[int][]backends.Buffer
	inputs map[stepKey]*stepInputs // input buffers reused from step to step, by shape
	broken error                   // a step failed after its cache was donated: the session cannot go on
	Used   []int                   // slots filled, per row
	logits []float32               // appendOne's result, reused
	one    [2][1][]int             // appendOne's token and position rows, reused
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
	kt, vt := e.CacheTypes()
	dims := b.CacheDims(batch, window)
	for range c.NumLayers {
		out = append(out, shapes.Make(kt, dims...), shapes.Make(vt, dims...))
	}
	return out
}

// KVBytes is the size of a full KV cache for batch rows (keys, values, slot positions and
// validity), what a session grows to when it fills the context.
func (e *Engine) KVBytes(batch int) int64 { return e.cacheBytes(batch, e.Capacity) }

// cacheBytes is the size of a cache of window slots for batch rows.
func (e *Engine) cacheBytes(batch, window int) int64 {
	var n int64
	for _, sh := range e.cacheShapes(batch, window) {
		n += int64(sh.Memory())
	}
	return n
}

// SessionBytes is the most KV cache memory a session of batch rows holds at once on its way to
// the full context: Reserve allocates every window up to the one a generation needs, and they
// coexist until the session grows through them; a session that grows without reserving holds
// the old window and the new one during the copy, less than that sum. The sum is about twice
// KVBytes. A memory limit below it keeps the collector running at every step
// (cmd/internal/memlimit).
func (e *Engine) SessionBytes(batch int) int64 {
	var n int64
	for w := e.window(1); ; w = e.window(w + 1) {
		n += e.cacheBytes(batch, w)
		if w >= e.Capacity {
			return n
		}
	}
}

// slotRuns describes one row of cache tensor i (shape sh) as runs of slots: runs runs, each of
// the window's slots in turn, a slot being unit consecutive values. Positions and validity
// [b, w] are one run of single values; keys and values [b, kvh, w, hd] kvh runs of hd-value
// slots, and [b, kvh, hd, w] kvh·hd runs of single values.
func (e *Engine) slotRuns(i int, sh shapes.Shape) (runs, unit int) {
	axis := 1 // pos, valid [b, w]
	if i >= 2 {
		axis = e.Model.Config.Block().CacheSlotAxis()
	}
	runs, unit = 1, 1
	for a, d := range sh.Dimensions {
		switch {
		case a > 0 && a < axis:
			runs *= d
		case a > axis:
			unit *= d
		}
	}
	return runs, unit
}

// zeroBuffer is a zeroed backend buffer of shape sh: made in memory the backend shares with the
// host where it can, so that donating it to a step copies nothing.
func (e *Engine) zeroBuffer(sh shapes.Shape) (backends.Buffer, error) {
	if !e.Backend.HasSharedBuffers() {
		return e.Backend.BufferFromFlatData(0, hostFlat(sh), sh)
	}
	buf, flat, err := e.Backend.NewSharedBuffer(0, sh)
	if err != nil {
		return nil, err
	}
	// Shared buffers may come from a pool: zero them (empty slots must read as zero).
	b, ok := flatBytes(flat)
	if !ok {
		e.Backend.BufferFinalize(buf)
		return nil, fmt.Errorf("a shared buffer of %s is not a slice", sh)
	}
	clear(b)
	return buf, nil
}

// hostFlat is a zeroed Go slice holding a tensor of shape sh.
func hostFlat(sh shapes.Shape) any {
	return reflect.MakeSlice(reflect.SliceOf(sh.DType.GoType()), sh.Size(), sh.Size()).Interface()
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

// withFlat calls fn with the contents of buf as a flat Go slice and returns the buffer that
// holds them afterwards. On a backend that shares its memory with the host the slice is the
// buffer itself, and buf is returned. Elsewhere fn sees a host copy; with write, the copy
// becomes a new buffer that replaces buf (released).
func (e *Engine) withFlat(buf backends.Buffer, write bool, fn func(flat any)) (backends.Buffer, error) {
	if e.Backend.HasSharedBuffers() {
		flat, err := e.Backend.BufferData(buf)
		if err != nil {
			return nil, err
		}
		fn(flat)
		return buf, nil
	}
	sh, err := e.Backend.BufferShape(buf)
	if err != nil {
		return nil, err
	}
	flat := hostFlat(sh)
	if err := e.Backend.BufferToFlatData(buf, flat); err != nil {
		return nil, err
	}
	fn(flat)
	if !write {
		return buf, nil
	}
	out, err := e.Backend.BufferFromFlatData(0, flat, sh)
	if err != nil {
		return nil, err
	}
	e.Backend.BufferFinalize(buf)
	return out, nil
}

// withBytes is withFlat on the buffer's bytes.
func (e *Engine) withBytes(buf backends.Buffer, write bool, fn func([]byte)) (backends.Buffer, error) {
	var viewErr error
	out, err := e.withFlat(buf, write, func(flat any) {
		b, ok := flatBytes(flat)
		if !ok {
			viewErr = fmt.Errorf("buffer data of type %T is not a slice", flat)
			return
		}
		fn(b)
	})
	if err == nil {
		err = viewErr
	}
	return out, err
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
	var reserved int64
	for w := s.e.window(1); ; w = s.e.window(w + 1) {
		if w > s.window && s.spare[w] == nil {
			if reserved += s.e.cacheBytes(s.batch, w); reserved > maxReserveBytes && w > s.e.window(1) {
				return nil
			}
			bufs, err := s.e.newCache(s.batch, w)
			if err != nil {
				return fmt.Errorf("reserving the KV cache: %w", err)
			}
			if s.spare == nil {
				s.spare = map[int][]backends.Buffer{}
			}
			s.spare[w] = bufs
		}
		if w >= last {
			return nil
		}
	}
}

// maxReserveBytes bounds what Reserve allocates ahead.
var maxReserveBytes int64 = 256 << 20 // a variable for tests

// newCache allocates the (zero) cache buffers of window slots.
func (e *Engine) newCache(batch, window int) ([]backends.Buffer, error) {
	shs := e.cacheShapes(batch, window)
	bufs := make([]backends.Buffer, len(shs))
	for i, sh := range shs {
		buf, err := e.zeroBuffer(sh)
		if err != nil {
			e.release(bufs[:i])
			return nil, err
		}
		bufs[i] = buf
	}
	return bufs, nil
}

// release hands buffers back to the backend now rather than when the garbage collector finds
// them.
func (e *Engine) release(bufs []backends.Buffer) {
	for _, b := range bufs {
		if b != nil {
			e.Backend.BufferFinalize(b)
		}
	}
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
	if prev != nil {
		for i, sh := range s.e.cacheShapes(s.batch, window) {
			runs, unit := s.e.slotRuns(i, sh)
			outer := s.batch * runs
			from, to := s.window*unit, window*unit
			esize := sh.DType.Size()
			var readErr error
			buf, err := s.e.withBytes(next[i], true, func(dst []byte) {
				_, readErr = s.e.withBytes(prev[i], false, func(src []byte) {
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
			next[i] = buf
		}
		s.e.release(prev)
	}
	s.cache = next
	s.window = window
	return nil
}

// Append feeds one chunk per row (rows may differ in length; a row may be empty) at explicit
// positions, writes it into the cache, and returns the logits of each row's chunk tokens.
func (s *Session) Append(tokens, positions [][]int) ([][][]float32, error) {
	var out [][][]float32
	err := s.step(tokens, positions, false, func(logits []float32, seq, vocab int) {
		out = make([][][]float32, len(tokens))
		for i, row := range tokens {
			out[i] = make([][]float32, len(row))
			for j := range row {
				start := (i*seq + j) * vocab
				out[i][j] = append([]float32(nil), logits[start:start+vocab]...)
			}
		}
	})
	return out, err
}

// appendOne is Append for a one-row session and one token, returning its logits in a buffer
// that the next call reuses: generation reads them once, and a fresh vocabulary-sized slice
// per token (128 KB for a 32000-token vocabulary) kept the garbage collector busy.
func (s *Session) appendOne(tok, pos int) ([]float32, error) {
	if s.one[0][0] == nil {
		s.one[0][0], s.one[1][0] = make([]int, 1), make([]int, 1)
	}
	s.one[0][0][0], s.one[1][0][0] = tok, pos
	err := s.step(s.one[0][:], s.one[1][:], false, func(logits []float32, _, vocab int) {
		s.logits = append(s.logits[:0], logits[:vocab]...)
	})
	return s.logits, err
}

// AppendLast is Append returning only the logits of each row's last token (nil for an empty
// row): what generation needs after a prompt, without running the output head on every token.
// A causal model takes a long prompt in chunks (prefillChunks) where one padded chunk would
// waste more than a fifth of its work: 520 tokens run as 512 and 8, not as 1,024.
func (s *Session) AppendLast(tokens, positions [][]int) ([][]float32, error) {
	last := make([][]float32, len(tokens))
	// keep reads the logits of the rows whose last token is in rows, a chunk that starts at
	// token lo of each row.
	keep := func(rows [][]int, lo int) func(logits []float32, seq, vocab int) {
		return func(logits []float32, seq, vocab int) {
			for i, row := range rows {
				if len(row) == 0 || lo+len(row) != len(tokens[i]) {
					continue // empty here, or its last token comes in a later chunk
				}
				j := len(row) - 1
				if seq == 1 { // picked: one token per row
					j = 0
				}
				start := (i*seq + j) * vocab
				last[i] = append([]float32(nil), logits[start:start+vocab]...)
			}
		}
	}
	chunks := s.prefillChunks(tokens, positions)
	if chunks == nil {
		return last, s.step(tokens, positions, true, keep(tokens, 0))
	}
	ct, cp := make([][]int, len(tokens)), make([][]int, len(tokens))
	for _, c := range chunks {
		for i := range tokens {
			lo, hi := min(c[0], len(tokens[i])), min(c[1], len(tokens[i]))
			ct[i], cp[i] = tokens[i][lo:hi], positions[i][lo:hi]
		}
		if err := s.step(ct, cp, true, keep(ct, c[0])); err != nil {
			return nil, err
		}
	}
	return last, nil
}

// prefillChunks is the chunks a causal model takes a prompt in (nil: one step takes it whole,
// as it does a decoding step, a short prompt, or rows whose positions step refuses).
func (s *Session) prefillChunks(tokens, positions [][]int) [][2]int {
	if !s.e.Model.Config.Causal() || len(positions) != len(tokens) {
		return nil
	}
	longest := 0
	for i, row := range tokens {
		if len(positions[i]) != len(row) {
			return nil
		}
		longest = max(longest, len(row))
	}
	if longest <= prefillChunkMin {
		return nil
	}
	if c := prefillChunks(longest); len(c) > 1 {
		return c
	}
	return nil
}

// prefillChunkMin is the shortest rest of a prompt that prefillChunks splits further.
const prefillChunkMin = 64

// prefillChunks cuts a prompt of n tokens into the spans [lo, hi) that AppendLast feeds one at a
// time: while padding what is left to its bucket (a power of two) would waste more than a fifth
// of the work, the next chunk is half that bucket. Every chunk is a power of two but the last,
// whose bucket pads it by a fifth at most or which is at most prefillChunkMin long: 520 tokens
// run as 512 + 8, 700 as 512 + 128 + 60 (padded to 64), 1,000 as one chunk of 1,024.
func prefillChunks(n int) [][2]int {
	var out [][2]int
	lo := 0
	for rest := n; rest > 0; {
		take := rest
		if b := Bucket(rest); rest > prefillChunkMin && 5*(b-rest) > b {
			take = b / 2
		}
		out = append(out, [2]int{lo, lo + take})
		lo, rest = lo+take, rest-take
	}
	return out
}

// step runs one chunk through the cache and hands read the logits [b, seq, vocab] (seq is 1
// when pick asks for each row's last token only, or the chunk's bucketed length), valid only
// during the call.
func (s *Session) step(tokens, positions [][]int, pick bool, read func(logits []float32, seq, vocab int)) error {
	e := s.e
	if s.broken != nil {
		return s.broken
	}
	if len(tokens) != s.batch {
		return fmt.Errorf("session has %d rows, got %d", s.batch, len(tokens))
	}
	longest, err := checkRows(tokens, positions)
	if err != nil {
		return err
	}
	need := 0
	for i, row := range tokens {
		if s.Used[i]+len(row) > e.Capacity {
			return fmt.Errorf("context full: row %d would hold %d tokens but the context size is %d; raise -c / --ctx-size", i, s.Used[i]+len(row), e.Capacity)
		}
		need = max(need, s.Used[i]+len(row))
	}
	if err := e.checkPositions(positions); err != nil {
		return err
	}
	if w := e.window(need); w > s.window || s.cache == nil {
		if err := s.grow(max(w, s.window)); err != nil {
			return err
		}
	}
	seq := Bucket(longest)
	key := stepKey{pick && seq > 1, s.batch, seq, s.window} // a one-token chunk's token is its last
	st, err := e.stepperFor(key)
	if err != nil {
		return err
	}
	in, err := s.inputsFor(key)
	if err != nil {
		return err
	}
	in.fill(tokens, positions, s.Used, s.window)
	args, err := in.args(e, s.cache)
	if err != nil {
		return fmt.Errorf("decoding inputs: %w", err)
	}
	outs, err := st.run(args, in.donate(len(args)))
	in.done(e, args)
	if err != nil {
		// The cache was donated to the failed step: it is gone.
		s.cache, s.broken = nil, fmt.Errorf("decoding: %w", err)
		return s.broken
	}
	s.cache = outs[1:]
	for i, row := range tokens {
		s.Used[i] += len(row)
	}
	defer e.Backend.BufferFinalize(outs[0]) // back to the backend's pool for the next step
	var readErr error
	if _, err := e.withFlat(outs[0], false, func(flat any) {
		logits, ok := flat.([]float32)
		if !ok {
			readErr = fmt.Errorf("logits of type %T, want float32", flat)
			return
		}
		outSeq := seq
		if key.pick {
			outSeq = 1
		}
		read(logits, outSeq, len(logits)/(s.batch*outSeq))
	}); err != nil {
		return fmt.Errorf("reading logits: %w", err)
	}
	return readErr
}

// stepInputs are a step's inputs besides the cache (stepArgs): tokens, positions, validity and
// slots [batch, seq], and with pick each row's last index [batch], as host slices. On a backend
// that shares memory with the host the slices are views of buffers kept for the next step of
// the same shape, so a step allocates almost nothing; elsewhere buffers are made per step.
type stepInputs struct {
	tok, pos, slot, last []int32
	valid                []bool
	seq                  int
	bufs                 []backends.Buffer // the shared buffers behind the slices, or nil
	shapes               []shapes.Shape
	donateFlags          []bool
	scratch              []backends.Buffer // the argument list, reused
	nCache               int               // cache buffers among the arguments
}

// inputsFor returns the session's input slices for k's shapes.
func (s *Session) inputsFor(k stepKey) (*stepInputs, error) {
	if in := s.inputs[k]; in != nil {
		return in, nil
	}
	in := &stepInputs{seq: k.seq, shapes: stepInputShapes(k)}
	flats := make([]any, len(in.shapes))
	for i, sh := range in.shapes {
		if s.e.Backend.HasSharedBuffers() {
			buf, flat, err := s.e.Backend.NewSharedBuffer(0, sh)
			if err != nil {
				s.e.release(in.bufs)
				return nil, fmt.Errorf("decoding inputs: %w", err)
			}
			in.bufs, flats[i] = append(in.bufs, buf), flat
		} else {
			flats[i] = hostFlat(sh)
		}
	}
	in.tok, in.pos, in.valid, in.slot = flats[0].([]int32), flats[1].([]int32), flats[2].([]bool), flats[3].([]int32)
	if k.pick {
		in.last = flats[4].([]int32)
	}
	if s.inputs == nil {
		s.inputs = map[stepKey]*stepInputs{}
	}
	s.inputs[k] = in
	return in, nil
}

// fill writes the chunk's rows, padded to seq; slot j of row i is used[i]+j, the padding's
// clamped into the window (it writes zeros).
func (in *stepInputs) fill(tokens, positions [][]int, used []int, window int) {
	clear(in.tok)
	clear(in.pos)
	clear(in.valid)
	seq := in.seq
	for i, row := range tokens {
		for j, id := range row {
			in.tok[i*seq+j] = int32(id)
			in.pos[i*seq+j] = int32(positions[i][j])
			in.valid[i*seq+j] = true
		}
		for j := range seq {
			in.slot[i*seq+j] = int32(min(used[i]+j, window-1))
		}
		if in.last != nil {
			in.last[i] = int32(max(len(row)-1, 0))
		}
	}
}

// args lists a step's arguments as backend buffers, in stepArgs' order: four inputs, the cache,
// and with pick the last-token indices.
func (in *stepInputs) args(e *Engine, cache []backends.Buffer) ([]backends.Buffer, error) {
	in.nCache = len(cache)
	if in.bufs != nil {
		in.scratch = append(append(append(in.scratch[:0], in.bufs[:4]...), cache...), in.bufs[4:]...)
		return in.scratch, nil
	}
	flats := []any{in.tok, in.pos, in.valid, in.slot}
	if in.last != nil {
		flats = append(flats, in.last)
	}
	var bufs []backends.Buffer
	for i, flat := range flats {
		buf, err := e.Backend.BufferFromFlatData(0, flat, in.shapes[i])
		if err != nil {
			e.release(bufs)
			return nil, err
		}
		bufs = append(bufs, buf)
	}
	return append(append(bufs[:4:4], cache...), bufs[4:]...), nil
}

// donate is the donation flags of a step's n arguments: the inputs are kept, the cache given.
func (in *stepInputs) donate(n int) []bool {
	if len(in.donateFlags) != n {
		in.donateFlags = make([]bool, n)
		for i := 4; i < 4+in.nCache; i++ {
			in.donateFlags[i] = true
		}
	}
	return in.donateFlags
}

// done releases the input buffers among a step's arguments, unless they are kept for the next.
func (in *stepInputs) done(e *Engine, args []backends.Buffer) {
	if in.bufs == nil {
		e.release(args[:4])
		e.release(args[4+in.nCache:])
	}
}

// Warmup compiles, for batch rows, every graph that generation can need: the prefill of any
// prompt of up to maxPrompt tokens (0: the context size) and the decode step at every window
// size. Afterwards, generating with that batch size compiles nothing, whatever the prompt
// length. Graphs are compiled, not run.
func (e *Engine) Warmup(batch, maxPrompt int) error {
	if maxPrompt <= 0 || maxPrompt > e.Capacity {
		maxPrompt = e.Capacity
	}
	// Bucket(n) and window(n) only change past a power of two, so n = 1, 2 and every 2^k + 1
	// reach every (chunk, window) pair that some length reaches: the cost is logarithmic in
	// the context size.
	seen := map[stepKey]bool{}
	var keys []stepKey
	add := func(k stepKey) {
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	for n := 1; n <= e.Capacity; n = nextBoundary(n) {
		if n < 0 {
			break // past the largest int: no length is left
		}
		if n <= maxPrompt {
			add(stepKey{Bucket(n) > 1, batch, Bucket(n), e.window(n)}) // a prompt of n tokens
			if e.Model.Config.Causal() {
				// A prompt's later chunks (prefillChunks): any smaller power of two, in the
				// window of the prompt that ends with it.
				for b := 1; b < Bucket(n); b *= 2 {
					add(stepKey{b > 1, batch, b, e.window(n)})
				}
			}
		}
		add(stepKey{false, batch, 1, e.window(n)}) // a decode step reaching n tokens
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].window < keys[j].window })
	for _, k := range keys {
		if _, err := e.stepperFor(k); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
	}
	return nil
}

// nextBoundary is the next length after n at which Bucket or window may change: 2, then
// 2^k + 1.
func nextBoundary(n int) int {
	p := 1
	for p < n {
		if p > math.MaxInt/2 {
			return -1
		}
		p *= 2
	}
	return p + 1
}
