// Package tasks defines the extrapolation benchmark's tasks: what a model is trained on at
// length L and how it is scored at lengths past L. Every task is either a deterministic split of
// the Go-source corpus (engine/train/corpus) or a generator driven by a seeded PCG, so two runs with
// the same seed see the same examples on any machine.
//
//   - lm: next-byte prediction on Go source; bits per byte over non-overlapping windows (Press et
//     al. 2022, "Train Short, Test Long", ALiBi), averaged over all positions and over positions
//     >= L only, and the sliding-window evaluation (Sliding) as the baseline that needs no
//     extrapolation.
//   - copy and reverse: a random string, a separator, the string again or reversed (Kazemnejad
//     et al. 2023, "The Impact of Positional Encoding on Length Generalization in Transformers");
//     exact match and per-token accuracy.
//   - passkey: a 5-digit key marked '$' hidden at a depth in Go source among distractor numbers
//     marked '#', asked for at the end (Mohtashami & Jaggi 2023, "Landmark Attention"; the
//     needle-in-a-haystack grid of depth × length). Version 1 (the v1 checkpoints) hid one digit
//     in random letters; PasskeyDigitExample keeps it so that they can still be scored.
//   - mqar: multi-query associative recall (Arora et al. 2023, "Zoology"): key-value pairs, then
//     the keys again in another order, each to be answered with its value; accuracy by length
//     and number of pairs.
//   - mlm: masked-byte prediction on Go source (an encoder task, BERT's objective); bits per
//     masked byte.
package tasks

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/posformer/posformer/engine"
	"github.com/posformer/posformer/models"
)

// Task names.
const (
	LM      = "lm"
	Copy    = "copy"
	Reverse = "reverse"
	Passkey = "passkey"
	MQAR    = "mqar"
	MLM     = "mlm"
)

// Names lists the tasks in the order the benchmark runs them.
func Names() []string { return []string{LM, Copy, Reverse, Passkey, MQAR, MLM} }

// Check returns a one-line error for an unknown task name.
func Check(task string) error {
	for _, n := range Names() {
		if n == task {
			return nil
		}
	}
	return fmt.Errorf("unknown task %q (valid: %s)", task, strings.Join(Names(), ", "))
}

// Kind is the model a task trains: an encoder for mlm, a decoder otherwise.
func Kind(task string) string {
	if task == MLM {
		return models.Encoder
	}
	return models.Decoder
}

// Synthetic reports whether a task's training batches come from a Generator rather than the corpus.
func Synthetic(task string) bool {
	return task == Copy || task == Reverse || task == Passkey || task == MQAR
}

// Version is the current version of a task's data. cmd/train records it in train.json, so that
// a checkpoint trained on an older version is scored on the data it learned (only passkey has
// changed: version 1 hid one digit in random letters).
func Version(task string) int {
	if task == Passkey {
		return 2
	}
	return 1
}

// Sub names a task's second evaluation axis besides length: the passkey's depth, the number of
// mqar pairs; "" for the others.
func Sub(task string) string {
	switch task {
	case Passkey:
		return "depth"
	case MQAR:
		return "pairs"
	}
	return ""
}

// Metrics lists a task's metrics, the headline first.
func Metrics(task string) []string {
	switch task {
	case LM:
		return []string{"bits_per_byte", "bits_per_byte_beyond_L"}
	case MLM:
		return []string{"bits_per_masked_byte", "bits_per_masked_byte_beyond_L"}
	default:
		return []string{"exact_match", "token_accuracy"}
	}
}

// HigherIsBetter tells the direction of a metric: accuracies up, bits down.
func HigherIsBetter(metric string) bool { return !strings.HasPrefix(metric, "bits") }

