package engine

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkArgmax32000 is greedy decoding's pick over a 32,000-token vocabulary.
func BenchmarkArgmax32000(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	l := make([]float32, 32000)
	for i := range l {
		l[i] = float32(r.NormFloat64())
	}
	for b.Loop() {
		argmax(l)
	}
}
