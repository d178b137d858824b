package hf_test

// Small random checkpoints in each family's exact Hugging Face tensor names and layouts
// (listed here from transformers' modeling files, not from package hf's table) are loaded and
// run; their logits must equal the float64 references of reference_test.go. Weights are
// multiples of 2^-10 with at most 8 significant bits, exact in float32, float16 and bfloat16,
// so all three dtypes describe the same model.

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/posformer/posformer/engine"
	"github.com/posformer/posformer/models/hf"
	"github.com/posformer/posformer/models/safetensors"
)

var (
	hfReadConfig = hf.ReadConfig
	hfIsDir      = hf.IsDir
)

// spec is one tensor of a checkpoint: its name, shape and how to draw it.
type spec struct {
	name  string
	shape []int
	kind  byte // 'w' weight matrix or embedding, 'n' norm scale, 'b' bias or norm shift
}

func specsSize(s spec) int {
	n := 1
	for _, d := range s.shape {
		n *= d
	}
	return n
}

// randomWeights draws every tensor: k·2^-10 for matrices (|k| < 256), 1 + k/128 for norm
// scales (|k| <= 32), k·2^-11 for biases; all exact in the three float types.
func randomWeights(r *rand.Rand, specs []spec) weights {
	w := weights{}
	for _, s := range specs {
		v := make([]float64, specsSize(s))
		for i := range v {
			switch s.kind {
			case 'n':
				v[i] = 1 + float64(r.IntN(65)-32)/128
			case 'b':
				v[i] = float64(r.IntN(511)-255) / 2048
			default:
				v[i] = float64(r.IntN(511)-255) / 1024
			}
		}
		w[s.name] = v
	}
	return w
}

// writeHF writes config.json and the weights as dtype, in one file or in shards listed by an
// index, as transformers' save_pretrained does.
func writeHF(t testing.TB, dir string, config map[string]any, specs []spec, w weights, dtype string, shards int) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := json.MarshalIndent(config, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	groups := make([][]safetensors.Tensor, shards)
	for i, s := range specs {
		v := w[s.name]
		f := make([]float32, len(v))
		for j, x := range v {
			f[j] = float32(x)
		}
		groups[i%shards] = append(groups[i%shards], safetensors.Tensor{Name: s.name, Shape: s.shape, Data: f, DType: dtype})
	}
	meta := map[string]string{"format": "pt"}
	if shards == 1 {
		if err := safetensors.Write(filepath.Join(dir, "model.safetensors"), groups[0], meta); err != nil {
			t.Fatal(err)
		}
		return
	}
	weightMap := map[string]string{}
	for i, g := range groups {
		file := fmt.Sprintf("model-%05d-of-%05d.safetensors", i+1, shards)
		if err := safetensors.Write(filepath.Join(dir, file), g, meta); err != nil {
			t.Fatal(err)
		}
		for _, ts := range g {
			weightMap[ts.Name] = file
		}
	}
	index, _ := json.Marshal(map[string]any{"metadata": map[string]any{"total_size": 0}, "weight_map": weightMap})
	if err := os.WriteFile(filepath.Join(dir, "model.safetensors.index.json"), index, 0o644); err != nil {
		t.Fatal(err)
	}
}

// fixture is one small model of a family.
type fixture struct {
	name   string
	cfg    hfConfig
	config map[string]any
	specs  []spec
	ref    func(w weights, tokens, positions []int) [][]float64
	first  int // position of the first token
}

func llamaFixture(modelType string, tied bool) fixture {
	c := hfConfig{Vocab: 64, Dim: 32, Layers: 2, Heads: 4, KVHeads: 2, Hidden: 48, Eps: 1e-5, RopeTheta: 500}
	return llamaFixtureSized(modelType, tied, c)
}

