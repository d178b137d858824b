package positional

// Sinusoidal absolute positions (Vaswani et al. 2017, "Attention Is All You Need", §3.5):
//
//	PE(pos, 2i)   = sin(pos / base^(2i/d))
//	PE(pos, 2i+1) = cos(pos / base^(2i/d))        base = 10000
//	x' = x·sqrt(d) + PE(pos)                      (the paper scales embeddings by sqrt(d_model))
//
// Option learn_scale makes it x' = x·sqrt(d) + α·PE(pos) with α one learned scalar, initialised
// to 1 so that training starts from the paper's code (x-transformers' ScaledSinusoidalEmbedding;
// its d^-0.5 initial scale on PE with unscaled x is the same ratio as α = 1 here).
//
// For every offset k there is one matrix M_k, block-diagonal with 2x2 rotations by k·ω_i,
// such that PE(pos+k) = M_k PE(pos) for every pos: a relative offset is a linear map of the code.

import (
	"fmt"
	"math"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/gomlx/pkg/ml/context/initializers"
)

func init() {
	Register("sinusoidal", func(opts *Options, arch Arch) (Scheme, error) {
		s := &Sinusoidal{
			Base:       opts.Float("base", 10000),
			EmbedScale: opts.Float("embed_scale", math.Sqrt(float64(arch.Dim))),
			LearnScale: opts.Bool("learn_scale", false),
		}
		if arch.Dim%2 != 0 {
			return nil, fmt.Errorf("needs an even model dim, got %d", arch.Dim)
		}
		if s.Base <= 1 {
			return nil, fmt.Errorf("base must be > 1, got %g", s.Base)
		}
		return s, nil
	})
}

// Sinusoidal adds the fixed sin/cos code to the token embeddings.
type Sinusoidal struct {
	Base       float64 // the 10000 of the paper
	EmbedScale float64 // embeddings are multiplied by this before the code is added
	LearnScale bool    // the code is multiplied by a learned scalar α (variable "scale")
}

// Name implements Scheme.
func (*Sinusoidal) Name() string { return "sinusoidal" }

// Input implements the Input hook.
func (s *Sinusoidal) Input(ctx *context.Context, x, pos *Node) *Node {
	dim := x.Shape().Dim(-1)
	return Add(MulScalar(x, s.EmbedScale), ConvertDType(s.Code(ctx, pos, dim), x.DType()))
}

// Code implements Absolute: what is added to the scaled embeddings, α·PE with learn_scale.
func (s *Sinusoidal) Code(ctx *context.Context, pos *Node, dim int) *Node {
	pe := SinusoidalGraph(pos, dim, s.Base, dtypes.Float32)
	if !s.LearnScale {
		return pe
	}
	alpha := ctx.WithInitializer(initializers.One).
		VariableWithShape("scale", shapes.Make(dtypes.Float32)).ValueGraph(pos.Graph())
	return Mul(pe, Reshape(alpha, 1, 1, 1))
}

// Frequencies returns ω_i of a code of width dim: pair (2i, 2i+1) turns by k·ω_i when the
// position moves by k (cmd/pe checks that rotation property with them).
func (s *Sinusoidal) Frequencies(dim int) []float64 { return Frequencies(dim, s.Base) }

// Frequencies returns ω_i = base^(-2i/d) for i in [0, d/2).
func Frequencies(dim int, base float64) []float64 {
	f := make([]float64, dim/2)
	for i := range f {
		f[i] = math.Pow(base, -float64(2*i)/float64(dim))
	}
	return f
}

// SinusoidalTable is the closed form: row pos of the table for positions 0..n-1.
func SinusoidalTable(n, dim int, base float64) [][]float64 {
	freqs := Frequencies(dim, base)
	table := make([][]float64, n)
	for pos := range table {
		row := make([]float64, dim)
		for i, w := range freqs {
			row[2*i] = math.Sin(float64(pos) * w)
			row[2*i+1] = math.Cos(float64(pos) * w)
		}
		table[pos] = row
	}
	return table
}

// SinusoidalGraph computes PE for positions pos [batch, seq] as [batch, seq, dim].
func SinusoidalGraph(pos *Node, dim int, base float64, dtype dtypes.DType) *Node {
	g := pos.Graph()
	freqs := Reshape(Const(g, toFloat32(Frequencies(dim, base))), 1, 1, dim/2)
	angles := Mul(ExpandAxes(ConvertDType(pos, dtypes.Float32), -1), freqs) // [b, s, d/2]
	pe := Stack([]*Node{Sin(angles), Cos(angles)}, -1)                      // [b, s, d/2, 2]: sin, cos interleaved
	dims := pos.Shape().Dimensions
	return ConvertDType(Reshape(pe, dims[0], dims[1], dim), dtype)
}

func toFloat32(xs []float64) []float32 {
	out := make([]float32, len(xs))
	for i, x := range xs {
		out[i] = float32(x)
	}
	return out
}
