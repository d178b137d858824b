package serve

import (
	"context"
	"slices"
	"testing"

	"github.com/posformer/posformer/engine"
)

// With a context shift, requests decoded together each go past the context, every row shifting
// on its own when it fills, and get the tokens engine.GenerateShifting gives them alone.
func TestSchedulerContextShiftMatchesGenerate(t *testing.T) {
	e, err := engine.Load(decoderPath, "", 64)
	if err != nil {
		t.Fatal(err)
	}
	shift := engine.ContextShift{Keep: 4}
	prompts := []string{"func main() {", "package main\n\nimport \"fmt\"\n"}
	const max = 150 // past 64 slots twice
	var want [][]int
	for _, p := range prompts {
		var gen []int
		st, err := e.GenerateShifting(tokens(p), max, greedy(t), nil, shift, func(tok int) { gen = append(gen, tok) })
		if err != nil || st.Shifts < 2 {
			t.Fatalf("%q: %v, %d shifts; want at least 2", p, err, st.Shifts)
		}
		want = append(want, gen)
	}
	s := NewScheduler(e, Config{Parallel: 2, Queue: 8, Chunk: 8, ContextShift: &shift})
	defer s.Stop()
	var jobs []*Job
	for _, p := range prompts {
		j := NewJob(context.Background(), tokens(p), max, greedy(t), nil)
		if err := s.Submit(j); err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, j)
	}
	for i, j := range jobs {
		got, finish, err := collect(j)
		if err != nil || finish != "length" || !slices.Equal(got, want[i]) {
			t.Errorf("%q: %v (%q, %v), want %v (length)", prompts[i], got, finish, err, want[i])
		}
	}
}
