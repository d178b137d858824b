package gguf

// Export writes a posformer model as a GGUF file llama.cpp can run, through the same tensor
// tables Load reads: RoPE decoders with RMSNorm and SwiGLU as architecture llama (or qwen2 when
// only q, k and v have biases and the rotation pairs (i, i + d/2)), decoders with a learned
// position table, LayerNorm and the tanh GELU as gpt2. Anything else is refused, naming what
// llama.cpp could not run. As llama.cpp's convert does, a model whose RoPE pairs (i, i + d/2)
// (Hugging Face's layout, posformer's default) has the rows of each query and key head permuted
// so that llama's adjacent-pair rotation computes the same logits (see load.go), and 1-D
// tensors (norms, biases) and the position table stay F32 whatever the weights' type.

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/posformer/posformer/layers/quant"
	"github.com/posformer/posformer/models"
	"github.com/posformer/posformer/models/families"
	"github.com/posformer/posformer/positional"
)

// ExportOptions choose how Export stores a model.
type ExportOptions struct {
	// Type of the weight matrices (F32 when zero). Matrices whose rows are not whole blocks
	// of a block type are written F16, as llama.cpp's convert falls back.
	Type quant.Type
	Name string // general.name
	// Vocab holds the tokenizer's metadata (tokenizer.ggml.*); none writes the model
	// "no_vocab", which llama.cpp loads without a tokenizer.
	Vocab []KV
}

// QuantVersion is general.quantization_version for the block formats written here (ggml's
// GGML_QNT_VERSION).
const QuantVersion = 2

// Export writes m, whose float32 variables are in ctx, to path (atomically, see Write).
func Export(path string, m *models.Model, ctx *context.Context, opts ExportOptions) error {
	kvs, tensors, err := exportPlan(m, ctx, opts)
	if err != nil {
		return fmt.Errorf("exporting to %s: %w", path, err)
	}
	if err := Write(path, kvs, tensors); err != nil {
		return fmt.Errorf("exporting: %w", err)
	}
	return nil
}

// exportArch picks the architecture of cfg, or says why llama.cpp could not run it.
func exportArch(m *models.Model) (arch string, permute bool, err error) {
	c := m.Config
	var bad []string
	check := func(ok bool, what string) {
		if !ok {
			bad = append(bad, what)
		}
	}
	common := func() {
		check(c.Kind == models.Decoder, "a decoder (llama.cpp runs no masked-LM encoder of these)")
		check(c.NormPosition == "pre", "pre-norm blocks")
		check(c.TokenTypes == 0 && !c.EmbedNorm && !c.HeadTransform && !c.HeadBias, "no token types, embedding norm or head transform")
		check(len(c.NoPELayers) == 0, "no nope_layers")
	}
	switch s := ropeOf(m.Scheme).(type) {
	case *positional.RoPE:
		arch = "llama"
		common()
		check(c.Norm == "rmsnorm", "norm rmsnorm")
		check(c.FFN == "swiglu", "ffn swiglu")
		check(!c.Bias, "no biases on the output and feed-forward projections")
		check(s.RotaryDims() == s.HeadDim, "rotary_fraction 1 (llama.cpp's llama rotates whole heads)")
		if s.Scaling != nil {
			switch s.Scaling.Type {
			case "linear", "longrope":
			case "yarn":
				check(s.Scaling.Truncate, "yarn with truncate (llama.cpp always truncates the ramp)")
			default:
				bad = append(bad, fmt.Sprintf("rope_scaling none, linear, yarn or longrope (GGUF has no key for %s)", s.Scaling.Type))
			}
		}
		switch {
		case c.QKVBias && s.Layout == "half":
			arch = "qwen2" // llama.cpp's qwen2 rotates pairs (i, i + d/2) and has these biases
		case s.Layout == "half":
			permute = true
		}
	case *positional.Learned:
		arch = "gpt2"
		common()
		check(c.Norm == "layernorm", "norm layernorm")
		check(c.FFN == "gelu_tanh", "ffn gelu_tanh (llama.cpp's gpt2 uses the tanh GELU)")
		check(c.Bias, "biases on every projection")
		check(c.NumKVHeads == c.NumHeads, "n_kv_heads = n_heads")
	case *positional.DynamicNTK:
		return "", false, fmt.Errorf("rope_scaling dynamic cannot be written: GGUF knows none, linear and yarn (export without it; cmd/infer --rope-scaling dynamic applies it at run time)")
	default:
		return "", false, fmt.Errorf("positional scheme %q has no GGUF architecture llama.cpp runs (exportable: rope as llama, learned as gpt2)", c.SchemeName())
	}
	if len(bad) > 0 {
		return "", false, fmt.Errorf("llama.cpp's %s cannot run this model: it needs %s", arch, strings.Join(bad, ", "))
	}
	return arch, permute, nil
}

