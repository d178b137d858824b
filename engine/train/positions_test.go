package train

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Randomized positions are a sorted subset of [0, n) without repeats, and over many draws
// every position of the range is used about equally often.
func TestRandomizePositions(t *testing.T) {
	const rows, seq, n = 2000, 16, 64
	pos := make([][]int32, rows)
	for i := range pos {
		pos[i] = make([]int32, seq)
	}
	randomizePositions(pos, n, rand.New(rand.NewPCG(1, 2)))
	counts := make([]float64, n)
	for _, row := range pos {
		for j, p := range row {
			if p < 0 || p >= n || (j > 0 && p <= row[j-1]) {
				t.Fatalf("row %v is not a sorted subset of [0, %d)", row, n)
			}
			counts[p]++
		}
	}
	want := float64(rows*seq) / n
	for p, c := range counts {
		if math.Abs(c-want) > 5*math.Sqrt(want) {
			t.Errorf("position %d drawn %g times, want about %g", p, c, want)
		}
	}
}

// The unigram baseline of a uniform source is log 256 nats.
func TestUnigramLoss(t *testing.T) {
	train := make([]byte, 256*100)
	for i := range train {
		train[i] = byte(i)
	}
	eval := [][]int32{{0, 1, 2, 255}}
	if got, want := unigramLoss(train, eval), math.Log(256); math.Abs(got-want) > 1e-9 {
		t.Errorf("unigram loss %g, want %g", got, want)
	}
}