// llamaFixtureSized is a Llama-family model of the sizes in c.
func llamaFixtureSized(modelType string, tied bool, c hfConfig) fixture {
	c.Tied, c.QKVBias = tied, modelType == "qwen2"
	hd := c.Dim / c.Heads
	specs := []spec{{"model.embed_tokens.weight", []int{c.Vocab, c.Dim}, 'w'}, {"model.norm.weight", []int{c.Dim}, 'n'}}
	if !tied {
		specs = append(specs, spec{"lm_head.weight", []int{c.Vocab, c.Dim}, 'w'})
	}
	for l := range c.Layers {
		p := fmt.Sprintf("model.layers.%d.", l)
		specs = append(specs,
			spec{p + "input_layernorm.weight", []int{c.Dim}, 'n'},
			spec{p + "self_attn.q_proj.weight", []int{c.Heads * hd, c.Dim}, 'w'},
			spec{p + "self_attn.k_proj.weight", []int{c.KVHeads * hd, c.Dim}, 'w'},
			spec{p + "self_attn.v_proj.weight", []int{c.KVHeads * hd, c.Dim}, 'w'},
			spec{p + "self_attn.o_proj.weight", []int{c.Dim, c.Heads * hd}, 'w'},
			spec{p + "post_attention_layernorm.weight", []int{c.Dim}, 'n'},
			spec{p + "mlp.gate_proj.weight", []int{c.Hidden, c.Dim}, 'w'},
			spec{p + "mlp.up_proj.weight", []int{c.Hidden, c.Dim}, 'w'},
			spec{p + "mlp.down_proj.weight", []int{c.Dim, c.Hidden}, 'w'},
		)
		if c.QKVBias {
			specs = append(specs,
				spec{p + "self_attn.q_proj.bias", []int{c.Heads * hd}, 'b'},
				spec{p + "self_attn.k_proj.bias", []int{c.KVHeads * hd}, 'b'},
				spec{p + "self_attn.v_proj.bias", []int{c.KVHeads * hd}, 'b'})
		}
	}
	arch := map[string]string{"llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM", "qwen2": "Qwen2ForCausalLM"}[modelType]
	config := map[string]any{
		"architectures": []string{arch}, "model_type": modelType, "vocab_size": c.Vocab, "hidden_size": c.Dim,
		"intermediate_size": c.Hidden, "num_hidden_layers": c.Layers, "num_attention_heads": c.Heads,
		"num_key_value_heads": c.KVHeads, "hidden_act": "silu", "max_position_embeddings": 256,
		"rms_norm_eps": c.Eps, "rope_theta": c.RopeTheta, "rope_scaling": nil, "tie_word_embeddings": tied,
		"torch_dtype": "bfloat16", "bos_token_id": 1, "eos_token_id": 2, "transformers_version": "4.44.0",
		"attention_dropout": 0.0, "initializer_range": 0.02, "use_cache": true,
	}
	if modelType == "mistral" {
		config["sliding_window"] = nil
	}
	return fixture{
		name: modelType + map[bool]string{true: "-tied", false: "-untied"}[tied], cfg: c, config: config, specs: specs, first: 37,
		ref: func(w weights, tokens, positions []int) [][]float64 { return refLlama(w, c, tokens, positions) },
	}
}

