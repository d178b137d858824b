package perplexity

import (
	"fmt"
	"math"

	"github.com/posformer/posformer/engine"
)

// Scores accumulates the negative log-likelihoods (in nats) of the scored tokens, as
// llama-perplexity does: their sum and the sum of their squares, for the standard error.
type Scores struct {
	NLL, NLL2 float64
	Tokens    int
	Bytes     int // the bytes the scored tokens decode to
}

// PPL is exp of the mean NLL so far.
func (s Scores) PPL() float64 { return math.Exp(s.NLL / float64(s.Tokens)) }

// Estimate is the perplexity and its standard error as llama-perplexity computes them: the
// standard error of the mean NLL (the per-token NLLs' sample deviation over sqrt(n)), carried
// to the perplexity through d exp(x) = exp(x) dx.
func (s Scores) Estimate() (ppl, stderr float64) {
	n := float64(s.Tokens)
	mean := s.NLL / n
	ppl = math.Exp(mean)
	if v := s.NLL2/n - mean*mean; v > 0 && s.Tokens > 1 {
		stderr = math.Sqrt(v/(n-1)) * ppl
	}
	return ppl, stderr
}

// BitsPerByte is the total NLL over the bytes the scored tokens decode to, in bits.
func (s Scores) BitsPerByte() float64 { return s.NLL / float64(s.Bytes) / math.Ln2 }

func numChunks(tokens, ctx, max int) int {
	n := tokens / ctx
	if max > 0 && n > max {
		n = max
	}
	return n
}

// Score cuts tokens into consecutive chunks of ctx (at most max of them; -1: all), runs each
// in one forward pass from position 0, and scores the tokens after the chunk's first half:
// chunk positions ctx/2+1 to ctx-1, each predicted by the logits one position before it, as
// llama-perplexity does. With bos >= 0 each chunk's first token is replaced by BOS (as
// llama-perplexity, which loses that token of text). progress is called after each chunk;
// decode turns a chunk's scored tokens into the text whose bytes are counted.
func Score(e *engine.Engine, tokens []int, ctx, max, bos int, progress func(int, Scores), decode func([]int) string) (Scores, error) {
	var s Scores
	first := ctx / 2
	positions := make([]int, ctx)
	for i := range positions {
		positions[i] = i
	}
	for c := range numChunks(len(tokens), ctx, max) {
		chunk := append([]int(nil), tokens[c*ctx:(c+1)*ctx]...)
		if bos >= 0 {
			chunk[0] = bos
		}
		logits, err := e.Forward([][]int{chunk}, [][]int{positions})
		if err != nil {
			return s, fmt.Errorf("chunk %d: %w", c+1, err)
		}
		for j := first; j < ctx-1; j++ {
			nll := -logSoftmaxAt(logits[0][j], chunk[j+1])
			s.NLL += nll
			s.NLL2 += nll * nll
			s.Tokens++
		}
		s.Bytes += len(decode(chunk[first+1:]))
		if progress != nil {
			progress(c, s)
		}
	}
	return s, nil
}

// logSoftmaxAt is log softmax(logits)[t], in float64 with the maximum subtracted first.
func logSoftmaxAt(logits []float32, t int) float64 {
	m := math.Inf(-1)
	for _, v := range logits {
		m = math.Max(m, float64(v))
	}
	var sum float64
	for _, v := range logits {
		sum += math.Exp(float64(v) - m)
	}
	return float64(logits[t]) - m - math.Log(sum)
}
