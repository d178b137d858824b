// Package tasks defines the extrapolation benchmark's tasks: what a model is trained on at
// length L and how it is scored at lengths past L. Every task is either a deterministic split of
// the Go-source corpus (benchmarks/corpus) or a generator driven by a seeded PCG, so two runs with
// the same seed see the same examples on any machine.
//
//   - lm: next-byte prediction on Go source; bits per byte over non-overlapping windows (Press et
//     al. 2022, "Train Short, Test Long", ALiBi), averaged over all positions and over positions
//     >= L only.
//   - copy: a random string, a separator, the string again (Kazemnejad et al. 2023 use copy to
//     compare NoPE with the classic schemes); exact match and per-token accuracy.
//   - passkey: a key digit hidden in random filler at a given depth, asked for at the end
//     (Mohtashami & Jaggi 2023, "Landmark Attention", with a 1-digit key so that a 2-layer model
//     learns it in a few hundred steps); accuracy per length and depth.
//   - mlm: masked-byte prediction on Go source (an encoder task, BERT's objective); bits per
//     masked byte.
package tasks

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/posformer/posformer/engine"
	"github.com/posformer/posformer/models"
)

// Task names.
const (
	LM      = "lm"
	Copy    = "copy"
	Passkey = "passkey"
	MLM     = "mlm"
)

// Names lists the tasks in the order the benchmark runs them.
func Names() []string { return []string{LM, Copy, Passkey, MLM} }

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

// Byte-level tokens the synthetic tasks use. Letters are the payload; the markers are bytes that
// never occur in the payload, so the model can find them by content alone.
const (
	alphabet  = "abcdefghijklmnopqrstuvwxyz"
	copySep   = '|'
	keyMark   = '='
	queryMark = '?'
	KeyDigits = 1
	// PadID is the byte tokenizer's <pad>; padded positions have weight 0.
	PadID = 258
	// MaskID is the byte tokenizer's <mask>.
	MaskID = 259
)

// Example is one sequence: the model reads Input (at positions 0..len-1) and is scored on
// Target[j] wherever Weight[j] > 0.
type Example struct {
	Input, Target []int32
	Weight        []float32
}

// CopyExample returns the copy sequence for a random string of n letters: s, '|', s, fed
// shifted so that input j predicts byte j+1. Input has 2n tokens and exactly the n copied
// bytes are scored, the first of them predicted from the separator.
func CopyExample(r *rand.Rand, n int) Example {
	seq := make([]int32, 0, 2*n+1)
	for range n {
		seq = append(seq, int32(alphabet[r.IntN(len(alphabet))]))
	}
	seq = append(seq, copySep)
	seq = append(seq, seq[:n]...)
	ex := shift(seq)
	for j := n; j < 2*n; j++ {
		ex.Weight[j] = 1
	}
	return ex
}

// PasskeyExample returns a sequence of length+1 bytes: random letters with "=d" (d: KeyDigits
// random digits) inserted after a fraction depth (0: first, 1: last) of the filler, ending in
// "?d". Input has length tokens; only the digits after '?' are scored. length must be at least
// MinPasskeyLength.
func PasskeyExample(r *rand.Rand, length int, depth float64) Example {
	filler := length + 1 - 2*(1+KeyDigits)
	key := make([]int32, 0, 1+KeyDigits)
	key = append(key, keyMark)
	for range KeyDigits {
		key = append(key, int32('0'+r.IntN(10)))
	}
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
	seq = append(seq, queryMark)
	seq = append(seq, key[1:]...)
	ex := shift(seq)
	for j := length - KeyDigits; j < length; j++ {
		ex.Weight[j] = 1
	}
	return ex
}

// MinPasskeyLength is the shortest sequence PasskeyExample accepts: key, query and one filler byte.
const MinPasskeyLength = 2*(1+KeyDigits) + 1

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
		out = append(out, ex)
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

// Generator draws training batches of a synthetic task (copy, passkey) reproducibly.
type Generator struct {
	task string
	L    int
	r    *rand.Rand
}

// NewGenerator returns a generator of training batches of length L for task, seeded with seed
// and advanced to step (so a resumed run draws the batches an uninterrupted run would have,
// given the same seed, as cmd/train does for the corpus).
func NewGenerator(task string, L int, seed int64, step int) (*Generator, error) {
	switch task {
	case Copy:
		if L < 2 {
			return nil, fmt.Errorf("copy needs -seq >= 2 (a string and its copy), got %d", L)
		}
	case Passkey:
		if L < MinPasskeyLength {
			return nil, fmt.Errorf("passkey needs -seq >= %d (filler, key and question), got %d", MinPasskeyLength, L)
		}
	default:
		return nil, fmt.Errorf("task %q has no generator (valid: %s, %s)", task, Copy, Passkey)
	}
	return &Generator{task: task, L: L, r: rand.New(rand.NewPCG(uint64(seed), uint64(step)))}, nil
}

// Batch returns batch examples padded to L: copy strings of 1..L/2 letters, passkey sequences
// of MinPasskeyLength..L bytes with the key at a uniform depth. Padding comes after the scored
// tokens, so a causal decoder never sees it when predicting them.
func (g *Generator) Batch(batch int) engine.Batch {
	var exs []Example
	for range batch {
		switch g.task {
		case Copy:
			exs = append(exs, CopyExample(g.r, 1+g.r.IntN(g.L/2)))
		case Passkey:
			n := MinPasskeyLength + g.r.IntN(g.L-MinPasskeyLength+1)
			exs = append(exs, PasskeyExample(g.r, n, g.r.Float64()))
		}
	}
	return ToBatch(exs, g.L)
}

// EvalBatch is a fixed held-out batch at the training length, for cmd/train's eval loss.
func EvalBatch(task string, L, n int) (engine.Batch, error) {
	g, err := NewGenerator(task, L, 1<<40, 0)
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