// Byte-level tokens the synthetic tasks use. Payloads and markers never share a byte, so a model
// can find every marker by content alone; what it cannot do without positions is tell which
// payload byte comes where.
const (
	alphabet       = "abcdefghijklmnopqrstuvwxyz"
	digits         = "0123456789"
	copySep        = '|'
	keyMark        = '$' // passkey: the key
	distractorMark = '#' // passkey: a number that is not the key
	queryMark      = '?'
	// KeyDigits is the passkey's length in digits.
	KeyDigits = 5
	// PadID is the byte tokenizer's <pad>; padded positions have weight 0.
	PadID = 258
	// MaskID is the byte tokenizer's <mask>.
	MaskID = 259
	// mqar keys and values are the byte ids 0xC0-0xFF and 0x80-0xBF: tokens no text or other
	// task uses, 64 of each, so chance is 1/64 and a key is never mistaken for a value.
	mqarKeyBase, mqarValueBase, mqarSymbols = 0xC0, 0x80, 64
	// MaxPairs is the most key-value pairs an mqar sequence holds (distinct keys).
	MaxPairs = mqarSymbols
)

// Example is one sequence: the model reads Input (at positions 0..len-1) and is scored on
// Target[j] wherever Weight[j] > 0. Offset is the position of Input[0] in the sequence the
// example was cut from (Sliding's windows): "beyond L" counts Offset+j >= L.
type Example struct {
	Input, Target []int32
	Weight        []float32
	Offset        int
	// TextStart is, for an example cut from a text (lm, mlm), the text's byte that target 0 of
	// its whole window is: target j is byte TextStart + Offset + j, which tells whose document
	// a scored byte belongs to.
	TextStart int
}

// CopyExample returns the copy sequence for a random string of n letters: s, '|', s, fed
// shifted so that input j predicts byte j+1. Input has 2n tokens and exactly the n copied
// bytes are scored, the first of them predicted from the separator.
func CopyExample(r *rand.Rand, n int) Example { return stringExample(r, n, false) }

// ReverseExample is CopyExample with the second half reversed: s, '|', reverse(s). The i-th
// answer sits at distance 2i+1 from the letter it repeats, where copy's is always n+1.
func ReverseExample(r *rand.Rand, n int) Example { return stringExample(r, n, true) }

func stringExample(r *rand.Rand, n int, reverse bool) Example {
	seq := make([]int32, 0, 2*n+1)
	for range n {
		seq = append(seq, int32(alphabet[r.IntN(len(alphabet))]))
	}
	seq = append(seq, copySep)
	for i := range n {
		if reverse {
			seq = append(seq, seq[n-1-i])
		} else {
			seq = append(seq, seq[i])
		}
	}
	ex := shift(seq)
	for j := n; j < 2*n; j++ {
		ex.Weight[j] = 1
	}
	return ex
}

// Distractors is the number of distractor numbers in a passkey sequence of length tokens: one
// per 32 tokens (at least one), so that their density stays the same at every length.
func Distractors(length int) int { return max(1, length/32) }

// MinPasskeyLength is the shortest sequence PasskeyExample accepts: the key, one distractor,
// the question and its answer, and one byte of filler.
const MinPasskeyLength = 3 * (1 + KeyDigits)

// PasskeyExample returns a sequence of length+1 bytes: filler (a run of hay, which Haystack has
// cleaned of digits and markers) holding "$ddddd" (the key) after a fraction depth of the filler
// (0: first, 1: last) and Distractors(length) numbers "#ddddd" at uniform places, ending in
// "?ddddd". Input has length tokens; only the key's digits after '?' are scored. Without
// enough hay the filler is random letters. length must be at least MinPasskeyLength.
func PasskeyExample(r *rand.Rand, hay []byte, length int, depth float64) Example {
	if length < MinPasskeyLength {
		panic(fmt.Sprintf("tasks: passkey length %d is below %d", length, MinPasskeyLength))
	}
	number := func(mark byte) []int32 {
		n := []int32{int32(mark)}
		for range KeyDigits {
			n = append(n, int32(digits[r.IntN(10)]))
		}
		return n
	}
	nd := Distractors(length)
	filler := length + 1 - (2+nd)*(1+KeyDigits) // >= 1 from MinPasskeyLength on
	key := number(keyMark)
	fill := make([]int32, filler)
	if len(hay) > filler {
		start := r.IntN(len(hay) - filler)
		for i := range fill {
			fill[i] = int32(hay[start+i])
		}
	} else {
		for i := range fill {
			fill[i] = int32(alphabet[r.IntN(len(alphabet))])
		}
	}
	// Insertions before filler byte i (i == filler: after the last one). The key goes first at
	// its offset unless it is at the very end, so that depth 0 is the first thing read and
	// depth 1 the last thing before the question.
	at := int(depth*float64(filler) + 0.5)
	inserts := make([][][]int32, filler+1)
	for range nd {
		i := r.IntN(filler + 1)
		inserts[i] = append(inserts[i], number(distractorMark))
	}
	if at == filler {
		inserts[at] = append(inserts[at], key)
	} else {
		inserts[at] = append([][]int32{key}, inserts[at]...)
	}
	seq := make([]int32, 0, length+1)
	for i := 0; i <= filler; i++ {
		for _, n := range inserts[i] {
			seq = append(seq, n...)
		}
		if i < filler {
			seq = append(seq, fill[i])
		}
	}
	seq = append(seq, queryMark)
	seq = append(seq, key[1:]...)
	ex := shift(seq)
	for j := length - KeyDigits; j < length; j++ {
		ex.Weight[j] = 1
	}
	return ex
}

