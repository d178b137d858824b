package tasks

import (
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

func pcg(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0)) }

// The same seed gives the same examples; another seed gives different ones.
func TestGeneratorsAreDeterministic(t *testing.T) {
	hay := Haystack([]byte(strings.Repeat("func main() { return x + y }\n", 20)))
	for _, task := range []string{Copy, Reverse, Passkey, MQAR} {
		a, err := NewGenerator(task, 64, 7, 0, hay)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := NewGenerator(task, 64, 7, 0, hay)
		c, _ := NewGenerator(task, 64, 8, 0, hay)
		ba, bb, bc := a.Batch(8), b.Batch(8), c.Batch(8)
		if !reflect.DeepEqual(ba, bb) {
			t.Errorf("%s: same seed, different batches", task)
		}
		if reflect.DeepEqual(ba.Inputs, bc.Inputs) {
			t.Errorf("%s: seeds 7 and 8 gave the same batch", task)
		}
	}
	w := []byte("package main\n\nfunc main() {}\n")
	if !reflect.DeepEqual(MaskedExample(pcg(3), w, 0.3), MaskedExample(pcg(3), w, 0.3)) {
		t.Error("MaskedExample: same seed, different masks")
	}
}

// A copy example is s | s: the scored targets are exactly the string, starting at the separator.
func TestCopyExampleStructure(t *testing.T) {
	r := pcg(1)
	for _, n := range []int{1, 5, 32} {
		ex := CopyExample(r, n)
		if len(ex.Input) != 2*n {
			t.Fatalf("n=%d: input has %d tokens, want 2n", n, len(ex.Input))
		}
		if ex.Input[n] != copySep {
			t.Errorf("n=%d: separator not at position n", n)
		}
		var scored []int32
		for j, w := range ex.Weight {
			if w > 0 {
				scored = append(scored, ex.Target[j])
			}
		}
		if !reflect.DeepEqual(scored, ex.Input[:n]) {
			t.Errorf("n=%d: scored targets %v are not the string %v", n, scored, ex.Input[:n])
		}
		for j := range ex.Input[1:] {
			if ex.Target[j] != ex.Input[j+1] {
				t.Fatalf("n=%d: target is not the input shifted by one", n)
			}
		}
	}
}

// The passkey (version 2): "$ddddd" once, after round(depth·filler) filler bytes, among
// Distractors(length) "#ddddd" numbers; the filler has no digits; the answer after the final '?'
// is the key, and only its digits are scored.
func TestPasskeyExampleStructure(t *testing.T) {
	r := pcg(2)
	hay := Haystack([]byte(strings.Repeat("x := 42 // a $5 #tag? for i := 0; i < 10; i++ {}\n", 40)))
	if strings.ContainsAny(string(hay), "0123456789$#?") {
		t.Fatalf("Haystack kept a reserved byte: %q", hay[:80])
	}
	for _, h := range [][]byte{hay, nil} {
		for _, length := range []int{MinPasskeyLength, 64, 200, 1024} {
			for _, depth := range []float64{0, 0.5, 1} {
				ex := PasskeyExample(r, h, length, depth)
				if len(ex.Input) != length {
					t.Fatalf("len %d: input has %d tokens", length, len(ex.Input))
				}
				seq := append(append([]int32(nil), ex.Input...), ex.Target[len(ex.Target)-1])
				at, marks, fillerBefore, fillerAll := -1, 0, 0, 0
				for j := 0; j < len(seq)-1-KeyDigits; {
					switch c := seq[j]; {
					case c == keyMark || c == distractorMark:
						for _, d := range seq[j+1 : j+1+KeyDigits] {
							if d < '0' || d > '9' {
								t.Fatalf("len %d: mark at %d not followed by %d digits: %q", length, j, KeyDigits, string(rune(d)))
							}
						}
						if c == keyMark {
							if at >= 0 {
								t.Fatalf("len %d: two keys", length)
							}
							at, fillerBefore = j, fillerAll
						} else {
							marks++
						}
						j += 1 + KeyDigits
					case c >= '0' && c <= '9':
						t.Fatalf("len %d: a digit in the filler at %d", length, j)
					default:
						fillerAll++
						j++
					}
				}
				q := length - KeyDigits
				if at < 0 || seq[q] != queryMark {
					t.Fatalf("len %d depth %g: key at %d, '?' at %d is %q", length, depth, at, q, string(rune(seq[q])))
				}
				if marks != Distractors(length) {
					t.Errorf("len %d: %d distractors, want %d", length, marks, Distractors(length))
				}
				if want := int(depth*float64(fillerAll) + 0.5); fillerBefore != want {
					t.Errorf("len %d depth %g: %d filler bytes before the key, want %d of %d", length, depth, fillerBefore, want, fillerAll)
				}
				if !reflect.DeepEqual(seq[at+1:at+1+KeyDigits], seq[q+1:]) {
					t.Errorf("len %d depth %g: answer %v differs from key %v", length, depth, seq[q+1:], seq[at+1:at+1+KeyDigits])
				}
				for j, w := range ex.Weight {
					if (w > 0) != (j >= q) {
						t.Fatalf("len %d: position %d scored %v", length, j, w > 0)
					}
				}
			}
		}
	}
	// Version 1 (the shipped v1 checkpoints): one digit after '=', asked for after '?'.
	ex := PasskeyDigitExample(r, 64, 0)
	if ex.Input[0] != '=' || ex.Input[63] != queryMark || ex.Target[63] != ex.Input[1] || ex.Weight[63] != 1 {
		t.Errorf("version 1 passkey at depth 0: %q -> %q", ex.Input, string(rune(ex.Target[63])))
	}
}

