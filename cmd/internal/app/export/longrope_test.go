package export

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/posformer/posformer/engine"
	"github.com/posformer/posformer/models/gguf"
	"github.com/posformer/posformer/positional"
)

// A LongRoPE model exports to GGUF with its factors (rope_factors_long/short.weight), and the
// file loads back to the same LongRoPE.
func TestExportLongRoPE(t *testing.T) {
	src := "../../../../weights/rope-decoder"
	dir := t.TempDir()
	raw, err := os.ReadFile(filepath.Join(src, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	// Head dim 96/4 = 24: 12 pairs.
	short := []any{1.0, 1.0, 1.5, 1.5, 2.0, 2.0, 2.5, 3.0, 3.5, 4.0, 4.0, 4.0}
	long := []any{1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0}
	cfg["positional"] = map[string]any{"name": "rope", "rope_scaling": map[string]any{
		"rope_type": "longrope", "factor": 8.0, "original_max_position_embeddings": 128.0, "short_factor": short, "long_factor": long}}
	out, _ := json.Marshal(cfg)
	if err := os.WriteFile(filepath.Join(dir, "config.json"), out, 0o644); err != nil {
		t.Fatal(err)
	}
	weights, err := os.ReadFile(filepath.Join(src, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "model.safetensors"), weights, 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "long.gguf")
	if err := run(options{model: dir, out: file, typ: "f32"}, new(bytes.Buffer)); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	_, hasLong := f.Tensor(gguf.RopeFactorsLong)
	_, hasShort := f.Tensor(gguf.RopeFactorsShort)
	f.Close()
	if !hasLong || !hasShort {
		t.Fatalf("the GGUF holds %s: %v, %s: %v", gguf.RopeFactorsLong, hasLong, gguf.RopeFactorsShort, hasShort)
	}
	e, err := engine.Load(file, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	l, ok := e.Model.Scheme.(*positional.LongRoPE)
	if !ok {
		t.Fatalf("the GGUF loads as %T, want LongRoPE", e.Model.Scheme)
	}
	want := []float64{}
	for _, x := range long {
		want = append(want, x.(float64))
	}
	if s := l.RoPE.Scaling; !slices.Equal(s.Long, want) || s.OrigLen != 128 || s.Factor != 8 {
		t.Errorf("loaded long factors %v, original context %d, factor %g; want %v, 128, 8", s.Long, s.OrigLen, s.Factor, want)
	}
}