func gpt2Fixture(prefix string) fixture {
	c := hfConfig{Vocab: 64, Dim: 32, Layers: 2, Heads: 4, KVHeads: 4, Hidden: 128, Eps: 1e-5, Tied: true, Prefix: prefix}
	const positions = 16
	specs := []spec{
		{prefix + "wte.weight", []int{c.Vocab, c.Dim}, 'w'}, {prefix + "wpe.weight", []int{positions, c.Dim}, 'w'},
		{prefix + "ln_f.weight", []int{c.Dim}, 'n'}, {prefix + "ln_f.bias", []int{c.Dim}, 'b'},
	}
	for l := range c.Layers {
		p := fmt.Sprintf("%sh.%d.", prefix, l)
		specs = append(specs,
			spec{p + "ln_1.weight", []int{c.Dim}, 'n'}, spec{p + "ln_1.bias", []int{c.Dim}, 'b'},
			spec{p + "attn.c_attn.weight", []int{c.Dim, 3 * c.Dim}, 'w'}, spec{p + "attn.c_attn.bias", []int{3 * c.Dim}, 'b'},
			spec{p + "attn.c_proj.weight", []int{c.Dim, c.Dim}, 'w'}, spec{p + "attn.c_proj.bias", []int{c.Dim}, 'b'},
			spec{p + "ln_2.weight", []int{c.Dim}, 'n'}, spec{p + "ln_2.bias", []int{c.Dim}, 'b'},
			spec{p + "mlp.c_fc.weight", []int{c.Dim, c.Hidden}, 'w'}, spec{p + "mlp.c_fc.bias", []int{c.Hidden}, 'b'},
			spec{p + "mlp.c_proj.weight", []int{c.Hidden, c.Dim}, 'w'}, spec{p + "mlp.c_proj.bias", []int{c.Dim}, 'b'},
			// The causal-mask buffer that older transformers saved: present, and to be skipped.
			spec{p + "attn.bias", []int{1, 1, positions, positions}, 'n'},
		)
	}
	config := map[string]any{
		"architectures": []string{"GPT2LMHeadModel"}, "model_type": "gpt2", "vocab_size": c.Vocab, "n_embd": c.Dim,
		"n_layer": c.Layers, "n_head": c.Heads, "n_inner": nil, "n_positions": positions, "n_ctx": positions,
		"activation_function": "gelu_new", "layer_norm_epsilon": c.Eps, "resid_pdrop": 0.1, "embd_pdrop": 0.1,
		"attn_pdrop": 0.1, "scale_attn_weights": true, "bos_token_id": 50256, "eos_token_id": 50256,
	}
	name := "gpt2"
	if prefix != "" {
		name = "gpt2-" + strings.TrimSuffix(prefix, ".")
	}
	return fixture{
		name: name, cfg: c, config: config, specs: specs,
		ref: func(w weights, tokens, _ []int) [][]float64 { return refGPT2(w, c, tokens) },
	}
}

func bertFixture(tied bool) fixture {
	c := hfConfig{Vocab: 64, Dim: 32, Layers: 2, Heads: 4, KVHeads: 4, Hidden: 64, Eps: 1e-12, Tied: tied}
	const positions, types = 16, 2
	specs := []spec{
		{"bert.embeddings.word_embeddings.weight", []int{c.Vocab, c.Dim}, 'w'},
		{"bert.embeddings.position_embeddings.weight", []int{positions, c.Dim}, 'w'},
		{"bert.embeddings.token_type_embeddings.weight", []int{types, c.Dim}, 'w'},
		{"bert.embeddings.LayerNorm.weight", []int{c.Dim}, 'n'}, {"bert.embeddings.LayerNorm.bias", []int{c.Dim}, 'b'},
		{"cls.predictions.bias", []int{c.Vocab}, 'b'},
		{"cls.predictions.transform.dense.weight", []int{c.Dim, c.Dim}, 'w'},
		{"cls.predictions.transform.dense.bias", []int{c.Dim}, 'b'},
		{"cls.predictions.transform.LayerNorm.weight", []int{c.Dim}, 'n'},
		{"cls.predictions.transform.LayerNorm.bias", []int{c.Dim}, 'b'},
		// BertForPreTraining's next-sentence head and pooler: present, and to be skipped.
		{"bert.pooler.dense.weight", []int{c.Dim, c.Dim}, 'w'}, {"bert.pooler.dense.bias", []int{c.Dim}, 'b'},
		{"cls.seq_relationship.weight", []int{2, c.Dim}, 'w'}, {"cls.seq_relationship.bias", []int{2}, 'b'},
	}
	if !tied {
		specs = append(specs, spec{"cls.predictions.decoder.weight", []int{c.Vocab, c.Dim}, 'w'})
	}
	for l := range c.Layers {
		p := fmt.Sprintf("bert.encoder.layer.%d.", l)
		lin := func(name string, out, in int) {
			specs = append(specs, spec{p + name + ".weight", []int{out, in}, 'w'}, spec{p + name + ".bias", []int{out}, 'b'})
		}
		norm := func(name string) {
			specs = append(specs, spec{p + name + ".weight", []int{c.Dim}, 'n'}, spec{p + name + ".bias", []int{c.Dim}, 'b'})
		}
		lin("attention.self.query", c.Dim, c.Dim)
		lin("attention.self.key", c.Dim, c.Dim)
		lin("attention.self.value", c.Dim, c.Dim)
		lin("attention.output.dense", c.Dim, c.Dim)
		norm("attention.output.LayerNorm")
		lin("intermediate.dense", c.Hidden, c.Dim)
		lin("output.dense", c.Dim, c.Hidden)
		norm("output.LayerNorm")
	}
	config := map[string]any{
		"architectures": []string{"BertForMaskedLM"}, "model_type": "bert", "vocab_size": c.Vocab, "hidden_size": c.Dim,
		"num_hidden_layers": c.Layers, "num_attention_heads": c.Heads, "intermediate_size": c.Hidden,
		"hidden_act": "gelu", "max_position_embeddings": positions, "type_vocab_size": types,
		"layer_norm_eps": c.Eps, "position_embedding_type": "absolute", "pad_token_id": 0,
		"hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1, "tie_word_embeddings": tied,
	}
	return fixture{
		name: "bert" + map[bool]string{true: "", false: "-untied"}[tied], cfg: c, config: config, specs: specs,
		ref: func(w weights, tokens, _ []int) [][]float64 { return refBERT(w, c, tokens) },
	}
}

