package hf_test

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/posformer/posformer/engine"
	"github.com/posformer/posformer/models"
	"github.com/posformer/posformer/positional"
)

// phi3Config is a Phi-3-shaped config.json: head dim 8 (four rotary pairs), LongRoPE with the
// original context at the top level and no factor, as Phi-3-mini-128k writes it.
func phi3Config(scaling map[string]any) map[string]any {
	return map[string]any{
		"architectures": []string{"Phi3ForCausalLM"}, "model_type": "phi3", "vocab_size": 64, "hidden_size": 16,
		"intermediate_size": 24, "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 2,
		"hidden_act": "silu", "max_position_embeddings": 64, "original_max_position_embeddings": 16,
		"rms_norm_eps": 1e-5, "rope_theta": 10000.0, "rope_scaling": scaling, "sliding_window": 63,
		"tie_word_embeddings": false, "torch_dtype": "bfloat16",
	}
}

// The LongRoPE of a Phi-3 config.json: s = 64/16 = 4, attention factor √(1 + ln 4 / ln 16) = √1.5,
// inv_freq_i = 1 / (λ_i · 10000^(2i/8)) with the short factors up to L = 16 and the long ones
// past it; an attention_factor in the block replaces the default, and "su" (the first Phi-3
// releases' name) reads as longrope.
func TestPhi3LongRoPEConfig(t *testing.T) {
	short, long := []any{1.0, 2.0, 4.0, 8.0}, []any{2.0, 4.0, 8.0, 16.0}
	for _, c := range []struct {
		scaling map[string]any
		attn    float64
	}{
		{map[string]any{"type": "longrope", "short_factor": short, "long_factor": long}, math.Sqrt(1.5)},
		{map[string]any{"rope_type": "longrope", "short_factor": short, "long_factor": long, "attention_factor": 1.1}, 1.1},
		{map[string]any{"type": "su", "short_factor": short, "long_factor": long}, math.Sqrt(1.5)},
	} {
		dir := t.TempDir()
		writeHF(t, dir, phi3Config(c.scaling), nil, nil, "F32", 1)
		cfg, err := hfReadConfig(dir)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.MaxSeqLen != 63 {
			t.Errorf("context %d, want the sliding window 63", cfg.MaxSeqLen)
		}
		m, err := models.New(*cfg)
		if err != nil {
			t.Fatal(err)
		}
		l, ok := m.Scheme.(*positional.LongRoPE)
		if !ok {
			t.Fatalf("%v: scheme %T, want LongRoPE", c.scaling, m.Scheme)
		}
		if s := l.RoPE.Scaling; s.Factor != 4 || s.OrigLen != 16 {
			t.Errorf("%v: factor %g, original context %d; want 4 and 16", c.scaling, s.Factor, s.OrigLen)
		}
		if a := l.AttentionFactor(); math.Abs(a-c.attn) > 1e-12 {
			t.Errorf("%v: attention factor %.15g, want %.15g", c.scaling, a, c.attn)
		}
		for _, want := range []struct {
			n    int
			freq []float64
		}{
			{16, []float64{1, 0.05, 0.0025, 0.000125}},      // 1/(1·1), 1/(2·10), 1/(4·100), 1/(8·1000)
			{17, []float64{0.5, 0.025, 0.00125, 0.0000625}}, // the long factors, twice the short
		} {
			got := l.InvFreqAt(want.n)
			for i := range want.freq {
				if math.Abs(got[i]-want.freq[i]) > 1e-12*want.freq[i] {
					t.Errorf("%v: inv_freq[%d] at length %d is %g, want %g", c.scaling, i, want.n, got[i], want.freq[i])
				}
			}
		}
	}
}

// A Phi-3 checkpoint (q, k, v fused in qkv_proj; gate then up in gate_up_proj) gives the logits
// of the same weights unfused as a Llama, the reference's; grouped-query Phi-3 is refused.
func TestPhi3FusedTensors(t *testing.T) {
	fx := llamaFixtureSized("llama", false, hfConfig{Vocab: 64, Dim: 32, Layers: 2, Heads: 4, KVHeads: 4, Hidden: 48, Eps: 1e-5, RopeTheta: 500})
	r := rand.New(rand.NewPCG(9, 9))
	w := randomWeights(r, fx.specs)
	tokens, positions := tokensAndPositions(r, fx.cfg.Vocab, 3, 9)
	var specs []spec
	fused := weights{}
	for _, s := range fx.specs {
		switch {
		case strings.HasSuffix(s.name, "k_proj.weight"), strings.HasSuffix(s.name, "v_proj.weight"), strings.HasSuffix(s.name, "up_proj.weight"):
			continue // fused below
		case strings.HasSuffix(s.name, "q_proj.weight"):
			p := strings.TrimSuffix(s.name, "q_proj.weight")
			name := p + "qkv_proj.weight"
			fused[name] = append(append(append([]float64{}, w[s.name]...), w[p+"k_proj.weight"]...), w[p+"v_proj.weight"]...)
			specs = append(specs, spec{name, []int{3 * s.shape[0], s.shape[1]}, 'w'})
		case strings.HasSuffix(s.name, "gate_proj.weight"):
			p := strings.TrimSuffix(s.name, "gate_proj.weight")
			name := p + "gate_up_proj.weight"
			fused[name] = append(append([]float64{}, w[s.name]...), w[p+"up_proj.weight"]...)
			specs = append(specs, spec{name, []int{2 * s.shape[0], s.shape[1]}, 'w'})
		default:
			fused[s.name] = w[s.name]
			specs = append(specs, s)
		}
	}
	config := fx.config
	config["model_type"], config["architectures"] = "phi3", []string{"Phi3ForCausalLM"}
	dir := filepath.Join(t.TempDir(), "phi3")
	writeHF(t, dir, config, specs, fused, "F32", 1)
	e, err := engine.Load(dir, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.Forward([][]int{tokens}, [][]int{positions})
	if err != nil {
		t.Fatal(err)
	}
	compare(t, "phi3", got[0], refLlama(w, fx.cfg, tokens, positions))

	config["num_key_value_heads"] = 2
	writeHF(t, dir, config, specs, fused, "F32", 1)
	if _, err := hfReadConfig(dir); err == nil || !strings.Contains(err.Error(), "qkv_proj in equal parts") {
		t.Errorf("grouped-query Phi-3: %v", err)
	}
}
