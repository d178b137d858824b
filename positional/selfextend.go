package positional

// Self-Extend (Jin et al. 2024, "LLM Maybe LongLM: Self-Extend LLM Context Window Without
// Tuning"): a RoPE model reads past its training length, without training, by attending to
// distant tokens through coarser positions. For a query at position i and a key at j,
//
//	i − j <  W   neighbour attention: RoPE at i and j, as trained
//	i − j >= W   grouped attention:   RoPE at ⌊i/G⌋ + W − ⌊W/G⌋ for the query, ⌊j/G⌋ for the key
//
// G the group size, W the neighbour window. The grouped distance ⌊i/G⌋ − ⌊j/G⌋ + W − ⌊W/G⌋ is
// at least W − 1 (continuing where the window stops) and grows G times slower, so a model trained
// at L reaches about (L − W)·G + W tokens with every distance it sees within what it was trained on.
//
// In the positional block: "self_extend": {"group": G, "window": W} (llama.cpp's --grp-attn-n G
// and --grp-attn-w W set it). The query's grouped position depends on the key's distance, so the
// keys are cached unrotated and both products are taken at attention time, each pair keeping one
// (the paper's code does the same with two attention maps). With W at least the sequence's length
// it is plain RoPE.

import (
	"fmt"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/ml/context"
)

// SelfExtend is RoPE with grouped positions for keys at least Window before the query.
type SelfExtend struct {
	RoPE          *RoPE
	Group, Window int // G >= 1, W >= 1
}

// parseSelfExtend reads a self_extend block (nil when absent).
func parseSelfExtend(o *Options, r *RoPE) (*SelfExtend, error) {
	if o == nil {
		return nil, nil
	}
	s := &SelfExtend{RoPE: r, Group: o.Int("group", 0), Window: o.Int("window", 0)}
	switch {
	case s.Group < 1:
		return nil, fmt.Errorf("self_extend needs group G >= 1 (--grp-attn-n), got %d", s.Group)
	case s.Window < 1:
		return nil, fmt.Errorf("self_extend needs a neighbour window W >= 1 (--grp-attn-w), got %d", s.Window)
	case r.Scaling != nil && (r.Scaling.Type == "dynamic" || r.Scaling.Type == "longrope"):
		return nil, fmt.Errorf("self_extend works on RoPE's own positions; it cannot be combined with rope_scaling %s", r.Scaling.Type)
	}
	return s, nil
}

// Name implements Scheme.
func (*SelfExtend) Name() string { return "rope" }

// InvFreq returns RoPE's frequencies (Self-Extend changes positions, not frequencies).
func (s *SelfExtend) InvFreq() []float64 { return s.RoPE.InvFreq() }

// AttentionFactor is RoPE's.
func (s *SelfExtend) AttentionFactor() float64 { return s.RoPE.AttentionFactor() }

// Scores implements Scores: the neighbour product where i − j < W, the grouped one elsewhere.
func (s *SelfExtend) Scores(ctx *context.Context, layer int, q, k, qPos, kPos *Node) *Node {
	r := s.RoPE
	product := func(qp, kp *Node) *Node {
		return DotGeneral(r.Rotate(q, qp), []int{3}, []int{0, 1}, r.Rotate(k, kp), []int{3}, []int{0, 1})
	}
	// Integer division: positions are int32, so DivScalar floors them (they are >= 0).
	g, shift := float64(s.Group), float64(s.Window-s.Window/s.Group)
	near := product(qPos, kPos)
	far := product(AddScalar(DivScalar(qPos, g), shift), DivScalar(kPos, g))
	dims := near.Shape().Dimensions                        // [b, h, s, t]
	dist := Sub(ExpandAxes(qPos, -1), ExpandAxes(kPos, 1)) // [b, s, t]
	grouped := GreaterOrEqual(dist, Scalar(qPos.Graph(), dtypes.Int32, s.Window))
	bq := max(qPos.Shape().Dim(0), kPos.Shape().Dim(0))
	grouped = BroadcastToDims(Reshape(grouped, bq, 1, dims[2], dims[3]), dims...)
	return Where(grouped, far, near)
}
