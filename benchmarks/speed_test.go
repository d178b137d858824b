package benchmarks

import (
	"os"
	"testing"

	"github.com/posformer/posformer/engine"
)

const shippedDecoder = "../weights/rope-decoder"

func loadShipped(b *testing.B) *engine.Engine {
	if _, err := os.Stat(shippedDecoder); err != nil {
		b.Skip("no shipped decoder at " + shippedDecoder)
	}
	e, err := engine.Load(shippedDecoder, "go", 512)
	if err != nil {
		b.Fatal(err)
	}
	return e
}

func prompt(n int) ([]int, []int) {
	const text = "func main() { fmt.Println(\"hello\") }\n"
	toks, pos := make([]int, n), make([]int, n)
	for i := range toks {
		toks[i] = int(text[i%len(text)])
		pos[i] = i
	}
	return toks, pos
}

// BenchmarkPrefill128 measures a 128-byte prompt through the KV-cache graph.
func BenchmarkPrefill128(b *testing.B) { benchPrefill(b, loadShipped(b), 128) }

// BenchmarkDecode measures one generated token at a time after a 32-byte prompt, the cache
// restarting when it reaches 256 tokens.
func BenchmarkDecode(b *testing.B) { benchDecode(b, loadShipped(b), 32) }

func benchPrefill(b *testing.B, e *engine.Engine, n int) {
	toks, pos := prompt(n)
	if _, err := e.NewSession(1).Append([][]int{toks}, [][]int{pos}); err != nil { // warm-up: compile
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if _, err := e.NewSession(1).Append([][]int{toks}, [][]int{pos}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "tok/s")
}

func benchDecode(b *testing.B, e *engine.Engine, promptLen int) {
	toks, pos := prompt(promptLen)
	var s *engine.Session
	next := 0
	restart := func() {
		s = e.NewSession(1)
		if _, err := s.Append([][]int{toks}, [][]int{pos}); err != nil {
			b.Fatal(err)
		}
		next = promptLen
	}
	restart()
	if _, err := s.Append([][]int{{65}}, [][]int{{next}}); err != nil { // warm-up: compile
		b.Fatal(err)
	}
	next++
	b.ResetTimer()
	for range b.N {
		if next == 256 {
			b.StopTimer()
			restart()
			b.StartTimer()
		}
		if _, err := s.Append([][]int{{65}}, [][]int{{next}}); err != nil {
			b.Fatal(err)
		}
		next++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tok/s")
}
