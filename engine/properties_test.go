package engine

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/posformer/posformer/models"
)

// With no positional scheme and no causal mask, permuting the input permutes the output
// (the seeds' argument for why transformers need positions); any absolute scheme breaks it.
func TestPermutationEquivariance(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	toks := randomTokens(r, 10)
	perm := r.Perm(10)
	permuted := make([]int, 10)
	for i, p := range perm {
		permuted[i] = toks[p]
	}
	for _, pe := range []map[string]any{{"name": "none"}, {"name": "sinusoidal"}, {"name": "learned", "max_positions": 64}} {
		e := newTestEngine(t, tinyConfig(models.Encoder, 2, pe))
		a, err := e.Forward([][]int{toks}, [][]int{iota(0, 10)})
		if err != nil {
			t.Fatal(err)
		}
		b, err := e.Forward([][]int{permuted}, [][]int{iota(0, 10)})
		if err != nil {
			t.Fatal(err)
		}
		worst := 0.0
		for i, p := range perm {
			worst = max(worst, maxAbsDiff(b[0][i], a[0][p]))
		}
		equivariant := worst < 1e-4
		if want := pe["name"] == "none"; equivariant != want {
			t.Errorf("%v: equivariant=%v (max diff %g), want %v", pe, equivariant, worst, want)
		}
	}
}

// After warm-up, generating never compiles a graph, whatever the prompt length within a bucket
// and however many tokens are generated.
func TestNoCompilationPerToken(t *testing.T) {
	e := newTestEngine(t, tinyConfig(models.Decoder, 2, map[string]any{"name": "rope"}))
	sm, err := NewSampler(Sampling{Temp: 0.8, TopK: 10, TopP: 0.9, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 8))
	if _, err := e.Generate(randomTokens(r, 5), 3, sm, nil, func(int) {}); err != nil {
		t.Fatal(err)
	}
	warm := e.Compilations()
	if warm != 2 { // the prefill bucket (8) and the one-token decode graph
		t.Errorf("warm-up built %d graphs, want 2", warm)
	}
	for _, n := range []int{6, 7, 8} { // same bucket as 5
		st, err := e.Generate(randomTokens(r, n), 30, sm, nil, func(int) {})
		if err != nil {
			t.Fatal(err)
		}
		if st.Generated != 30 {
			t.Errorf("generated %d tokens, want 30", st.Generated)
		}
	}
	if got := e.Compilations(); got != warm {
		t.Errorf("generation compiled %d more graphs after warm-up", got-warm)
	}
}

// Greedy decoding with a seed is deterministic, and sampling respects top-k.
func TestSampler(t *testing.T) {
	logits := []float32{0.1, 3, 2.9, -1, 0}
	g, _ := NewSampler(Sampling{})
	if got := g.Next(logits); got != 1 {
		t.Errorf("greedy picked %d, want 1", got)
	}
	s, _ := NewSampler(Sampling{Temp: 1, TopK: 2, Seed: 3})
	seen := map[int]int{}
	for range 2000 {
		seen[s.Next(logits)]++
	}
	if len(seen) != 2 || seen[1] == 0 || seen[2] == 0 {
		t.Errorf("top-k 2 sampled %v, want only tokens 1 and 2", seen)
	}
	// p(1)/p(2) = e^0.1 ≈ 1.105
	if ratio := float64(seen[1]) / float64(seen[2]); ratio < 0.95 || ratio > 1.3 {
		t.Errorf("sampled ratio %g, want about 1.105", ratio)
	}
	// Repeat penalty: 3/1.1 < 2.9, so greedy alternates instead of repeating token 1.
	rp, _ := NewSampler(Sampling{RepeatPenalty: 1.1, RepeatLastN: 1})
	if a, b, c := rp.Next(logits), rp.Next(logits), rp.Next(logits); a != 1 || b != 2 || c != 1 {
		t.Errorf("greedy with repeat penalty picked %d %d %d, want 1 2 1", a, b, c)
	}
	// A token repeated in the history is penalized once, not once per repetition, in both the
	// scanned (short) and the mapped (long) history; the caller's logits are left alone.
	for _, n := range []int{8, 300} {
		pen, _ := NewSampler(Sampling{RepeatPenalty: 2, RepeatLastN: 0})
		for range n {
			pen.history = append(pen.history, 0)
		}
		pen.history = append(pen.history, 3, 3)
		in := []float32{4, 1, 2, -1, 3}
		out := pen.penalize(in)
		want := []float32{2, 1, 2, -2, 3}
		if !slices.Equal(out, want) || in[0] != 4 || in[3] != -1 {
			t.Errorf("history of %d: penalized %v, want %v (input now %v)", n+2, out, want, in)
		}
	}
	p, _ := NewSampler(Sampling{Temp: 1, TopP: 0.4, Seed: 3})
	for range 200 {
		if tok := p.Next(logits); tok != 1 {
			t.Fatalf("top-p 0.4 sampled %d; only token 1 (p≈0.45) is in the nucleus", tok)
		}
	}
}

