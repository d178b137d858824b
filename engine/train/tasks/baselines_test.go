package tasks

import (
	"math"
	"math/rand/v2"
	"testing"
)

// oracle solves each task from its input by the task's own rule, as a perfect model would; it
// shares no code with the generators, so a generator that breaks its rule fails here.
type oracle struct {
	task  string
	vocab int
}

func (o oracle) answer(in []int, j int) int {
	switch o.task {
	case Copy, Reverse:
		n := 0
		for in[n] != copySep {
			n++
		}
		switch {
		case j < n: // before the answers: nothing to predict
		case o.task == Copy:
			return in[j-n]
		default:
			return in[2*n-1-j]
		}
	case Passkey:
		at, q := -1, -1
		for i, c := range in {
			if c == keyMark {
				at = i
			}
			if c == queryMark {
				q = i
			}
		}
		if j >= q {
			return in[at+1+j-q]
		}
	case MQAR:
		for i := 0; i < j; i++ {
			if in[i] == in[j] {
				return in[i+1]
			}
		}
	}
	return 0
}

func (o oracle) Forward(tokens, positions [][]int) ([][][]float32, error) {
	out := make([][][]float32, len(tokens))
	for i, toks := range tokens {
		out[i] = make([][]float32, len(toks))
		for j := range toks {
			row := make([]float32, o.vocab)
			row[o.answer(toks, j)] = 10
			out[i][j] = row
		}
	}
	return out, nil
}

func examplesOf(task string, r *rand.Rand, n, length, pairs int) []Example {
	hay := Haystack([]byte("the quick brown fox jumps over the lazy dog; func f(x int) int { return x }\n"))
	exs := make([]Example, n)
	for i := range exs {
		switch task {
		case Copy:
			exs[i] = CopyExample(r, length/2)
		case Reverse:
			exs[i] = ReverseExample(r, length/2)
		case Passkey:
			exs[i] = PasskeyExample(r, hay, length, r.Float64())
		case MQAR:
			exs[i] = MQARExample(r, length, pairs)
		}
	}
	return exs
}

// A perfect model scores 1 on every synthetic task at every length; a model that knows only the
// answers' alphabet (no positions, no content) scores chance: log2(k) bits per answer exactly,
// and an accuracy within four standard errors of 1/k.
func TestPerfectScoresOneAndPositionBlindScoresChance(t *testing.T) {
	for _, task := range []string{Copy, Reverse, Passkey, MQAR} {
		for _, length := range []int{64, 256} {
			pairs := 8
			exs := examplesOf(task, pcg(uint64(length)), 200, length, pairs)
			var perfect Scores
			if err := Score(oracle{task, 260}, exs, 16, 64, &perfect, nil); err != nil {
				t.Fatal(err)
			}
			if perfect.ExactMatch() != 1 || perfect.TokenAccuracy() != 1 {
				t.Errorf("%s len %d: perfect model scores exact %v, token %v; want 1", task, length, perfect.ExactMatch(), perfect.TokenAccuracy())
			}
			var blind Scores
			if err := Score(Uniform{Alphabet(task), 260}, exs, 16, 64, &blind, nil); err != nil {
				t.Fatal(err)
			}
			exact, token := Chance(task, Version(task), length, pairs)
			k := float64(len(Alphabet(task)))
			if got := blind.BitsPerToken(); math.Abs(got-math.Log2(k)) > 1e-9 {
				t.Errorf("%s len %d: uniform model %v bits per answer, want log2(%g)", task, length, got, k)
			}
			se := math.Sqrt(token * (1 - token) / float64(blind.N))
			if got := blind.TokenAccuracy(); math.Abs(got-token) > 4*se {
				t.Errorf("%s len %d: position-blind accuracy %.4f over %d answers, chance %.4f ± %.4f", task, length, got, blind.N, token, 4*se)
			}
			if exact > 0.01 && math.Abs(blind.ExactMatch()-exact) > 4*math.Sqrt(exact*(1-exact)/200) {
				t.Errorf("%s len %d: exact match %v, chance %v", task, length, blind.ExactMatch(), exact)
			}
		}
	}
}

