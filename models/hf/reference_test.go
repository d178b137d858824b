package hf_test

// Independent forward passes of the three families in plain float64 loops, written from
// transformers' modeling_llama.py, modeling_gpt2.py and modeling_bert.py and reading the
// checkpoint's tensors by their Hugging Face names and layouts. Nothing here uses posformer's
// graph code: these are what the engine's logits are checked against.

import (
	"fmt"
	"math"
)

// weights holds a checkpoint's tensors by Hugging Face name, row-major.
type weights map[string][]float64

// hfConfig is the part of config.json the references read.
type hfConfig struct {
	Vocab, Dim, Layers, Heads, KVHeads, Hidden int
	Eps                                        float64
	RopeTheta                                  float64 // Llama
	RopeLinear                                 float64 // rope_scaling linear factor (0: none)
	Tied                                       bool
	QKVBias                                    bool // Qwen2
	Prefix                                     string
}

func (w weights) get(name string) []float64 {
	v, ok := w[name]
	if !ok {
		panic(fmt.Sprintf("reference: no tensor %s", name))
	}
	return v
}

// linear is PyTorch's nn.Linear: y = x·Wᵀ + b with W stored [out, in].
func linear(x []float64, w []float64, b []float64, out int) []float64 {
	in := len(x)
	y := make([]float64, out)
	for o := range out {
		s := 0.0
		for i := range in {
			s += w[o*in+i] * x[i]
		}
		if b != nil {
			s += b[o]
		}
		y[o] = s
	}
	return y
}

// conv1D is transformers' Conv1D: y = x·W + b with W stored [in, out].
func conv1D(x []float64, w []float64, b []float64, out int) []float64 {
	in := len(x)
	y := make([]float64, out)
	for o := range out {
		s := b[o]
		for i := range in {
			s += x[i] * w[i*out+o]
		}
		y[o] = s
	}
	return y
}

// rmsNorm is LlamaRMSNorm: x / sqrt(mean(x²) + eps) · w.
func rmsNorm(x, w []float64, eps float64) []float64 {
	ms := 0.0
	for _, v := range x {
		ms += v * v
	}
	r := 1 / math.Sqrt(ms/float64(len(x))+eps)
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = v * r * w[i]
	}
	return y
}

// layerNorm is nn.LayerNorm with the biased variance.
func layerNorm(x, w, b []float64, eps float64) []float64 {
	n := float64(len(x))
	mean := 0.0
	for _, v := range x {
		mean += v
	}
	mean /= n
	variance := 0.0
	for _, v := range x {
		variance += (v - mean) * (v - mean)
	}
	variance /= n
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = (v-mean)/math.Sqrt(variance+eps)*w[i] + b[i]
	}
	return y
}

func add(a, b []float64) []float64 {
	y := make([]float64, len(a))
	for i := range a {
		y[i] = a[i] + b[i]
	}
	return y
}

func geluErf(x float64) float64 { return 0.5 * x * (1 + math.Erf(x/math.Sqrt2)) }

// geluNew is transformers' NewGELUActivation ("gelu_new").
func geluNew(x float64) float64 {
	return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
}

func silu(x float64) float64 { return x / (1 + math.Exp(-x)) }

// attend computes softmax(q·k/sqrt(d)) v per head for every query; query head h reads
// key/value head h/(heads/kvHeads) (repeat_kv). Causal attention sees keys j <= i.
func attend(q, k, v [][]float64, heads, kvHeads int, causal bool) [][]float64 {
	n := len(q)
	hd := len(q[0]) / heads
	group := heads / kvHeads
	out := make([][]float64, n)
	for i := range n {
		out[i] = make([]float64, heads*hd)
		for h := range heads {
			kh := h / group
			last := n - 1
			if causal {
				last = i
			}
			scores := make([]float64, last+1)
			top := math.Inf(-1)
			for j := 0; j <= last; j++ {
				s := 0.0
				for d := range hd {
					s += q[i][h*hd+d] * k[j][kh*hd+d]
				}
				scores[j] = s / math.Sqrt(float64(hd))
				top = math.Max(top, scores[j])
			}
			sum := 0.0
			for j := range scores {
				scores[j] = math.Exp(scores[j] - top)
				sum += scores[j]
			}
			for j := range scores {
				for d := range hd {
					out[i][h*hd+d] += scores[j] / sum * v[j][kh*hd+d]
				}
			}
		}
	}
	return out
}