// ropeOf is the RoPE under a LongRoPE scheme (whose factors are its scaling), else scheme.
func ropeOf(scheme positional.Scheme) positional.Scheme {
	if l, ok := scheme.(*positional.LongRoPE); ok {
		return l.RoPE
	}
	return scheme
}

// exportPlan builds the metadata and the tensors (made as they are written) of m.
func exportPlan(m *models.Model, ctx *context.Context, opts ExportOptions) ([]KV, []Tensor, error) {
	c := m.Config
	arch, permute, err := exportArch(m)
	if err != nil {
		return nil, nil, err
	}
	if opts.Type.BlockBytes() == 0 {
		return nil, nil, fmt.Errorf("weight type %v (valid: %s)", opts.Type, quant.Names())
	}
	ctxLen := max(c.MaxSeqLen, c.TrainSeqLen)
	fam := families.Llama
	if arch == "gpt2" {
		ctxLen = m.Scheme.(*positional.Learned).MaxPositions
		fam = families.GPT2
	}
	table := fam.GGUF(c)

	// Our variables, by checkpoint name; the table must be exactly them.
	vars := map[string]*context.Variable{}
	for v := range ctx.In(models.Scope).IterVariablesInScope() {
		name, shape := models.CheckpointTensor(v)
		if v.Shape().DType != dtypes.Float32 || name == "" {
			return nil, nil, fmt.Errorf("variable %s is %v: export reads float32 weights (load the model without a weight type)", v.ScopeAndName(), v.Shape())
		}
		src, ok := table[name]
		if !ok {
			return nil, nil, fmt.Errorf("%s %v has no place in a %s GGUF", name, shape, arch)
		}
		if !slices.Equal(shape, src.OurShape()) {
			return nil, nil, fmt.Errorf("%s has shape %v, the config implies %v", name, shape, src.OurShape())
		}
		vars[name] = v
	}
	if len(vars) == 0 {
		return nil, nil, fmt.Errorf("the model has no variables (load it first)")
	}
	// Group our tensors by the GGUF tensor they make (GPT-2's attn_qkv takes three).
	parts := map[string][]string{}
	shapes := map[string][]int{}
	rotary := map[string]bool{}
	for ours, src := range table {
		if _, ok := vars[ours]; !ok {
			return nil, nil, fmt.Errorf("variable %s is missing", ours)
		}
		if parts[src.Name] == nil {
			parts[src.Name] = make([]string, max(src.Parts, 1))
		}
		parts[src.Name][src.Part] = ours
		shapes[src.Name] = src.Shape
		rotary[src.Name] = src.Rotary
	}
	names := slices.SortedFunc(func(yield func(string) bool) {
		for n := range parts {
			if !yield(n) {
				return
			}
		}
	}, func(a, b string) int { return strings.Compare(orderKey(a), orderKey(b)) })

	hd := c.Dim / c.NumHeads
	var out []Tensor
	for _, name := range names {
		shape := shapes[name]
		typ := opts.Type
		switch {
		case len(shape) == 1 || name == "position_embd.weight":
			typ = quant.F32
		case shape[1]%typ.BlockSize() != 0:
			typ = quant.F16
		}
		ours := parts[name]
		perm := permute && rotary[name]
		out = append(out, Tensor{Name: name, Shape: shape, Type: typ, Fill: func() ([]byte, error) {
			var data []float32
			for _, o := range ours {
				value, err := vars[o].Value()
				if err != nil {
					return nil, fmt.Errorf("%s: %w", o, err)
				}
				d, err := tensors.CopyFlatData[float32](value)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", o, err)
				}
				data = append(data, d...)
			}
			if perm {
				data = PermuteHalfToInterleaved(data, shape[0], shape[1], hd)
			}
			return quant.Quantize(typ, data)
		}})
	}

	kvs := []KV{{KeyArchitecture, String(arch)}}
	if opts.Name != "" {
		kvs = append(kvs, KV{KeyName, String(opts.Name)})
	}
	kvs = append(kvs, KV{KeyFileType, Uint32(FileType(opts.Type))})
	if opts.Type.Quantized() {
		kvs = append(kvs, KV{KeyQuantVersion, Uint32(QuantVersion)})
	}
	add := func(k string, v Value) { kvs = append(kvs, KV{arch + "." + k, v}) }
	add("context_length", Uint32(uint32(ctxLen)))
	add("embedding_length", Uint32(uint32(c.Dim)))
	add("block_count", Uint32(uint32(c.NumLayers)))
	add("feed_forward_length", Uint32(uint32(c.HiddenDim)))
	add("attention.head_count", Uint32(uint32(c.NumHeads)))
	add("attention.head_count_kv", Uint32(uint32(c.NumKVHeads)))
	if arch == "gpt2" {
		add("attention.layer_norm_epsilon", Float32(float32(c.NormEps)))
	} else {
		r := ropeOf(m.Scheme).(*positional.RoPE)
		add("attention.layer_norm_rms_epsilon", Float32(float32(c.NormEps)))
		add("rope.dimension_count", Uint32(uint32(hd)))
		add("rope.freq_base", Float32(float32(r.Base)))
		if s := r.Scaling; s != nil {
			add("rope.scaling.type", String(s.Type))
			add("rope.scaling.factor", Float32(float32(s.Factor)))
			add("rope.scaling.original_context_length", Uint32(uint32(s.OrigLen)))
			if s.Type == "yarn" {
				if s.AttnFactor != 0 {
					add("rope.scaling.attn_factor", Float32(float32(s.AttnFactor/positional.YaRNAttentionFactor(s.Factor))))
				}
				if s.BetaFast != 32 {
					add("rope.scaling.yarn_beta_fast", Float32(float32(s.BetaFast)))
				}
				if s.BetaSlow != 1 {
					add("rope.scaling.yarn_beta_slow", Float32(float32(s.BetaSlow)))
				}
			}
			if s.Type == "longrope" {
				// As llama.cpp's converter writes Phi-3: the attention factor itself, and the
				// factors as tensors (longRoPEScaling reads them back).
				add("rope.scaling.attn_factor", Float32(float32(s.AttentionFactor())))
				for _, f := range []struct {
					name    string
					factors []float64
				}{{RopeFactorsLong, s.Long}, {RopeFactorsShort, s.Short}} {
					data := make([]float32, len(f.factors))
					for i, x := range f.factors {
						data[i] = float32(x)
					}
					raw, err := quant.Quantize(quant.F32, data)
					if err != nil {
						return nil, nil, fmt.Errorf("%s: %w", f.name, err)
					}
					out = append(out, Tensor{Name: f.name, Shape: []int{len(data)}, Type: quant.F32, Data: raw})
				}
			}
		}
	}
	add("vocab_size", Uint32(uint32(c.VocabSize)))
	if c.TrainSeqLen > 0 && c.TrainSeqLen != ctxLen {
		kvs = append(kvs, KV{KeyTrainSeqLen, Uint32(uint32(c.TrainSeqLen))})
	}
	if len(opts.Vocab) == 0 {
		kvs = append(kvs, KV{"tokenizer.ggml.model", String("no_vocab")})
	}
	kvs = append(kvs, opts.Vocab...)
	return kvs, out, nil
}

