package models

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/posformer/posformer/models/safetensors"
)

func testConfig() Config {
	return Config{Kind: Decoder, VocabSize: 260, Dim: 16, NumLayers: 1, NumHeads: 2, NumKVHeads: 1, HiddenDim: 32,
		MaxSeqLen: 32, Positional: map[string]any{"name": "learned", "max_positions": 32}}
}

// writeCheckpoint saves a model with deterministic weights (0.001·i in each tensor).
func writeCheckpoint(t *testing.T, cfg Config) string {
	t.Helper()
	backend, err := simplego.New("ops_sequential")
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	params, err := m.Params(backend)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.New()
	for _, p := range params {
		n := 1
		for _, d := range p.Shape {
			n *= d
		}
		data := make([]float32, n)
		for i := range data {
			data[i] = 0.001 * float32(i)
		}
		scope, name := VariablePath(p.Name)
		ctx.InAbsPath(scope).VariableWithValue(name, tensors.FromFlatDataAndDimensions(data, p.Shape...))
	}
	dir := filepath.Join(t.TempDir(), "ckpt")
	if err := Save(dir, cfg, ctx); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestSaveLoadRoundTrip(t *testing.T) {
	dir := writeCheckpoint(t, testConfig())
	backend, _ := simplego.New("ops_sequential")
	m, ctx, err := Load(dir, backend)
	if err != nil {
		t.Fatal(err)
	}
	if m.Config.SchemeName() != "learned" {
		t.Errorf("scheme %q", m.Config.SchemeName())
	}
	v := ctx.GetVariableByScopeAndName("/model/layer_0/attn/wk", "weight")
	if v == nil {
		t.Fatal("layer_0.attn.wk.weight not loaded")
	}
	got := tensors.MustCopyFlatData[float32](v.MustValue())
	if len(got) != 8*16 || got[5] != 0.001*float32(5) {
		t.Errorf("wk: %d values, [5]=%g; want 128 values, 0.005", len(got), got[5])
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
}

func TestLoadErrors(t *testing.T) {
	backend, _ := simplego.New("ops_sequential")
	oneLine := func(t *testing.T, err error, want ...string) {
		t.Helper()
		if err == nil {
			t.Fatalf("no error, want one mentioning %q", want)
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("error spans lines: %v", err)
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q does not mention %q", err, w)
			}
		}
	}
	t.Run("missing weights", func(t *testing.T) {
		dir := writeCheckpoint(t, testConfig())
		os.Remove(filepath.Join(dir, WeightsFile))
		_, _, err := Load(dir, backend)
		oneLine(t, err, "model.safetensors", "does not exist")
	})
	t.Run("truncated weights", func(t *testing.T) {
		dir := writeCheckpoint(t, testConfig())
		path := filepath.Join(dir, WeightsFile)
		data, _ := os.ReadFile(path)
		os.WriteFile(path, data[:len(data)-100], 0o644)
		_, _, err := Load(dir, backend)
		oneLine(t, err, "truncated")
	})
	t.Run("shape mismatch", func(t *testing.T) {
		dir := writeCheckpoint(t, testConfig())
		cfg := testConfig()
		cfg.HiddenDim = 48
		data, _ := json.Marshal(cfg)
		os.WriteFile(filepath.Join(dir, ConfigFile), data, 0o644)
		_, _, err := Load(dir, backend)
		oneLine(t, err, "layer_0.ffn.w1.weight", "[32 16]", "[48 16]")
	})
	t.Run("unknown scheme", func(t *testing.T) {
		dir := writeCheckpoint(t, testConfig())
		cfg := testConfig()
		cfg.Positional = map[string]any{"name": "ropee"}
		data, _ := json.Marshal(cfg)
		os.WriteFile(filepath.Join(dir, ConfigFile), data, 0o644)
		_, _, err := Load(dir, backend)
		oneLine(t, err, `"ropee"`, "rope", "alibi", "sinusoidal")
	})
	t.Run("extra tensor", func(t *testing.T) {
		dir := writeCheckpoint(t, testConfig())
		path := filepath.Join(dir, WeightsFile)
		f, _ := safetensors.Open(path)
		var ts []safetensors.Tensor
		for _, info := range f.Infos() {
			d, _ := f.ReadFloat32(info.Name)
			ts = append(ts, safetensors.Tensor{Name: info.Name, Shape: info.Shape, Data: d})
		}
		f.Close()
		ts = append(ts, safetensors.Tensor{Name: "stray.weight", Shape: []int{2}, Data: []float32{1, 2}})
		if err := safetensors.Write(path, ts, nil); err != nil {
			t.Fatal(err)
		}
		_, _, err := Load(dir, backend)
		oneLine(t, err, "stray.weight")
	})
}