// rotateHalf applies Llama's rotary embedding to one head vector at position p:
// x·cos + rotate_half(x)·sin with cos, sin of (p·θ_i) repeated over both halves.
// A linear rope_scaling divides every inverse frequency by its factor.
func rotateHalf(x []float64, p int, theta, linear float64) []float64 {
	d := len(x)
	y := make([]float64, d)
	for i := range d / 2 {
		invFreq := 1 / math.Pow(theta, float64(2*i)/float64(d))
		if linear > 0 {
			invFreq /= linear
		}
		c, s := math.Cos(float64(p)*invFreq), math.Sin(float64(p)*invFreq)
		y[i] = x[i]*c - x[i+d/2]*s
		y[i+d/2] = x[i+d/2]*c + x[i]*s
	}
	return y
}

// refLlama is LlamaForCausalLM's forward (Qwen2's too, with q/k/v biases).
func refLlama(w weights, c hfConfig, tokens, positions []int) [][]float64 {
	hd := c.Dim / c.Heads
	emb := w.get("model.embed_tokens.weight")
	hs := make([][]float64, len(tokens))
	for i, t := range tokens {
		hs[i] = append([]float64(nil), emb[t*c.Dim:(t+1)*c.Dim]...)
	}
	opt := func(name string) []float64 {
		if c.QKVBias {
			return w.get(name)
		}
		return nil
	}
	for l := range c.Layers {
		p := fmt.Sprintf("model.layers.%d.", l)
		q, k, v := make([][]float64, len(hs)), make([][]float64, len(hs)), make([][]float64, len(hs))
		for i, h := range hs {
			x := rmsNorm(h, w.get(p+"input_layernorm.weight"), c.Eps)
			q[i] = linear(x, w.get(p+"self_attn.q_proj.weight"), opt(p+"self_attn.q_proj.bias"), c.Heads*hd)
			k[i] = linear(x, w.get(p+"self_attn.k_proj.weight"), opt(p+"self_attn.k_proj.bias"), c.KVHeads*hd)
			v[i] = linear(x, w.get(p+"self_attn.v_proj.weight"), opt(p+"self_attn.v_proj.bias"), c.KVHeads*hd)
			for h := range c.Heads {
				copy(q[i][h*hd:], rotateHalf(q[i][h*hd:(h+1)*hd], positions[i], c.RopeTheta, c.RopeLinear))
			}
			for h := range c.KVHeads {
				copy(k[i][h*hd:], rotateHalf(k[i][h*hd:(h+1)*hd], positions[i], c.RopeTheta, c.RopeLinear))
			}
		}
		a := attend(q, k, v, c.Heads, c.KVHeads, true)
		for i := range hs {
			hs[i] = add(hs[i], linear(a[i], w.get(p+"self_attn.o_proj.weight"), nil, c.Dim))
			x := rmsNorm(hs[i], w.get(p+"post_attention_layernorm.weight"), c.Eps)
			gate := linear(x, w.get(p+"mlp.gate_proj.weight"), nil, c.Hidden)
			up := linear(x, w.get(p+"mlp.up_proj.weight"), nil, c.Hidden)
			for j := range gate {
				gate[j] = silu(gate[j]) * up[j]
			}
			hs[i] = add(hs[i], linear(gate, w.get(p+"mlp.down_proj.weight"), nil, c.Dim))
		}
	}
	head := "lm_head.weight"
	if c.Tied {
		head = "model.embed_tokens.weight"
	}
	logits := make([][]float64, len(hs))
	for i, h := range hs {
		logits[i] = linear(rmsNorm(h, w.get("model.norm.weight"), c.Eps), w.get(head), nil, c.Vocab)
	}
	return logits
}

