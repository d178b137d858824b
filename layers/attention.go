package layers

import (
	"math"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/posformer/posformer/positional"
)

// Positional is a scheme together with the context scope that holds its variables.
type Positional struct {
	Scheme positional.Scheme
	Ctx    *context.Context
}

// LayerCache is one layer's keys and values, [batch, kvHeads, capacity, headDim].
type LayerCache struct {
	K, V *Node
}

// AttentionInput is everything about the current chunk that is not the hidden state.
type AttentionInput struct {
	Pos   *Node // [batch, seq] int32 positions of the chunk's tokens
	Valid *Node // [batch, seq] bool: false for padding
	// Cache, when not nil, holds the keys and values written by earlier chunks; Write says
	// where this chunk's go. Without a cache the chunk attends to itself only.
	Cache *LayerCache
	Write *CacheWrite
}

// maskedLogit stands for -inf: finite, so that a row with no visible key (a padding query)
// gives a uniform softmax instead of NaNs.
const maskedLogit = -1e9

// Attention is multi-head attention with grouped queries (n_kv_heads <= n_heads, each key/value
// head shared by n_heads/n_kv_heads query heads, Ainslie et al. 2023) and the four positional
// hooks, called in this order: QueryKey on the new q and k, Scores (when present) instead of q·k,
// Relative on q and all keys, Bias after scaling. It returns the attention output and, when cached, the layer's updated cache.
func Attention(ctx *context.Context, layer int, cfg BlockConfig, pe Positional, x *Node, in AttentionInput, outStd float64) (*Node, *LayerCache) {
	dims := x.Shape().Dimensions
	batch, seq := dims[0], dims[1]
	h, kvh, hd := cfg.NumHeads, cfg.NumKVHeads, cfg.HeadDim
	group := h / kvh

	heads := func(name string, n int) *Node { // [b, s, n·hd] -> [b, n, s, hd]
		y := Linear(ctx.In(name), x, n*hd, cfg.Bias, InitStd)
		return TransposeAllAxes(Reshape(y, batch, seq, n, hd), 0, 2, 1, 3)
	}
	q, k, v := heads("wq", h), heads("wk", kvh), heads("wv", kvh)

	if hook, ok := pe.Scheme.(positional.QueryKey); ok {
		q, k = hook.QueryKey(pe.Ctx, layer, q, k, in.Pos, in.Pos)
	}

	keyPos, keyValid := in.Pos, in.Valid
	var cache *LayerCache
	if in.Cache != nil {
		k = in.Write.Update(in.Cache.K, k)
		v = in.Write.Update(in.Cache.V, v)
		cache = &LayerCache{K: k, V: v}
		keyPos, keyValid = in.Write.Pos, in.Write.Valid
	}
	t := k.Shape().Dim(2)

	// Grouped queries: view q as [b, kvh, group·s, hd] so each key/value head serves its group
	// without copying keys.
	var logits *Node
	if hook, ok := pe.Scheme.(positional.Scores); ok {
		logits = hook.Scores(pe.Ctx, layer, q, repeatKV(k, group), in.Pos, keyPos)
	} else {
		qg := Reshape(q, batch, kvh, group*seq, hd)
		logits = Reshape(DotGeneral(qg, []int{3}, []int{0, 1}, k, []int{3}, []int{0, 1}), batch, h, seq, t)
	}

	if hook, ok := pe.Scheme.(positional.Relative); ok {
		logits = Add(logits, hook.RelativeLogits(pe.Ctx, layer, q, repeatKV(k, group), in.Pos, keyPos))
	}
	scale := 1 / math.Sqrt(float64(hd))
	if hook, ok := pe.Scheme.(positional.LogitScale); ok {
		scale = hook.LogitScale(hd)
	}
	logits = MulScalar(logits, scale)
	if hook, ok := pe.Scheme.(positional.Bias); ok {
		logits = Add(logits, hook.Bias(pe.Ctx, layer, in.Pos, keyPos, h))
	}

	visible := ExpandAxes(keyValid, 1, 2) // [b, 1, 1, t]
	if cfg.Causal {
		visible = LogicalAnd(visible, LessOrEqual(ExpandAxes(keyPos, 1, 2), ExpandAxes(in.Pos, 1, -1)))
	}
	visible = BroadcastToDims(visible, batch, h, seq, t)
	logits = Where(visible, logits, Scalar(x.Graph(), logits.DType(), maskedLogit))
	probs := Softmax(logits, -1)

	pg := Reshape(probs, batch, kvh, group*seq, t)
	out := Reshape(DotGeneral(pg, []int{3}, []int{0, 1}, v, []int{2}, []int{0, 1}), batch, h, seq, hd)
	if hook, ok := pe.Scheme.(positional.Relative); ok {
		if extra := hook.RelativeValues(pe.Ctx, layer, probs, in.Pos, keyPos); extra != nil {
			out = Add(out, extra)
		}
	}
	out = Reshape(TransposeAllAxes(out, 0, 2, 1, 3), batch, seq, h*hd)
	return Linear(ctx.In("wo"), out, cfg.Dim, cfg.Bias, outStd), cache
}