func allFixtures() []fixture {
	return []fixture{
		llamaFixture("llama", false), llamaFixture("llama", true), llamaFixture("mistral", false), llamaFixture("qwen2", true),
		gpt2Fixture("transformer."), gpt2Fixture(""), bertFixture(true), bertFixture(false),
	}
}

// compare checks engine logits against a float64 reference, relative to the logits' scale,
// and that the reference is not degenerate (so that the comparison could fail).
func compare(t *testing.T, what string, got [][]float32, want [][]float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d rows of logits, want %d", what, len(got), len(want))
	}
	scale, diff := 0.0, 0.0
	var all []float64
	for i := range want {
		for j, w := range want[i] {
			scale = math.Max(scale, math.Abs(w))
			diff = math.Max(diff, math.Abs(float64(got[i][j])-w))
			all = append(all, w)
		}
	}
	slices.Sort(all)
	if spread := all[len(all)-1] - all[0]; spread < 0.5 {
		t.Fatalf("%s: reference logits span only %g: the test model is degenerate", what, spread)
	}
	if diff > 1e-4*math.Max(1, scale) {
		t.Errorf("%s: logits differ from the reference by %g (scale %g)", what, diff, scale)
	} else {
		t.Logf("%s: max |engine - reference| = %.2g (logits up to %.3g)", what, diff, scale)
	}
}

func tokensAndPositions(r *rand.Rand, vocab, first, n int) ([]int, []int) {
	tokens, positions := make([]int, n), make([]int, n)
	for i := range tokens {
		tokens[i] = r.IntN(vocab)
		positions[i] = first + i
	}
	return tokens, positions
}

// TestFamiliesMatchReference: every family, in float32, float16 and bfloat16, one file and
// three shards, loads and gives the reference's logits.
func TestFamiliesMatchReference(t *testing.T) {
	layouts := []struct {
		dtype  string
		shards int
	}{{"F32", 1}, {"F16", 3}, {"BF16", 1}, {"F32", 3}, {"F16", 1}, {"BF16", 3}}
	if testing.Short() {
		layouts = layouts[:3]
	}
	for fi, fx := range allFixtures() {
		r := rand.New(rand.NewPCG(uint64(fi), 7))
		w := randomWeights(r, fx.specs)
		tokens, positions := tokensAndPositions(r, fx.cfg.Vocab, fx.first, 9)
		want := fx.ref(w, tokens, positions)
		for _, l := range layouts {
			what := fmt.Sprintf("%s %s %d shard(s)", fx.name, l.dtype, l.shards)
			dir := filepath.Join(t.TempDir(), "model")
			writeHF(t, dir, fx.config, fx.specs, w, l.dtype, l.shards)
			e, err := engine.Load(dir, "", 0)
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			got, err := e.Forward([][]int{tokens}, [][]int{positions})
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			compare(t, what, got[0], want)
		}
	}
}

