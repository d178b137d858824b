package engine

import (
	"math/rand/v2"
	"testing"

	"github.com/posformer/posformer/models"
)

// Dynamic NTK across the point where its base starts to change: a prompt shorter than the
// original context, then one token at a time well past it. Every step's cached logits must equal
// a full recomputation's, and the full forward's logits at every position must equal what
// token-by-token decoding produced there (each query uses the base of its own length, and keys
// are cached unrotated, so nothing is stale).
func TestDynamicNTKCacheAcrossBaseChange(t *testing.T) {
	const orig, prompt, total = 8, 5, 30
	cfg := tinyConfig(models.Decoder, 3, map[string]any{
		"name": "rope", "rope_scaling": map[string]any{"rope_type": "dynamic", "factor": 4.0, "original_max_position_embeddings": orig},
	})
	e := newTestEngine(t, cfg)
	toks := randomTokens(rand.New(rand.NewPCG(7, 8)), total)
	s := e.NewSession(1)
	out, err := s.Append([][]int{toks[:prompt]}, [][]int{iota(0, prompt)})
	if err != nil {
		t.Fatal(err)
	}
	stepwise := out[0]
	for i := prompt; i < total; i++ {
		out, err := s.Append([][]int{{toks[i]}}, [][]int{{i}})
		if err != nil {
			t.Fatal(err)
		}
		stepwise = append(stepwise, out[0][0])
		full, err := e.Forward([][]int{toks[:i+1]}, [][]int{iota(0, i+1)})
		if err != nil {
			t.Fatal(err)
		}
		if d := maxAbsDiff(out[0][0], full[0][i]); d > 1e-4 {
			t.Errorf("step %d (original context %d): cached vs full logits differ by %g", i, orig, d)
		}
	}
	full, err := e.Forward([][]int{toks}, [][]int{iota(0, total)})
	if err != nil {
		t.Fatal(err)
	}
	for i := range total {
		if d := maxAbsDiff(stepwise[i], full[0][i]); d > 1e-4 {
			t.Errorf("position %d: full forward vs token-by-token logits differ by %g", i, d)
		}
	}

	// The base really changes: the same model without scaling agrees inside the original
	// context and not past it.
	p := forwardWithScheme(t, e, cfg, map[string]any{"name": "rope"}, toks)
	// Random weights barely use positions, so the difference past L is small in absolute
	// terms; it must still dwarf the rounding-level difference inside L.
	inside, past := maxAbsDiff(p[0][orig-1], full[0][orig-1]), maxAbsDiff(p[0][total-1], full[0][total-1])
	if inside > 1e-5 || past < 100*max(inside, 1e-7) {
		t.Errorf("dynamic NTK vs plain RoPE: differ by %g inside the original context (want rounding only) and by %g past it (want more)", inside, past)
	}
}

// forwardWithScheme runs the full forward pass over toks (at positions 0..) of e's weights
// under another positional block: the same model but for the scheme's options.
func forwardWithScheme(t *testing.T, e *Engine, cfg models.Config, pe map[string]any, toks []int) [][][]float32 {
	t.Helper()
	cfg.Positional = pe
	m, err := models.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := New(e.Backend, m, e.Ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	p, err := ref.Forward([][]int{toks}, [][]int{iota(0, len(toks))})
	if err != nil {
		t.Fatal(err)
	}
	return p
}
