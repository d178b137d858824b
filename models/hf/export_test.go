package hf_test

// Round trips: a model built natively with random weights, exported in Hugging Face layout
// and loaded back, gives bit-identical logits; and the exported tensors, read by the float64
// references under their Hugging Face names, give the same logits too (so the export is the
// layout transformers reads, not merely one that our loader inverts).

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/posformer/posformer/engine"
	"github.com/posformer/posformer/models"
	"github.com/posformer/posformer/models/hf"
	"github.com/posformer/posformer/models/safetensors"
)

// nativeModels are posformer configurations of each family's architecture.
func nativeModels() []struct {
	name string
	cfg  models.Config
	ref  func(w weights, tokens, positions []int) [][]float64
} {
	llama := models.Config{Kind: models.Decoder, VocabSize: 64, Dim: 32, NumLayers: 2, NumHeads: 4, NumKVHeads: 2, HiddenDim: 48,
		FFN: "swiglu", Norm: "rmsnorm", NormEps: 1e-5, MaxSeqLen: 64, Positional: map[string]any{"name": "rope", "base": 500.0}}
	qwen := llama
	qwen.QKVBias, qwen.TieEmbeddings = true, true
	gpt := models.Config{Kind: models.Decoder, VocabSize: 64, Dim: 32, NumLayers: 2, NumHeads: 4, HiddenDim: 96, FFN: "gelu_tanh",
		Norm: "layernorm", NormEps: 1e-5, Bias: true, TieEmbeddings: true, MaxSeqLen: 16,
		Positional: map[string]any{"name": "learned", "max_positions": 16}}
	bert := models.Config{Kind: models.Encoder, VocabSize: 64, Dim: 32, NumLayers: 2, NumHeads: 4, HiddenDim: 64, FFN: "gelu",
		Norm: "layernorm", NormPosition: "post", NormEps: 1e-12, Bias: true, TieEmbeddings: true, MaxSeqLen: 16,
		TokenTypes: 2, EmbedNorm: true, HeadTransform: true, HeadBias: true,
		Positional: map[string]any{"name": "learned", "max_positions": 16}}
	hc := func(c models.Config) hfConfig {
		c.Defaults() // n_kv_heads 0 means n_heads
		return hfConfig{Vocab: c.VocabSize, Dim: c.Dim, Layers: c.NumLayers, Heads: c.NumHeads, KVHeads: c.NumKVHeads,
			Hidden: c.HiddenDim, Eps: c.NormEps, RopeTheta: 500, Tied: c.TieEmbeddings, QKVBias: c.QKVBias, Prefix: "transformer."}
	}
	return []struct {
		name string
		cfg  models.Config
		ref  func(w weights, tokens, positions []int) [][]float64
	}{
		{"llama", llama, func(w weights, tok, pos []int) [][]float64 { return refLlama(w, hc(llama), tok, pos) }},
		{"qwen2", qwen, func(w weights, tok, pos []int) [][]float64 { return refLlama(w, hc(qwen), tok, pos) }},
		{"gpt2", gpt, func(w weights, tok, _ []int) [][]float64 { return refGPT2(w, hc(gpt), tok) }},
		{"bert", bert, func(w weights, tok, _ []int) [][]float64 { return refBERT(w, hc(bert), tok) }},
	}
}

// randomize replaces every variable (biases and norms included, which start at 0 and 1) by
// random values, so that a misplaced tensor shows.
func randomize(t *testing.T, r *rand.Rand, ctx *context.Context) {
	t.Helper()
	n := 0
	for v := range ctx.IterVariables() {
		data := make([]float32, v.Shape().Size())
		for i := range data {
			data[i] = float32(r.NormFloat64() * 0.2)
		}
		if strings.Contains(v.Scope(), "norm") && v.Name() == "weight" {
			for i := range data {
				data[i] += 1
			}
		}
		v.SetValue(tensors.FromFlatDataAndDimensions(data, v.Shape().Dimensions...))
		n++
	}
	if n == 0 {
		t.Fatal("no variables to randomize")
	}
}

