package engine

// Attention sinks, StreamingLLM (Xiao et al. 2023, "Efficient Streaming Language Models with
// Attention Sinks"): generation past the context size with a bounded KV cache that keeps the
// first Keep tokens (the sinks, which attention leans on whatever they say) and the most recent
// ones. When a row's cache is full, a block of the oldest entries after the sinks is dropped,
// the later ones move down into the freed slots, and every entry takes its slot as its position
// ("positions within the cache rather than those in the original text"). llama.cpp calls it a
// context shift (--context-shift, --keep) and drops half of the entries after the sinks at
// once, so that the shift's cost (a pass over the cache) is paid once every (n_ctx - n_keep)/2
// tokens rather than at every token; posformer does the same by default.
//
// Moving an entry changes its position. Schemes whose positions enter attention at read time
// (ALiBi, T5, Shaw, FIRE, CoPE, dynamic NTK and LongRoPE, which rotate keys as they read them,
// NoPE) read the new positions from the cache and need nothing more. RoPE (and xPos) rotate keys
// once, before they enter the cache, so the kept keys are rotated again by the change of
// position (llama.cpp's K-shift, positional.Shifter). The alternative, keeping keys unrotated and
// rotating the whole cache at every step, is what the paper's code does; it would make every
// decoding step pay a rotation of every cached key, where the K-shift costs one such pass per
// shift. Schemes that add positions to the embeddings (sinusoidal, learned) cannot shift: the
// cached keys and values of every layer were computed from the old positions.
//
// What a shift does not undo, here as in llama.cpp and the paper: an entry kept in layer 2 and
// up was computed by attending to tokens since dropped. The logits after a shift are those of
// recomputing the kept tokens at their new positions exactly for a one-layer model (and in
// layer 1 of any model); deeper, the kept entries remember what they saw
// (TestShiftEqualsRecomputation, TestShiftedKeysEqualPrefill).

import (
	"fmt"
	"math"
	"time"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/posformer/posformer/positional"
)

// ContextShift configures generation past the context size (StreamingLLM).
type ContextShift struct {
	// Keep is the number of initial tokens (attention sinks) that are never dropped; -1 keeps
	// the whole prompt, as llama.cpp's --keep -1.
	Keep int
	// Discard is the number of entries after the sinks dropped when the cache is full; 0 drops
	// half of them, as llama.cpp does ((n_ctx - n_keep) / 2).
	Discard int
}

// Resolve returns the sinks and the entries to drop for a cache of limit slots and a prompt of
// promptLen tokens, or an error naming the bad setting.
func (c ContextShift) Resolve(limit, promptLen int) (keep, discard int, err error) {
	keep = c.Keep
	if keep < 0 {
		// The whole prompt, as far as it leaves room to shift (llama-server caps it at
		// n_ctx - 4 too): a prompt that fills the cache keeps its start.
		keep = max(0, min(promptLen, limit-4))
	}
	if keep > limit-2 {
		return 0, 0, fmt.Errorf("--keep %d leaves fewer than 2 of the %d cache slots to shift; lower --keep or raise -c", keep, limit)
	}
	discard = c.Discard
	if discard <= 0 {
		discard = (limit - keep) / 2
	}
	if discard > limit-keep {
		return 0, 0, fmt.Errorf("discarding %d entries of a cache of %d slots with %d sinks: at most %d can go", discard, limit, keep, limit-keep)
	}
	return keep, discard, nil
}

// CanShift says why the model cannot generate past its context with a context shift, or nil
// when it can.
func (e *Engine) CanShift() error {
	name := e.Model.Scheme.Name()
	if _, ok := e.Model.Scheme.(positional.Input); ok {
		return fmt.Errorf("--context-shift needs positions inside attention, but %s adds them to the embeddings, so no cached entry can move; use -c large enough instead", name)
	}
	if _, ok := e.Model.Scheme.(positional.QueryKey); ok {
		if _, ok := e.Model.Scheme.(positional.Shifter); !ok {
			return fmt.Errorf("--context-shift cannot move %s's cached keys to new positions; use -c large enough instead", name)
		}
	}
	return nil
}

// rotatesKeys says whether shifting must re-encode cached keys (a Shifter scheme) in some layer.
func (e *Engine) rotatesKeys() bool {
	if _, ok := e.Model.Scheme.(positional.Shifter); !ok {
		return false
	}
	for l := range e.Model.Config.NumLayers {
		if e.Model.Config.UsesPositions(l) {
			return true
		}
	}
	return false
}

