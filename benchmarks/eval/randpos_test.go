package eval

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/posformer/posformer/benchmarks/recipe"
	"github.com/posformer/posformer/engine/train/tasks"
)

type recordPositions struct{ got [][]int }

func (r *recordPositions) Forward(tokens, positions [][]int) ([][][]float32, error) {
	r.got = positions
	return nil, nil
}

// A randomized-positions model is scored at sorted, distinct positions drawn from its training
// range (the whole range when the row is as long), never at 0..n-1 unless it must be.
func TestRandomPlacement(t *testing.T) {
	rec := &recordPositions{}
	f := randomPlacement{f: rec, n: 1024, rng: rand.New(rand.NewPCG(1, 2))}
	rows := [][]int{make([]int, 64), make([]int, 1024), make([]int, 1500)}
	pos := make([][]int, len(rows))
	for i, r := range rows {
		pos[i] = make([]int, len(r))
		for j := range r {
			pos[i][j] = j
		}
	}
	if _, err := f.Forward(rows, pos); err != nil {
		t.Fatal(err)
	}
	for i, p := range rec.got {
		if len(p) != len(rows[i]) {
			t.Fatalf("row %d: %d positions for %d tokens", i, len(p), len(rows[i]))
		}
		for j := 1; j < len(p); j++ {
			if p[j] <= p[j-1] {
				t.Fatalf("row %d: positions not strictly increasing at %d: %d then %d", i, j, p[j-1], p[j])
			}
		}
		if top := max(1024, len(p)); p[len(p)-1] >= top {
			t.Errorf("row %d: position %d outside [0, %d)", i, p[len(p)-1], top)
		}
	}
	if slices.Equal(rec.got[0], pos[0]) {
		t.Errorf("64 positions out of 1024 came out as 0..63: not a random placement")
	}
	if !slices.Equal(rec.got[1], pos[1]) {
		t.Errorf("1024 positions out of 1024 must be all of them")
	}
}

// The row of a randomized-positions checkpoint carries its range into the scoring.
func TestRowCarriesRandomPositions(t *testing.T) {
	ti := &recipe.TrainInfo{Scheme: "rope", SeqLen: 64, RandomPositions: 1024}
	rows := RowsFor(tasks.Copy, ti, "/w/copy/rope-randpos", Budget{})
	if len(rows) == 0 || rows[0].RandomPositions != 1024 {
		t.Fatalf("rows %+v: want the first with RandomPositions 1024", rows)
	}
}
