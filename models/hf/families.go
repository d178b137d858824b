package hf

// The three families: how each config.json translates into a models.Config (field names of
// transformers' configuration classes), and which tensors of a checkpoint we knowingly leave
// out. The tensors' names, shapes and layouts are data shared with GGUF, in models/families:
//
//	Llama  RMSNorm, SwiGLU (down(silu(gate x) · up x)), RoPE pairs (i, i + head_dim/2)
//	       ("rotate_half").
//	GPT-2  Pre-norm LayerNorm, gelu_new (tanh form), lm_head tied to wte.
//	BERT   Post-norm blocks, exact GELU, embeddings summed then normalized; the decoder tied
//	       to word_embeddings.

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/posformer/posformer/models"
	"github.com/posformer/posformer/models/families"
)

// family is one model family of transformers.
type family struct {
	name  string   // for messages: the causal-LM or masked-LM class
	types []string // model_type values it reads
	archs []string // architectures values, for configs without model_type
	// config translates config.json; problems go to r's error list.
	config func(r *rawConfig) (models.Config, error)
	// prefix is what the checkpoint puts before the base model's tensor names.
	prefix func(ck *checkpoint) string
	// tensors names and lays out our tensors in the checkpoint (after prefix).
	tensors *families.Family
	// unused reports checkpoint tensors (prefix removed) that we knowingly leave out.
	unused func(c models.Config, name string) bool
	// export is config.json for a posformer model of this family, or why it is not one.
	export func(c models.Config) (map[string]any, error)
}

var known = []*family{llama, phi3, gpt2, bert}

// familyOf picks the family from model_type, or from architectures when it is absent.
func familyOf(r rawConfig) (*family, error) {
	var supported []string
	for _, f := range known {
		supported = append(supported, f.types...)
	}
	sort.Strings(supported)
	if mt, ok := r.m["model_type"].(string); ok {
		for _, f := range known {
			if slices.Contains(f.types, mt) {
				return f, nil
			}
		}
		return nil, fmt.Errorf("model_type %q is not supported (supported: %s)", mt, strings.Join(supported, ", "))
	}
	if archs, ok := r.m["architectures"].([]any); ok && len(archs) > 0 {
		for _, f := range known {
			for _, a := range archs {
				if s, ok := a.(string); ok && slices.Contains(f.archs, s) {
					return f, nil
				}
			}
		}
		return nil, fmt.Errorf("architectures %v are not supported (supported model types: %s)", archs, strings.Join(supported, ", "))
	}
	return nil, fmt.Errorf("no model_type or architectures: not a Hugging Face model config")
}

// dims is shorthand for a shape.
// The families' config.json field names differ; these are posformer's view of the sizes.
func minContext(n int) int { return min(n, MaxDefaultContext) }

var layerIndex = regexp.MustCompile(`\.[0-9]+\.`)

