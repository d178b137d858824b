package hf_test

// The same random weights exported as a llama2.c .bin and as a Hugging Face directory load to
// the same logits. llama2.c rotates interleaved pairs (2i, 2i+1) of each head; Hugging Face
// rotates (i, i + head_dim/2). transformers' convert_llama_weights_to_hf.py therefore permutes
// the rows of wq and wk head by head,
//
//	permute(w) = w.view(n_heads, head_dim/2, 2, dim).transpose(1, 2).reshape(n_heads·head_dim, dim)
//
// which is written out below; equal logits prove the two layouts and the permutation agree.

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/posformer/posformer/engine"
	"github.com/posformer/posformer/models"
	"github.com/posformer/posformer/models/llama2c"
)

// permuteRows is convert_llama_weights_to_hf.py's permute on a [heads·hd, in] matrix: row
// h·hd + 2i + j of llama2.c's layout becomes row h·hd + j·hd/2 + i.
func permuteRows(w []float32, heads, hd, in int) []float32 {
	out := make([]float32, len(w))
	for h := range heads {
		for i := range hd / 2 {
			for j := range 2 {
				src, dst := h*hd+2*i+j, h*hd+j*hd/2+i
				copy(out[dst*in:(dst+1)*in], w[src*in:(src+1)*in])
			}
		}
	}
	return out
}

