// Package layers holds the building blocks of posformer's transformers: embeddings, norms,
// projections, attention with positional hooks and a KV cache, feed-forward networks and the
// pre-norm (or post-norm) block. Every function builds part of a GoMLX graph; variables live in context scopes
// (ctx.In("attn").In("wq") holds "weight"), which name the tensors of a checkpoint.
//
// Graphs built here avoid the ops listed in portable.go, so that every backend runs them.
package layers

import (
	"fmt"
	"math"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/gomlx/pkg/ml/context/initializers"
	"github.com/posformer/posformer/layers/quant"
)

// InitStd is the standard deviation of the normal initialisation of weights (GPT-2's).
const InitStd = 0.02

// Linear computes x·Wᵀ (+ b) with W stored [out, in] as PyTorch stores it; in an inference
// context W may be held in a narrower type (weight.go).
func Linear(ctx *context.Context, x *Node, out int, bias bool, std float64) *Node {
	in := x.Shape().Dim(-1)
	y := Matrix(ctx, x.Graph(), out, in, x.DType(), std).MulT(x)
	if bias {
		b := ctx.WithInitializer(initializers.Zero).VariableWithShape("bias", shapes.Make(x.DType(), out)).ValueGraph(x.Graph())
		y = Add(y, ExpandLeftToRank(b, y.Rank()))
	}
	return y
}

// Matrix returns ctx's weight matrix [out, in] ("weight", initialized N(0, std²)), quantized
// (weight.go) in an inference context that asks for it.
func Matrix(ctx *context.Context, g *Graph, out, in int, dtype dtypes.DType, std float64) Weight {
	if t := MatrixType(ctx, []int{out, in}); t != quant.F32 {
		names, types, dims := QuantizedVars(t, out, in)
		if Groupable(t, out, in) && ctx.InspectVariableInScope(groupedName(t)) != nil {
			names, types, dims = GroupedVars(t, out, in) // the form a loader chose
		}
		// Quantized variables are only ever loaded (models.SetParam); the zero initializer
		// serves models.Layout, which builds the graph on an empty context to list them.
		zctx := ctx.WithInitializer(initializers.Zero)
		parts := make([]*Node, len(names))
		for i, name := range names {
			parts[i] = zctx.VariableWithShape(name, shapes.Make(types[i], dims[i]...)).ValueGraph(g)
		}
		return QuantizedWeight(t, out, in, parts...)
	}
	ctx = ctx.WithInitializer(initializers.RandomNormalFn(ctx, std))
	return FloatWeight(ctx.VariableWithShape("weight", shapes.Make(dtype, out, in)).ValueGraph(g))
}

// EmbeddingTable returns the [vocab, dim] token embedding table of ctx.
func EmbeddingTable(ctx *context.Context, g *Graph, vocab, dim int, dtype dtypes.DType) Weight {
	return Matrix(ctx, g, vocab, dim, dtype, InitStd)
}

// Embed looks up tokens [batch, seq] (int32) in table [vocab, dim].
func Embed(table Weight, tokens *Node) *Node {
	return table.Rows(tokens)
}

// Unembed maps x [batch, seq, dim] to logits [batch, seq, vocab] with table [vocab, dim].
func Unembed(table Weight, x *Node) *Node {
	return table.MulT(x)
}

// Norm applies "rmsnorm" (Zhang & Sennrich 2019) or "layernorm" (Ba et al. 2016) over the last axis.
func Norm(ctx *context.Context, kind string, eps float64, x *Node) *Node {
	g := x.Graph()
	dim := x.Shape().Dim(-1)
	scale := ctx.WithInitializer(initializers.One).VariableWithShape("weight", shapes.Make(x.DType(), dim)).ValueGraph(g)
	scale = ExpandLeftToRank(scale, x.Rank())
	switch kind {
	case "rmsnorm":
		ms := ReduceAndKeep(Square(x), ReduceMean, -1)
		return Mul(Mul(x, Rsqrt(AddScalar(ms, eps))), scale)
	case "layernorm":
		bias := ExpandLeftToRank(ctx.WithInitializer(initializers.Zero).VariableWithShape("bias", shapes.Make(x.DType(), dim)).ValueGraph(g), x.Rank())
		centered := Sub(x, ReduceAndKeep(x, ReduceMean, -1))
		variance := ReduceAndKeep(Square(centered), ReduceMean, -1)
		return Add(Mul(Mul(centered, Rsqrt(AddScalar(variance, eps))), scale), bias)
	}
	panic(fmt.Errorf("unknown norm %q (valid: rmsnorm, layernorm)", kind))
}

// GELU is the exact (erf) Gaussian error linear unit of BERT and GPT-2's paper.
func GELU(x *Node) *Node {
	return Mul(MulScalar(x, 0.5), OnePlus(Erf(MulScalar(x, 1/math.Sqrt2))))
}