// orderKey sorts tensors as llama.cpp's convert writes them: token and position embeddings,
// then block by block, then the final norm and the output head.
func orderKey(name string) string {
	switch {
	case strings.HasPrefix(name, "token_embd"):
		return "0" + name
	case strings.HasPrefix(name, "position_embd"):
		return "1" + name
	case strings.HasPrefix(name, "blk."):
		rest := strings.TrimPrefix(name, "blk.")
		num, tail, _ := strings.Cut(rest, ".")
		n, _ := strconv.Atoi(num)
		kind, suffix, _ := strings.Cut(tail, ".")
		rank := slices.Index([]string{"attn_norm", "attn_q", "attn_k", "attn_v", "attn_qkv", "attn_output", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down"}, kind)
		return fmt.Sprintf("2%08d%02d%s", n, rank, suffix)
	case strings.HasPrefix(name, "output_norm"):
		return "3" + name
	}
	return "4" + name
}

// PermuteHalfToInterleaved reorders the rows of a query or key matrix [rows, cols] whose heads
// of hd rows rotate pairs (i, i + hd/2) so that they rotate adjacent pairs (2i, 2i + 1): new row
// 2i + s of each head is old row s·hd/2 + i (llama.cpp convert's permute).
func PermuteHalfToInterleaved(w []float32, rows, cols, hd int) []float32 {
	out := make([]float32, len(w))
	for h := 0; h < rows/hd; h++ {
		for i := 0; i < hd/2; i++ {
			for s := 0; s < 2; s++ {
				dst, src := h*hd+2*i+s, h*hd+s*hd/2+i
				copy(out[dst*cols:(dst+1)*cols], w[src*cols:(src+1)*cols])
			}
		}
	}
	return out
}
