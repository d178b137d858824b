package server

import (
	"encoding/base64"
	"encoding/binary"
	"math"
	"strings"
	"testing"
)

func tokens(m *model, s string) []int {
	ids, _ := m.tok.Encode(s)
	return ids
}

// /v1/embeddings returns the mean of the hidden states, the same whether an input comes alone
// or beside longer ones (padding does not leak in), as floats or as OpenAI's base64.
func TestEmbeddingsEndpoint(t *testing.T) {
	ts, s := startServer(t, encoderPath, nil)
	inputs := []string{"func main() {}", "package main", strings.Repeat("x", 300)}
	status, out, _ := post(t, ts.URL+"/v1/embeddings", map[string]any{"model": "sinusoidal-encoder", "input": inputs})
	if status != 200 || out["object"] != "list" || out["model"] != "sinusoidal-encoder" {
		t.Fatalf("status %d: %v", status, out)
	}
	data := out["data"].([]any)
	if len(data) != 3 {
		t.Fatalf("%d embeddings for 3 inputs", len(data))
	}
	total := 0
	h, err := s.embed.Hidden([][]int{tokens(s.m, inputs[0])})
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range data {
		d := d.(map[string]any)
		if d["object"] != "embedding" || d["index"] != float64(i) {
			t.Errorf("embedding %d: object %v index %v", i, d["object"], d["index"])
		}
		total += len(inputs[i])
	}
	u := out["usage"].(map[string]any)
	if u["prompt_tokens"] != float64(total) || u["total_tokens"] != float64(total) {
		t.Errorf("usage %v, want %d tokens", u, total)
	}
	// The first input: the mean of its hidden states computed alone.
	got := floats(data[0].(map[string]any)["embedding"].([]any))
	if len(got) != s.m.e.Model.Config.Dim {
		t.Fatalf("embedding of %d values, want the model's width %d", len(got), s.m.e.Model.Config.Dim)
	}
	for k := range got {
		mean := 0.0
		for _, v := range h[0] {
			mean += float64(v[k])
		}
		mean /= float64(len(h[0]))
		if math.Abs(mean-got[k]) > 1e-5 {
			t.Fatalf("component %d: %g, the mean of the input's hidden states alone is %g", k, got[k], mean)
		}
	}
	// base64: the same float32 values, little-endian, as the same request answered in floats.
	_, out1, _ := post(t, ts.URL+"/v1/embeddings", map[string]any{"input": inputs[0], "encoding_format": "float"})
	got = floats(out1["data"].([]any)[0].(map[string]any)["embedding"].([]any))
	_, out64, _ := post(t, ts.URL+"/v1/embeddings", map[string]any{"input": inputs[0], "encoding_format": "base64"})
	raw, err := base64.StdEncoding.DecodeString(out64["data"].([]any)[0].(map[string]any)["embedding"].(string))
	if err != nil || len(raw) != 4*len(got) {
		t.Fatalf("base64 embedding: %v, %d bytes", err, len(raw))
	}
	for k := range got {
		if v := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*k:])); v != float32(got[k]) {
			t.Fatalf("base64 component %d is %g, float %g", k, v, got[k])
		}
	}
	for _, c := range []struct {
		body any
		says string
	}{
		{map[string]any{"input": strings.Repeat("y", 1025)}, "at most 1024"},
		{map[string]any{"input": []string{}}, "empty"},
		{map[string]any{"input": ""}, "empty"},
		{map[string]any{"input": 5}, "must be a string"},
		{map[string]any{"input": "a", "encoding_format": "int8"}, "float or base64"},
		{map[string]any{"input": "a", "dimensions": 3}, "96"},
		{map[string]any{}, "missing"},
	} {
		status, out, _ := post(t, ts.URL+"/v1/embeddings", c.body)
		e, _ := out["error"].(map[string]any)
		if status != 400 || e == nil || !strings.Contains(e["message"].(string), c.says) {
			t.Errorf("%v: %d %v, want 400 saying %q", c.body, status, out, c.says)
		}
	}
	status, out, _ = post(t, ts.URL+"/v1/completions", map[string]any{"prompt": "abc"})
	if e, _ := out["error"].(map[string]any); status != 400 || e == nil || !strings.Contains(e["message"].(string), "encoder") {
		t.Errorf("completions on an encoder: %d %v", status, out)
	}
}

func floats(v []any) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = x.(float64)
	}
	return out
}
