package engine

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"time"

	"github.com/posformer/posformer/engine/cpu/kernels"
)

// Sampling chooses the next token from logits, as llama.cpp's samplers do.
type Sampling struct {
	Temp float64 // <= 0: greedy (argmax)
	TopK int     // keep the k most likely tokens (0: all)
	TopP float64 // keep the smallest set whose probability reaches p (>= 1: all)
	Seed uint64
	// RepeatPenalty divides the (positive) logits of tokens among the last RepeatLastN
	// generated, as llama.cpp's --repeat-penalty does (1: off). Small byte-level models
	// otherwise fall into runs of tabs.
	RepeatPenalty float64
	RepeatLastN   int
}

// Sampler draws tokens reproducibly for a seed.
type Sampler struct {
	s       Sampling
	rng     *rand.Rand
	history []int
	// penalized is the scratch copy of the logits the repeat penalty changes (a fresh copy per
	// token was 128 KB of garbage each step for a 32,000-token vocabulary).
	penalized []float32
	seen      map[int]bool // for long histories (RepeatLastN 0 keeps them all)
	top       []int        // topK's and pickNucleus's scratch
	exps      []float64    // pickNucleus's scratch
	probs     []float64    // the candidates' weights, pick's and pickNucleus's scratch
}

// NewSampler validates s.
func NewSampler(s Sampling) (*Sampler, error) {
	if s.TopK < 0 || s.TopP < 0 || math.IsNaN(s.Temp) {
		return nil, fmt.Errorf("sampling: top-k (%d) and top-p (%g) must be >= 0", s.TopK, s.TopP)
	}
	return &Sampler{s: s, rng: rand.New(rand.NewPCG(s.Seed, s.Seed^0x9e3779b97f4a7c15))}, nil
}

// Next picks a token id.
func (sm *Sampler) Next(logits []float32) int {
	tok := sm.pick(sm.penalize(logits))
	sm.history = append(sm.history, tok)
	if n := sm.s.RepeatLastN; n > 0 && len(sm.history) > n {
		sm.history = sm.history[len(sm.history)-n:]
	}
	return tok
}

func (sm *Sampler) penalize(logits []float32) []float32 {
	p := float32(sm.s.RepeatPenalty)
	if p == 0 || p == 1 || len(sm.history) == 0 {
		return logits
	}
	sm.penalized = append(sm.penalized[:0], logits...)
	out := sm.penalized
	long := len(sm.history) > 128
	if long {
		if sm.seen == nil {
			sm.seen = map[int]bool{}
		}
		clear(sm.seen)
	}
	for i, t := range sm.history {
		// Each token once. A short history (64 by default) is scanned, a long one mapped.
		if t < 0 || t >= len(out) {
			continue
		}
		if long {
			if sm.seen[t] {
				continue
			}
			sm.seen[t] = true
		} else if slices.Contains(sm.history[:i], t) {
			continue
		}
		if out[t] > 0 {
			out[t] /= p
		} else {
			out[t] *= p
		}
	}
	return out
}

func (sm *Sampler) pick(logits []float32) int {
	if sm.s.Temp <= 0 {
		return argmax(logits)
	}
	var ids []int
	if k := sm.s.TopK; k > 0 && k < len(logits) {
		ids = sm.topK(logits, k)
	} else if p := sm.s.TopP; p > 0 && p < 1 && len(logits) > 1 {
		return sm.pickNucleus(logits, p)
	} else {
		ids = make([]int, len(logits))
		for i := range ids {
			ids[i] = i
		}
		sort.SliceStable(ids, func(a, b int) bool { return logits[ids[a]] > logits[ids[b]] })
	}
	probs := sm.probs[:0]
	top, sum := float64(logits[ids[0]]), 0.0
	for _, id := range ids {
		q := math.Exp((float64(logits[id]) - top) / sm.s.Temp)
		probs = append(probs, q)
		sum += q
	}
	sm.probs = probs
	return sm.draw(ids, probs, sum)
}

// draw picks one of ids, in order of decreasing probability, with weights probs that sum to
// total: the smallest prefix reaching TopP (when it is below 1) is kept, then sampled.
func (sm *Sampler) draw(ids []int, probs []float64, total float64) int {
	sum := total
	if p := sm.s.TopP; p > 0 && p < 1 {
		cum := 0.0
		for i := range probs {
			cum += probs[i] / total
			if cum >= p {
				ids, probs = ids[:i+1], probs[:i+1]
				break
			}
		}
		sum = 0
		for _, q := range probs {
			sum += q
		}
	}
	u := sm.rng.Float64() * sum
	for i, q := range probs {
		if u -= q; u < 0 {
			return ids[i]
		}
	}
	return ids[len(ids)-1]
}

