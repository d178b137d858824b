package positional

// LongRoPE (Ding et al. 2024, "LongRoPE: Extending LLM Context Window Beyond 2 Million Tokens"),
// in the form Phi-3 ships and Hugging Face's rope_type "longrope" reads: every rotary pair i
// gets its own rescale factor λ_i, found by the paper's evolutionary search, one set for
// sequences within the original context L and one past it,
//
//	θ'_i = θ_i / λ_i = 1 / (λ_i · b^(2i/r))      λ = short_factor (n <= L) or long_factor (n > L)
//
// with cos and sin multiplied by √(1 + ln s / ln L) (s = factor), or by attention_factor when
// the configuration gives one, so the logits by its square.
//
//	"positional": {"name": "rope", "rope_scaling": {"rope_type": "longrope", "factor": 32,
//	               "original_max_position_embeddings": 4096,
//	               "short_factor": [... one per pair ...], "long_factor": [...]}}
//
// Which set applies depends on the sequence's length, as dynamic NTK's base does, and for the
// same reason keys are cached unrotated: each query uses the set of its own length m+1, and so
// do the keys it reads. Hugging Face switches the set for the whole sequence when it passes L,
// and its cache keeps the keys rotated with the set they were written under; here cached
// decoding equals full recomputation at every position. The cost: two q·k products, one per
// set, of which each query keeps one.

import (
	"math"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/ml/context"
)

// LongRoPE is RoPE with per-pair rescale factors that depend on the query's length.
type LongRoPE struct {
	RoPE *RoPE // base, layout, rotary dims; RoPE.Scaling is the longrope block
}

// Name implements Scheme.
func (*LongRoPE) Name() string { return "rope" }

// InvFreq returns the frequencies within the original context (the short factors).
func (l *LongRoPE) InvFreq() []float64 { return l.RoPE.InvFreqAt(0) }

// InvFreqAt returns the frequencies a query at sequence length n uses.
func (l *LongRoPE) InvFreqAt(n int) []float64 { return l.RoPE.InvFreqAt(n) }

// AttentionFactor multiplies cos and sin, at every length.
func (l *LongRoPE) AttentionFactor() float64 { return l.RoPE.AttentionFactor() }

// LongRoPEAttentionFactor is √(1 + ln s / ln L) (1 for s <= 1), the paper's and Phi-3's.
func LongRoPEAttentionFactor(factor float64, origLen int) float64 {
	if factor <= 1 {
		return 1
	}
	return math.Sqrt(1 + math.Log(factor)/math.Log(float64(origLen)))
}

// Scores computes q'·k' with both rotated by the short factors for queries at positions below
// L and by the long ones from L on.
func (l *LongRoPE) Scores(ctx *context.Context, layer int, q, k, qPos, kPos *Node) *Node {
	r := l.RoPE
	L := r.Scaling.OrigLen
	product := func(n int) *Node { // every query against every key, both rotated for length n
		f := r.InvFreqAt(n)
		qc, qs := r.cosSinOf(qPos, q.DType(), f)
		kc, ks := r.cosSinOf(kPos, k.DType(), f)
		return DotGeneral(r.RotateWith(q, qc, qs), []int{3}, []int{0, 1}, r.RotateWith(k, kc, ks), []int{3}, []int{0, 1})
	}
	short, long := product(L), product(L+1)
	dims := short.Shape().Dimensions                                                                // [b, h, s, t]
	past := GreaterOrEqual(ConvertDType(qPos, dtypes.Int32), Scalar(qPos.Graph(), dtypes.Int32, L)) // [b or 1, s]
	past = BroadcastToDims(Reshape(past, qPos.Shape().Dim(0), 1, dims[2], 1), dims...)
	return Where(past, long, short)
}
