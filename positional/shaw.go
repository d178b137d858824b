package positional

// Relative position representations (Shaw, Uszkoreit, Vaswani 2018, "Self-Attention with
// Relative Position Representations"):
//
//	e_ij = q_i · (k_j + a^K_ij) / sqrt(d)
//	z_i  = Σ_j α_ij (v_j + a^V_ij)
//	a^K_ij = w^K_clip(j-i, -k, k),  a^V_ij = w^V_clip(j-i, -k, k)
//
// w^K and w^V are tables of 2k+1 learned vectors of head width, one pair per layer, shared by
// the heads (as in the paper). Distances past k share the edge vector: the paper's argument is
// that precise relative position is not useful beyond some distance, and clipping lets the
// model see sequences longer than any it was trained on.
//
// The paper (sect. 3.3) builds a^K as one [n, n, d] tensor shared by the batch and the heads.
// Here positions differ per batch row and keys may come from a cache, and nothing of size
// [seq, keys, head_dim] is built: q_i·w^K_r is computed for all 2k+1 rows r and each (i, j)
// picks its row; for values, the probabilities are summed into their 2k+1 buckets, then
// multiplied by w^V.

import (
	"fmt"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/gomlx/pkg/ml/context/initializers"
)

func init() {
	Register("shaw", func(opts *Options, arch Arch) (Scheme, error) {
		s := &Shaw{MaxDistance: opts.Int("max_distance", 16), HeadDim: arch.HeadDim}
		if s.MaxDistance < 1 {
			return nil, fmt.Errorf("max_distance must be >= 1, got %d", s.MaxDistance)
		}
		return s, nil
	})
}

// Shaw adds learned clipped-distance vectors to the keys and values of attention.
type Shaw struct {
	MaxDistance int // k: distances are clipped to [-k, k]
	HeadDim     int
}

// Name implements Scheme.
func (*Shaw) Name() string { return "shaw" }

// Bucket implements Bucketed: the row of w^K and w^V used by a query at qPos for a key at kPos.
func (s *Shaw) Bucket(qPos, kPos int) int {
	return min(max(kPos-qPos, -s.MaxDistance), s.MaxDistance) + s.MaxDistance
}

// buckets is Bucket for every pair: [b, s, t] int32 from qPos [b, s] and kPos [b, t].
func (s *Shaw) buckets(qPos, kPos *Node) *Node {
	dist := Sub(ExpandAxes(kPos, 1), ExpandAxes(qPos, -1))
	k := float64(s.MaxDistance)
	return AddScalar(ClipScalar(dist, -k, k), k)
}

// tables returns the layer's w^K and w^V, each [2k+1, headDim].
func (s *Shaw) tables(ctx *context.Context, layer int, g *Graph) (wk, wv *Node) {
	// Both hooks read the same tables within one graph: unchecked, the second call reuses
	// what the first created instead of failing in a checked context.
	ctx = LayerScope(ctx, layer).Checked(false)
	ctx = ctx.WithInitializer(initializers.RandomNormalFn(ctx, 0.02))
	shape := shapes.Make(dtypes.Float32, 2*s.MaxDistance+1, s.HeadDim)
	return ctx.VariableWithShape("wk", shape).ValueGraph(g), ctx.VariableWithShape("wv", shape).ValueGraph(g)
}

// RelativeLogits implements Relative: q_i · w^K_bucket(i,j).
func (s *Shaw) RelativeLogits(ctx *context.Context, layer int, q, k, qPos, kPos *Node) *Node {
	wk, _ := s.tables(ctx, layer, q.Graph())
	perRow := DotGeneral(q, []int{3}, nil, ConvertDType(wk, q.DType()), []int{1}, nil) // [b, h, s, 2k+1]
	return pickPerPair(perRow, s.buckets(qPos, kPos))
}

// RelativeValues implements Relative: Σ_j α_ij w^V_bucket(i,j) = Σ_r (Σ_{j in bucket r} α_ij) w^V_r.
func (s *Shaw) RelativeValues(ctx *context.Context, layer int, probs, qPos, kPos *Node) *Node {
	_, wv := s.tables(ctx, layer, probs.Graph())
	mass := sumPerBucket(probs, s.buckets(qPos, kPos), 2*s.MaxDistance+1) // [b, h, s, 2k+1]
	return DotGeneral(mass, []int{3}, nil, ConvertDType(wv, probs.DType()), []int{0}, nil)
}

// pickPerPair returns out[b, h, i, j] = x[b, h, i, idx[b, i, j]] for x [b, h, s, r] and
// idx [b, s, t] in [0, r). One Gather on the flattened x: it costs O(b·h·s·t), where a
// one-hot [b, s, t, r] contraction would cost, and hold in memory, r times more. Everything is
// flattened to rank 2 (see layers/portable.go).
func pickPerPair(x, idx *Node) *Node {
	d := x.Shape().Dimensions
	flat := flatPairIndex(idx, d[1], d[3])
	picked := Gather(Reshape(x, x.Shape().Size(), 1), Reshape(flat, flat.Shape().Size(), 1))
	return Reshape(picked, d[0], d[1], d[2], idx.Shape().Dim(2))
}

// sumPerBucket is the transpose of pickPerPair: out[b, h, i, r] = Σ_{j: idx[b,i,j] = r} p[b, h, i, j]
// for p [b, h, s, t].
func sumPerBucket(p, idx *Node, r int) *Node {
	d := p.Shape().Dimensions
	flat := flatPairIndex(idx, d[1], r)
	zeros := Zeros(p.Graph(), shapes.Make(p.DType(), d[0]*d[1]*d[2]*r, 1))
	sums := ScatterSum(zeros, Reshape(flat, flat.Shape().Size(), 1), Reshape(p, p.Shape().Size(), 1), false, false)
	return Reshape(sums, d[0], d[1], d[2], r)
}

// flatPairIndex returns [b, heads, s, t]: the offset of element (b, h, i, idx[b, i, j]) in a
// flattened [b, heads, s, r] tensor.
func flatPairIndex(idx *Node, heads, r int) *Node {
	b, s := idx.Shape().Dim(0), idx.Shape().Dim(1)
	rowStart := MulScalar(Iota(idx.Graph(), shapes.Make(dtypes.Int32, b*heads*s), 0), float64(r))
	return Add(Reshape(rowStart, b, heads, s, 1), ExpandAxes(ConvertDType(idx, dtypes.Int32), 1))
}
