// Package positional holds the positional encodings of posformer, one file per scheme.
//
// A scheme touches attention at one or more of four points (hooks). It implements only the
// interfaces it needs, and attention calls whichever are present, in this order:
//
//	Input     x' = f(x, pos)                   on the token embeddings (sinusoidal, learned)
//	QueryKey  q', k' = g(q, k, qPos, kPos)     before the dot product (RoPE)
//	Relative  extra logits from content x relative embeddings, extra values (Shaw, XL, DeBERTa)
//	Bias      bias[h,i,j] = b(qPos_i, kPos_j)  added to the scaled logits (ALiBi)
//
// A scheme may instead replace the q·k product (Scores), when a key's transform depends on the
// query too (dynamic NTK RoPE); LogitScale replaces 1/sqrt(headDim). A scheme whose positions
// come from content (CoPE) reads the finished logits and which keys each query sees, and adds
// to them (Contextual), last.
//
// Positions are data: every hook receives explicit int32 position tensors of shape [batch, seq],
// never an implied iota. That makes KV-cache decoding, padding and packed sequences one code path.
package positional

import (
	"fmt"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/ml/context"
)

// Scheme is a positional encoding. On its own it does nothing (that is NoPE); its behaviour
// comes from the hook interfaces below that it also implements.
type Scheme interface {
	Name() string
}

// Input adds (or otherwise mixes) a position code into the token embeddings.
type Input interface {
	Scheme
	// Input maps embeddings x [batch, seq, dim] at positions pos [batch, seq] to new embeddings.
	Input(ctx *context.Context, x, pos *Node) *Node
}

// QueryKey transforms queries and keys before their dot product.
type QueryKey interface {
	Scheme
	// QueryKey receives the new queries q [batch, heads, seq, headDim] and the new keys
	// k [batch, kvHeads, seq, headDim] of the current chunk with their positions [batch, seq].
	// Keys are transformed once, before they enter the KV cache.
	QueryKey(ctx *context.Context, layer int, q, k, qPos, kPos *Node) (*Node, *Node)
}

// Bias adds a bias that depends on query and key positions to the attention logits.
type Bias interface {
	Scheme
	// Bias returns a tensor broadcastable to [batch, heads, seq_q, seq_k], added after the
	// 1/sqrt(headDim) scaling. qPos is [batch, seq_q], kPos is [batch, seq_k].
	Bias(ctx *context.Context, layer int, qPos, kPos *Node, numHeads int) *Node
}

// Relative adds content-by-position terms (Shaw et al., Transformer-XL, DeBERTa).
type Relative interface {
	Scheme
	// RelativeLogits returns extra logits [batch, heads, seq_q, seq_k], added to q·k before
	// the 1/sqrt(headDim) scaling. q is [batch, heads, seq_q, headDim]; k is the full key set
	// [batch, heads, seq_k, headDim] (key/value heads already repeated for grouped queries).
	RelativeLogits(ctx *context.Context, layer int, q, k, qPos, kPos *Node) *Node
	// RelativeValues returns extra attention output [batch, heads, seq_q, headDim] from the
	// attention probabilities [batch, heads, seq_q, seq_k], or nil when the scheme has none.
	RelativeValues(ctx *context.Context, layer int, probs, qPos, kPos *Node) *Node
}

// Contextual is implemented by schemes whose positional term depends on the attention itself:
// CoPE counts the keys a query's gates let through, DAPE adapts a bias to the logits. It is
// called last, on the logits every other hook has produced, scaled, with the keys each query
// sees.
type Contextual interface {
	Scheme
	// ContextualLogits returns logits [batch, heads, seq_q, seq_k] to add to logits (the same
	// shape, already scaled), from q [batch, heads, seq_q, headDim], visible [batch, heads or
	// 1, seq_q, seq_k] (true where the query sees the key) and the positions as the Bias hook
	// gets them. Keys are in the order they were written (a cache's slot order, which is
	// position order in decoding).
	ContextualLogits(ctx *context.Context, layer int, q, logits, visible, qPos, kPos *Node) *Node
}

// Scores replaces the q·k dot product itself, for schemes whose transform of a key depends on
// the query as well as on the key's own position, so that keys cannot be transformed once
// before they are cached. Dynamic NTK RoPE is one: its base depends on the query's position.
// Keys then enter the cache as the projection made them.
type Scores interface {
	Scheme
	// Scores returns the logits [batch, heads, seq_q, seq_k] before the 1/sqrt(headDim)
	// scaling, from q [batch, heads, seq_q, headDim] and all keys [batch, heads, seq_k,
	// headDim] (key/value heads already repeated for grouped queries).
	Scores(ctx *context.Context, layer int, q, k, qPos, kPos *Node) *Node
}

// LogitScale is implemented by schemes that replace the 1/sqrt(headDim) logit scaling, such as
// DeBERTa, which scales its three terms together by 1/sqrt(3·headDim).
type LogitScale interface {
	LogitScale(headDim int) float64
}

// Absolute is implemented by Input schemes whose code depends on the position alone (not on x).
// Code returns that code [batch, seq, dim] for positions pos [batch, seq]; cmd/pe draws it.
type Absolute interface {
	Code(ctx *context.Context, pos *Node, dim int) *Node
}

// Bucketed is implemented by schemes that map a (query, key) position pair to a discrete
// relative index (T5 buckets, Shaw's and DeBERTa's clipped distances); cmd/pe prints it.
type Bucketed interface {
	Bucket(qPos, kPos int) int
}

// SharedWork is implemented by schemes whose hooks do heavy work that depends on positions
// alone (FIRE's MLP over every (query, key) pair). Training shares one row of positions across
// a batch, so that work is done once per forward and backward pass: a trainer that splits a
// batch into smaller passes repeats it. For FIRE that costs more than the smaller passes save
// (benchmarks/SPEED.md), so cmd/train takes the whole batch in one pass for such a scheme.
type SharedWork interface {
	SharedWork() bool
}

// LayerScope is the context scope of a scheme's per-layer variables. Variables that several
// layers (or two hooks) read, such as T5's shared table, are read through ctx.Checked(false):
// a checked context, as used when a checkpoint is loaded, refuses a second read otherwise.
func LayerScope(ctx *context.Context, layer int) *context.Context {
	return ctx.In(fmt.Sprintf("layer_%d", layer))
}

// Limited is implemented by schemes that cannot encode positions past some bound (a learned
// table, xPos's float32 range).
type Limited interface {
	// Limit is the number of valid positions (0 to Limit-1), or 0 for no bound.
	Limit() int
	// LimitFix says, for an error message, what the bound is and how to go past it.
	LimitFix() string
}

// Arch is what a scheme may need to know about the model it is plugged into.
type Arch struct {
	Dim        int  // model width
	NumHeads   int  // query heads
	NumKVHeads int  // key/value heads
	HeadDim    int  // width of one head
	NumLayers  int  // transformer blocks
	Causal     bool // decoder (causal) or encoder (bidirectional)
	TrainLen   int  // sequence length the model was trained at, 0 when unknown
}