// Chance by hand: copy of 8 tokens has 4 letters to get right; passkey 5 digits; mqar one value
// in 64 per pair; lm has none (its baseline is the unigram model).
func TestChanceByHand(t *testing.T) {
	cases := []struct {
		task              string
		version, len, prs int
		exact, token      float64
	}{
		{Copy, 1, 8, 0, 1.0 / (26 * 26 * 26 * 26), 1.0 / 26},
		{Reverse, 1, 2, 0, 1.0 / 26, 1.0 / 26},
		{Passkey, 2, 64, 0, 1e-5, 0.1},
		{Passkey, 1, 64, 0, 0.1, 0.1},
		{MQAR, 1, 64, 2, 1.0 / 4096, 1.0 / 64},
	}
	for _, c := range cases {
		exact, token := Chance(c.task, c.version, c.len, c.prs)
		if math.Abs(exact-c.exact) > 1e-15 || math.Abs(token-c.token) > 1e-15 {
			t.Errorf("%+v: chance %g, %g", c, exact, token)
		}
	}
	if e, tok := Chance(LM, 1, 64, 0); !math.IsNaN(e) || !math.IsNaN(tok) {
		t.Errorf("lm chance %v %v, want NaN", e, tok)
	}
}

// The bag model's logits are log(count+1/2) of each answer in the prefix, by hand; on passkey
// and mqar, knowing which digits or values occurred (but not where) leaves it far from the
// oracle's 1 (it is above chance: the answer is among the symbols seen).
func TestBagModel(t *testing.T) {
	logits, _ := Bag{Answers: []int32{'a', 'b', 'c'}, Vocab: 260}.Forward([][]int{{'a', 'x', 'b', 'a'}}, [][]int{{0, 1, 2, 3}})
	want := map[int32]float64{'a': math.Log(2.5), 'b': math.Log(1.5), 'c': math.Log(0.5)}
	for a, w := range want {
		if got := float64(logits[0][3][a]); math.Abs(got-w) > 1e-6 {
			t.Errorf("logit of %q after a x b a: %v, want %v", string(rune(a)), got, w)
		}
	}
	if logits[0][0]['b'] != logits[0][0]['c'] || logits[0][3]['x'] > -1e8 {
		t.Errorf("unseen answers differ, or a non-answer got a logit")
	}
	for _, c := range []struct {
		task          string
		length, pairs int
	}{{Passkey, 256, 0}, {MQAR, 256, 8}} {
		exs := examplesOf(c.task, pcg(11), 300, c.length, c.pairs)
		var s Scores
		if err := Score(Bag{Alphabet(c.task), 260}, exs, 16, 64, &s, nil); err != nil {
			t.Fatal(err)
		}
		if got := s.TokenAccuracy(); got > 0.3 || s.ExactMatch() > 0.05 {
			t.Errorf("%s: bag accuracy %.3f, exact %.3f: the task is solvable without order", c.task, got, s.ExactMatch())
		}
	}
}

// Sliding windows score every position exactly once, with at least window-stride tokens of
// context after the first window; a model that ignores context scores the same either way, and
// "beyond L" counts positions of the original sequence.
func TestSlidingScoresEachPositionOnce(t *testing.T) {
	data := make([]byte, 2000)
	for i := range data {
		data[i] = byte(i*31 + i/7)
	}
	ex := LMExamples(data, 1000, 1)[0]
	wins := Sliding(ex, 128, 64)
	seen := make([]int, 1000)
	for k, w := range wins {
		if len(w.Input) > 128 || w.Offset != 64*k {
			t.Fatalf("window %d: %d tokens at offset %d", k, len(w.Input), w.Offset)
		}
		for j, wt := range w.Weight {
			if wt > 0 {
				seen[w.Offset+j]++
				if k > 0 && j < 64 {
					t.Errorf("window %d scores position %d with %d tokens of context", k, w.Offset+j, j)
				}
				if w.Target[j] != ex.Target[w.Offset+j] {
					t.Fatalf("window %d: target %d is not the sequence's", k, j)
				}
			}
		}
	}
	for p, n := range seen {
		if n != 1 {
			t.Fatalf("position %d scored %d times", p, n)
		}
	}
	// A context-free model (logits from the current token only) gives the same sums.
	ctxFree := Uniform{Answers: []int32{'a', 'b'}, Vocab: 260}
	var full, slid Scores
	if err := Score(ctxFree, []Example{ex}, 1, 128, &full, nil); err != nil {
		t.Fatal(err)
	}
	if err := Score(ctxFree, wins, 4, 128, &slid, nil); err != nil {
		t.Fatal(err)
	}
	if full.N != slid.N || full.NBeyond != slid.NBeyond || math.Abs(full.NLL-slid.NLL) > 1e-6*full.NLL {
		t.Errorf("sliding %d/%d tokens, %.3f nats; full %d/%d, %.3f", slid.N, slid.NBeyond, slid.NLL, full.N, full.NBeyond, full.NLL)
	}
	if full.NBeyond != 1000-128 {
		t.Errorf("beyond L: %d positions, want 872", full.NBeyond)
	}
}