// GELUTanh is the tanh approximation of GELU that GPT-2's code uses (Hugging Face's
// "gelu_new"): 0.5·x·(1 + tanh(sqrt(2/π)·(x + 0.044715·x³))).
func GELUTanh(x *Node) *Node {
	inner := MulScalar(Add(x, MulScalar(Mul(Square(x), x), 0.044715)), math.Sqrt(2/math.Pi))
	return Mul(MulScalar(x, 0.5), OnePlus(Tanh(inner)))
}

// Activation is the nonlinearity of an FFN kind: GELU for "gelu", its tanh form for
// "gelu_tanh", SiLU for "swiglu". BERT's masked-LM head reuses it.
func Activation(ffn string) func(*Node) *Node {
	switch ffn {
	case "gelu":
		return GELU
	case "gelu_tanh":
		return GELUTanh
	case "swiglu":
		return SiLU
	}
	panic(fmt.Errorf("unknown ffn %q (valid: %s)", ffn, FFNKinds))
}

// FFNKinds lists the feed-forward kinds, for messages.
const FFNKinds = "gelu, gelu_tanh, swiglu"

// SiLU is x·sigmoid(x).
func SiLU(x *Node) *Node { return Mul(x, Sigmoid(x)) }

// FFN is the position-wise feed-forward network: "gelu" w2(gelu(w1 x)) (BERT), "gelu_tanh"
// the same with GELUTanh (GPT-2), or "swiglu" w2(silu(w1 x) ⊙ w3 x) (Shazeer 2020), as in Llama.
func FFN(ctx *context.Context, kind string, hidden int, bias bool, outStd float64, x *Node) *Node {
	dim := x.Shape().Dim(-1)
	act := Activation(kind)
	h := act(Linear(ctx.In("w1"), x, hidden, bias, InitStd))
	if kind == "swiglu" {
		h = Mul(h, Linear(ctx.In("w3"), x, hidden, bias, InitStd))
	}
	return Linear(ctx.In("w2"), h, dim, bias, outStd)
}

// BlockConfig is what a transformer block needs to know; models.Config fills it.
type BlockConfig struct {
	Dim, Hidden          int
	NumHeads, NumKVHeads int
	HeadDim              int
	NumLayers            int
	Causal               bool
	Norm                 string // "rmsnorm" or "layernorm"
	NormEps              float64
	NormPosition         string // "pre" (x + f(norm(x))) or "post" (norm(x + f(x)), BERT)
	FFN                  string // "gelu", "gelu_tanh" or "swiglu"
	Bias                 bool   // biases in projections
	QKVBias              bool   // biases in the query, key and value projections only (Qwen2)
}

// Validate checks the head arithmetic.
func (c BlockConfig) Validate() error {
	switch {
	case c.NumHeads < 1 || c.NumKVHeads < 1:
		return fmt.Errorf("n_heads (%d) and n_kv_heads (%d) must be >= 1", c.NumHeads, c.NumKVHeads)
	case c.NumHeads%c.NumKVHeads != 0:
		return fmt.Errorf("n_heads (%d) must be a multiple of n_kv_heads (%d)", c.NumHeads, c.NumKVHeads)
	case c.HeadDim < 1:
		return fmt.Errorf("head dim must be >= 1, got %d", c.HeadDim)
	}
	return nil
}

// Block is the residual block. Pre-norm (GPT-2, Llama): x + attn(norm(x)), then
// x + ffn(norm(x)). Post-norm (the original Transformer, BERT): norm(x + attn(x)), then
// norm(x + ffn(x)); the norms keep their scope names (attn_norm, ffn_norm) in both.
func Block(ctx *context.Context, layer int, cfg BlockConfig, pe Positional, x *Node, att AttentionInput) (*Node, *LayerCache) {
	outStd := InitStd / math.Sqrt(2*float64(cfg.NumLayers))
	if cfg.NormPosition == "post" {
		a, cache := Attention(ctx.In("attn"), layer, cfg, pe, x, att, outStd)
		x = Norm(ctx.In("attn_norm"), cfg.Norm, cfg.NormEps, Add(x, a))
		f := FFN(ctx.In("ffn"), cfg.FFN, cfg.Hidden, cfg.Bias, outStd, x)
		return Norm(ctx.In("ffn_norm"), cfg.Norm, cfg.NormEps, Add(x, f)), cache
	}
	a, cache := Attention(ctx.In("attn"), layer, cfg, pe, Norm(ctx.In("attn_norm"), cfg.Norm, cfg.NormEps, x), att, outStd)
	x = Add(x, a)
	f := FFN(ctx.In("ffn"), cfg.FFN, cfg.Hidden, cfg.Bias, outStd, Norm(ctx.In("ffn_norm"), cfg.Norm, cfg.NormEps, x))
	return Add(x, f), cache
}
