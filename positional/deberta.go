package positional

// Disentangled attention (He, Liu, Gao, Chen 2021, "DeBERTa: Decoding-enhanced BERT with
// Disentangled Attention"):
//
//	A_ij = Q^c_i · K^c_j  +  Q^c_i · K^r_δ(i,j)  +  K^c_j · Q^r_δ(j,i)      scaled by 1/sqrt(3d)
//	       content→content   content→position      position→content
//
//	δ(i,j) = 0 if i-j <= -k,  2k-1 if i-j >= k,  i-j+k otherwise        (in [0, 2k))
//	Q^r = P·W_q,r,  K^r = P·W_k,r
//
// P [2k, model dim] holds one embedding per relative distance, shared by all layers; each layer
// projects it with its own W_q,r and W_k,r into per-head relative queries and keys. The
// position→content term reads δ(j,i), the distance seen from key j to query i: the paper's
// point is that a key's relevance depends on where the query stands relative to it. The 1/sqrt(3d)
// keeps the sum of three dot products at the variance of one.
//
// Computed as in the paper's Algorithm 1, without a [seq, keys, head_dim] tensor: each
// content query meets all 2k relative keys (and each content key all 2k relative queries),
// then every (i, j) picks its δ. With fewer queries than 2k (decoding), the position→content
// term instead fetches each pair's row of Q^r, which is then the cheaper of the two.

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
	Register("deberta", func(opts *Options, arch Arch) (Scheme, error) {
		d := &DeBERTa{MaxDistance: opts.Int("max_distance", 16), Dim: arch.Dim, NumHeads: arch.NumHeads, HeadDim: arch.HeadDim}
		if d.MaxDistance < 1 {
			return nil, fmt.Errorf("max_distance must be >= 1, got %d", d.MaxDistance)
		}
		return d, nil
	})
}

// DeBERTa adds content→position and position→content terms to the attention logits.
type DeBERTa struct {
	MaxDistance int // k: P has 2k rows
	Dim         int // model width, the width of P
	NumHeads    int
	HeadDim     int
}

// Name implements Scheme.
func (*DeBERTa) Name() string { return "deberta" }

// Bucket implements Bucketed: δ(qPos, kPos), the row of K^r met by a query at qPos for a key at
// kPos (the position→content term uses δ(kPos, qPos)).
func (d *DeBERTa) Bucket(qPos, kPos int) int {
	return min(max(qPos-kPos, -d.MaxDistance), d.MaxDistance-1) + d.MaxDistance
}

// LogitScale implements LogitScale: three terms, 1/sqrt(3d).
func (*DeBERTa) LogitScale(headDim int) float64 { return 1 / math.Sqrt(3*float64(headDim)) }

// delta is δ(from_i, to_j) for every pair: [b, s, t] int32 from from [b, s] and to [b, t].
func (d *DeBERTa) delta(from, to *Node) *Node {
	k := float64(d.MaxDistance)
	return AddScalar(ClipScalar(Sub(ExpandAxes(from, -1), ExpandAxes(to, 1)), -k, k-1), k)
}

// relative returns the layer's relative queries Q^r and keys K^r, each [heads, 2k, headDim].
func (d *DeBERTa) relative(ctx *context.Context, layer int, g *Graph) (qr, kr *Node) {
	rows := 2 * d.MaxDistance
	// P stands where the hidden states stand in Q^c = H·W_q (after a norm, about unit scale; the
	// paper's code normalises P too in later versions), so it starts at unit scale and
	// W_q,r, W_k,r start like the content projections.
	// P is read by every layer of one graph: unchecked, later layers reuse what the first
	// created instead of failing in a checked context.
	shared := ctx.Checked(false)
	p := shared.WithInitializer(initializers.RandomNormalFn(shared, 1)).
		VariableWithShape("p", shapes.Make(dtypes.Float32, rows, d.Dim)).ValueGraph(g)
	lctx := LayerScope(ctx, layer)
	lctx = lctx.WithInitializer(initializers.RandomNormalFn(lctx, 0.02))
	project := func(name string) *Node { // W stored [out, in], as layers.Linear and PyTorch store it
		w := lctx.VariableWithShape(name, shapes.Make(dtypes.Float32, d.NumHeads*d.HeadDim, d.Dim)).ValueGraph(g)
		pw := DotGeneral(p, []int{1}, nil, w, []int{1}, nil)
		return TransposeAllAxes(Reshape(pw, rows, d.NumHeads, d.HeadDim), 1, 0, 2)
	}
	return project("wq_r"), project("wk_r")
}

// RelativeLogits implements Relative: Q^c_i·K^r_δ(i,j) + K^c_j·Q^r_δ(j,i), unscaled.
func (d *DeBERTa) RelativeLogits(ctx *context.Context, layer int, q, k, qPos, kPos *Node) *Node {
	qr, kr := d.relative(ctx, layer, q.Graph())
	// x [b, h, n, hd] against all 2k relative vectors [h, 2k, hd]: [b, h, n, 2k].
	allRows := func(x, rel *Node) *Node {
		y := DotGeneral(x, []int{3}, []int{1}, ConvertDType(rel, x.DType()), []int{2}, []int{0}) // [h, b, n, 2k]
		return TransposeAllAxes(y, 1, 0, 2, 3)
	}
	c2p := pickPerPair(allRows(q, kr), d.delta(qPos, kPos)) // [b, h, s, t]
	var p2c *Node
	if q.Shape().Dim(2) >= 2*d.MaxDistance {
		p2c = TransposeAllAxes(pickPerPair(allRows(k, qr), d.delta(kPos, qPos)), 0, 1, 3, 2) // [b, h, t, s] -> [b, h, s, t]
	} else {
		// Fewer queries than rows (decoding one token against the cache): meeting every key
		// with all 2k rows would cost 2k/s times more than fetching each pair's own row.
		p2c = rowPerPair(k, qr, TransposeAllAxes(d.delta(kPos, qPos), 0, 2, 1))
	}
	return Add(c2p, p2c)
}

// rowPerPair returns out[b, h, i, j] = x[b, h, j]·rel[h, idx[b, i, j]] for x [b, h, t, hd],
// rel [h, r, hd] and idx [b, s, t], through a [b, h, s, t, hd] tensor: for small s only.
func rowPerPair(x, rel, idx *Node) *Node {
	dims := x.Shape().Dimensions
	b, h, t, hd := dims[0], dims[1], dims[2], dims[3]
	s, r := idx.Shape().Dim(1), rel.Shape().Dim(1)
	headStart := MulScalar(Iota(x.Graph(), shapes.Make(dtypes.Int32, 1, h, 1, 1), 1), float64(r))
	flat := Add(headStart, ExpandAxes(ConvertDType(idx, dtypes.Int32), 1)) // [b, h, s, t]
	rows := Gather(Reshape(ConvertDType(rel, x.DType()), h*r, hd), Reshape(flat, b*h*s*t, 1))
	return ReduceSum(Mul(Reshape(rows, b, h, s, t, hd), ExpandAxes(x, 2)), -1)
}

// RelativeValues implements Relative: DeBERTa leaves the values alone.
func (*DeBERTa) RelativeValues(ctx *context.Context, layer int, probs, qPos, kPos *Node) *Node {
	return nil
}