var llama = &family{
	name:    "LlamaForCausalLM",
	types:   []string{"llama", "mistral", "qwen2"},
	archs:   []string{"LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM"},
	tensors: families.Llama,
	config: func(r *rawConfig) (models.Config, error) {
		mt := r.String("model_type", "llama")
		heads := r.Int("num_attention_heads", -1)
		kv := heads
		if r.has("num_key_value_heads") {
			kv = r.Int("num_key_value_heads", heads)
		}
		c := models.Config{
			Kind: models.Decoder, VocabSize: r.Int("vocab_size", -1), Dim: r.Int("hidden_size", -1),
			NumLayers: r.Int("num_hidden_layers", -1), NumHeads: heads, NumKVHeads: kv,
			HiddenDim: r.Int("intermediate_size", -1), FFN: "swiglu", Norm: "rmsnorm",
			NormEps: r.NormEps("rms_norm_eps", 1e-6), TieEmbeddings: r.Bool("tie_word_embeddings", false),
		}
		if act := r.String("hidden_act", "silu"); act != "silu" {
			r.Errorf("hidden_act %q is not supported (Llama-style models use silu)", act)
		}
		if heads > 0 && r.has("head_dim") && r.Int("head_dim", 0) != c.Dim/heads {
			r.Errorf("head_dim %d differs from hidden_size/num_attention_heads = %d, which posformer assumes", r.Int("head_dim", 0), c.Dim/heads)
		}
		attnBias, mlpBias := r.Bool("attention_bias", false), r.Bool("mlp_bias", false)
		switch {
		case mt == "qwen2":
			c.QKVBias = true // Qwen2Attention: q, k, v with bias, o_proj without
			if attnBias || mlpBias {
				r.Errorf("attention_bias/mlp_bias are not used by qwen2")
			}
		case attnBias && mlpBias:
			c.Bias = true
		case attnBias || mlpBias:
			r.Errorf("attention_bias %v with mlp_bias %v is not supported (both or neither)", attnBias, mlpBias)
		}
		maxPos := r.Int("max_position_embeddings", 2048)
		c.MaxSeqLen = minContext(maxPos)
		// HF's dynamic NTK and YaRN take max_position_embeddings as the original context
		// when rope_scaling names none.
		c.TrainSeqLen = maxPos
		// Mistral and Qwen2 may restrict attention to a sliding window, which posformer's
		// attention does not: the outputs agree up to the window, so that is the default context.
		window := 0
		if mt == "mistral" || (mt == "qwen2" && r.Bool("use_sliding_window", false)) {
			window = r.Int("sliding_window", 0)
		}
		if window > 0 && window < c.MaxSeqLen {
			c.MaxSeqLen = window
		}
		pe := map[string]any{"name": "rope", "layout": "half", "base": r.Float("rope_theta", 10000)}
		if block, ok := r.m["rope_scaling"].(map[string]any); ok {
			pe["rope_scaling"] = longRoPEBlock(r, block, maxPos)
		} else if r.has("rope_scaling") {
			pe["rope_scaling"] = r.m["rope_scaling"]
		}
		// transformers v5 moves theta and scaling into one rope_parameters block.
		if rp, ok := r.m["rope_parameters"].(map[string]any); ok {
			scaling := map[string]any{}
			for k, v := range rp {
				if k == "rope_theta" {
					if f, ok := v.(float64); ok {
						pe["base"] = f
					}
				} else {
					scaling[k] = v
				}
			}
			if t, _ := scaling["rope_type"].(string); t != "" && t != "default" {
				pe["rope_scaling"] = longRoPEBlock(r, scaling, maxPos)
			}
		}
		c.Positional = pe
		return c, nil
	},
	prefix: func(*checkpoint) string { return "" },
	unused: func(c models.Config, name string) bool {
		// Old checkpoints stored RoPE's inverse frequencies; a tied head may be saved too.
		return strings.HasSuffix(name, ".rotary_emb.inv_freq") || (c.TieEmbeddings && name == "lm_head.weight")
	},
	export: func(c models.Config) (map[string]any, error) {
		var bad []string
		check := func(ok bool, what string) {
			if !ok {
				bad = append(bad, what)
			}
		}
		check(c.Kind == models.Decoder, "kind decoder")
		check(c.SchemeName() == "rope", "positional rope")
		check(c.Positional["layout"] == nil || c.Positional["layout"] == "half", "rope layout half")
		check(c.Positional["rotary_fraction"] == nil || c.Positional["rotary_fraction"] == 1.0, "rotary_fraction 1")
		check(c.Norm == "rmsnorm" && c.NormPosition == "pre", "pre-norm rmsnorm")
		check(c.FFN == "swiglu", "ffn swiglu")
		check(!c.Bias, "no bias")
		check(c.TokenTypes == 0 && !c.EmbedNorm && !c.HeadTransform && !c.HeadBias, "no token types, embedding norm or head transform")
		check(len(c.NoPELayers) == 0, "no nope_layers")
		if len(bad) > 0 {
			return nil, fmt.Errorf("a Llama checkpoint needs %s", strings.Join(bad, ", "))
		}
		mt, arch := "llama", "LlamaForCausalLM"
		if c.QKVBias {
			mt, arch = "qwen2", "Qwen2ForCausalLM"
		}
		base := 10000.0
		if b, ok := c.Positional["base"].(float64); ok {
			base = b
		}
		out := map[string]any{
			"model_type": mt, "architectures": []string{arch},
			"vocab_size": c.VocabSize, "hidden_size": c.Dim, "intermediate_size": c.HiddenDim,
			"num_hidden_layers": c.NumLayers, "num_attention_heads": c.NumHeads, "num_key_value_heads": c.NumKVHeads,
			"hidden_act": "silu", "max_position_embeddings": c.MaxSeqLen, "rms_norm_eps": c.NormEps,
			"rope_theta": base, "tie_word_embeddings": c.TieEmbeddings,
		}
		if rs, ok := c.Positional["rope_scaling"]; ok {
			out["rope_scaling"] = rs
		}
		return out, nil
	},
}

