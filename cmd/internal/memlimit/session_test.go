package memlimit

import (
	"os"
	"runtime"
	"testing"

	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/posformer/posformer/engine"
	"github.com/posformer/posformer/models"
)

// A session that reserved its whole cache decodes under the limit the commands set without
// the collector running at every step: the limit leaves room for every window Reserve holds
// (engine.SessionBytes), not only the last one (KVBytes), which the reserved windows exceed by
// up to its own size. Here the cache (32 MiB at the full context, 64 MiB with the smaller
// windows) outgrows the slack, as a 110M model's does at 1024 tokens.
func TestReservedCacheFitsTheLimit(t *testing.T) {
	if os.Getenv("GOMEMLIMIT") != "" {
		t.Skip("GOMEMLIMIT is set: Set leaves the limit to it")
	}
	backend, err := engine.NewBackend("cpu")
	if err != nil {
		t.Fatal(err)
	}
	cfg := models.Config{Kind: models.Decoder, VocabSize: 32000, Dim: 64, NumLayers: 2, NumHeads: 2, HiddenDim: 64,
		FFN: "swiglu", Norm: "rmsnorm", NormEps: 1e-6, MaxSeqLen: 32768, Positional: map[string]any{"name": "rope"}}
	m, err := models.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.New()
	ctx.SetParam(context.ParamInitialSeed, int64(1))
	e, err := engine.New(backend, m, ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got, kv := e.SessionBytes(1), e.KVBytes(1); got <= kv+Slack || got > 2*kv {
		t.Fatalf("SessionBytes %d for a full KV cache of %d: want more than it and the slack, at most twice it", got, kv)
	}
	// Compile the step outside the measured stretch.
	warm := e.NewSession(1)
	if _, err := warm.AppendLast([][]int{{1}}, [][]int{{0}}); err != nil {
		t.Fatal(err)
	}
	warm.Close()

	runtime.GC()
	Set(Base(), e.SessionBytes(1))
	defer Off()
	s := e.NewSession(1)
	defer s.Close()
	if err := s.Reserve(e.Capacity); err != nil {
		t.Fatal(err)
	}
	const steps = 40
	before := numGC()
	for pos := range steps {
		if _, err := s.AppendLast([][]int{{1 + pos%60}}, [][]int{{pos}}); err != nil {
			t.Fatal(err)
		}
	}
	// Each step leaves garbage (a copy of its 32,000 logits, 125 KiB); under a limit the
	// reserved cache already fills, every few steps start a collection (15 of 40 with
	// KVBytes in place of SessionBytes), with room for the garbage none does.
	if gcs := numGC() - before; gcs > steps/8 {
		t.Errorf("%d collections in %d steps under the limit: the reserved cache does not fit it", gcs, steps)
	}
}

// numGC is the number of collections so far.
func numGC() uint32 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.NumGC
}
