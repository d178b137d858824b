package engine

import (
	"math"
	"testing"

	"github.com/posformer/posformer/models"
)

// Forward on rows that share their positions passes them as one row: the same logits as a row
// per sequence, for every scheme, decoder and encoder.
func TestForwardSharedPositionsSameLogits(t *testing.T) {
	backend, err := NewBackend("")
	if err != nil {
		t.Fatal(err)
	}
	const batch, seq = 3, 10
	var toks, pos [][]int
	for r := range batch {
		var tr, pr []int
		for s := range seq {
			tr, pr = append(tr, (11*r+7*s)%250), append(pr, s+5)
		}
		toks, pos = append(toks, tr), append(pos, pr)
	}
	defer func() { sharePositions = true }()
	for _, kind := range []string{models.Decoder, models.Encoder} {
		for _, cfg := range testSchemes(t, kind) {
			var logits [2][][][]float32
			for i, share := range []bool{false, true} {
				sharePositions = share
				m, err := models.New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				ctx := seededContext(t, 5)
				e, err := New(backend, m, ctx, 0)
				if err != nil {
					t.Fatal(err)
				}
				if logits[i], err = e.Forward(toks, pos); err != nil {
					t.Fatalf("%s %v (shared %v): %v", kind, cfg.Positional, share, err)
				}
			}
			worst := 0.0
			for r := range logits[0] {
				for s := range logits[0][r] {
					for v := range logits[0][r][s] {
						worst = max(worst, math.Abs(float64(logits[0][r][s][v]-logits[1][r][s][v])))
					}
				}
			}
			if worst > 1e-4 || math.IsNaN(worst) {
				t.Errorf("%s %v: logits differ by %g with shared positions", kind, cfg.Positional, worst)
			}
		}
	}
}
