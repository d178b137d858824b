package positional

// Contextual position encoding, CoPE (Golovneva, Wang, Weston, Sukhbaatar 2024, "Contextual
// Position Encoding: Learning to Count What's Important"): a position is not a token count but
// a count of what the query finds relevant. Each query i gates every key it sees,
//
//	g_ij = σ(z_ij)                  z_ij = q_i·k_j/√d, the attention logit
//	p_ij = Σ_{t=j..i} g_it          how many gated keys lie between j and i (fractional)
//	z'_ij = z_ij + q_i·e[p_ij]      e[p] = (1−w)·e[⌊p⌋] + w·e[⌈p⌉], w = p − ⌊p⌋
//
// with e[0..P−1] learned vectors of head width (one table per layer, shared by the heads, zero
// at the start as in the paper's code) and p clamped to P−1. With every gate at 1, p_ij = i−j+1
// and CoPE is a relative scheme on i − j; a gate that learns to open on, say, line breaks makes
// p count lines. q_i·e[m] is computed for every m once and each (i, j) interpolates between two
// of them, as the paper's code does, so nothing of size [seq, keys, head_dim] is built.
//
// Keys are counted in the order they were written (a cache's slot order): CoPE is for decoders,
// whose keys come in position order; encoders are refused.

import (
	"fmt"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/gomlx/pkg/ml/context/initializers"
)

func init() {
	Register("cope", func(opts *Options, arch Arch) (Scheme, error) {
		c := &CoPE{MaxPositions: opts.Int("max_positions", 64), HeadDim: arch.HeadDim}
		if c.MaxPositions < 2 {
			return nil, fmt.Errorf("max_positions (P, the number of position vectors) must be >= 2, got %d", c.MaxPositions)
		}
		if !arch.Causal {
			return nil, fmt.Errorf("needs a decoder: it counts the keys between j and the query i, which an encoder's keys after the query do not have")
		}
		return c, nil
	})
}

// CoPE adds q_i·e[p_ij] to the logits, p_ij counting the gated keys from j to i.
type CoPE struct {
	MaxPositions int // P: position vectors e[0..P−1]; counts past P−1 share the last
	HeadDim      int
}

// Name implements Scheme.
func (*CoPE) Name() string { return "cope" }

// table returns the layer's position vectors e, [headDim, P] as the paper stores them.
func (c *CoPE) table(ctx *context.Context, layer int, g *Graph) *Node {
	ctx = LayerScope(ctx, layer).WithInitializer(initializers.Zero)
	return ctx.VariableWithShape("pos_emb", shapes.Make(dtypes.Float32, c.HeadDim, c.MaxPositions)).ValueGraph(g)
}

// ContextualLogits implements Contextual.
func (c *CoPE) ContextualLogits(ctx *context.Context, layer int, q, logits, visible, _, _ *Node) *Node {
	dims := logits.Shape().Dimensions
	vis := BroadcastToDims(visible, dims...)
	gates := Where(vis, Sigmoid(logits), ZerosLike(logits))
	return c.fromGates(q, gates, c.table(ctx, layer, q.Graph()))
}

// fromGates is CoPE's term for gates [b, h, s, t] (zero on keys a query does not see) and the
// table e [headDim, P]: q_i·e[p_ij] interpolated at p_ij = Σ_{t >= j} g_it.
func (c *CoPE) fromGates(q, gates, e *Node) *Node {
	g := q.Graph()
	dims := gates.Shape().Dimensions
	b, h, s, t := dims[0], dims[1], dims[2], dims[3]
	// The suffix sums as one product with a constant: later[t', j] = 1 when t' >= j. (A
	// cumulative sum would need ReduceWindow with padding, which not every backend has.)
	iota := Iota(g, shapes.Make(dtypes.Int32, t, t), 0)
	later := ConvertDType(GreaterOrEqual(iota, Iota(g, shapes.Make(dtypes.Int32, t, t), 1)), gates.DType())
	pos := DotGeneral(gates, []int{3}, nil, later, []int{0}, nil) // [b, h, s, t]
	pos = MinScalar(pos, float64(c.MaxPositions-1))
	lo := StopGradient(Floor(pos))
	w := Sub(pos, lo)
	hi := MinScalar(AddScalar(lo, 1), float64(c.MaxPositions-1))
	perRow := DotGeneral(q, []int{3}, nil, ConvertDType(e, q.DType()), []int{0}, nil) // [b, h, s, P]
	rowStart := Reshape(MulScalar(Iota(g, shapes.Make(dtypes.Int32, b*h*s), 0), float64(c.MaxPositions)), b, h, s, 1)
	at := func(idx *Node) *Node { // perRow[b, h, i, idx[b, h, i, j]]
		flat := Add(rowStart, ConvertDType(idx, dtypes.Int32))
		picked := Gather(Reshape(perRow, b*h*s*c.MaxPositions, 1), Reshape(flat, b*h*s*t, 1))
		return Reshape(picked, b, h, s, t)
	}
	return Add(Mul(OneMinus(w), at(lo)), Mul(w, at(hi)))
}
