// Scoring: a model is anything that maps token rows at explicit positions to logits
// (engine.Engine does). Every score is computed from one forward pass over full sequences with
// teacher forcing; for copy and passkey, "exact match" (every scored token is the argmax) is
// exactly what greedy decoding would produce, since greedy decoding emits the argmax at each step
// and, while it is right, sees the same prefix as teacher forcing.

package tasks

import (
	"fmt"
	"math"
)

// Forwarder runs a model on rows of tokens at explicit positions and returns logits
// [row][token][vocab].
type Forwarder interface {
	Forward(tokens, positions [][]int) ([][][]float32, error)
}

// Scores is what one (model, task, length[, depth]) cell accumulates.
type Scores struct {
	NLL, NLLBeyond float64 // summed negative log-likelihood (nats) of scored tokens: all, and at positions >= L
	N, NBeyond     int     // scored tokens: all, and at positions >= L
	Correct        int     // scored tokens whose argmax is the target
	Exact, Seqs    int     // sequences whose scored tokens are all correct; sequences seen
}

// Add accumulates one sequence's per-position results. nll[j] and right[j] are ignored where
// weight[j] == 0; positions j >= trainLen also count toward the "beyond L" sums.
func (s *Scores) Add(nll []float64, right []bool, weight []float32, trainLen int) {
	s.AddAt(nll, right, weight, trainLen, 0)
}

// AddAt is Add for a window that starts at position offset of its sequence (Sliding): position
// j counts as beyond L when offset+j >= trainLen.
func (s *Scores) AddAt(nll []float64, right []bool, weight []float32, trainLen, offset int) {
	all := true
	for j, w := range weight {
		if w <= 0 {
			continue
		}
		s.NLL += nll[j]
		s.N++
		if offset+j >= trainLen {
			s.NLLBeyond += nll[j]
			s.NBeyond++
		}
		if right[j] {
			s.Correct++
		} else {
			all = false
		}
	}
	s.Seqs++
	if all {
		s.Exact++
	}
}

// BitsPerToken is the mean negative log-likelihood in bits over all scored tokens.
func (s Scores) BitsPerToken() float64 { return ratio(s.NLL/math.Ln2, s.N) }

// BitsBeyond is the mean over scored tokens at positions >= L (NaN if there are none).
func (s Scores) BitsBeyond() float64 { return ratio(s.NLLBeyond/math.Ln2, s.NBeyond) }

// TokenAccuracy is the fraction of scored tokens predicted (argmax) right.
func (s Scores) TokenAccuracy() float64 { return ratio(float64(s.Correct), s.N) }

// ExactMatch is the fraction of sequences with every scored token right.
func (s Scores) ExactMatch() float64 { return ratio(float64(s.Exact), s.Seqs) }

func ratio(a float64, n int) float64 {
	if n == 0 {
		return math.NaN()
	}
	return a / float64(n)
}

// Score runs f over exs in batches of batch rows (positions 0..len-1) and accumulates into s,
// with positions Offset+j >= trainLen counted as beyond L. Rows of a batch may differ in length
// only if f accepts that (engine.Engine pads them). done, if not nil, is called after each batch
// with the number of examples scored so far.
func Score(f Forwarder, exs []Example, batch, trainLen int, s *Scores, done func(int)) error {
	return ScoreEach(f, exs, batch, trainLen, s, done, nil)
}

// ScoreEach is Score that also hands each example's per-position NLL (nats; 0 where unscored)
// to each, if not nil: what a per-document breakdown of a text's score needs.
func ScoreEach(f Forwarder, exs []Example, batch, trainLen int, s *Scores, done func(int), each func(ex Example, nll []float64)) error {
	for start := 0; start < len(exs); start += batch {
		chunk := exs[start:min(start+batch, len(exs))]
		toks, pos := make([][]int, len(chunk)), make([][]int, len(chunk))
		for i, ex := range chunk {
			toks[i], pos[i] = make([]int, len(ex.Input)), make([]int, len(ex.Input))
			for j, t := range ex.Input {
				toks[i][j], pos[i][j] = int(t), j
			}
		}
		logits, err := f.Forward(toks, pos)
		if err != nil {
			return fmt.Errorf("scoring %d tokens: %w", len(toks[0]), err)
		}
		for i, ex := range chunk {
			nll, right := PerPosition(logits[i], ex.Target, ex.Weight)
			s.AddAt(nll, right, ex.Weight, trainLen, ex.Offset)
			if each != nil {
				each(ex, nll)
			}
		}
		if done != nil {
			done(start + len(chunk))
		}
	}
	return nil
}

// PerPosition returns, for each scored position j, -log softmax(logits[j])[target[j]] (nats)
// and whether target[j] is the argmax (ties count as wrong unless the target is the first
// maximum). Unscored positions are left 0 / false.
func PerPosition(logits [][]float32, target []int32, weight []float32) (nll []float64, right []bool) {
	nll, right = make([]float64, len(target)), make([]bool, len(target))
	for j, row := range logits {
		if j >= len(weight) || weight[j] <= 0 {
			continue
		}
		best, mx := 0, math.Inf(-1)
		for k, v := range row {
			if float64(v) > mx {
				best, mx = k, float64(v)
			}
		}
		sum := 0.0
		for _, v := range row {
			sum += math.Exp(float64(v) - mx)
		}
		nll[j] = mx + math.Log(sum) - float64(row[target[j]])
		right[j] = best == int(target[j])
	}
	return nll, right
}

// Uniform is a model that knows a task's answers and nothing else: at every position it gives
// them equal logits (and every other token a much lower one). It scores chance: log2(k) bits
// per answer and, since a tie counts only for the first answer, accuracy 1/k on uniform answers.
type Uniform struct {
	Answers []int32
	Vocab   int
}

// Forward returns the same logits at every position.
func (u Uniform) Forward(tokens, positions [][]int) ([][][]float32, error) {
	row := make([]float32, u.Vocab)
	for i := range row {
		row[i] = -1e9
	}
	for _, a := range u.Answers {
		row[a] = 0
	}
	out := make([][][]float32, len(tokens))
	for i, toks := range tokens {
		out[i] = make([][]float32, len(toks))
		for j := range toks {
			out[i][j] = row
		}
	}
	return out, nil
}

// Bag is a position-blind model: at position j it sees only how often each answer occurred in
// tokens 0..j, not where, and predicts answer a with probability proportional to count(a)+1/2.
// It is what one attention layer without positions can compute (uniform weights over the
// prefix), and the baseline that says how much of a task is solvable from content alone: on
// passkey and mqar the key's digits or the wanted value are a few among many, so it stays near
// chance; on copy and reverse the letters still to come are the ones seen once, so it gains a
// little.
type Bag struct {
	Answers []int32
	Vocab   int
}

// Forward returns the prefix-count logits.
func (b Bag) Forward(tokens, positions [][]int) ([][][]float32, error) {
	isAnswer := map[int]bool{}
	for _, a := range b.Answers {
		isAnswer[int(a)] = true
	}
	out := make([][][]float32, len(tokens))
	for i, toks := range tokens {
		counts := map[int]float64{}
		out[i] = make([][]float32, len(toks))
		for j, t := range toks {
			if isAnswer[t] {
				counts[t]++
			}
			row := make([]float32, b.Vocab)
			for k := range row {
				row[k] = -1e9
			}
			for _, a := range b.Answers {
				row[a] = float32(math.Log(counts[int(a)] + 0.5))
			}
			out[i][j] = row
		}
	}
	return out, nil
}