// Shift drops discard cache entries of row after its first keep, moves the later entries down
// into the freed slots, and gives every entry of the row its slot as its position; the keys of
// a scheme that rotated them are re-rotated to their new positions. Used[row] shrinks by
// discard, and the row's next token goes to position Used[row]. Other rows are untouched.
func (s *Session) Shift(row, keep, discard int) error {
	e := s.e
	used := 0
	if row >= 0 && row < s.batch {
		used = s.Used[row]
	}
	switch {
	case row < 0 || row >= s.batch:
		return fmt.Errorf("shifting row %d: the session has rows 0 to %d", row, s.batch-1)
	case keep < 0 || discard < 1 || keep+discard > used:
		return fmt.Errorf("shifting row %d: cannot keep %d and drop %d of its %d entries", row, keep, discard, used)
	case s.broken != nil:
		return s.broken
	}
	if err := e.CanShift(); err != nil {
		return err
	}
	w := s.window
	from, to := make([]int32, s.batch*w), make([]int32, s.batch*w)
	for i, sh := range e.cacheShapes(s.batch, w) {
		runs, unit := e.slotRuns(i, sh)
		size := sh.DType.Size() * unit
		var err error
		s.cache[i], err = e.withBytes(s.cache[i], true, func(b []byte) {
			for r := range runs {
				at := (row*runs + r) * w * size
				slots := b[at : at+w*size]
				copy(slots[keep*size:], slots[(keep+discard)*size:used*size])
				clear(slots[(used-discard)*size : used*size])
			}
		})
		if err != nil {
			// Some tensors moved and others not: the cache no longer describes one sequence.
			s.cache, s.broken = nil, fmt.Errorf("shifting row %d of cache tensor %d: %w", row, i, err)
			return s.broken
		}
	}
	// Positions (cache tensor 0) were moved with their entries: each becomes its slot.
	var err error
	s.cache[0], err = e.withFlat(s.cache[0], true, func(flat any) {
		pos := flat.([]int32)[row*w : (row+1)*w]
		for j := range used - discard {
			from[row*w+j], to[row*w+j] = pos[j], int32(j)
			pos[j] = int32(j)
		}
	})
	if err != nil {
		s.cache, s.broken = nil, fmt.Errorf("shifting row %d: %w", row, err)
		return s.broken
	}
	s.Used[row] = used - discard
	if !e.rotatesKeys() {
		return nil
	}
	if err := s.shiftKeys(from, to); err != nil {
		s.cache, s.broken = nil, fmt.Errorf("re-rotating the cached keys: %w", err)
		return s.broken
	}
	return nil
}

// shifter is the compiled K-shift of one cache shape.
type shifter struct {
	g      *Graph
	layers []int // the layers whose keys it re-encodes, in parameter order after from and to
}

// shifterFor returns the K-shift graph of a cache of batch rows and window slots.
func (e *Engine) shifterFor(batch, window int) (sh *shifter, err error) {
	key := [2]int{batch, window}
	if v, ok := e.shifters.Load(key); ok {
		return v.(*shifter), nil
	}
	e.stepMu.Lock() // one compilation at a time, as for the steppers
	defer e.stepMu.Unlock()
	if v, ok := e.shifters.Load(key); ok {
		return v.(*shifter), nil
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("compiling the K-shift (batch %d, window %d): %v", batch, window, r)
		}
	}()
	// Counted as the decoding steps are, so that generation's rates leave the compilation out.
	start := time.Now()
	defer func() { e.compiling.Add(int64(time.Since(start))) }()
	e.builds.Add(1)
	hook := e.Model.Scheme.(positional.Shifter)
	g := NewGraph(e.Backend, fmt.Sprintf("kshift_b%d_w%d", batch, window))
	posShape := shapes.Make(dtypes.Int32, batch, window)
	from, to := Parameter(g, "from", posShape), Parameter(g, "to", posShape)
	keyShape := e.cacheShapes(batch, window)[2]
	transposed := e.Model.Config.Block().CacheSlotAxis() == 3
	sh = &shifter{g: g}
	var outs []*Node
	for l := range e.Model.Config.NumLayers {
		if !e.Model.Config.UsesPositions(l) {
			continue
		}
		k := Parameter(g, fmt.Sprintf("k%d", l), keyShape)
		// The hook takes keys [b, kvh, slots, hd] in float32: a cache of small heads, stored
		// [b, kvh, hd, slots], is transposed there and back, and a half-precision one widened
		// and the rotated keys rounded back (a key that does not move keeps its value).
		keys := ConvertDType(k, dtypes.Float32)
		if transposed {
			keys = TransposeAllAxes(keys, 0, 1, 3, 2)
		}
		shifted := hook.ShiftKeys(l, keys, from, to)
		if transposed {
			shifted = TransposeAllAxes(shifted, 0, 1, 3, 2)
		}
		outs = append(outs, ConvertDType(shifted, keyShape.DType))
		sh.layers = append(sh.layers, l)
	}
	g.Compile(outs...)
	e.shifters.Store(key, sh)
	return sh, nil
}

