package server

import (
	"fmt"
	"os"
	"testing"

	"github.com/posformer/posformer/engine"
)

// BenchmarkDecodeStep times one batched decoding step of a Session with rows busy rows out of
// --parallel (the rest empty), past a 32-token prompt: the scheduler's inner loop without HTTP.
// POSFORMER_SERVE_BENCH_MODEL picks another model (default: the shipped decoder).
func BenchmarkDecodeStep(b *testing.B) {
	path := decoderPath
	if p := os.Getenv("POSFORMER_SERVE_BENCH_MODEL"); p != "" {
		path = p
	}
	e, err := engine.Load(path, "", 0)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct{ parallel, busy int }{{1, 1}, {16, 1}, {4, 4}, {16, 16}} {
		b.Run(fmt.Sprintf("parallel=%d/busy=%d", c.parallel, c.busy), func(b *testing.B) {
			s := e.NewSession(c.parallel)
			tokens, positions := make([][]int, c.parallel), make([][]int, c.parallel)
			for i := range c.busy {
				tokens[i], positions[i] = span(1, 32), span(0, 32)
			}
			if _, err := s.AppendLast(tokens, positions); err != nil {
				b.Fatal(err)
			}
			pos := 32
			b.ResetTimer()
			for range b.N {
				if pos >= min(e.Capacity, 200) { // stay in one window size
					b.StopTimer()
					for i := range c.busy {
						s.FreeRow(i)
						tokens[i], positions[i] = span(1, 32), span(0, 32)
					}
					s.AppendLast(tokens, positions)
					pos = 32
					b.StartTimer()
				}
				for i := range c.busy {
					tokens[i], positions[i] = []int{5}, []int{pos}
				}
				if _, err := s.AppendLast(tokens, positions); err != nil {
					b.Fatal(err)
				}
				pos++
			}
			b.ReportMetric(float64(b.N*c.busy)/b.Elapsed().Seconds(), "tok/s")
		})
	}
}