// mqar: distinct keys, each answered once with its own value after the pairs, only the answers scored.
func TestMQARExampleStructure(t *testing.T) {
	r := pcg(9)
	for _, c := range []struct{ length, pairs int }{{MinMQARLength(1), 1}, {64, 16}, {MinMQARLength(8), 8}, {1024, 8}} {
		ex := MQARExample(r, c.length, c.pairs)
		if len(ex.Input) != c.length {
			t.Fatalf("%+v: %d tokens", c, len(ex.Input))
		}
		seq := append(append([]int32(nil), ex.Input...), ex.Target[len(ex.Target)-1])
		value := map[int32]int32{}
		for i := 0; i < 2*c.pairs; i += 2 {
			k, v := seq[i], seq[i+1]
			if k < mqarKeyBase || v < mqarValueBase || v >= mqarKeyBase {
				t.Fatalf("%+v: pair %d is %d %d", c, i/2, k, v)
			}
			if _, dup := value[k]; dup {
				t.Fatalf("%+v: key %d twice", c, k)
			}
			value[k] = v
		}
		asked := map[int32]bool{}
		for j := 2 * c.pairs; j < c.length; j++ {
			k := seq[j]
			if k >= mqarKeyBase {
				if ex.Weight[j] != 1 || ex.Target[j] != value[k] || asked[k] {
					t.Fatalf("%+v: query %d at %d: weight %v, target %d, want %d once", c, k, j, ex.Weight[j], ex.Target[j], value[k])
				}
				asked[k] = true
			} else if ex.Weight[j] != 0 && j > 0 && seq[j] < mqarKeyBase {
				t.Fatalf("%+v: position %d scored but not a query", c, j)
			}
		}
		if len(asked) != c.pairs {
			t.Errorf("%+v: %d keys asked, want all %d", c, len(asked), c.pairs)
		}
	}
}

// Reverse: the scored targets are the string backwards.
func TestReverseExampleStructure(t *testing.T) {
	ex := ReverseExample(pcg(3), 6)
	var scored []int32
	for j, w := range ex.Weight {
		if w > 0 {
			scored = append(scored, ex.Target[j])
		}
	}
	for i, c := range scored {
		if c != ex.Input[5-i] {
			t.Fatalf("answer %d is %q, want %q (input %q)", i, string(rune(c)), string(rune(ex.Input[5-i])), ex.Input)
		}
	}
	if len(scored) != 6 || ex.Input[6] != copySep {
		t.Errorf("%d scored, separator %q", len(scored), string(rune(ex.Input[6])))
	}
}

// Windows are non-overlapping: window k predicts bytes k*len+1 .. (k+1)*len, each byte once.
func TestLMWindowsDoNotOverlap(t *testing.T) {
	data := make([]byte, 1000)
	for i := range data {
		data[i] = byte(i * 7)
	}
	for _, length := range []int{1, 7, 64, 999} {
		exs := LMExamples(data, length, 0)
		if want := (len(data) - 1) / length; len(exs) != want {
			t.Fatalf("len %d: %d windows, want %d", length, len(exs), want)
		}
		seen := map[int]bool{}
		for k, ex := range exs {
			for j := range ex.Target {
				idx := k*length + j + 1 // index in data of the byte predicted
				if seen[idx] {
					t.Fatalf("len %d: byte %d predicted twice", length, idx)
				}
				seen[idx] = true
				if ex.Target[j] != int32(data[idx]) || ex.Input[j] != int32(data[idx-1]) {
					t.Fatalf("len %d: window %d position %d is not data[%d]", length, k, j, idx)
				}
			}
		}
	}
}

