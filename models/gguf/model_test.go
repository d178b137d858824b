package gguf_test

// Round trips of whole models: built natively with random weights (or read from the llama2.c
// fixture), exported as GGUF, loaded back, and run through the engine.

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/posformer/posformer/engine"
	"github.com/posformer/posformer/layers"
	"github.com/posformer/posformer/layers/quant"
	"github.com/posformer/posformer/models"
	"github.com/posformer/posformer/models/gguf"
	"github.com/posformer/posformer/models/llama2c"
)

// Configurations of every shape the exporter writes.
func configs() map[string]models.Config {
	base := models.Config{Kind: models.Decoder, VocabSize: 96, Dim: 64, NumLayers: 2, NumHeads: 4, NumKVHeads: 2, HiddenDim: 96,
		FFN: "swiglu", Norm: "rmsnorm", NormEps: 1e-5, MaxSeqLen: 64, TrainSeqLen: 32}
	rope := func(layout string, extra map[string]any) map[string]any {
		pe := map[string]any{"name": "rope", "layout": layout, "base": 500.0}
		for k, v := range extra {
			pe[k] = v
		}
		return pe
	}
	interleaved, half, qwen, qkvInter, yarn, gpt, long := base, base, base, base, base, base, base
	interleaved.Positional = rope("interleaved", nil)
	half.Positional, half.TieEmbeddings = rope("half", nil), true
	qwen.Positional, qwen.QKVBias = rope("half", nil), true
	qkvInter.Positional, qkvInter.QKVBias = rope("interleaved", nil), true
	yarn.Positional = rope("half", map[string]any{"rope_scaling": map[string]any{"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 16}})
	// LongRoPE: 8 pairs (head dim 16), factors float32 holds exactly, switching past 16.
	long.Positional = rope("half", map[string]any{"rope_scaling": map[string]any{"rope_type": "longrope", "factor": 4.0, "original_max_position_embeddings": 16,
		"short_factor": []any{1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0, 4.0}, "long_factor": []any{1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0}}})
	gpt = models.Config{Kind: models.Decoder, VocabSize: 96, Dim: 64, NumLayers: 2, NumHeads: 4, HiddenDim: 128, FFN: "gelu_tanh",
		Norm: "layernorm", NormEps: 1e-5, Bias: true, MaxSeqLen: 48, Positional: map[string]any{"name": "learned", "max_positions": 48}}
	return map[string]models.Config{"llama-interleaved": interleaved, "llama-half": half, "qwen2": qwen, "llama-qkv-bias": qkvInter, "llama-yarn": yarn, "llama-longrope": long, "gpt2": gpt}
}

// randomModel builds cfg with random weights (norms around 1) in a checkpoint-layout context.
func randomModel(t *testing.T, cfg models.Config, seed uint64) *engine.Engine {
	t.Helper()
	backend, err := engine.NewBackend("cpu")
	if err != nil {
		t.Fatal(err)
	}
	m, err := models.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.New()
	ctx.SetParam(context.ParamInitialSeed, int64(1)) // the same weights every run
	e, err := engine.New(backend, m, ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Forward([][]int{{1}}, [][]int{{0}}); err != nil { // creates the variables
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(seed, 7))
	for v := range e.Ctx.IterVariables() {
		data := make([]float32, v.Shape().Size())
		for i := range data {
			data[i] = float32(r.NormFloat64() * 0.3)
			if strings.Contains(v.Scope(), "norm") && v.Name() == "weight" {
				data[i] += 1
			}
		}
		v.SetValue(tensors.FromFlatDataAndDimensions(data, v.Shape().Dimensions...))
	}
	return e
}

// weightsOf reads every model variable of ctx by checkpoint name.
func weightsOf(t *testing.T, ctx *context.Context) map[string][]float32 {
	t.Helper()
	out := map[string][]float32{}
	for v := range ctx.In(models.Scope).IterVariablesInScope() {
		name, _ := models.CheckpointTensor(v)
		value, err := v.Value()
		if err != nil {
			t.Fatal(err)
		}
		out[name], err = tensors.CopyFlatData[float32](value)
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// greedy generates n tokens greedily from prompt, not stopping early.
func greedy(t *testing.T, e *engine.Engine, prompt []int, n int) []int {
	t.Helper()
	sm, err := engine.NewSampler(engine.Sampling{Temp: 0})
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	if _, err := e.Generate(prompt, n, sm, nil, func(tok int) { got = append(got, tok) }); err != nil {
		t.Fatal(err)
	}
	return got
}

func loadEngine(t *testing.T, path string, weights quant.Type) *engine.Engine {
	t.Helper()
	backend, err := engine.NewBackend("cpu")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.New()
	if err := layers.SetWeightType(ctx, weights); err != nil {
		t.Fatal(err)
	}
	m, err := gguf.LoadInto(path, backend, ctx)
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(backend, m, ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestExportRoundTrip writes each configuration as F32 GGUF and reads it back: every tensor is
// bit-identical (the query and key rows of a half-layout model permuted as llama.cpp's convert
// does), the configuration is the same but for the layout, and greedy generation picks the
// same tokens.
func TestExportRoundTrip(t *testing.T) {
	for name, cfg := range configs() {
		t.Run(name, func(t *testing.T) {
			e := randomModel(t, cfg, uint64(len(name)))
			path := filepath.Join(t.TempDir(), name+".gguf")
			if err := gguf.Export(path, e.Model, e.Ctx, gguf.ExportOptions{Name: name}); err != nil {
				t.Fatal(err)
			}
			f, err := gguf.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			arch := f.KV[0].Value.V.(string)
			f.Close()
			loaded := loadEngine(t, path, quant.F32)

			// The configuration survives, except that llama reads rotations interleaved.
			got, want := loaded.Model.Config, e.Model.Config
			want.Defaults()
			permuted := arch == "llama" && want.Positional["layout"] == "half"
			if permuted {
				want.Positional = maps(want.Positional, "layout", "interleaved")
			}
			got.Tokenizer, want.Tokenizer = "", ""
			if want.TrainSeqLen == 0 {
				want.TrainSeqLen = got.MaxSeqLen // unknown: the loader takes the context length
			}
			if !sameJSON(got, want) {
				t.Errorf("config after the round trip:\n got %+v\nwant %+v", got, want)
			}

			before, after := weightsOf(t, e.Ctx), weightsOf(t, loaded.Ctx)
			if len(before) != len(after) {
				t.Fatalf("%d tensors before, %d after", len(before), len(after))
			}
			hd := cfg.Dim / cfg.NumHeads
			for n, w := range before {
				if permuted && (strings.HasSuffix(n, "attn.wq.weight") || strings.HasSuffix(n, "attn.wk.weight")) {
					w = gguf.PermuteHalfToInterleaved(w, len(w)/cfg.Dim, cfg.Dim, hd)
				}
				if !slices.Equal(math32bits(w), math32bits(after[n])) {
					t.Errorf("tensor %s differs after the round trip", n)
				}
			}

			prompt := []int{1, 5, 9, 2}
			a, b := greedy(t, e, prompt, 40), greedy(t, loaded, prompt, 40)
			if !slices.Equal(a, b) {
				t.Errorf("greedy tokens differ:\nnative %v\n  gguf %v", a, b)
			}
			// Logits: identical when nothing was permuted; otherwise q·k sums the same products
			// in another order.
			pos := []int{20, 21, 22, 23}
			la, err := e.Forward([][]int{prompt}, [][]int{pos})
			if err != nil {
				t.Fatal(err)
			}
			lb, err := loaded.Forward([][]int{prompt}, [][]int{pos})
			if err != nil {
				t.Fatal(err)
			}
			tol := 0.0
			if permuted {
				tol = 1e-4
			}
			for i := range la[0] {
				for j := range la[0][i] {
					if d := math.Abs(float64(la[0][i][j] - lb[0][i][j])); d > tol*(1+math.Abs(float64(la[0][i][j]))) {
						t.Fatalf("logit [%d][%d]: %v natively, %v from GGUF", i, j, la[0][i][j], lb[0][i][j])
					}
				}
			}
		})
	}
}

// TestRoPELayoutEquivalence is the proof for load.go's choice: a model whose pairs are
// (i, i + d/2), and the same model with each head's query and key rows permuted as llama.cpp's
// convert does run with adjacent pairs (2i, 2i + 1), give the same logits at every position,
// far from zero too, with grouped-query attention.
func TestRoPELayoutEquivalence(t *testing.T) {
	cfg := configs()["llama-half"]
	e := randomModel(t, cfg, 11)
	path := filepath.Join(t.TempDir(), "half.gguf")
	if err := gguf.Export(path, e.Model, e.Ctx, gguf.ExportOptions{}); err != nil {
		t.Fatal(err)
	}
	loaded := loadEngine(t, path, quant.F32)
	if l := loaded.Model.Config.Positional["layout"]; l != "interleaved" {
		t.Fatalf("loaded layout %v", l)
	}
	// The exported rows really are permuted (a no-op permutation would pass trivially).
	if slices.Equal(weightsOf(t, e.Ctx)["layer_0.attn.wq.weight"], weightsOf(t, loaded.Ctx)["layer_0.attn.wq.weight"]) {
		t.Fatal("query rows were not permuted")
	}
	tokens := []int{3, 14, 15, 92, 65, 35, 89, 79}
	for _, start := range []int{0, 13, 50} {
		pos := make([]int, len(tokens))
		for i := range pos {
			pos[i] = start + i
		}
		a, err := e.Forward([][]int{tokens}, [][]int{pos})
		if err != nil {
			t.Fatal(err)
		}
		b, err := loaded.Forward([][]int{tokens}, [][]int{pos})
		if err != nil {
			t.Fatal(err)
		}
		worst := 0.0
		for i := range a[0] {
			for j := range a[0][i] {
				worst = max(worst, math.Abs(float64(a[0][i][j]-b[0][i][j]))/(1+math.Abs(float64(a[0][i][j]))))
			}
		}
		if worst > 1e-5 {
			t.Errorf("positions from %d: logits differ by %g", start, worst)
		}
	}
}

// TestExportQuantized writes Q8_0 and Q4_0 files: matrices are quant.Quantize's bytes, read
// back as exactly their dequantized values; 1-D tensors stay F32; a matrix whose rows are not
// whole blocks is written F16. Kept quantized in memory, the model runs the file's numbers.
func TestExportQuantized(t *testing.T) {
	cfg := configs()["llama-interleaved"]
	cfg.HiddenDim = 80 // ffn_down's rows of 80 are not whole blocks: F16
	e := randomModel(t, cfg, 5)
	before := weightsOf(t, e.Ctx)
	for _, typ := range []quant.Type{quant.Q8_0, quant.Q4_0, quant.F16, quant.BF16} {
		path := filepath.Join(t.TempDir(), typ.String()+".gguf")
		if err := gguf.Export(path, e.Model, e.Ctx, gguf.ExportOptions{Type: typ}); err != nil {
			t.Fatal(err)
		}
		f, err := gguf.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, info := range f.Tensors {
			want := typ
			switch {
			case len(info.Dims) == 1:
				want = quant.F32
			case int(info.Dims[0])%typ.BlockSize() != 0:
				want = quant.F16
			}
			if info.Type != want {
				t.Errorf("%v: tensor %s %v is %v, want %v", typ, info.Name, info.Shape(), info.Type, want)
			}
		}
		if v, _ := f.Get(gguf.KeyFileType); v.V != gguf.FileType(typ) {
			t.Errorf("%v: general.file_type %v", typ, v)
		}
		f.Close()
		loaded := loadEngine(t, path, quant.F32)
		after := weightsOf(t, loaded.Ctx)
		for name, w := range before {
			// What the file holds, dequantized: the loaded weights must be exactly that.
			typ := typ
			switch {
			case strings.Contains(name, "norm"):
				typ = quant.F32 // the only 1-D tensors of this model
			case strings.HasSuffix(name, "ffn.w2.weight") && typ.Quantized():
				typ = quant.F16 // its rows of 80 are not whole blocks
			}
			raw, err := quant.Quantize(typ, w)
			if err != nil {
				t.Fatal(err)
			}
			want := make([]float32, len(w))
			if err := quant.Dequantize(typ, raw, want); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(math32bits(want), math32bits(after[name])) {
				t.Errorf("%v: %s is not its %v dequantized values", typ, name, typ)
			}
		}
		if typ.Quantized() {
			// The same file kept in its own type: greedy tokens agree with the dequantized run
			// on a short horizon (products are summed in another order).
			q := loadEngine(t, path, typ)
			a, b := greedy(t, loaded, []int{1, 2, 3}, 8), greedy(t, q, []int{1, 2, 3}, 8)
			if !slices.Equal(a, b) {
				t.Logf("%v: kept quantized %v, dequantized %v (near ties may differ)", typ, b, a)
			}
		}
	}
}

// stories260KPath finds ../shared/fixtures/stories260K.bin (or ../shared/stories260K.bin)
// above the package directory.
func stories260KPath() string {
	dir, _ := os.Getwd()
	for ; dir != filepath.Dir(dir); dir = filepath.Dir(dir) {
		for _, p := range []string{filepath.Join(dir, "..", "shared", "fixtures", "stories260K.bin"), filepath.Join(dir, "..", "shared", "stories260K.bin")} {
			if _, err := os.Stat(p); err == nil {
				return p
			}
		}
	}
	return ""
}

// TestStories260K exports the llama2.c fixture as F32 GGUF with our writer and checks that its
// tensors are the .bin's, bit for bit, and that greedy generation from BOS picks the same 512
// ids as the .bin (which models/llama2c checks against run.c).
func TestStories260K(t *testing.T) {
	path := stories260KPath()
	if path == "" {
		t.Skip("../shared/fixtures/stories260K.bin is absent (see ../shared/fixtures/README.md)")
	}
	backend, err := engine.NewBackend("cpu")
	if err != nil {
		t.Fatal(err)
	}
	m, ctx, err := llama2c.Load(path, backend)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "stories260K.gguf")
	if err := gguf.Export(out, m, ctx, gguf.ExportOptions{Name: "stories260K"}); err != nil {
		t.Fatal(err)
	}
	loaded := loadEngine(t, out, quant.F32)
	before, after := weightsOf(t, ctx), weightsOf(t, loaded.Ctx)
	for name, w := range before {
		if !slices.Equal(math32bits(w), math32bits(after[name])) {
			t.Errorf("tensor %s differs", name)
		}
	}
	orig, err := engine.Load(path, "cpu", 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 512
	if testing.Short() {
		n = 64
	}
	a, b := greedy(t, orig, []int{1}, n), greedy(t, loaded, []int{1}, n)
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("token %d: the GGUF picks %d, the .bin %d (first %d agree)", i, b[i], a[i], i)
		}
	}
	t.Logf("%d greedy ids agree; first: %v", n, a[:12])
}

// TestLoadRefuses edits a valid file into ones whose metadata and tensors disagree.
func TestLoadRefuses(t *testing.T) {
	e := randomModel(t, configs()["llama-interleaved"], 3)
	path := filepath.Join(t.TempDir(), "ok.gguf")
	if err := gguf.Export(path, e.Model, e.Ctx, gguf.ExportOptions{}); err != nil {
		t.Fatal(err)
	}
	kvs, ts := readAll(t, path)
	setKV := func(k string, v gguf.Value) func([]gguf.KV, []gguf.Tensor) ([]gguf.KV, []gguf.Tensor) {
		return func(kvs []gguf.KV, ts []gguf.Tensor) ([]gguf.KV, []gguf.Tensor) {
			kvs = slices.Clone(kvs)
			for i := range kvs {
				if kvs[i].Key == k {
					kvs[i].Value = v
					return kvs, ts
				}
			}
			return append(kvs, gguf.KV{Key: k, Value: v}), ts
		}
	}
	dropKV := func(k string) func([]gguf.KV, []gguf.Tensor) ([]gguf.KV, []gguf.Tensor) {
		return func(kvs []gguf.KV, ts []gguf.Tensor) ([]gguf.KV, []gguf.Tensor) {
			return slices.DeleteFunc(slices.Clone(kvs), func(kv gguf.KV) bool { return kv.Key == k }), ts
		}
	}
	dropT := func(n string) func([]gguf.KV, []gguf.Tensor) ([]gguf.KV, []gguf.Tensor) {
		return func(kvs []gguf.KV, ts []gguf.Tensor) ([]gguf.KV, []gguf.Tensor) {
			return kvs, slices.DeleteFunc(slices.Clone(ts), func(t gguf.Tensor) bool { return t.Name == n })
		}
	}
	addT := func(n string, shape ...int) func([]gguf.KV, []gguf.Tensor) ([]gguf.KV, []gguf.Tensor) {
		return func(kvs []gguf.KV, ts []gguf.Tensor) ([]gguf.KV, []gguf.Tensor) {
			size := 4
			for _, d := range shape {
				size *= d
			}
			return kvs, append(slices.Clone(ts), gguf.Tensor{Name: n, Shape: shape, Type: quant.F32, Data: make([]byte, size)})
		}
	}
	for _, c := range []struct {
		edit func([]gguf.KV, []gguf.Tensor) ([]gguf.KV, []gguf.Tensor)
		want string
	}{
		{setKV("general.architecture", gguf.String("mamba")), `architecture "mamba" is not supported (supported: llama, qwen2, gpt2)`},
		{dropKV("general.architecture"), "general.architecture is missing"},
		{dropKV("llama.embedding_length"), "llama.embedding_length is missing"},
		{setKV("llama.block_count", gguf.Uint32(1e9)), "llama.block_count is 1000000000 but the file has 21 tensors"},
		{setKV("llama.block_count", gguf.Uint32(3)), "tensor blk.2.attn_k.weight is missing (the metadata implies shape [32 64])"},
		{setKV("llama.block_count", gguf.Uint32(1)), "unexpected tensor blk.1.attn_norm.weight [64]: not part of a llama model with this metadata"},
		{setKV("llama.feed_forward_length", gguf.Uint32(128)), "tensor blk.0.ffn_gate.weight has shape [96 64] in the file but the metadata implies [128 64]"},
		{setKV("llama.embedding_length", gguf.String("64")), `llama.embedding_length is "64" (string); want a non-negative integer`},
		{setKV("llama.rope.dimension_count", gguf.Uint32(8)), "partial rotary is not supported"},
		{setKV("llama.expert_count", gguf.Uint32(8)), "mixture-of-experts models are not supported"},
		{setKV("llama.rope.scaling.type", gguf.String("longrope")), `llama.rope.scaling.type is longrope but the file has no rope_factors_short.weight and rope_factors_long.weight`},
		{setKV("llama.rope.scaling.type", gguf.String("su")), `llama.rope.scaling.type is "su" (supported: none, linear, yarn, longrope)`},
		{setKV("llama.vocab_size", gguf.Uint32(100)), "llama.vocab_size is 100 but token_embd.weight has 96 rows"},
		{addT("rope_freqs.weight", 8), "rope_freqs.weight (per-pair RoPE factors"},
		{addT("blk.0.attn_output.bias", 64), "biases on attn_output only are not supported"},
		{dropT("token_embd.weight"), "tensor token_embd.weight is missing"},
		{dropT("output_norm.weight"), "tensor output_norm.weight is missing (the metadata implies shape [64])"},
	} {
		k, tt := c.edit(kvs, ts)
		var buf bytes.Buffer
		if err := gguf.Encode(&buf, k, tt); err != nil {
			t.Fatal(err)
		}
		bad := filepath.Join(t.TempDir(), "bad.gguf")
		if err := os.WriteFile(bad, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		backend, _ := engine.NewBackend("cpu")
		_, _, err := gguf.Load(bad, backend)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "loading "+bad+": ") || strings.Contains(err.Error(), "\n") {
			t.Errorf("error %v\nwant one line \"loading %s: ...%s...\"", err, bad, c.want)
		}
	}
	// A type llama.cpp has but posformer does not read is refused at open, naming both.
	var buf bytes.Buffer
	gguf.Encode(&buf, kvs, ts)
	data := buf.Bytes()
	i := bytes.Index(data, []byte("blk.0.attn_q.weight"))
	typeAt := i + len("blk.0.attn_q.weight") + 4 + 2*8
	data[typeAt] = 12 // Q4_K
	bad := filepath.Join(t.TempDir(), "q4k.gguf")
	os.WriteFile(bad, data, 0o644)
	backend, _ := engine.NewBackend("cpu")
	if _, _, err := gguf.Load(bad, backend); err == nil || !strings.Contains(err.Error(), `tensor "blk.0.attn_q.weight": type Q4_K, which posformer does not read`) {
		t.Errorf("Q4_K: %v", err)
	}
}

// readAll reads a file's metadata and tensors (with their bytes).
func readAll(t *testing.T, path string) ([]gguf.KV, []gguf.Tensor) {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ts []gguf.Tensor
	for _, info := range f.Tensors {
		data, err := f.ReadTensor(info)
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, gguf.Tensor{Name: info.Name, Shape: info.Shape(), Type: info.Type, Data: data})
	}
	return f.KV, ts
}

func TestExportRefuses(t *testing.T) {
	base := configs()["llama-half"]
	with := func(edit func(c *models.Config)) models.Config {
		c := base
		c.Positional = maps(base.Positional, "", nil)
		edit(&c)
		return c
	}
	for _, c := range []struct {
		cfg  models.Config
		want string
	}{
		{with(func(c *models.Config) { c.Positional = map[string]any{"name": "alibi"} }), `positional scheme "alibi" has no GGUF architecture`},
		{with(func(c *models.Config) { c.Kind = models.Encoder }), "llama.cpp's llama cannot run this model: it needs a decoder"},
		{with(func(c *models.Config) { c.FFN = "gelu" }), "it needs ffn swiglu"},
		{with(func(c *models.Config) { c.Positional["rotary_fraction"] = 0.5 }), "rotary_fraction 1"},
		{with(func(c *models.Config) { c.NoPELayers = []int{1} }), "no nope_layers"},
		{with(func(c *models.Config) {
			c.Positional["rope_scaling"] = map[string]any{"rope_type": "dynamic", "factor": 2.0, "original_max_position_embeddings": 16}
		}), "rope_scaling dynamic cannot be written"},
		{with(func(c *models.Config) {
			c.Positional["rope_scaling"] = map[string]any{"rope_type": "ntk", "factor": 2.0}
		}), "GGUF has no key for ntk"},
		{func() models.Config {
			c := configs()["gpt2"]
			c.FFN = "gelu"
			return c
		}(), "ffn gelu_tanh (llama.cpp's gpt2 uses the tanh GELU)"},
	} {
		e := randomModel(t, c.cfg, 1)
		err := gguf.Export(filepath.Join(t.TempDir(), "x.gguf"), e.Model, e.Ctx, gguf.ExportOptions{})
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("error %v\nwant one line mentioning %q", err, c.want)
		}
	}
	// Nothing is left behind by a refused or failed export.
	dir := t.TempDir()
	e := randomModel(t, configs()["gpt2"], 1)
	e.Model.Config.FFN = "gelu"
	gguf.Export(filepath.Join(dir, "x.gguf"), e.Model, e.Ctx, gguf.ExportOptions{})
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("files left: %v", entries)
	}
}

func math32bits(v []float32) []uint32 {
	out := make([]uint32, len(v))
	for i, x := range v {
		out[i] = math.Float32bits(x)
	}
	return out
}

// maps copies m with key set to v (key "" copies only).
func maps(m map[string]any, key string, v any) map[string]any {
	out := map[string]any{}
	for k, x := range m {
		out[k] = x
	}
	if key != "" {
		out[key] = v
	}
	return out
}

// sameJSON compares two configurations as config.json would store them.
func sameJSON(a, b models.Config) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}
