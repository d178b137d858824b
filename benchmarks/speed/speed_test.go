package speed

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/posformer/posformer/models/llama2c"
)

func TestShapes(t *testing.T) {
	if got, want := ShapeNames(), []string{"15M", "260K"}; !slices.Equal(got, want) {
		t.Errorf("ShapeNames() = %v, want %v", got, want)
	}
	for name, cfg := range Shapes {
		if _, err := llama2c.HeaderFor(cfg, 0); err != nil {
			t.Errorf("shape %s is not a llama2.c model: %v", name, err)
		}
	}
}

func TestLabel(t *testing.T) {
	for target, want := range map[string]string{
		"/tmp/posformer-bench-1/random-260K.bin": "random-260K",
		"weights/rope-decoder":                   "rope-decoder",
		"stories15M.bin":                         "stories15M",
	} {
		if got := Label(target); got != want {
			t.Errorf("Label(%q) = %q, want %q", target, got, want)
		}
	}
}

func TestHelpers(t *testing.T) {
	// (i*7919 + 3) % 512 for i = 1, 2, 3: 7922-15*512, 15841-30*512, 23760-46*512.
	if got, want := promptTokens(4, 512), []int{bos, 242, 481, 208}; !slices.Equal(got, want) {
		t.Errorf("promptTokens(4, 512) = %v, want %v", got, want)
	}
	if got, want := iota(3, 3), []int{3, 4, 5}; !slices.Equal(got, want) {
		t.Errorf("iota(3, 3) = %v, want %v", got, want)
	}
	if got := argmax([]float32{1, 3, 3, 2}); got != 1 {
		t.Errorf("argmax picks %d, want the first largest, 1", got)
	}
}

// Measure on a tiny random model: every figure is there, no graph is compiled after warm-up,
// and the memory limits are set at load, after warm-up and before the batches.
func TestMeasureTinyModel(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles a model's graphs")
	}
	cfg := LlamaConfig(16, 32, 1, 2, 2, 32, 24)
	w, err := llama2c.RandomWeights(cfg, 1, 0.02)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tiny.bin")
	if err := llama2c.Write(path, cfg, w, 0); err != nil {
		t.Fatal(err)
	}
	var limits []int64
	offs := 0
	r, err := Measure(path, Options{
		Decode: 8, Prompts: []int{4, 8, 24}, Batches: []int{1, 2}, Reps: 1,
		Memory: Memory{Limit: func(extra int64) { limits = append(limits, extra) }, Off: func() { offs++ }},
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.Model != "tiny" || r.Capacity != 24 || r.Params == 0 || r.WeightBytes == 0 || r.KVBytes == 0 {
		t.Errorf("model figures: %+v", r)
	}
	if r.CompiledAtWarmup == 0 || r.CompiledLate != 0 {
		t.Errorf("graphs: %d at warm-up, %d after; want some, then none", r.CompiledAtWarmup, r.CompiledLate)
	}
	if len(r.Prefill) != 2 || r.Prefill[0].Tokens != 4 || r.Prefill[1].Tokens != 8 {
		t.Errorf("prefill %+v: want prompts 4 and 8 (24 does not fit a 24-slot cache with a token to decode)", r.Prefill)
	}
	if r.Generated != 8 || len(r.MsPerToken) != 23 || r.DecodeTokPerSec <= 0 {
		t.Errorf("decode: %d generated, %d steps timed, %g tok/s; want 8, 23 (until the cache is full), > 0", r.Generated, len(r.MsPerToken), r.DecodeTokPerSec)
	}
	if len(r.Batched) != 2 || r.Batched[1].Batch != 2 || r.Batched[1].TokPerSec <= 0 {
		t.Errorf("batched: %+v", r.Batched)
	}
	if len(limits) != 4 || offs != 1 {
		t.Errorf("memory: limits %v and %d offs; want 4 limits (load, loaded, warm, batches) and 1 off", limits, offs)
	}
}
