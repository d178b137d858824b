package corpus

import (
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"testing"
)

// fingerprint hashes rows of ids.
func fingerprint(rows ...[][]int32) uint64 {
	h := fnv.New64a()
	for _, r := range rows {
		for _, row := range r {
			for _, id := range row {
				h.Write([]byte{byte(id), byte(id >> 8), byte(id >> 16), byte(id >> 24)})
			}
			h.Write([]byte{0xff})
		}
	}
	return h.Sum64()
}

// testText is 100,000 bytes drawn from a seeded generator.
func testText() []byte {
	rng := rand.New(rand.NewPCG(11, 12))
	b := make([]byte, 100000)
	for i := range b {
		b[i] = byte(rng.IntN(256))
	}
	return b
}

// The byte path draws exactly the windows it always drew: the benchmark grid's byte models
// are trained and scored on them, and a change would change every loss. The fingerprint was
// taken before token ids had a sampler of their own; if this fails, sampling changed.
func TestByteSamplingUnchanged(t *testing.T) {
	text := testText()
	s := NewSampler(text, 7)
	var rows [][][]int32
	for range 5 {
		in, tgt := s.Batch(4, 64)
		rows = append(rows, in, tgt)
	}
	in, tgt := Windows(text, 64, 10)
	all, allTgt := Windows(text[:1000], 64, 0)
	rows = append(rows, in, tgt, all, allTgt)
	if got, want := fingerprint(rows...), uint64(goldenByteSampling); got != want {
		t.Errorf("byte sampling fingerprint %#x, want %#x", got, want)
	}
}

// Token ids that are bytes give the byte path's batches and windows, to the id.
func TestTokenSamplerMatchesBytes(t *testing.T) {
	text := testText()
	ids := make([]int32, len(text))
	for i, b := range text {
		ids[i] = int32(b)
	}
	bs, ts := NewSampler(text, 3), NewTokenSampler(ids, 3)
	for range 5 {
		bi, bt := bs.Batch(3, 50)
		ti, tt := ts.Batch(3, 50)
		if fingerprint(bi, bt) != fingerprint(ti, tt) {
			t.Fatal("TokenSampler over byte values draws other windows than Sampler")
		}
	}
	bi, bt := Windows(text, 50, 7)
	ti, tt := TokenWindows(ids, 50, 7)
	if fingerprint(bi, bt) != fingerprint(ti, tt) || len(ti) != 7 || !slices.Equal(ti[0], ids[:50]) {
		t.Error("TokenWindows over byte values cuts other windows than Windows")
	}
}

// goldenByteSampling is TestByteSamplingUnchanged's fingerprint.
const goldenByteSampling = 0xdade66f7fc340a33
