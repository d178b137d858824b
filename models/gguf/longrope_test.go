package gguf_test

import (
	"encoding/binary"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/posformer/posformer/engine"
	"github.com/posformer/posformer/layers/quant"
	"github.com/posformer/posformer/models/gguf"
	"github.com/posformer/posformer/positional"
)

// A LongRoPE model is written as llama.cpp's converter writes Phi-3: the factors as F32 tensors
// rope_factors_long.weight and rope_factors_short.weight, the attention factor itself in
// rope.scaling.attn_factor, the original context in rope.scaling.original_context_length. A
// file in the converter's form (no scaling type, no factor key, a non-default attention factor)
// reads back to the same factors, s = context_length / L and that attention factor; a file with
// one of the two tensors is refused.
func TestLongRoPEFactorsInGGUF(t *testing.T) {
	cfg := configs()["llama-longrope"]
	e := randomModel(t, cfg, 3)
	path := filepath.Join(t.TempDir(), "long.gguf")
	if err := gguf.Export(path, e.Model, e.Ctx, gguf.ExportOptions{}); err != nil {
		t.Fatal(err)
	}
	kvs, ts := readAll(t, path)
	wantLong := []float32{1, 2, 3, 4, 6, 8, 12, 16}
	var found int
	for _, tn := range ts {
		if tn.Name != gguf.RopeFactorsLong && tn.Name != gguf.RopeFactorsShort {
			continue
		}
		found++
		if !slices.Equal(tn.Shape, []int{8}) || tn.Type != quant.F32 {
			t.Errorf("%s is %v %v, want F32 [8]", tn.Name, tn.Type, tn.Shape)
		}
		if tn.Name == gguf.RopeFactorsLong {
			got := make([]float32, len(tn.Data)/4)
			for i := range got {
				got[i] = math.Float32frombits(binary.LittleEndian.Uint32(tn.Data[4*i:]))
			}
			if !slices.Equal(got, wantLong) {
				t.Errorf("%s holds %v, want %v", tn.Name, got, wantLong)
			}
		}
	}
	if found != 2 {
		t.Fatalf("the file holds %d of the two factor tensors", found)
	}
	// √(1 + ln 4 / ln 16) = √1.5, as the converter computes it.
	if a := kvValue(kvs, "llama.rope.scaling.attn_factor"); a == nil || math.Abs(float64(a.(float32))-math.Sqrt(1.5)) > 1e-6 {
		t.Errorf("llama.rope.scaling.attn_factor is %v, want √1.5", a)
	}

	// The converter's form: context_length 64 = 4·L gives s = 4; attention factor 1.3.
	conv := slices.DeleteFunc(slices.Clone(kvs), func(kv gguf.KV) bool {
		return kv.Key == "llama.rope.scaling.type" || kv.Key == "llama.rope.scaling.factor" || kv.Key == "llama.rope.scaling.attn_factor"
	})
	conv = append(conv, gguf.KV{Key: "llama.rope.scaling.attn_factor", Value: gguf.Float32(1.3)})
	for i := range conv {
		if conv[i].Key == "llama.context_length" {
			conv[i].Value = gguf.Uint32(64)
		}
	}
	convPath := filepath.Join(t.TempDir(), "conv.gguf")
	if err := gguf.Write(convPath, conv, ts); err != nil {
		t.Fatal(err)
	}
	loaded := loadEngine(t, convPath, quant.F32)
	l, ok := loaded.Model.Scheme.(*positional.LongRoPE)
	if !ok {
		t.Fatalf("the converter's form loads as %T, want LongRoPE", loaded.Model.Scheme)
	}
	sc := l.RoPE.Scaling
	if sc.Factor != 4 || sc.OrigLen != 16 || math.Abs(l.AttentionFactor()-1.3) > 1e-6 {
		t.Errorf("loaded factor %g, original context %d, attention factor %g; want 4, 16, 1.3", sc.Factor, sc.OrigLen, l.AttentionFactor())
	}
	// Past L the long factors apply: θ_i = 500^(-2i/16) / long_i.
	got := l.InvFreqAt(17)
	for i, f := range got {
		want := math.Pow(500, -2*float64(i)/16) / float64(wantLong[i])
		if math.Abs(f-want) > 1e-12*want {
			t.Errorf("inv_freq[%d] past L is %g, want %g", i, f, want)
		}
	}

	one := slices.DeleteFunc(slices.Clone(ts), func(tn gguf.Tensor) bool { return tn.Name == gguf.RopeFactorsShort })
	onePath := filepath.Join(t.TempDir(), "one.gguf")
	if err := gguf.Write(onePath, kvs, one); err != nil {
		t.Fatal(err)
	}
	backend, _ := engine.NewBackend("cpu")
	if _, _, err := gguf.Load(onePath, backend); err == nil || !strings.Contains(err.Error(), "LongRoPE needs both") {
		t.Errorf("a file with the long factors only: %v", err)
	}
}

// kvValue is the value of key in kvs, or nil.
func kvValue(kvs []gguf.KV, key string) any {
	for _, kv := range kvs {
		if kv.Key == key {
			return kv.Value.V
		}
	}
	return nil
}