func TestLlama2cAndHFAgree(t *testing.T) {
	for _, tied := range []bool{true, false} {
		cfg := models.Config{Kind: models.Decoder, VocabSize: 64, Dim: 32, NumLayers: 2, NumHeads: 4, NumKVHeads: 2,
			HiddenDim: 48, FFN: "swiglu", Norm: "rmsnorm", NormEps: llama2c.NormEps, TieEmbeddings: tied, MaxSeqLen: 64,
			Positional: map[string]any{"name": "rope", "layout": "interleaved", "base": float64(llama2c.RoPEBase)}}
		cfg.Defaults()
		hd := cfg.Dim / cfg.NumHeads
		r := rand.New(rand.NewPCG(11, 12))
		draw := func(n int, norm bool) []float32 {
			v := make([]float32, n)
			for i := range v {
				v[i] = float32(r.NormFloat64() * 0.2)
				if norm {
					v[i] += 1
				}
			}
			return v
		}
		// Our tensor names (llama2c's) and the Hugging Face tensors the same values go to.
		ours := llama2c.Weights{}
		theirs := weights{}
		var specs []spec
		put := func(our, their string, shape []int, v, hfv []float32) {
			ours[our] = v
			f := make([]float64, len(hfv))
			for i, x := range hfv {
				f[i] = float64(x)
			}
			theirs[their] = f
			specs = append(specs, spec{name: their, shape: shape})
		}
		same := func(our, their string, shape ...int) {
			n := 1
			for _, d := range shape {
				n *= d
			}
			v := draw(n, len(shape) == 1)
			put(our, their, shape, v, v)
		}
		same("tok_embeddings.weight", "model.embed_tokens.weight", cfg.VocabSize, cfg.Dim)
		same("norm.weight", "model.norm.weight", cfg.Dim)
		if !tied {
			same("output.weight", "lm_head.weight", cfg.VocabSize, cfg.Dim)
		}
		for l := range cfg.NumLayers {
			o, h := fmt.Sprintf("layer_%d.", l), fmt.Sprintf("model.layers.%d.", l)
			same(o+"attn_norm.weight", h+"input_layernorm.weight", cfg.Dim)
			same(o+"ffn_norm.weight", h+"post_attention_layernorm.weight", cfg.Dim)
			wq := draw(cfg.NumHeads*hd*cfg.Dim, false)
			put(o+"attn.wq.weight", h+"self_attn.q_proj.weight", []int{cfg.NumHeads * hd, cfg.Dim}, wq, permuteRows(wq, cfg.NumHeads, hd, cfg.Dim))
			wk := draw(cfg.NumKVHeads*hd*cfg.Dim, false)
			put(o+"attn.wk.weight", h+"self_attn.k_proj.weight", []int{cfg.NumKVHeads * hd, cfg.Dim}, wk, permuteRows(wk, cfg.NumKVHeads, hd, cfg.Dim))
			same(o+"attn.wv.weight", h+"self_attn.v_proj.weight", cfg.NumKVHeads*hd, cfg.Dim)
			same(o+"attn.wo.weight", h+"self_attn.o_proj.weight", cfg.Dim, cfg.NumHeads*hd)
			same(o+"ffn.w1.weight", h+"mlp.gate_proj.weight", cfg.HiddenDim, cfg.Dim)
			same(o+"ffn.w3.weight", h+"mlp.up_proj.weight", cfg.HiddenDim, cfg.Dim)
			same(o+"ffn.w2.weight", h+"mlp.down_proj.weight", cfg.Dim, cfg.HiddenDim)
		}
		dir := t.TempDir()
		bin := filepath.Join(dir, "model.bin")
		if err := llama2c.Write(bin, cfg, ours, 1); err != nil {
			t.Fatal(err)
		}
		hfDir := filepath.Join(dir, "hf")
		hc := hfConfig{Vocab: cfg.VocabSize, Dim: cfg.Dim, Layers: cfg.NumLayers, Heads: cfg.NumHeads, KVHeads: cfg.NumKVHeads,
			Hidden: cfg.HiddenDim, Eps: cfg.NormEps, RopeTheta: float64(llama2c.RoPEBase), Tied: tied}
		config := llamaFixtureSized("llama", tied, hc).config
		writeHF(t, hfDir, config, specs, theirs, "F32", 1)

		tokens, positions := tokensAndPositions(r, cfg.VocabSize, 5, 12)
		var logits [2][][]float32
		for i, path := range []string{bin, hfDir} {
			e, err := engine.Load(path, "", 0)
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			out, err := e.Forward([][]int{tokens}, [][]int{positions})
			if err != nil {
				t.Fatal(err)
			}
			logits[i] = out[0]
		}
		what := fmt.Sprintf("tied %v", tied)
		ref := refLlama(theirs, hc, tokens, positions)
		compare(t, what+": llama2.c .bin vs the HF reference", logits[0], ref)
		compare(t, what+": HF directory vs the HF reference", logits[1], ref)
		diff := 0.0
		for j := range logits[0] {
			for k := range logits[0][j] {
				diff = max(diff, float64(abs32(logits[0][j][k]-logits[1][j][k])))
			}
		}
		if diff > 1e-5 {
			t.Errorf("%s: llama2.c and Hugging Face logits differ by %g", what, diff)
		} else {
			t.Logf("%s: max |llama2.c - HF| = %.2g", what, diff)
		}
		// Without the permutation the two disagree: the test can tell the layouts apart.
		wrong := filepath.Join(dir, "hf-unpermuted")
		for l := range cfg.NumLayers {
			for _, p := range []string{"q_proj", "k_proj"} {
				name := fmt.Sprintf("model.layers.%d.self_attn.%s.weight", l, p)
				our := fmt.Sprintf("layer_%d.attn.w%s.weight", l, p[:1])
				f := make([]float64, len(ours[our]))
				for i, x := range ours[our] {
					f[i] = float64(x)
				}
				theirs[name] = f
			}
		}
		writeHF(t, wrong, config, specs, theirs, "F32", 1)
		e, err := engine.Load(wrong, "", 0)
		if err != nil {
			t.Fatal(err)
		}
		out, _ := e.Forward([][]int{tokens}, [][]int{positions})
		bad := 0.0
		for j := range out[0] {
			for k := range out[0][j] {
				bad = max(bad, float64(abs32(out[0][j][k]-logits[0][j][k])))
			}
		}
		if bad < 1e-2 {
			t.Errorf("%s: unpermuted q/k give the same logits (differ by %g): the test cannot see the layout", what, bad)
		}
	}
}

func abs32(x float32) float32 {
	if x < 0 {
		return -x
	}
	return x
}