var gpt2 = &family{
	name:    "GPT2LMHeadModel",
	types:   []string{"gpt2"},
	archs:   []string{"GPT2LMHeadModel", "GPT2Model"},
	tensors: families.GPT2,
	config: func(r *rawConfig) (models.Config, error) {
		dim := r.Int("n_embd", -1)
		c := models.Config{
			Kind: models.Decoder, VocabSize: r.Int("vocab_size", -1), Dim: dim, NumLayers: r.Int("n_layer", -1),
			NumHeads: r.Int("n_head", -1), HiddenDim: r.Int("n_inner", 4*dim), Norm: "layernorm",
			NormEps: r.NormEps("layer_norm_epsilon", 1e-5), Bias: true, TieEmbeddings: r.Bool("tie_word_embeddings", true),
		}
		c.NumKVHeads = c.NumHeads
		switch act := r.String("activation_function", "gelu_new"); act {
		case "gelu_new", "gelu_pytorch_tanh", "gelu_fast":
			c.FFN = "gelu_tanh" // the same tanh formula, written three ways in transformers
		case "gelu":
			c.FFN = "gelu"
		default:
			r.Errorf("activation_function %q is not supported (supported: gelu_new, gelu_pytorch_tanh, gelu_fast, gelu)", act)
		}
		if !r.Bool("scale_attn_weights", true) || r.Bool("scale_attn_by_inverse_layer_idx", false) {
			r.Errorf("only the standard 1/sqrt(head_dim) attention scaling is supported (scale_attn_weights true, scale_attn_by_inverse_layer_idx false)")
		}
		if r.Bool("add_cross_attention", false) {
			r.Errorf("add_cross_attention is not supported")
		}
		positions := r.Int("n_positions", 1024)
		c.MaxSeqLen = minContext(positions)
		c.Positional = map[string]any{"name": "learned", "max_positions": positions}
		return c, nil
	},
	prefix: func(ck *checkpoint) string {
		// GPT2LMHeadModel saves "transformer.wte.weight"; the original gpt2 upload (a GPT2Model) "wte.weight".
		if _, ok := ck.where["transformer.wte.weight"]; ok {
			return "transformer."
		}
		return ""
	},
	unused: func(c models.Config, name string) bool {
		// attn.bias is the causal mask and attn.masked_bias a constant, saved as buffers by
		// older transformers.
		if strings.HasPrefix(name, "h.") && (strings.HasSuffix(name, ".attn.bias") || strings.HasSuffix(name, ".attn.masked_bias")) {
			return layerIndex.MatchString(name)
		}
		return c.TieEmbeddings && name == "lm_head.weight"
	},
	export: func(c models.Config) (map[string]any, error) {
		var bad []string
		check := func(ok bool, what string) {
			if !ok {
				bad = append(bad, what)
			}
		}
		check(c.Kind == models.Decoder, "kind decoder")
		check(c.SchemeName() == "learned", "positional learned")
		check(c.Norm == "layernorm" && c.NormPosition == "pre", "pre-norm layernorm")
		check(c.FFN == "gelu_tanh" || c.FFN == "gelu", "ffn gelu_tanh or gelu")
		check(c.Bias, "bias")
		check(c.NumKVHeads == c.NumHeads, "n_kv_heads = n_heads")
		check(c.TokenTypes == 0 && !c.EmbedNorm && !c.HeadTransform && !c.HeadBias, "no token types, embedding norm or head transform")
		check(len(c.NoPELayers) == 0, "no nope_layers")
		if len(bad) > 0 {
			return nil, fmt.Errorf("a GPT-2 checkpoint needs %s", strings.Join(bad, ", "))
		}
		act := "gelu_new"
		if c.FFN == "gelu" {
			act = "gelu"
		}
		return map[string]any{
			"model_type": "gpt2", "architectures": []string{"GPT2LMHeadModel"},
			"vocab_size": c.VocabSize, "n_embd": c.Dim, "n_layer": c.NumLayers, "n_head": c.NumHeads,
			"n_inner": c.HiddenDim, "n_positions": families.MaxPositions(c), "n_ctx": families.MaxPositions(c),
			"activation_function": act, "layer_norm_epsilon": c.NormEps, "tie_word_embeddings": c.TieEmbeddings,
		}, nil
	},
}

