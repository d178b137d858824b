package engine

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/posformer/posformer/models"
)

// shiftSchemes are schemes of each kind a context shift handles: keys re-rotated (RoPE, in
// both layouts, scaled), positions re-read at attention (ALiBi, T5, dynamic NTK), none (NoPE).
var shiftSchemes = []map[string]any{
	{"name": "rope"},
	{"name": "rope", "layout": "interleaved", "rotary_fraction": 0.5, "rope_scaling": map[string]any{"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 16}},
	{"name": "alibi"},
	{"name": "t5"},
	{"name": "none"},
	{"name": "rope", "rope_scaling": map[string]any{"rope_type": "dynamic", "factor": 4.0, "original_max_position_embeddings": 8}},
	{"name": "xpos", "scale_base": 16.0}, // a strong decay: ζ^(-n/B) over several B
}

// shiftEngine is a decoder of the given depth whose context holds capacity tokens, its cache in
// the layout of tinyConfig's small heads or (wide) of heads of 32.
func shiftEngine(t *testing.T, layers int, pe map[string]any, capacity int, wide bool) *Engine {
	t.Helper()
	cfg := tinyConfig(models.Decoder, layers, pe)
	cfg.MaxSeqLen = capacity
	if wide {
		cfg = wideHeads(cfg)
	}
	return newTestEngine(t, cfg)
}

// (a) While the cache never fills, generating with a context shift is generating without one.
func TestShiftNotFullChangesNothing(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, pe := range shiftSchemes[:3] {
		e := shiftEngine(t, 2, pe, 64, false)
		prompt := randomTokens(r, 10)
		run := func(shift *ContextShift) ([]int, Stats) {
			sm, err := NewSampler(Sampling{Temp: 0.8, Seed: 7})
			if err != nil {
				t.Fatal(err)
			}
			var ids []int
			emit := func(tok int) { ids = append(ids, tok) }
			var st Stats
			if shift == nil {
				st, err = e.Generate(prompt, 40, sm, nil, emit)
			} else {
				st, err = e.GenerateShifting(prompt, 40, sm, nil, *shift, emit)
			}
			if err != nil {
				t.Fatal(err)
			}
			return ids, st
		}
		plain, _ := run(nil)
		shifted, st := run(&ContextShift{Keep: 4})
		if !slices.Equal(plain, shifted) || st.Shifts != 0 {
			t.Errorf("%v: with --context-shift and a cache never full, ids %v (%d shifts), want %v", pe, shifted, st.Shifts, plain)
		}
	}
}

// fillAndShift feeds toks into a one-row session, shifts it (keep sinks, drop discard) and
// returns it with the tokens it holds afterwards, in slot order.
func fillAndShift(t *testing.T, e *Engine, toks []int, keep, discard int) (*Session, []int) {
	t.Helper()
	s := e.NewSession(1)
	if _, err := s.AppendLast([][]int{toks}, [][]int{iota(0, len(toks))}); err != nil {
		t.Fatal(err)
	}
	if err := s.Shift(0, keep, discard); err != nil {
		t.Fatal(err)
	}
	kept := append(slices.Clone(toks[:keep]), toks[keep+discard:]...)
	if s.Used[0] != len(kept) {
		t.Fatalf("after the shift the row holds %d entries, want %d", s.Used[0], len(kept))
	}
	return s, kept
}

// (b) After a shift, the next tokens' logits are those of recomputing the kept tokens (sinks and
// the recent window) from scratch at positions 0..n-1: exactly so in a one-layer model, where
// a cached entry depends on its token and position alone (deeper, kept entries remember the
// dropped tokens they attended to, as in llama.cpp and the paper).
func TestShiftEqualsRecomputation(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for i, pe := range shiftSchemes {
		e := shiftEngine(t, 1, pe, 48, i%2 == 1)
		toks := randomTokens(r, 48)
		s, kept := fillAndShift(t, e, toks, 4, 22)
		next := randomTokens(r, 3)
		for i, tok := range next {
			n := len(kept)
			out, err := s.Append([][]int{{tok}}, [][]int{{n}})
			if err != nil {
				t.Fatal(err)
			}
			kept = append(kept, tok)
			full, err := e.Forward([][]int{kept}, [][]int{iota(0, n+1)})
			if err != nil {
				t.Fatal(err)
			}
			if d := maxAbsDiff(out[0][0], full[0][n]); d > 1e-4 {
				t.Errorf("%v: token %d after the shift: logits differ from recomputing the kept tokens by %g", pe, i, d)
			}
		}
		// The same holds through StreamLogProbs, which shifts on its own.
		all := append(slices.Clone(toks), next...)
		lp, err := e.StreamLogProbs(all, 4, 44, 22)
		if err != nil {
			t.Fatal(err)
		}
		if len(lp) != len(all)-1 {
			t.Fatalf("%v: %d log-probs for %d tokens, want %d", pe, len(lp), len(all), len(all)-1)
		}
		full, err := e.Forward([][]int{kept}, [][]int{iota(0, len(kept))})
		if err != nil {
			t.Fatal(err)
		}
		last := len(kept) - 2 // the logits that predict the last token
		if want := logProb(full[0][last], kept[last+1]); math.Abs(lp[len(lp)-1]-want) > 1e-4 {
			t.Errorf("%v: StreamLogProbs' last log-prob %g, recomputation gives %g", pe, lp[len(lp)-1], want)
		}
		// Before the cache first fills, the log-probs are those of the plain forward pass.
		plain, err := e.Forward([][]int{toks}, [][]int{iota(0, len(toks))})
		if err != nil {
			t.Fatal(err)
		}
		for j := 0; j < len(toks)-1; j += 9 {
			if want := logProb(plain[0][j], toks[j+1]); math.Abs(lp[j]-want) > 1e-4 {
				t.Errorf("%v: log-prob %d is %g before any shift, the forward pass gives %g", pe, j, lp[j], want)
			}
		}
	}
}

// cacheFloats reads cache tensor i of s (row 0) as floats.
func cacheFloats(t *testing.T, s *Session, i int) []float32 {
	t.Helper()
	var out []float32
	if _, err := s.e.withFlat(s.cache[i], false, func(flat any) { out = slices.Clone(flat.([]float32)) }); err != nil {
		t.Fatal(err)
	}
	return out
}

// (c) The re-rotated keys are those a fresh prefill of the kept tokens writes (layer 1 of a
// two-layer model: its keys depend on token and position alone), and every slot holds its index
// as its position.
func TestShiftedKeysEqualPrefill(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	// The schemes that rotate cached keys: RoPE (plain, and interleaved, partial and scaled) and
	// xPos.
	for i, pe := range append(slices.Clone(shiftSchemes[:2]), shiftSchemes[0], shiftSchemes[len(shiftSchemes)-1]) {
		e := shiftEngine(t, 2, pe, 64, i >= 2) // the last two in the other cache layout
		toks := randomTokens(r, 60)
		s, kept := fillAndShift(t, e, toks, 4, 28)
		fresh := e.NewSession(1)
		if _, err := fresh.AppendLast([][]int{kept}, [][]int{iota(0, len(kept))}); err != nil {
			t.Fatal(err)
		}
		got, want := cacheFloats(t, s, 2), cacheFloats(t, fresh, 2)
		if d := maxAbsDiff(got, want); d > 1e-4 {
			t.Errorf("%v: shifted keys of layer 1 differ from a fresh prefill's by %g", pe, d)
		}
		var pos []int32
		if _, err := e.withFlat(s.cache[0], false, func(flat any) { pos = slices.Clone(flat.([]int32)) }); err != nil {
			t.Fatal(err)
		}
		for j, p := range pos {
			want := int32(j)
			if j >= len(kept) {
				want = 0 // empty slots
			}
			if p != want {
				t.Fatalf("%v: slot %d holds position %d after the shift, want %d", pe, j, p, want)
			}
		}
	}
}

// Generating far past the context shifts again and again; with the shift off it stops there.
func TestGenerateShiftingPastContext(t *testing.T) {
	e := shiftEngine(t, 2, map[string]any{"name": "rope"}, 64, false)
	sm, err := NewSampler(Sampling{Temp: 0.8, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	st, err := e.GenerateShifting([]int{1, 2, 3}, 200, sm, nil, ContextShift{Keep: 4}, func(int) { n++ })
	if err != nil {
		t.Fatal(err)
	}
	// 3 + 200 tokens through 64 slots, 30 dropped per shift: the cache fills at 64, then every 30.
	if n != 200 || st.Shifts != (3+200-1-64)/30+1 {
		t.Errorf("generated %d tokens with %d shifts, want 200 with %d", n, st.Shifts, (3+200-1-64)/30+1)
	}
	st, err = e.Generate([]int{1, 2, 3}, 200, sm, nil, func(int) {})
	if err != nil || st.StopReason != "context full" {
		t.Errorf("without the shift: %v, stop reason %q, want the context full", err, st.StopReason)
	}
}

// Schemes that put positions into the embeddings refuse to shift with a one-line error; bad
// settings are refused too.
func TestShiftRefusals(t *testing.T) {
	for _, pe := range []map[string]any{{"name": "sinusoidal"}, {"name": "learned", "max_positions": 64}, {"name": "multiplicative"}} {
		e := shiftEngine(t, 1, pe, 64, false)
		sm, _ := NewSampler(Sampling{})
		_, err := e.GenerateShifting([]int{1, 2}, 5, sm, nil, ContextShift{Keep: 4}, func(int) {})
		if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "context-shift") {
			t.Errorf("%v: error %v, want one line naming --context-shift", pe, err)
		}
		if _, err := e.StreamLogProbs(randomTokens(rand.New(rand.NewPCG(1, 1)), 10), 4, 20, 0); err == nil {
			t.Errorf("%v: StreamLogProbs accepted a scheme that cannot shift", pe)
		}
	}
	e := shiftEngine(t, 1, map[string]any{"name": "rope"}, 64, false)
	sm, _ := NewSampler(Sampling{})
	if _, err := e.GenerateShifting([]int{1, 2}, 5, sm, nil, ContextShift{Keep: 63}, func(int) {}); err == nil {
		t.Error("--keep 63 of a 64-slot cache was accepted")
	}
	if _, err := e.StreamLogProbs([]int{1, 2, 3}, 4, 100, 0); err == nil {
		t.Error("a window past the context was accepted")
	}
	s := e.NewSession(1)
	if err := s.Shift(0, 2, 3); err == nil {
		t.Error("shifting an empty row was accepted")
	}
}

// On the shipped RoPE decoder (trained at 128 bytes), scoring Go source through a cache of 128
// (4 sinks + 124) keeps its bits per byte near the trained length's, where a cache of 1024 lets
// positions run far past what RoPE learned: the property StreamingLLM is for. The figures are
// in benchmarks/STREAMING.md.
func TestStreamingBoundedCacheBPB(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skips scoring 4 KiB four times on the shipped model (about 8 s); run it with go test ./engine -run TestStreamingBoundedCacheBPB")
	}
	text, err := os.ReadFile(filepath.Join(runtime.GOROOT(), "src", "fmt", "print.go"))
	if err != nil {
		t.Skipf("no Go source to score: %v", err)
	}
	e, err := Load("../weights/rope-decoder", "", 1024)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]int, 4096)
	for i, b := range text[:len(ids)] {
		ids[i] = int(b) // the byte tokenizer: id = byte
	}
	bpb := func(sinks, window, discard int) float64 {
		lp, err := e.StreamLogProbs(ids, sinks, window, discard)
		if err != nil {
			t.Fatal(err)
		}
		sum := 0.0
		for _, x := range lp {
			sum -= x
		}
		b := sum / math.Ln2 / float64(len(lp))
		t.Logf("%d sinks + window %d, discard %d: %.3f bits/byte", sinks, window, discard, b)
		return b
	}
	bounded, rolling, noSinks, long := bpb(4, 124, 0), bpb(4, 124, 1), bpb(0, 128, 0), bpb(0, 1024, 0)
	if !(bounded < long-1) || !(rolling < long-1) || !(noSinks < long-1) {
		t.Errorf("a cache of 128 gives %.3f (halving), %.3f (rolling), %.3f (no sinks) bits/byte, a cache of 1024 %.3f: want the bounded ones lower by a bit", bounded, rolling, noSinks, long)
	}
}