func TestBadInput(t *testing.T) {
	e := newTestEngine(t, tinyConfig(models.Decoder, 1, map[string]any{"name": "learned", "max_positions": 16}))
	sm, _ := NewSampler(Sampling{})
	_, err := e.Generate(make([]int, 20), 1, sm, nil, func(int) {})
	if err == nil || !strings.Contains(err.Error(), "16 positions") {
		t.Errorf("prompt past the learned table: got %v", err)
	}
	st, err := e.Generate(make([]int, 10), 100, sm, nil, func(int) {})
	if err != nil || st.StopReason != "context full" || st.Generated != 7 {
		t.Errorf("generation past the table: %+v, %v; want a stop after 7 tokens (positions 10..16)", st, err)
	}
	if _, err := NewBackend("xla:cpu"); err == nil || strings.Contains(err.Error(), "\n") {
		t.Errorf("xla:cpu without XLA: want a one-line error, got %v", err)
	}
	if _, err := NewBackend("tpu"); err == nil || !strings.Contains(err.Error(), "xla:cpu") {
		t.Errorf("unknown backend: want an error listing valid ones, got %v", err)
	}
}

// A layer listed in nope_layers runs without the scheme's attention hooks: RoPE with every
// layer listed is exactly NoPE (same weights), with one layer listed it is neither, and the
// cache stays exact.
func TestNoPELayers(t *testing.T) {
	backend, err := NewBackend("")
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(13, 14))
	toks := randomTokens(r, 11)
	ctx := seededContext(t, 17)
	run := func(pe string, nope []int) []float32 {
		cfg := tinyConfig(models.Decoder, 2, map[string]any{"name": pe})
		cfg.NoPELayers = nope
		m, err := models.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		e, err := New(backend, m, ctx, 0) // one context: the same weights for every variant
		if err != nil {
			t.Fatal(err)
		}
		out, err := e.Forward([][]int{toks}, [][]int{iota(0, len(toks))})
		if err != nil {
			t.Fatal(err)
		}
		return out[0][len(toks)-1]
	}
	none, rope := run("none", nil), run("rope", nil)
	allNoPE, oneNoPE := run("rope", []int{0, 1}), run("rope", []int{1})
	if d := maxAbsDiff(allNoPE, none); d > 1e-6 {
		t.Errorf("rope with nope_layers [0 1] differs from none by %g", d)
	}
	// One layer without RoPE lies between the two: measured against how far RoPE moves the
	// logits at all, so that the margin does not depend on the weights' scale.
	apart := maxAbsDiff(rope, none)
	if apart < 1e-5 {
		t.Errorf("rope and none give the same logits (%g apart): RoPE did not act", apart)
	}
	if dn, dr := maxAbsDiff(oneNoPE, none), maxAbsDiff(oneNoPE, rope); dn < apart/20 || dr < apart/20 {
		t.Errorf("rope with nope_layers [1]: %g from none, %g from rope (rope is %g from none); want both above %g", dn, dr, apart, apart/20)
	}
	cfg := tinyConfig(models.Decoder, 2, map[string]any{"name": "sinusoidal"})
	cfg.NoPELayers = []int{1}
	if _, err := models.New(cfg); err == nil || !strings.Contains(err.Error(), "nope_layers") {
		t.Errorf("sinusoidal with nope_layers: error %v, want one naming nope_layers", err)
	}
	cfg = tinyConfig(models.Decoder, 2, map[string]any{"name": "rope"})
	cfg.NoPELayers = []int{2}
	if _, err := models.New(cfg); err == nil || !strings.Contains(err.Error(), "nope_layers") {
		t.Errorf("nope_layers past the last layer: error %v", err)
	}
}

// xPos cannot go past the float32 range of its key scale: a clear error, not NaN logits.
func TestXPosLimit(t *testing.T) {
	e := newTestEngine(t, tinyConfig(models.Decoder, 1, map[string]any{"name": "xpos", "scale_base": 8}))
	if _, err := e.Forward([][]int{{1, 2}}, [][]int{{500, 511}}); err != nil {
		t.Errorf("positions below 64·scale_base: %v", err)
	}
	_, err := e.Forward([][]int{{1, 2}}, [][]int{{500, 512}})
	if err == nil || !strings.Contains(err.Error(), "scale_base") {
		t.Errorf("position 512 with scale_base 8: error %v, want one naming scale_base", err)
	}
}