// Cached decoding of a Hugging Face Llama and GPT-2 (prefill, then one token at a time)
// reproduces the reference at every step.
func TestCachedDecodingMatchesReference(t *testing.T) {
	for fi, fx := range []fixture{llamaFixture("llama", false), gpt2Fixture("transformer.")} {
		r := rand.New(rand.NewPCG(uint64(fi), 8))
		w := randomWeights(r, fx.specs)
		tokens, positions := tokensAndPositions(r, fx.cfg.Vocab, 0, 8)
		want := fx.ref(w, tokens, positions)
		dir := filepath.Join(t.TempDir(), "model")
		writeHF(t, dir, fx.config, fx.specs, w, "BF16", 1)
		e, err := engine.Load(dir, "", 16)
		if err != nil {
			t.Fatal(err)
		}
		s := e.NewSession(1)
		var got [][]float32
		step, err := s.Append([][]int{tokens[:3]}, [][]int{positions[:3]})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, step[0]...)
		for i := 3; i < len(tokens); i++ {
			step, err := s.Append([][]int{{tokens[i]}}, [][]int{{positions[i]}})
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, step[0]...)
		}
		compare(t, fx.name+" cached", got, want)
	}
}

// TestConfigTranslation checks what config.json becomes, field by field.
func TestConfigTranslation(t *testing.T) {
	dir := t.TempDir()
	fx := llamaFixture("mistral", true)
	fx.config["max_position_embeddings"] = 32768
	fx.config["sliding_window"] = 1024
	fx.config["rope_theta"] = 1e6
	writeHF(t, dir, fx.config, fx.specs[:1], randomWeights(rand.New(rand.NewPCG(1, 1)), fx.specs[:1]), "F32", 1)
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := hfReadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.NumKVHeads != 2 || cfg.HiddenDim != 48 || cfg.FFN != "swiglu" || cfg.Norm != "rmsnorm" || !cfg.TieEmbeddings || cfg.Bias {
		t.Errorf("llama fields: %+v", cfg)
	}
	if cfg.MaxSeqLen != 1024 {
		t.Errorf("mistral with sliding_window 1024: max_seq_len %d, want the window", cfg.MaxSeqLen)
	}
	if cfg.Positional["name"] != "rope" || cfg.Positional["layout"] != "half" || cfg.Positional["base"] != 1e6 {
		t.Errorf("positional %v, want rope half base 1e6", cfg.Positional)
	}
	if cfg.Tokenizer != "tokenizer.json" {
		t.Errorf("tokenizer %q, want tokenizer.json", cfg.Tokenizer)
	}

	fx = llamaFixture("llama", false)
	fx.config["max_position_embeddings"] = 131072
	writeHF(t, dir, fx.config, fx.specs[:1], randomWeights(rand.New(rand.NewPCG(1, 1)), fx.specs[:1]), "F32", 1)
	if cfg, err := hfReadConfig(dir); err != nil || cfg.MaxSeqLen != 4096 {
		t.Errorf("max_position_embeddings 131072: max_seq_len %v (%v), want the 4096 cap", cfg, err)
	}

	g := gpt2Fixture("")
	writeHF(t, dir, g.config, g.specs[:1], randomWeights(rand.New(rand.NewPCG(1, 1)), g.specs[:1]), "F32", 1)
	cfg, err = hfReadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.HiddenDim != 128 || cfg.FFN != "gelu_tanh" || !cfg.Bias || cfg.Positional["name"] != "learned" || cfg.Positional["max_positions"] != 16 || cfg.MaxSeqLen != 16 {
		t.Errorf("gpt2 fields: %+v", cfg)
	}
	b := bertFixture(true)
	writeHF(t, dir, b.config, b.specs[:1], randomWeights(rand.New(rand.NewPCG(1, 1)), b.specs[:1]), "F32", 1)
	cfg, err = hfReadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Kind != "encoder" || cfg.NormPosition != "post" || !cfg.EmbedNorm || cfg.TokenTypes != 2 || !cfg.HeadTransform || !cfg.HeadBias || cfg.FFN != "gelu" || cfg.NormEps != 1e-12 {
		t.Errorf("bert fields: %+v", cfg)
	}
}

