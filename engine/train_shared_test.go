package engine

import (
	"math"
	"testing"

	"github.com/posformer/posformer/models"
)

// Positions passed as one row for a batch whose rows share them (batchTensors) give the same
// loss, and after an AdamW step the same model, as a row per sequence: the hooks' results
// broadcast over the batch and their gradients sum over it, for every scheme, decoder and
// encoder. The batch has padding in one row (valid comes from the inputs, not the positions).
func TestSharedPositionsSameLossAndStep(t *testing.T) {
	backend, err := NewBackend("")
	if err != nil {
		t.Fatal(err)
	}
	const batch, seq = 3, 12
	b := testBatch(batch, seq, func(int) float32 { return 1 })
	b.Inputs[2][seq-1], b.Weights[2][seq-1] = -1, 0 // padding
	defer func() { sharePositions = true }()
	for _, kind := range []string{models.Decoder, models.Encoder} {
		for _, cfg := range testSchemes(t, kind) {
			name := kind + "/" + cfg.Positional["name"].(string)
			var losses [2][2]float64
			for i, share := range []bool{false, true} {
				sharePositions = share
				m, err := models.New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				ctx := seededContext(t, 11)
				tr, err := NewTrainer(backend, m, ctx, 0.1)
				if err != nil {
					t.Fatal(err)
				}
				if losses[i][0], err = tr.Step(b, 1e-2); err == nil {
					losses[i][1], err = tr.Eval(b)
				}
				if err != nil {
					t.Errorf("%s (shared %v): %v", name, share, err)
					losses[i][0], losses[i][1] = math.NaN(), math.NaN()
				}
			}
			for k, what := range []string{"loss", "loss after a step"} {
				if d := math.Abs(losses[0][k] - losses[1][k]); d > 1e-4*math.Max(1, math.Abs(losses[0][k])) || math.IsNaN(d) {
					t.Errorf("%s %v: %s %.6f with a row per sequence, %.6f with shared positions", name, cfg.Positional, what, losses[0][k], losses[1][k])
				}
			}
		}
	}
}

// testBatch is a training batch of fixed tokens at positions 0..seq-1, every position of row r
// at weight(r).
func testBatch(batch, seq int, weight func(row int) float32) Batch {
	b := Batch{}
	for r := range batch {
		var in, tgt, pos []int32
		var w []float32
		for s := range seq {
			in, tgt, pos = append(in, int32(7*r+3*s)%250), append(tgt, int32(5*r+s)%250), append(pos, int32(s))
			w = append(w, weight(r))
		}
		b.Inputs, b.Targets, b.Positions, b.Weights = append(b.Inputs, in), append(b.Targets, tgt), append(b.Positions, pos), append(b.Weights, w)
	}
	return b
}
