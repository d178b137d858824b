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

// PoSE's placement: every row starts at 0, is two contiguous chunks, and stays below the
// target; across rows the cut covers [1, L) and the skip [0, target − L].
func TestSkipPositions(t *testing.T) {
	const L, target, rows = 16, 64, 2000
	pos := make([][]int32, rows)
	for i := range pos {
		pos[i] = make([]int32, L)
	}
	skipPositions(pos, target, rand.New(rand.NewPCG(5, 6)))
	cuts, skips := map[int]bool{}, map[int]bool{}
	for _, row := range pos {
		if row[0] != 0 || row[L-1] >= target {
			t.Fatalf("row %v: must start at 0 and end below %d", row, target)
		}
		jumps := 0
		for j := 1; j < L; j++ {
			switch d := int(row[j] - row[j-1]); {
			case d < 1:
				t.Fatalf("row %v: positions must increase", row)
			case d > 1:
				jumps++
				cuts[j] = true
				skips[d-1] = true
			}
		}
		if jumps > 1 {
			t.Fatalf("row %v: more than two chunks", row)
		}
		if jumps == 0 {
			skips[0] = true
		}
	}
	if len(cuts) != L-1 || len(skips) != target-L+1 {
		t.Errorf("over %d rows: %d distinct cuts (want %d), %d distinct skips (want %d)", rows, len(cuts), L-1, len(skips), target-L+1)
	}
}