// Haystack returns text with the bytes the passkey reserves removed (digits and its markers), so
// that the only numbers in a passkey sequence are the key and the distractors.
func Haystack(text []byte) []byte {
	out := make([]byte, 0, len(text))
	for _, b := range text {
		if (b >= '0' && b <= '9') || b == keyMark || b == distractorMark || b == queryMark {
			continue
		}
		out = append(out, b)
	}
	return out
}

// PasskeyDigitExample is version 1 of the passkey (the v1 checkpoints): length+1 bytes of random
// letters with "=d" (one digit) after a fraction depth of them, ending in "?d".
func PasskeyDigitExample(r *rand.Rand, length int, depth float64) Example {
	filler := length + 1 - 4
	key := []int32{'=', int32(digits[r.IntN(10)])}
	at := int(depth*float64(filler) + 0.5)
	seq := make([]int32, 0, length+1)
	for i := range filler {
		if i == at {
			seq = append(seq, key...)
		}
		seq = append(seq, int32(alphabet[r.IntN(len(alphabet))]))
	}
	if at >= filler {
		seq = append(seq, key...)
	}
	seq = append(seq, queryMark, key[1])
	ex := shift(seq)
	ex.Weight[length-1] = 1
	return ex
}

// MinPasskeyDigitLength is the shortest version-1 passkey sequence.
const MinPasskeyDigitLength = 5

// MQARExample returns a multi-query associative recall sequence of length+1 tokens: pairs
// key-value pairs k1 v1 ... kD vD (distinct keys), then, spread uniformly over the rest of the
// sequence among noise letters, every key once more in a random order, each followed by its
// value. Input has length tokens; the values after the repeated keys are scored, each predicted
// from its key. length must be at least MinMQARLength(pairs).
func MQARExample(r *rand.Rand, length, pairs int) Example {
	if pairs < 1 || pairs > MaxPairs || length < MinMQARLength(pairs) {
		panic(fmt.Sprintf("tasks: mqar with %d pairs at length %d (want 1..%d pairs, length >= %d)", pairs, length, MaxPairs, MinMQARLength(pairs)))
	}
	keys := r.Perm(mqarSymbols)[:pairs]
	values := make([]int32, pairs)
	seq := make([]int32, 0, length+1)
	for i, k := range keys {
		values[i] = int32(mqarValueBase + r.IntN(mqarSymbols))
		seq = append(seq, int32(mqarKeyBase+k), values[i])
	}
	// The rest holds `pairs` two-token queries and noise: choose which of its items are queries.
	items := length + 1 - 2*pairs - pairs
	isQuery := make([]bool, items)
	for _, i := range r.Perm(items)[:pairs] {
		isQuery[i] = true
	}
	order := r.Perm(pairs)
	q := 0
	var scored []int
	for _, query := range isQuery {
		if !query {
			seq = append(seq, int32(alphabet[r.IntN(len(alphabet))]))
			continue
		}
		i := order[q]
		q++
		scored = append(scored, len(seq)) // the key; input j predicts seq[j+1], its value
		seq = append(seq, int32(mqarKeyBase+keys[i]), values[i])
	}
	ex := shift(seq)
	for _, j := range scored {
		ex.Weight[j] = 1
	}
	return ex
}

// MinMQARLength is the shortest mqar sequence with pairs pairs: the pairs and their queries.
func MinMQARLength(pairs int) int { return 4*pairs - 1 }