var bert = &family{
	name:    "BertForMaskedLM",
	types:   []string{"bert"},
	archs:   []string{"BertForMaskedLM", "BertForPreTraining"},
	tensors: families.BERT,
	config: func(r *rawConfig) (models.Config, error) {
		c := models.Config{
			Kind: models.Encoder, VocabSize: r.Int("vocab_size", -1), Dim: r.Int("hidden_size", -1),
			NumLayers: r.Int("num_hidden_layers", -1), NumHeads: r.Int("num_attention_heads", -1),
			HiddenDim: r.Int("intermediate_size", -1), Norm: "layernorm", NormPosition: "post",
			NormEps: r.NormEps("layer_norm_eps", 1e-12), Bias: true, TieEmbeddings: r.Bool("tie_word_embeddings", true),
			TokenTypes: r.Int("type_vocab_size", 2), EmbedNorm: true, HeadTransform: true, HeadBias: true,
		}
		c.NumKVHeads = c.NumHeads
		switch act := r.String("hidden_act", "gelu"); act {
		case "gelu":
			c.FFN = "gelu"
		case "gelu_new", "gelu_pytorch_tanh", "gelu_fast":
			c.FFN = "gelu_tanh"
		default:
			r.Errorf("hidden_act %q is not supported (supported: gelu, gelu_new)", act)
		}
		if pet := r.String("position_embedding_type", "absolute"); pet != "absolute" {
			r.Errorf("position_embedding_type %q is not supported (supported: absolute)", pet)
		}
		if r.Bool("is_decoder", false) {
			r.Errorf("is_decoder is not supported: BERT loads as an encoder")
		}
		if c.TokenTypes < 1 {
			r.Errorf("type_vocab_size must be >= 1")
		}
		positions := r.Int("max_position_embeddings", 512)
		c.MaxSeqLen = minContext(positions)
		c.Positional = map[string]any{"name": "learned", "max_positions": positions}
		return c, nil
	},
	prefix: func(ck *checkpoint) string {
		if _, ok := ck.where["bert.embeddings.word_embeddings.weight"]; ok {
			return "bert."
		}
		return ""
	},
	unused: func(c models.Config, name string) bool {
		switch {
		case name == "embeddings.position_ids" || name == "embeddings.token_type_ids":
			return true // index buffers saved by older transformers
		case strings.HasPrefix(name, "pooler.") || strings.HasPrefix(name, "cls.seq_relationship."):
			return true // next-sentence prediction, in BertForPreTraining checkpoints
		case name == "cls.predictions.decoder.bias":
			return true // the same parameter as cls.predictions.bias
		}
		return c.TieEmbeddings && name == "cls.predictions.decoder.weight"
	},
	export: func(c models.Config) (map[string]any, error) {
		var bad []string
		check := func(ok bool, what string) {
			if !ok {
				bad = append(bad, what)
			}
		}
		check(c.Kind == models.Encoder, "kind encoder")
		check(c.SchemeName() == "learned", "positional learned")
		check(c.Norm == "layernorm" && c.NormPosition == "post", "post-norm layernorm")
		check(c.FFN == "gelu" || c.FFN == "gelu_tanh", "ffn gelu or gelu_tanh")
		check(c.Bias, "bias")
		check(c.NumKVHeads == c.NumHeads, "n_kv_heads = n_heads")
		check(c.TokenTypes > 0 && c.EmbedNorm && c.HeadTransform && c.HeadBias, "token types, embedding norm, head transform and head bias")
		check(len(c.NoPELayers) == 0, "no nope_layers")
		if len(bad) > 0 {
			return nil, fmt.Errorf("a BERT checkpoint needs %s", strings.Join(bad, ", "))
		}
		act := "gelu"
		if c.FFN == "gelu_tanh" {
			act = "gelu_new"
		}
		return map[string]any{
			"model_type": "bert", "architectures": []string{"BertForMaskedLM"},
			"vocab_size": c.VocabSize, "hidden_size": c.Dim, "num_hidden_layers": c.NumLayers,
			"num_attention_heads": c.NumHeads, "intermediate_size": c.HiddenDim, "hidden_act": act,
			"max_position_embeddings": families.MaxPositions(c), "type_vocab_size": c.TokenTypes,
			"layer_norm_eps": c.NormEps, "position_embedding_type": "absolute", "tie_word_embeddings": c.TieEmbeddings,
		}, nil
	},
}