// argmax equals the plain first-largest scan on random logits of many lengths, with ties,
// -Inf everywhere, and NaN (where the plain scan decides).
func TestArgmaxMatchesScan(t *testing.T) {
	scan := func(l []float32) int {
		best := 0
		for i, v := range l {
			if v > l[best] {
				best = i
			}
		}
		return best
	}
	r := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{1, 2, 1023, 1024, 1025, 3000, 32000} {
		for trial := range 20 {
			l := make([]float32, n)
			for i := range l {
				l[i] = float32(r.IntN(50)) // many ties
			}
			switch trial {
			case 1:
				for i := range l {
					l[i] = float32(math.Inf(-1))
				}
			case 2:
				l[r.IntN(n)] = float32(math.NaN())
			case 3:
				l[0] = float32(math.NaN())
			}
			if got, want := argmax(l), scan(l); got != want {
				t.Fatalf("n=%d trial %d: argmax %d, scan %d", n, trial, got, want)
			}
		}
	}
}

// Top-k sampling picks what the stable sort of the whole vocabulary picked (the same ids in
// the same order, so the same draws for a seed), with many ties.
func TestTopKMatchesFullSort(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, n := range []int{1, 5, 40, 41, 500, 32000} {
		for _, k := range []int{1, 3, 40, n - 1, n} {
			if k < 1 || k > n {
				continue
			}
			l := make([]float32, n)
			for i := range l {
				l[i] = float32(r.IntN(30))
			}
			ids := make([]int, n)
			for i := range ids {
				ids[i] = i
			}
			sort.SliceStable(ids, func(a, b int) bool { return l[ids[a]] > l[ids[b]] })
			sm, _ := NewSampler(Sampling{Temp: 1, TopK: k})
			var got []int
			if k < n {
				got = sm.topK(l, k)
			} else {
				got = ids // k >= n takes the full sort path
			}
			if !slices.Equal(got, ids[:k]) {
				t.Fatalf("n=%d k=%d: topK %v, want %v", n, k, got[:min(k, 8)], ids[:min(k, 8)])
			}
		}
	}
}

// Top-p without top-k draws what sorting the whole vocabulary drew (the reference below is the
// sampler as it was), for the same seed, over many draws from random logits.
func TestNucleusMatchesFullSort(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skips comparing many top-p draws with a full sort (about 7 s); run it with go test ./engine -run TestNucleusMatchesFullSort")
	}
	reference := func(rng *rand.Rand, logits []float32, temp, p float64) int {
		ids := make([]int, len(logits))
		for i := range ids {
			ids[i] = i
		}
		sort.SliceStable(ids, func(a, b int) bool { return logits[ids[a]] > logits[ids[b]] })
		probs := make([]float64, len(ids))
		top, sum := float64(logits[ids[0]]), 0.0
		for i, id := range ids {
			probs[i] = math.Exp((float64(logits[id]) - top) / temp)
			sum += probs[i]
		}
		cum := 0.0
		for i := range probs {
			cum += probs[i] / sum
			if cum >= p {
				ids, probs = ids[:i+1], probs[:i+1]
				break
			}
		}
		sum = 0
		for _, q := range probs {
			sum += q
		}
		u := rng.Float64() * sum
		for i, q := range probs {
			if u -= q; u < 0 {
				return ids[i]
			}
		}
		return ids[len(ids)-1]
	}
	r := rand.New(rand.NewPCG(11, 12))
	for _, n := range []int{2, 7, 260, 32000} {
		for _, p := range []float64{0.5, 0.9, 0.95} {
			sm, _ := NewSampler(Sampling{Temp: 0.8, TopP: p, Seed: 42})
			ref := rand.New(rand.NewPCG(42, 42^0x9e3779b97f4a7c15))
			logits := make([]float32, n)
			for draw := range 50 {
				for i := range logits {
					logits[i] = float32(r.NormFloat64() * 3)
				}
				if got, want := sm.pick(logits), reference(ref, logits, 0.8, p); got != want {
					t.Fatalf("n=%d p=%g draw %d: picked %d, full sort %d", n, p, draw, got, want)
				}
			}
		}
	}
}

// Sampling never panics on NaN logits (a broken checkpoint): top-k, top-p and both.
func TestSamplingNaNLogits(t *testing.T) {
	l := []float32{1, float32(math.NaN()), 3, float32(math.NaN()), 2}
	for _, s := range []Sampling{{Temp: 1, TopP: 0.9}, {Temp: 1, TopK: 2}, {Temp: 1, TopK: 2, TopP: 0.5}, {Temp: 1}} {
		sm, _ := NewSampler(s)
		for range 10 {
			if tok := sm.Next(l); tok < 0 || tok >= len(l) {
				t.Fatalf("%+v: token %d", s, tok)
			}
		}
	}
	all := []float32{float32(math.NaN()), float32(math.NaN())}
	sm, _ := NewSampler(Sampling{Temp: 1, TopP: 0.9})
	if tok := sm.Next(all); tok != 0 {
		t.Errorf("all NaN: token %d, want 0", tok)
	}
}
