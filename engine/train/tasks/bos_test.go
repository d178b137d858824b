package tasks

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// recorder is a Forwarder that keeps what it was given and answers with logits that name the
// position and token of each row, so that a wrapper's reordering would show.
type recorder struct{ tokens, positions [][]int }

func (r *recorder) Forward(tokens, positions [][]int) ([][][]float32, error) {
	r.tokens, r.positions = tokens, positions
	out := make([][][]float32, len(tokens))
	for i := range tokens {
		for j := range tokens[i] {
			out[i] = append(out[i], []float32{float32(positions[i][j]), float32(tokens[i][j])})
		}
	}
	return out, nil
}

// What a -bos model is trained on (PrependBOS of a batch) and what it is scored on (WithBOS)
// are the same rows: BOS at position 0, the tokens at 1..n; the scorer gets back one logit row
// per token it passed, the row that followed it.
func TestBOSTrainingMatchesScoring(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	exs := []Example{CopyExample(r, 5), CopyExample(r, 5)}
	b := PrependBOS(ToBatch(exs, len(exs[0].Input)))
	rec := &recorder{}
	toks := [][]int{{}, {}}
	pos := [][]int{{}, {}}
	for i, ex := range exs {
		for j, tok := range ex.Input {
			toks[i] = append(toks[i], int(tok))
			pos[i] = append(pos[i], j)
		}
	}
	logits, err := WithBOS(rec).Forward(toks, pos)
	if err != nil {
		t.Fatal(err)
	}
	for i, ex := range exs {
		wantTok := append([]int{BOSID}, toks[i]...)
		if !slices.Equal(rec.tokens[i], wantTok) || int(b.Inputs[i][0]) != BOSID {
			t.Fatalf("row %d: scored on %v, want %v", i, rec.tokens[i], wantTok)
		}
		for j := range rec.tokens[i] {
			if int(b.Inputs[i][j]) != rec.tokens[i][j] || int(b.Positions[i][j]) != rec.positions[i][j] || rec.positions[i][j] != j {
				t.Fatalf("row %d token %d: trained as (%d at %d), scored as (%d at %d)", i, j, b.Inputs[i][j], b.Positions[i][j], rec.tokens[i][j], rec.positions[i][j])
			}
		}
		if len(logits[i]) != len(ex.Input) || logits[i][0][1] != float32(ex.Input[0]) || logits[i][0][0] != 1 {
			t.Errorf("row %d: %d logit rows, first %v; want %d, the first token's at position 1", i, len(logits[i]), logits[i][0], len(ex.Input))
		}
		// The scored targets are the batch's without BOS, shifted by the one BOS slot.
		if b.Weights[i][0] != 0 || b.Targets[i][0] != ex.Input[0] || !slices.Equal(b.Targets[i][1:], ex.Target) || !slices.Equal(b.Weights[i][1:], ex.Weight) {
			t.Errorf("row %d: BOS slot target %d weight %g, or the rest moved", i, b.Targets[i][0], b.Weights[i][0])
		}
	}
}