// topK returns the ids of the k largest logits, largest first, ties in index order: the first
// k of a stable sort by descending logit, without sorting the whole vocabulary (a stable sort
// of 32,000 ids took milliseconds a token). The ids scanned in order enter a sorted list of at
// most k only when they beat its last, so a later equal logit never displaces an earlier one.
func (sm *Sampler) topK(logits []float32, k int) []int {
	top := sm.top[:0]
	for i, l := range logits {
		n := len(top)
		if n == k && !(l > logits[top[n-1]]) {
			continue
		}
		if n < k {
			top = append(top, i)
		}
		// Insert i after every kept id whose logit is at least l (NaN sorts last: never larger).
		j := len(top) - 1
		for j > 0 && l > logits[top[j-1]] {
			top[j] = top[j-1]
			j--
		}
		top[j] = i
	}
	sm.top = top
	return top
}

// pickNucleus is pick for top-p without top-k, as run.c does it: a token whose probability is
// below (1-p)/(n-1) cannot be in the nucleus (all of them together hold less than 1-p), so only
// the others are sorted. The nucleus, its order and the draw are those of sorting the whole
// vocabulary, but for the rounding of the normalizing sum (taken in index order here).
func (sm *Sampler) pickNucleus(logits []float32, p float64) int {
	top := float64(logits[argmax(logits)])
	if cap(sm.exps) < len(logits) {
		sm.exps = make([]float64, len(logits))
	}
	e := sm.exps[:len(logits)]
	total := 0.0
	for i, l := range logits {
		e[i] = math.Exp((float64(l) - top) / sm.s.Temp)
		total += e[i]
	}
	cutoff := (1 - p) / float64(len(logits)-1) * total
	ids := sm.top[:0]
	for i, q := range e {
		if q >= cutoff {
			ids = append(ids, i)
		}
	}
	sm.top = ids
	if len(ids) == 0 { // NaN logits: no probability compares; a broken model gets the argmax
		return argmax(logits)
	}
	sort.SliceStable(ids, func(a, b int) bool { return logits[ids[a]] > logits[ids[b]] })
	probs := sm.probs[:0]
	for _, id := range ids {
		probs = append(probs, e[id])
	}
	sm.probs = probs
	return sm.draw(ids, probs, total)
}

// Stats reports a generation's timing, as llama.cpp's prompt-eval and eval lines do.
type Stats struct {
	PromptTokens, Generated int
	Prefill, Decode         time.Duration // excluding Compile
	Compile                 time.Duration // graphs compiled on first use during the generation
	Cache                   time.Duration // allocating the KV cache ahead (Session.Reserve)
	Shifts                  int           // context shifts (GenerateShifting)
	StopReason              string
}

// PrefillRate and DecodeRate are tokens per second.
func (s Stats) PrefillRate() float64 { return rate(s.PromptTokens, s.Prefill) }
func (s Stats) DecodeRate() float64  { return rate(s.Generated, s.Decode) }