// MaskedExample masks each byte of window with probability rate (at least one byte), replacing
// it by <mask>; the masked bytes are scored. Unlike BERT's training recipe (80/10/10), every
// chosen byte becomes <mask>, so the score is exactly "predict the hidden byte".
func MaskedExample(r *rand.Rand, window []byte, rate float64) Example {
	ex := Example{Input: make([]int32, len(window)), Target: make([]int32, len(window)), Weight: make([]float32, len(window))}
	for j, b := range window {
		ex.Input[j], ex.Target[j] = int32(b), int32(b)
		if r.Float64() < rate {
			ex.Input[j], ex.Weight[j] = MaskID, 1
		}
	}
	if len(window) > 0 && !hasWeight(ex.Weight) {
		j := r.IntN(len(window))
		ex.Input[j], ex.Weight[j] = MaskID, 1
	}
	return ex
}

// LMExamples cuts data into non-overlapping windows of length+1 bytes starting at k*length
// (consecutive windows share one byte, so every byte after the first is predicted exactly
// once; corpus.Windows), every position scored.
func LMExamples(data []byte, length, maxWindows int) []Example {
	var out []Example
	n := 0
	if len(data) > length {
		n = (len(data) - 1) / length
	}
	if maxWindows > 0 {
		n = min(n, maxWindows)
	}
	for k := range n {
		w := data[k*length : k*length+length+1]
		seq := make([]int32, len(w))
		for i, b := range w {
			seq[i] = int32(b)
		}
		ex := shift(seq)
		for j := range ex.Weight {
			ex.Weight[j] = 1
		}
		ex.TextStart = k*length + 1
		out = append(out, ex)
	}
	return out
}

// Sliding is the sliding-window evaluation of an example (Press et al. 2022, section 4.2): the
// model reads windows of at most window tokens, each starting stride tokens after the last,
// and each window scores only the positions no earlier window scored. Every token is predicted
// from at least window-stride tokens of context (all it has, near the start) and the model is
// never run past window, so this is what a model gets without extrapolating at all. Offsets
// keep "beyond L" counted in the original sequence.
func Sliding(ex Example, window, stride int) []Example {
	if window < 1 || stride < 1 || stride > window {
		panic(fmt.Sprintf("tasks: sliding window %d, stride %d", window, stride))
	}
	n := len(ex.Input)
	var out []Example
	scored := 0 // positions before this one are scored already
	for a := 0; scored < n; a += stride {
		end := min(a+window, n)
		w := make([]float32, end-a)
		for j := max(scored, a); j < end; j++ {
			w[j-a] = ex.Weight[j]
		}
		out = append(out, Example{Input: ex.Input[a:end], Target: ex.Target[a:end], Weight: w, Offset: ex.Offset + a, TextStart: ex.TextStart})
		scored = end
	}
	return out
}

func shift(seq []int32) Example {
	n := len(seq) - 1
	return Example{Input: append([]int32(nil), seq[:n]...), Target: append([]int32(nil), seq[1:]...), Weight: make([]float32, n)}
}

func hasWeight(w []float32) bool {
	for _, x := range w {
		if x > 0 {
			return true
		}
	}
	return false
}

// Alphabet is the set of answers a synthetic task scores (nil for lm and mlm): a model that
// knows the format but nothing else picks among these.
func Alphabet(task string) []int32 {
	var out []int32
	switch task {
	case Copy, Reverse:
		for _, c := range alphabet {
			out = append(out, int32(c))
		}
	case Passkey:
		for _, c := range digits {
			out = append(out, int32(c))
		}
	case MQAR:
		for i := range mqarSymbols {
			out = append(out, int32(mqarValueBase+i))
		}
	}
	return out
}

// Chance is what uniform guessing among a task's answers scores at a length: per-token accuracy
// 1/k and exact match k^-m for m scored tokens per sequence (copy and reverse: length/2;
// passkey: KeyDigits, or 1 for version 1; mqar: pairs). NaN for lm and mlm, whose baseline is
// the unigram model.
func Chance(task string, version, length, pairs int) (exact, token float64) {
	k, m := float64(len(Alphabet(task))), 0
	switch task {
	case Copy, Reverse:
		m = length / 2
	case Passkey:
		m = KeyDigits
		if version == 1 {
			m = 1
		}
	case MQAR:
		m = pairs
	default:
		return math.NaN(), math.NaN()
	}
	return math.Pow(1/k, float64(m)), 1 / k
}