// refGPT2 is GPT2LMHeadModel's forward.
func refGPT2(w weights, c hfConfig, tokens []int) [][]float64 {
	p := c.Prefix
	wte, wpe := w.get(p+"wte.weight"), w.get(p+"wpe.weight")
	hs := make([][]float64, len(tokens))
	for i, t := range tokens {
		hs[i] = add(wte[t*c.Dim:(t+1)*c.Dim], wpe[i*c.Dim:(i+1)*c.Dim])
	}
	for l := range c.Layers {
		b := fmt.Sprintf("%sh.%d.", p, l)
		q, k, v := make([][]float64, len(hs)), make([][]float64, len(hs)), make([][]float64, len(hs))
		for i, h := range hs {
			x := layerNorm(h, w.get(b+"ln_1.weight"), w.get(b+"ln_1.bias"), c.Eps)
			qkv := conv1D(x, w.get(b+"attn.c_attn.weight"), w.get(b+"attn.c_attn.bias"), 3*c.Dim)
			q[i], k[i], v[i] = qkv[:c.Dim], qkv[c.Dim:2*c.Dim], qkv[2*c.Dim:] // .split(split_size, dim=2)
		}
		a := attend(q, k, v, c.Heads, c.Heads, true)
		for i := range hs {
			hs[i] = add(hs[i], conv1D(a[i], w.get(b+"attn.c_proj.weight"), w.get(b+"attn.c_proj.bias"), c.Dim))
			x := layerNorm(hs[i], w.get(b+"ln_2.weight"), w.get(b+"ln_2.bias"), c.Eps)
			m := conv1D(x, w.get(b+"mlp.c_fc.weight"), w.get(b+"mlp.c_fc.bias"), c.Hidden)
			for j := range m {
				m[j] = geluNew(m[j])
			}
			hs[i] = add(hs[i], conv1D(m, w.get(b+"mlp.c_proj.weight"), w.get(b+"mlp.c_proj.bias"), c.Dim))
		}
	}
	logits := make([][]float64, len(hs))
	for i, h := range hs {
		logits[i] = linear(layerNorm(h, w.get(p+"ln_f.weight"), w.get(p+"ln_f.bias"), c.Eps), wte, nil, c.Vocab)
	}
	return logits
}

// refBERT is BertForMaskedLM's forward with token_type_ids all zero and no padding.
func refBERT(w weights, c hfConfig, tokens []int) [][]float64 {
	word := w.get("bert.embeddings.word_embeddings.weight")
	pos := w.get("bert.embeddings.position_embeddings.weight")
	typ := w.get("bert.embeddings.token_type_embeddings.weight")
	hs := make([][]float64, len(tokens))
	for i, t := range tokens {
		e := add(add(word[t*c.Dim:(t+1)*c.Dim], typ[:c.Dim]), pos[i*c.Dim:(i+1)*c.Dim])
		hs[i] = layerNorm(e, w.get("bert.embeddings.LayerNorm.weight"), w.get("bert.embeddings.LayerNorm.bias"), c.Eps)
	}
	for l := range c.Layers {
		b := fmt.Sprintf("bert.encoder.layer.%d.", l)
		q, k, v := make([][]float64, len(hs)), make([][]float64, len(hs)), make([][]float64, len(hs))
		for i, h := range hs {
			q[i] = linear(h, w.get(b+"attention.self.query.weight"), w.get(b+"attention.self.query.bias"), c.Dim)
			k[i] = linear(h, w.get(b+"attention.self.key.weight"), w.get(b+"attention.self.key.bias"), c.Dim)
			v[i] = linear(h, w.get(b+"attention.self.value.weight"), w.get(b+"attention.self.value.bias"), c.Dim)
		}
		a := attend(q, k, v, c.Heads, c.Heads, false)
		for i := range hs {
			so := linear(a[i], w.get(b+"attention.output.dense.weight"), w.get(b+"attention.output.dense.bias"), c.Dim)
			h := layerNorm(add(so, hs[i]), w.get(b+"attention.output.LayerNorm.weight"), w.get(b+"attention.output.LayerNorm.bias"), c.Eps)
			inter := linear(h, w.get(b+"intermediate.dense.weight"), w.get(b+"intermediate.dense.bias"), c.Hidden)
			for j := range inter {
				inter[j] = geluErf(inter[j])
			}
			o := linear(inter, w.get(b+"output.dense.weight"), w.get(b+"output.dense.bias"), c.Dim)
			hs[i] = layerNorm(add(o, h), w.get(b+"output.LayerNorm.weight"), w.get(b+"output.LayerNorm.bias"), c.Eps)
		}
	}
	logits := make([][]float64, len(hs))
	for i, h := range hs {
		t := linear(h, w.get("cls.predictions.transform.dense.weight"), w.get("cls.predictions.transform.dense.bias"), c.Dim)
		for j := range t {
			t[j] = geluErf(t[j])
		}
		t = layerNorm(t, w.get("cls.predictions.transform.LayerNorm.weight"), w.get("cls.predictions.transform.LayerNorm.bias"), c.Eps)
		decoder := word
		if !c.Tied {
			decoder = w.get("cls.predictions.decoder.weight")
		}
		logits[i] = linear(t, decoder, w.get("cls.predictions.bias"), c.Vocab)
	}
	return logits
}