// Beyond-L averages use exactly the positions >= L: check against a direct computation.
func TestScoresBeyondUsesOnlyPositionsPastL(t *testing.T) {
	r := pcg(4)
	const L = 5
	var s Scores
	var sumAll, sumBeyond float64
	var nAll, nBeyond int
	for range 20 {
		n := 1 + r.IntN(12)
		nll, right, w := make([]float64, n), make([]bool, n), make([]float32, n)
		for j := range n {
			nll[j] = r.Float64() * 5
			if r.IntN(3) > 0 {
				w[j] = 1
				sumAll += nll[j]
				nAll++
				if j >= L {
					sumBeyond += nll[j]
					nBeyond++
				}
			}
		}
		s.Add(nll, right, w, L)
	}
	if s.N != nAll || s.NBeyond != nBeyond {
		t.Fatalf("counts %d/%d, want %d/%d", s.N, s.NBeyond, nAll, nBeyond)
	}
	if math.Abs(s.BitsBeyond()-sumBeyond/float64(nBeyond)/math.Ln2) > 1e-12 || math.Abs(s.BitsPerToken()-sumAll/float64(nAll)/math.Ln2) > 1e-12 {
		t.Errorf("means differ from the direct computation")
	}
	var none Scores
	none.Add([]float64{1, 2}, []bool{true, true}, []float32{1, 1}, L)
	if !math.IsNaN(none.BitsBeyond()) {
		t.Errorf("no position >= L: BitsBeyond = %v, want NaN", none.BitsBeyond())
	}
}

// A hand-built copy example scored with hand-built logits: one of three copied letters wrong.
func TestCopyScoringByHand(t *testing.T) {
	ex := CopyExample(pcg(5), 3) // input: a b c | a b ; scored targets at positions 3,4,5
	vocab := 260
	logits := make([][]float32, len(ex.Input))
	for j := range logits {
		logits[j] = make([]float32, vocab)
		logits[j][ex.Target[j]] = 5 // the right answer everywhere...
	}
	wrong := int32('z')
	if ex.Target[4] == wrong {
		wrong = 'y'
	}
	logits[4][wrong] = 9 // ...except the second copied letter
	nll, right := PerPosition(logits, ex.Target, ex.Weight)
	var s Scores
	s.Add(nll, right, ex.Weight, 64)
	if s.N != 3 || s.Correct != 2 || s.Exact != 0 || s.Seqs != 1 {
		t.Fatalf("scored %d, correct %d, exact %d of %d; want 3, 2, 0 of 1", s.N, s.Correct, s.Exact, s.Seqs)
	}
	if got := s.TokenAccuracy(); math.Abs(got-2.0/3) > 1e-12 {
		t.Errorf("token accuracy %v, want 2/3", got)
	}
	// Closed form of -log softmax: logits 5 (target) and 9 among 258 zeros.
	want := math.Log(math.Exp(5)+math.Exp(9)+258) - 5
	if math.Abs(nll[4]-want) > 1e-9 {
		t.Errorf("nll %v, want %v", nll[4], want)
	}
	logits[4][wrong] = 0
	nll, right = PerPosition(logits, ex.Target, ex.Weight)
	s = Scores{}
	s.Add(nll, right, ex.Weight, 64)
	if s.ExactMatch() != 1 {
		t.Errorf("all right: exact match %v, want 1", s.ExactMatch())
	}
}

func TestBatchPadsAfterScoredTokens(t *testing.T) {
	g, _ := NewGenerator(Copy, 64, 1, 0, nil)
	b := g.Batch(16)
	for i, row := range b.Inputs {
		if len(row) != 64 {
			t.Fatalf("row %d has width %d", i, len(row))
		}
		lastScored := -1
		for j, w := range b.Weights[i] {
			if w > 0 {
				lastScored = j
			}
		}
		for j := 0; j <= lastScored; j++ {
			if row[j] == PadID {
				t.Errorf("row %d: padding at %d before the last scored token %d", i, j, lastScored)
			}
		}
	}
	if _, err := NewGenerator(Passkey, MinPasskeyLength-1, 1, 0, nil); err == nil {
		t.Error("passkey below MinPasskeyLength: no error")
	}
	if err := Check("nope"); err == nil {
		t.Error("unknown task accepted")
	}
}