// readHF reads every tensor of an exported directory by its Hugging Face name.
func readHF(t *testing.T, dir string) weights {
	t.Helper()
	w := weights{}
	files, _ := filepath.Glob(filepath.Join(dir, "*.safetensors"))
	for _, path := range files {
		f, err := safetensors.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, info := range f.Infos() {
			v, err := f.ReadFloat32(info.Name)
			if err != nil {
				t.Fatal(err)
			}
			w[info.Name] = make([]float64, len(v))
			for i, x := range v {
				w[info.Name][i] = float64(x)
			}
		}
		f.Close()
	}
	return w
}

func TestExportRoundTrip(t *testing.T) {
	backend, err := engine.NewBackend("")
	if err != nil {
		t.Fatal(err)
	}
	for i, nm := range nativeModels() {
		r := rand.New(rand.NewPCG(uint64(i), 21))
		m, err := models.New(nm.cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.New()
		ctx.SetParam(context.ParamInitialSeed, int64(1)) // the same weights every run
		e, err := engine.New(backend, m, ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		tokens, positions := tokensAndPositions(r, nm.cfg.VocabSize, 0, 9)
		if nm.cfg.SchemeName() == "rope" {
			for j := range positions {
				positions[j] += 20
			}
		}
		if _, err := e.Forward([][]int{tokens}, [][]int{positions}); err != nil { // creates the variables
			t.Fatal(err)
		}
		randomize(t, r, e.Ctx)
		native, err := e.Forward([][]int{tokens}, [][]int{positions})
		if err != nil {
			t.Fatal(err)
		}
		for _, opts := range []hf.ExportOptions{{}, {ShardBytes: 20000}, {DType: "BF16"}} {
			what := fmt.Sprintf("%s exported %+v", nm.name, opts)
			dir := filepath.Join(t.TempDir(), "hf")
			if err := hf.Export(dir, e.Model, e.Ctx, opts); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if opts.ShardBytes > 0 {
				shards, _ := filepath.Glob(filepath.Join(dir, "model-*-of-*.safetensors"))
				if len(shards) < 2 {
					t.Errorf("%s: %d shards, want several", what, len(shards))
				}
				if _, err := os.Stat(filepath.Join(dir, "model.safetensors.index.json")); err != nil {
					t.Errorf("%s: no index: %v", what, err)
				}
			}
			loaded, err := engine.Load(dir, "", 0)
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			got, err := loaded.Forward([][]int{tokens}, [][]int{positions})
			if err != nil {
				t.Fatal(err)
			}
			if opts.DType == "" {
				for j := range got[0] {
					for k := range got[0][j] {
						if got[0][j][k] != native[0][j][k] {
							t.Fatalf("%s: logit [%d][%d] = %v after the round trip, natively %v", what, j, k, got[0][j][k], native[0][j][k])
						}
					}
				}
			}
			compare(t, what+" vs reference", got[0], nm.ref(readHF(t, dir), tokens, positions))
		}
	}
}

func TestExportRefuses(t *testing.T) {
	backend, _ := engine.NewBackend("")
	for _, c := range []struct {
		cfg  models.Config
		want string
	}{
		{models.Config{Kind: models.Decoder, VocabSize: 8, Dim: 8, NumLayers: 1, NumHeads: 2, HiddenDim: 8, MaxSeqLen: 8,
			Positional: map[string]any{"name": "alibi"}}, `scheme "alibi"`},
		{models.Config{Kind: models.Decoder, VocabSize: 8, Dim: 8, NumLayers: 1, NumHeads: 2, HiddenDim: 8, MaxSeqLen: 8,
			Positional: map[string]any{"name": "rope", "layout": "interleaved"}}, "rope layout half"},
		{models.Config{Kind: models.Decoder, VocabSize: 8, Dim: 8, NumLayers: 1, NumHeads: 2, HiddenDim: 8, MaxSeqLen: 8, FFN: "gelu",
			Positional: map[string]any{"name": "learned", "max_positions": 8}}, "pre-norm layernorm"},
	} {
		m, err := models.New(c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		e, _ := engine.New(backend, m, context.New(), 0)
		e.Forward([][]int{{1}}, [][]int{{0}})
		err = hf.Export(t.TempDir(), e.Model, e.Ctx, hf.ExportOptions{})
		checkErr(t, c.want, err, c.want)
	}
}