// Generator draws training batches of a synthetic task reproducibly.
type Generator struct {
	task string
	L    int
	hay  []byte
	r    *rand.Rand
}

// NewGenerator returns a generator of training batches of length L for task, seeded with seed
// and advanced to step (so a resumed run draws the batches an uninterrupted run would have,
// given the same seed, as cmd/train does for the corpus). hay is the passkey's filler text
// (Haystack of the training split); the other tasks ignore it.
func NewGenerator(task string, L int, seed int64, step int, hay []byte) (*Generator, error) {
	switch task {
	case Copy, Reverse:
		if L < 2 {
			return nil, fmt.Errorf("%s needs -seq >= 2 (a string and its copy), got %d", task, L)
		}
	case Passkey:
		if L < MinPasskeyLength {
			return nil, fmt.Errorf("passkey needs -seq >= %d (filler, key, a distractor and the question), got %d", MinPasskeyLength, L)
		}
	case MQAR:
		if L < MinMQARLength(1) {
			return nil, fmt.Errorf("mqar needs -seq >= %d (a pair and its query), got %d", MinMQARLength(1), L)
		}
	default:
		return nil, fmt.Errorf("task %q has no generator (synthetic tasks: %s, %s, %s, %s)", task, Copy, Reverse, Passkey, MQAR)
	}
	return &Generator{task: task, L: L, hay: hay, r: rand.New(rand.NewPCG(uint64(seed), uint64(step)))}, nil
}

// TrainPairs is the most mqar pairs a training sequence of length L holds: 16, or what fits.
func TrainPairs(L int) int { return min(16, (L+1)/4) }

// Batch returns batch examples padded to L: copy and reverse strings of 1..L/2 letters, passkey
// sequences of MinPasskeyLength..L bytes with the key at a uniform depth, mqar sequences of
// 1..TrainPairs(L) pairs at lengths from the shortest that holds them to L. Padding comes after
// the scored tokens, so a causal decoder never sees it when predicting them.
func (g *Generator) Batch(batch int) engine.Batch {
	var exs []Example
	for range batch {
		switch g.task {
		case Copy:
			exs = append(exs, CopyExample(g.r, 1+g.r.IntN(g.L/2)))
		case Reverse:
			exs = append(exs, ReverseExample(g.r, 1+g.r.IntN(g.L/2)))
		case Passkey:
			n := MinPasskeyLength + g.r.IntN(g.L-MinPasskeyLength+1)
			exs = append(exs, PasskeyExample(g.r, g.hay, n, g.r.Float64()))
		case MQAR:
			pairs := 1 + g.r.IntN(TrainPairs(g.L))
			n := MinMQARLength(pairs) + g.r.IntN(g.L-MinMQARLength(pairs)+1)
			exs = append(exs, MQARExample(g.r, n, pairs))
		}
	}
	return ToBatch(exs, g.L)
}

// EvalBatch is a fixed held-out batch at the training length, for cmd/train's eval loss (hay:
// Haystack of the evaluation split, for passkey).
func EvalBatch(task string, L, n int, hay []byte) (engine.Batch, error) {
	g, err := NewGenerator(task, L, 1<<40, 0, hay)
	if err != nil {
		return engine.Batch{}, err
	}
	return g.Batch(n), nil
}

// ToBatch pads examples to width tokens (PAD, weight 0) and numbers positions 0..width-1.
func ToBatch(exs []Example, width int) engine.Batch {
	var b engine.Batch
	for _, ex := range exs {
		in, tgt := make([]int32, width), make([]int32, width)
		w, pos := make([]float32, width), make([]int32, width)
		for j := range width {
			in[j], tgt[j], pos[j] = PadID, PadID, int32(j)
		}
		copy(in, ex.Input)
		copy(tgt, ex.Target)
		copy(w, ex.Weight)
		b.Inputs, b.Targets, b.Weights, b.Positions = append(b.Inputs, in), append(b.Targets, tgt), append(b.Weights, w), append(b.Positions, pos)
	}
	return b
}
