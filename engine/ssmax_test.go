package engine

import (
	"math/rand/v2"
	"testing"

	"github.com/posformer/posformer/models"
)

// Scalable softmax on a decoder: cached decoding equals full recomputation past the training
// length, and with s at its start (1/ln L) the query that sees exactly L keys gets the logits of
// the same weights without it, while the others differ.
func TestSSMaxDecoder(t *testing.T) {
	const L, total = 16, 40
	for _, pe := range []map[string]any{{"name": "alibi", "ssmax": true}, {"name": "rope", "ssmax": true}} {
		// One layer: a query's output then depends on its own softmax alone (keys and values
		// come from the embeddings), so the identity at n = L shows in the logits.
		cfg := tinyConfig(models.Decoder, 1, pe)
		cfg.TrainSeqLen = L
		e := newTestEngine(t, cfg)
		toks := randomTokens(rand.New(rand.NewPCG(61, 62)), total)
		s := e.NewSession(1)
		if _, err := s.Append([][]int{toks[:5]}, [][]int{iota(0, 5)}); err != nil {
			t.Fatal(err)
		}
		full, err := e.Forward([][]int{toks}, [][]int{iota(0, total)})
		if err != nil {
			t.Fatal(err)
		}
		for i := 5; i < total; i++ {
			out, err := s.Append([][]int{{toks[i]}}, [][]int{{i}})
			if err != nil {
				t.Fatal(err)
			}
			if d := maxAbsDiff(out[0][0], full[0][i]); d > 1e-4 {
				t.Errorf("%v step %d: cached vs full logits differ by %g", pe, i, d)
			}
		}

		p := forwardWithScheme(t, e, cfg, map[string]any{"name": pe["name"]}, toks)
		if d := maxAbsDiff(p[0][L-1], full[0][L-1]); d > 1e-5 {
			t.Errorf("%v: position %d sees L = %d keys, where s·ln n = 1: logits differ from the plain softmax's by %g", pe, L-1, L, d)
		}
		for _, i := range []int{3, total - 1} {
			if d := maxAbsDiff(p[0][i], full[0][i]); d < 1e-6 {
				t.Errorf("%v: position %d sees %d keys, yet its logits equal the plain softmax's", pe, i, i+1)
			}
		}
	}
}