func rate(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// Generate continues prompt by up to n tokens (n < 0: until the context is full), calling emit
// with each new token as soon as it is chosen. It stops at a token in stop, at n, or when the
// context (or the positional scheme's range) is full.
func (e *Engine) Generate(prompt []int, n int, sm *Sampler, stop []int, emit func(token int)) (st Stats, err error) {
	return e.generate(prompt, n, sm, stop, nil, emit)
}

// GenerateShifting is Generate that goes on past a full context by shifting it (StreamingLLM,
// streaming.go): the first shift.Keep tokens stay, a block of the oldest after them is dropped,
// and the cache never holds more than the context size. n < 0 generates until a stop token.
func (e *Engine) GenerateShifting(prompt []int, n int, sm *Sampler, stop []int, shift ContextShift, emit func(token int)) (st Stats, err error) {
	if err := e.CanShift(); err != nil {
		return st, err
	}
	return e.generate(prompt, n, sm, stop, &shift, emit)
}

// generate is Generate, shifting the context when shift is not nil.
func (e *Engine) generate(prompt []int, n int, sm *Sampler, stop []int, shift *ContextShift, emit func(token int)) (st Stats, err error) {
	if len(prompt) == 0 {
		return st, fmt.Errorf("empty prompt: give at least one token")
	}
	if len(prompt) > e.Capacity {
		return st, fmt.Errorf("prompt of %d tokens exceeds the context size %d; shorten it or raise -c", len(prompt), e.Capacity)
	}
	limit := e.Capacity
	if l := e.positionLimit(); l > 0 {
		if len(prompt) > l {
			return st, fmt.Errorf("prompt of %d tokens is longer than %s can encode: %s", len(prompt), e.Model.Scheme.Name(), e.limitFix())
		}
		limit = min(limit, l)
	}
	keep, discard := 0, 0
	if shift != nil {
		if keep, discard, err = shift.Resolve(limit, len(prompt)); err != nil {
			return st, err
		}
	}
	s := e.NewSession(1)
	defer s.Close()
	// The cache is allocated before the first token (up to Reserve's bound), as llama.cpp does
	// when it creates a context; its time is reported apart from the rates, like compilation.
	reserved := time.Now()
	need := limit
	if n >= 0 {
		need = min(limit, len(prompt)+n)
	}
	if err := s.Reserve(need); err != nil {
		return st, err
	}
	st.Cache = time.Since(reserved)
	start, compiled := time.Now(), e.CompileTime()
	last, err := s.AppendLast([][]int{prompt}, [][]int{iotaFrom(0, len(prompt))})
	if err != nil {
		return st, err
	}
	// The first call of a shape compiles its graph; rates leave that out.
	st.Compile = e.CompileTime() - compiled
	st.PromptTokens, st.Prefill = len(prompt), time.Since(start)-st.Compile
	logits := last[0]
	start, compiled = time.Now(), e.CompileTime()
	defer func() {
		c := e.CompileTime() - compiled
		st.Compile += c
		st.Decode = time.Since(start) - c
	}()
	for pos := len(prompt); ; pos++ {
		tok := sm.Next(logits)
		if slices.Contains(stop, tok) {
			st.StopReason = "stop token"
			return st, nil
		}
		emit(tok)
		st.Generated++
		switch {
		case n >= 0 && st.Generated >= n:
			st.StopReason = "length"
			return st, nil
		case pos >= limit && shift == nil:
			st.StopReason = "context full"
			return st, nil
		case pos >= limit:
			// The cache is full: drop a block after the sinks; positions are slots, so the
			// token goes to the first free one.
			if err := s.Shift(0, keep, discard); err != nil {
				return st, err
			}
			pos -= discard
			st.Shifts++
		}
		if logits, err = s.appendOne(tok, pos); err != nil {
			return st, err
		}
	}
}

func iotaFrom(from, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = from + i
	}
	return out
}

// Filling is one candidate for a masked token.
type Filling struct {
	Token int
	Prob  float64
}

// FillMask runs an encoder over tokens and returns, for each index in maskAt, the k most
// likely tokens there.
func (e *Engine) FillMask(tokens, maskAt []int, k int) ([][]Filling, error) {
	if e.Model.Config.Causal() {
		return nil, fmt.Errorf("fill-mask needs an encoder; this model is a %s", e.Model.Config.Kind)
	}
	logits, err := e.Forward([][]int{tokens}, [][]int{iotaFrom(0, len(tokens))})
	if err != nil {
		return nil, err
	}
	var all [][]Filling
	for _, at := range maskAt {
		row := logits[0][at]
		top := float64(slices.Max(row))
		sum := 0.0
		for _, l := range row {
			sum += math.Exp(float64(l) - top)
		}
		fs := make([]Filling, len(row))
		for i, l := range row {
			fs[i] = Filling{Token: i, Prob: math.Exp(float64(l)-top) / sum}
		}
		sort.SliceStable(fs, func(a, b int) bool { return fs[a].Prob > fs[b].Prob })
		all = append(all, fs[:min(k, len(fs))])
	}
	return all, nil
}

// argmax is the index of the first largest logit. A vocabulary's worth of comparisons one at a
// time took ~15 µs a token at 32,000 logits; the vector maximum of each chunk finds the chunk
// that holds it, and only that chunk is scanned. With a NaN among the logits the plain scan
// decides (NaN is never larger, as there).
func argmax(logits []float32) int {
	const chunk = 1024
	if len(logits) == 0 {
		return 0
	}
	best, bestChunk := float32(math.Inf(-1)), -1
	for lo := 0; lo < len(logits); lo += chunk {
		m := kernels.Max(logits[lo:min(lo+chunk, len(logits))])
		if m != m {
			bestChunk = -1
			break
		}
		if bestChunk < 0 || m > best {
			best, bestChunk = m, lo
		}
	}
	lo, hi := 0, len(logits)
	if bestChunk >= 0 {
		lo, hi = bestChunk, min(bestChunk+chunk, len(logits))
	}
	at := lo
	for i := lo; i < hi; i++ {
		if logits[i] > logits[at] {
			at = i
		}
	}
	return at
}