// rope_scaling is handed to the rope scheme as HF wrote it.
func TestRopeScalingPassedThrough(t *testing.T) {
	dir := t.TempDir()
	fx := llamaFixture("llama", true)
	scaling := map[string]any{"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 128.0}
	fx.config["rope_scaling"] = scaling
	writeHF(t, dir, fx.config, fx.specs[:1], randomWeights(rand.New(rand.NewPCG(1, 1)), fx.specs[:1]), "F32", 1)
	cfg, err := hfReadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(cfg.Positional["rope_scaling"])
	want, _ := json.Marshal(scaling)
	if string(got) != string(want) {
		t.Errorf("rope_scaling %s, want %s", got, want)
	}

	// And it acts: linear scaling (old-style "type" key) matches the reference's θ_i/factor.
	fx = llamaFixture("llama", false)
	fx.cfg.RopeLinear = 4
	fx.config["rope_scaling"] = map[string]any{"type": "linear", "factor": 4.0}
	r := rand.New(rand.NewPCG(5, 5))
	w := randomWeights(r, fx.specs)
	tokens, positions := tokensAndPositions(r, fx.cfg.Vocab, 200, 9)
	dir = filepath.Join(t.TempDir(), "m")
	writeHF(t, dir, fx.config, fx.specs, w, "F32", 1)
	e, err := engine.Load(dir, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	logits, err := e.Forward([][]int{tokens}, [][]int{positions})
	if err != nil {
		t.Fatal(err)
	}
	compare(t, "llama with linear rope_scaling", logits[0], refLlama(w, fx.cfg, tokens, positions))
	fx.cfg.RopeLinear = 0
	unscaled := refLlama(w, fx.cfg, tokens, positions)
	if d := math.Abs(float64(logits[0][8][0]) - unscaled[8][0]); d < 1e-3 {
		t.Errorf("linear scaling changed the last logit by only %g: it did not act", d)
	}
}

// Errors are one line, name the tensor or field, and say what was expected.
func TestLoadErrors(t *testing.T) {
	base := llamaFixture("llama", false)
	w := randomWeights(rand.New(rand.NewPCG(3, 3)), base.specs)
	cases := []struct {
		name  string
		edit  func(dir string, config map[string]any, specs []spec, w weights) ([]spec, weights)
		wants []string
	}{
		{"missing tensor", func(_ string, _ map[string]any, specs []spec, w weights) ([]spec, weights) {
			return slices.DeleteFunc(slices.Clone(specs), func(s spec) bool { return s.name == "model.layers.1.mlp.up_proj.weight" }), w
		}, []string{"model.layers.1.mlp.up_proj.weight", "missing", "[48 32]"}},
		{"shape disagrees with config.json", func(_ string, c map[string]any, specs []spec, w weights) ([]spec, weights) {
			c["intermediate_size"] = 40
			return specs, w
		}, []string{"model.layers.0.mlp.gate_proj.weight", "[48 32]", "[40 32]", "config.json"}},
		{"unsupported model_type", func(_ string, c map[string]any, specs []spec, w weights) ([]spec, weights) {
			c["model_type"] = "t5"
			return specs, w
		}, []string{`"t5"`, "supported: bert, gpt2, llama, mistral, phi3, qwen2"}},
		{"NaN weight", func(_ string, _ map[string]any, specs []spec, w weights) ([]spec, weights) {
			nw := weights{}
			for k, v := range w {
				nw[k] = v
			}
			bad := slices.Clone(w["model.layers.0.self_attn.k_proj.weight"])
			bad[17] = math.NaN()
			nw["model.layers.0.self_attn.k_proj.weight"] = bad
			return specs, nw
		}, []string{"model.layers.0.self_attn.k_proj.weight", "NaN", "element 17"}},
		{"unexpected tensor", func(_ string, _ map[string]any, specs []spec, w weights) ([]spec, weights) {
			extra := spec{"model.layers.2.self_attn.q_proj.weight", []int{32, 32}, 'w'}
			nw := weights{extra.name: make([]float64, 32*32)}
			for k, v := range w {
				nw[k] = v
			}
			return append(slices.Clone(specs), extra), nw
		}, []string{"unexpected tensor model.layers.2.self_attn.q_proj.weight", "num_hidden_layers"}},
		{"config larger than its weights", func(_ string, c map[string]any, specs []spec, w weights) ([]spec, weights) {
			c["num_hidden_layers"] = 1_000_000_000 // building this graph would not end
			return specs, w
		}, []string{"1000000000 layers", "does not describe this checkpoint"}},
		{"missing field", func(_ string, c map[string]any, specs []spec, w weights) ([]spec, weights) {
			delete(c, "hidden_size")
			return specs, w
		}, []string{"hidden_size is missing"}},
		{"unsupported activation", func(_ string, c map[string]any, specs []spec, w weights) ([]spec, weights) {
			c["hidden_act"] = "gelu"
			return specs, w
		}, []string{`hidden_act "gelu"`, "silu"}},
	}
	for _, c := range cases {
		dir := filepath.Join(t.TempDir(), "m")
		config := map[string]any{}
		for k, v := range base.config {
			config[k] = v
		}
		specs, ww := c.edit(dir, config, base.specs, w)
		writeHF(t, dir, config, specs, ww, "F32", 1)
		_, err := engine.Load(dir, "", 0)
		checkErr(t, c.name, err, c.wants...)
	}

	// Files: no weights, a truncated file, an index naming a tensor its shard lacks.
	dir := filepath.Join(t.TempDir(), "m")
	writeHF(t, dir, base.config, base.specs, w, "F32", 1)
	os.Remove(filepath.Join(dir, "model.safetensors"))
	_, err := engine.Load(dir, "", 0)
	checkErr(t, "no weights", err, "no model.safetensors or model.safetensors.index.json")

	dir = filepath.Join(t.TempDir(), "m")
	writeHF(t, dir, base.config, base.specs, w, "F32", 1)
	path := filepath.Join(dir, "model.safetensors")
	data, _ := os.ReadFile(path)
	os.WriteFile(path, data[:len(data)-100], 0o644)
	_, err = engine.Load(dir, "", 0)
	checkErr(t, "truncated", err, "truncated")

	dir = filepath.Join(t.TempDir(), "m")
	writeHF(t, dir, base.config, base.specs, w, "F32", 2)
	index := filepath.Join(dir, "model.safetensors.index.json")
	var idx map[string]map[string]any
	data, _ = os.ReadFile(index)
	json.Unmarshal(data, &idx)
	idx["weight_map"]["model.layers.9.mlp.up_proj.weight"] = "model-00001-of-00002.safetensors"
	data, _ = json.Marshal(idx)
	os.WriteFile(index, data, 0o644)
	_, err = engine.Load(dir, "", 0)
	checkErr(t, "index", err, "model.layers.9.mlp.up_proj.weight", "model-00001-of-00002.safetensors")

	idx["weight_map"]["model.layers.9.mlp.up_proj.weight"] = "../elsewhere.safetensors"
	data, _ = json.Marshal(idx)
	os.WriteFile(index, data, 0o644)
	_, err = engine.Load(dir, "", 0)
	checkErr(t, "index escaping the directory", err, "../elsewhere.safetensors", "file name in the model directory")
}

func checkErr(t *testing.T, what string, err error, wants ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: loaded without error", what)
		return
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") {
		t.Errorf("%s: error is not one line: %q", what, msg)
	}
	for _, w := range wants {
		if !strings.Contains(msg, w) {
			t.Errorf("%s: error %q does not mention %q", what, msg, w)
		}
	}
}

// IsDir tells Hugging Face directories from posformer checkpoints.
func TestIsDir(t *testing.T) {
	dir := t.TempDir()
	fx := gpt2Fixture("")
	writeHF(t, dir, fx.config, fx.specs, randomWeights(rand.New(rand.NewPCG(1, 1)), fx.specs), "F32", 1)
	if !hfIsDir(dir) {
		t.Errorf("a config.json with model_type is a Hugging Face directory")
	}
	for _, own := range []string{"../../weights/rope-decoder", "../../weights/sinusoidal-encoder", t.TempDir()} {
		if hfIsDir(own) {
			t.Errorf("%s taken for a Hugging Face directory", own)
		}
	}
}