// repeatKV expands [b, kvh, t, hd] to [b, kvh·group, t, hd], head i of the result being
// key/value head i/group, for hooks that want one key tensor per query head.
func repeatKV(k *Node, group int) *Node {
	if group == 1 {
		return k
	}
	d := k.Shape().Dimensions
	k = BroadcastToDims(ExpandAxes(k, 2), d[0], d[1], group, d[2], d[3])
	return Reshape(k, d[0], d[1]*group, d[2], d[3])
}

// CacheWrite places the current chunk's keys and values into a fixed-capacity cache. It is
// computed once per forward pass and shared by all layers. The write is a one-hot blend,
// cache·(1-written) + onehotᵀ·new, rather than a DynamicUpdateSlice, which the pure-Go
// backend lacks; its cost, O(seq·capacity·headDim), is that of attention itself.
type CacheWrite struct {
	oneHot *Node // [b, s, c]: token s of row b lands in slot c
	keep   *Node // [b, 1, c, 1]: 1 where a slot keeps its old content
	Pos    *Node // [b, c] int32: positions of every slot after the write
	Valid  *Node // [b, c] bool: slots holding a real token after the write
}

// NewCacheWrite places token s of row b at slots[b, s] when valid[b, s]; cachePos and
// cacheValid [b, c] describe the slots before the write.
func NewCacheWrite(slots, valid, pos, cachePos, cacheValid *Node) *CacheWrite {
	g := slots.Graph()
	capacity := cachePos.Shape().Dim(1)
	slotIDs := Iota(g, shapes.Make(dtypes.Int32, 1, 1, capacity), 2) // [1, 1, c]
	hit := LogicalAnd(Equal(ExpandAxes(slots, -1), slotIDs), ExpandAxes(valid, -1))
	oneHot := ConvertDType(hit, dtypes.Float32) // [b, s, c]
	written := ReduceLogicalOr(hit, 1)          // [b, c]
	newPos := ReduceSum(Mul(ConvertDType(hit, dtypes.Int32), ExpandAxes(pos, -1)), 1)
	return &CacheWrite{
		oneHot: oneHot,
		keep:   ExpandAxes(OneMinus(ConvertDType(written, dtypes.Float32)), 1, -1),
		Pos:    Where(written, newPos, cachePos),
		Valid:  LogicalOr(written, cacheValid),
	}
}

// Update returns cache [b, kvh, c, hd] with new [b, kvh, s, hd] written in.
func (w *CacheWrite) Update(cache, new *Node) *Node {
	oneHot := ConvertDType(w.oneHot, new.DType())
	placed := DotGeneral(new, []int{2}, []int{0}, oneHot, []int{1}, []int{0}) // [b, kvh, hd, c]
	placed = TransposeAllAxes(placed, 0, 1, 3, 2)
	return Add(Mul(cache, ConvertDType(w.keep, cache.DType())), placed)
}