// shiftKeys re-encodes the cached keys of every positional layer from positions from to
// positions to ([batch, window] each; equal where nothing moved, which leaves a key as it is:
// a rotation by angle 0 multiplies by 1 and adds 0).
func (s *Session) shiftKeys(from, to []int32) (err error) {
	e := s.e
	sh, err := e.shifterFor(s.batch, s.window)
	if err != nil {
		return err
	}
	posShape := shapes.Make(dtypes.Int32, s.batch, s.window)
	fromBuf, err := e.Backend.BufferFromFlatData(0, from, posShape)
	if err != nil {
		return err
	}
	toBuf, err := e.Backend.BufferFromFlatData(0, to, posShape)
	if err != nil {
		e.release([]backends.Buffer{fromBuf})
		return err
	}
	args := []backends.Buffer{fromBuf, toBuf}
	donate := []bool{false, false}
	for _, l := range sh.layers {
		args = append(args, s.cache[2+2*l])
		donate = append(donate, true)
	}
	defer e.release(args[:2])
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	for i, t := range sh.g.RunWithBuffers(args, donate, 0) {
		buf, err := t.DonateBuffer(e.Backend, 0)
		if err != nil {
			return err
		}
		s.cache[2+2*sh.layers[i]] = buf
	}
	return nil
}

// StreamLogProbs scores tokens as StreamingLLM evaluates a long text: teacher-forced, through
// a cache of sinks + window entries that keeps the first sinks tokens and drops discard entries
// after them whenever it is full (0: half the window, as generation with --context-shift; 1: a
// rolling window, the paper's evaluation). It returns the natural log-probability of each of
// tokens[1:] given the tokens before it that the cache holds then: len(tokens)-1 values. The
// engine's context (-c) must hold sinks + window.
func (e *Engine) StreamLogProbs(tokens []int, sinks, window, discard int) ([]float64, error) {
	if err := e.CanShift(); err != nil {
		return nil, err
	}
	limit := sinks + window
	switch {
	case len(tokens) < 2:
		return nil, fmt.Errorf("scoring needs at least 2 tokens, got %d", len(tokens))
	case sinks < 0 || window < 2:
		return nil, fmt.Errorf("streaming with %d sinks and a window of %d: need sinks >= 0 and window >= 2", sinks, window)
	case limit > e.SequenceLimit():
		return nil, fmt.Errorf("%d sinks + a window of %d exceed the %d slots a sequence holds; raise -c or shrink the window", sinks, window, e.SequenceLimit())
	}
	keep, drop, err := ContextShift{Keep: sinks, Discard: discard}.Resolve(limit, 0)
	if err != nil {
		return nil, err
	}
	// Chunks of at most maxScoreChunk tokens bound the graphs compiled (one per power of two).
	const maxScoreChunk = 128
	s := e.NewSession(1)
	defer s.Close()
	out := make([]float64, 0, len(tokens)-1)
	for fed := 0; fed < len(tokens)-1; {
		if s.Used[0] == limit {
			if err := s.Shift(0, keep, drop); err != nil {
				return nil, err
			}
		}
		k := min(limit-s.Used[0], len(tokens)-1-fed, maxScoreChunk)
		logits, err := s.Append([][]int{tokens[fed : fed+k]}, [][]int{iotaFrom(s.Used[0], k)})
		if err != nil {
			return nil, err
		}
		for j, row := range logits[0] {
			out = append(out, logProb(row, tokens[fed+j+1]))
		}
		fed += k
	}
	return out, nil
}

// logProb is log softmax(logits)[id], in float64.
func logProb(logits []float32, id int) float64 {
	top := math.Inf(-1)
	for _, l := range logits {
		top = max(top, float64(l))
	}
	sum := 0.0
	for _, l := range logits {
		sum += math.Exp(float64(l) - top)
	}
	return float64(logits[id]) - top - math.Log(sum)
}
