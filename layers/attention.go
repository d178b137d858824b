package layers

import (
	"fmt"
	"math"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/posformer/posformer/positional"
)

// Positional is a scheme together with the context scope that holds its variables, and the
// scalable softmax when the model has it (an option of any scheme, positional/ssmax.go).
type Positional struct {
	Scheme positional.Scheme
	Ctx    *context.Context
	SSMax  *positional.SSMax
}

// LayerCache is one layer's keys and values, stored as BlockConfig.CacheSlotAxis says: one key
// a row [batch, kvHeads, capacity, headDim], or transposed [batch, kvHeads, headDim, capacity]
// for small heads.
type LayerCache struct {
	K, V *Node
}

// cacheBySlotHeadDim is the smallest head size whose cache keeps each key (and value) a row.
const cacheBySlotHeadDim = 32

// CacheSlotAxis is the axis of a layer's cached keys and values that runs over slots.
//
// 2, for heads of 32 values or more: [batch, kvHeads, capacity, headDim]. A head's visible keys
// are one contiguous block, so decoding's q·k and p·v each read one stream, and a token's write
// is one row a head instead of a value in each of headDim rows of slots. Decoding's attention
// took 13% less time and its cache writes half on the 110M shape (heads of 64, Q4_0, 200
// tokens), and the 15M shape's (heads of 48) tokens 15% less time (Q8_0, step timers).
//
// 3, for smaller heads: [batch, kvHeads, headDim, capacity]. With 8 or 16 values a key, one
// dot product per key is mostly a horizontal sum; as rows of capacity keys, q·k multiplies a
// few rows of q by rows of keys and p·v contracts the last axis, vector operations along the
// keys (2-3x faster in cache for stories260K's heads of 8).
func (c BlockConfig) CacheSlotAxis() int {
	if c.HeadDim >= cacheBySlotHeadDim {
		return 2
	}
	return 3
}

// CacheDims are the dimensions of a layer's cached keys (and values) for batch rows of
// capacity slots, laid out as CacheSlotAxis says.
func (c BlockConfig) CacheDims(batch, capacity int) []int {
	if c.CacheSlotAxis() == 2 {
		return []int{batch, c.NumKVHeads, capacity, c.HeadDim}
	}
	return []int{batch, c.NumKVHeads, c.HeadDim, capacity}
}

// AttentionInput is everything about the current chunk that is not the hidden state.
type AttentionInput struct {
	// Pos [batch, seq] int32 are the positions of the chunk's tokens, or one row [1, seq] that
	// every sequence shares (training): the QueryKey, Scores and Bias hooks then compute once
	// for the batch and their results broadcast. RowPos, when Pos is shared, is Pos with a row
	// per sequence, for the Relative hooks, whose results depend on each row's queries anyway.
	Pos, RowPos *Node
	Valid       *Node // [batch, seq] bool: false for padding
	// Mask is the additive mask [batch, heads, seq, keys] (0 where a query sees a key, a large
	// negative number elsewhere) from MaskBias, computed once per forward pass and shared by
	// every layer; nil means Attention builds it.
	Mask *Node
	// Cache, when not nil, holds the keys and values written by earlier chunks; Write says
	// where this chunk's go. Without a cache the chunk attends to itself only.
	Cache *LayerCache
	Write *CacheWrite
}

// maskedLogit stands for -inf: finite, so that a row with no visible key (a padding query)
// gives a finite softmax instead of NaNs.
const maskedLogit = -1e9

// MaskBias is the additive attention mask for queries at qPos [batch, seq] over keys at keyPos
// [batch, keys] (keyValid false for padding and empty cache slots): 0 where the key is visible
// (valid, and not in the future when causal), maskedLogit elsewhere, broadcast to
// [batch, heads, seq, keys] once so that each layer adds it without broadcasting.
func MaskBias(causal bool, heads int, qPos, keyPos, keyValid *Node) *Node {
	b, s, t := qPos.Shape().Dim(0), qPos.Shape().Dim(1), keyPos.Shape().Dim(1)
	visible := BroadcastToDims(ExpandAxes(keyValid, 1), b, s, t)
	if causal {
		visible = LogicalAnd(visible, LessOrEqual(ExpandAxes(keyPos, 1), ExpandAxes(qPos, -1)))
	}
	bias := Where(visible, Scalar(qPos.Graph(), dtypes.Float32, 0), Scalar(qPos.Graph(), dtypes.Float32, maskedLogit))
	return BroadcastToDims(ExpandAxes(bias, 1), b, heads, s, t)
}

// toHeads views y [b, s, n·hd] as [b, n, s, hd]. With one token the transpose only renames
// axes, and a reshape does it without moving data.
func toHeads(y *Node, n, hd int) *Node {
	b, s := y.Shape().Dim(0), y.Shape().Dim(1)
	y = Reshape(y, b, s, n, hd)
	if s == 1 {
		return Reshape(y, b, n, s, hd)
	}
	return TransposeAllAxes(y, 0, 2, 1, 3)
}

// fromHeads is the inverse of toHeads: [b, n, s, hd] -> [b, s, n·hd].
func fromHeads(y *Node) *Node {
	d := y.Shape().Dimensions
	if d[2] != 1 {
		y = TransposeAllAxes(y, 0, 2, 1, 3)
	}
	return Reshape(y, d[0], d[2], d[1]*d[3])
}

// Attention is multi-head attention with grouped queries (n_kv_heads <= n_heads, each key/value
// head shared by n_heads/n_kv_heads query heads, Ainslie et al. 2023) and the four positional
// hooks, called in this order: QueryKey on the new q and k, Scores (when present) instead of q·k,
// Relative on q and all keys, Bias after scaling, Contextual on the finished logits; then the
// scalable softmax's factor when the model has one. It returns the attention output and, when cached, the layer's updated cache.
func Attention(ctx *context.Context, layer int, cfg BlockConfig, pe Positional, x *Node, in AttentionInput, outStd float64) (*Node, *LayerCache) {
	dims := x.Shape().Dimensions
	batch, seq := dims[0], dims[1]
	h, kvh, hd := cfg.NumHeads, cfg.NumKVHeads, cfg.HeadDim
	group := h / kvh

	heads := func(name string, n int) *Node { // [b, s, n·hd] -> [b, n, s, hd]
		return toHeads(Linear(ctx.In(name), x, n*hd, cfg.Bias || cfg.QKVBias, InitStd), n, hd)
	}
	q, k, v := heads("wq", h), heads("wk", kvh), heads("wv", kvh)

	if hook, ok := pe.Scheme.(positional.QueryKey); ok {
		q, k = hook.QueryKey(pe.Ctx, layer, q, k, in.Pos, in.Pos)
	}

	keyPos, keyValid := in.Pos, in.Valid
	relPos, relKeyPos := in.Pos, in.Pos // the Relative hooks' and the mask's: a row per sequence
	if in.RowPos != nil {
		relPos, relKeyPos = in.RowPos, in.RowPos
	}
	var cache *LayerCache
	// kAxis and vAxis are the axes of k and v that run over keys: 2 for [b, kvh, t, hd], 3 for
	// a cache stored transposed [b, kvh, hd, t] (CacheSlotAxis).
	kAxis, vAxis := 2, 2
	if in.Cache != nil {
		kAxis = cfg.CacheSlotAxis()
		vAxis = kAxis
		k = in.Write.Keys(in.Cache.K, k, kAxis)
		v = in.Write.Values(in.Cache.V, v, vAxis)
		cache = &LayerCache{K: k, V: v}
		keyPos, keyValid = in.Write.Pos, in.Write.Valid
		relKeyPos = keyPos
	}
	t := k.Shape().Dim(kAxis)
	// keys and values as float32 for the products: a cache kept in half precision is widened
	// where it is read, one conversion for each reader, so that a backend can fuse each into its
	// product (engine/cpu reads the halves directly).
	keys := func() *Node { return widen(k) }
	values := func() *Node { return widen(v) }
	// hookKeys are the keys as the hooks take them, [b, h, t, hd].
	hookKeys := func() *Node {
		kk := keys()
		if kAxis == 3 {
			kk = TransposeAllAxes(kk, 0, 1, 3, 2)
		}
		return repeatKV(kk, group)
	}

	// Grouped queries: view q as [b, kvh, group·s, hd] so each key/value head serves its group
	// without copying keys.
	var logits *Node
	if hook, ok := pe.Scheme.(positional.Scores); ok {
		logits = hook.Scores(pe.Ctx, layer, q, hookKeys(), in.Pos, keyPos)
	} else {
		qg := Reshape(q, batch, kvh, group*seq, hd)
		logits = Reshape(DotGeneral(qg, []int{3}, []int{0, 1}, keys(), []int{5 - kAxis}, []int{0, 1}), batch, h, seq, t)
	}

	if hook, ok := pe.Scheme.(positional.Relative); ok {
		logits = Add(logits, hook.RelativeLogits(pe.Ctx, layer, q, hookKeys(), relPos, relKeyPos))
	}
	scale := 1 / math.Sqrt(float64(hd))
	if hook, ok := pe.Scheme.(positional.LogitScale); ok {
		scale = hook.LogitScale(hd)
	}
	logits = MulScalar(logits, scale)
	if hook, ok := pe.Scheme.(positional.Bias); ok {
		logits = Add(logits, hook.Bias(pe.Ctx, layer, in.Pos, keyPos, h))
	}

	mask := in.Mask
	if mask == nil {
		mask = MaskBias(cfg.Causal, h, relPos, relKeyPos, keyValid)
	}
	contextHook, contextual := pe.Scheme.(positional.Contextual)
	if contextual || pe.SSMax != nil {
		visible := positional.VisibleKeys(mask)
		if contextual {
			logits = Add(logits, contextHook.ContextualLogits(pe.Ctx, layer, q, logits, visible, in.Pos, keyPos))
		}
		if pe.SSMax != nil {
			// Before the mask: a hidden key's logit must stay hidden whatever the factor.
			logits = pe.SSMax.Scale(ctx, logits, visible)
		}
	}
	logits = Add(logits, mask)
	var out *Node
	if hook, ok := pe.Scheme.(positional.Relative); ok {
		probs := Softmax(logits, -1)
		pg := Reshape(probs, batch, kvh, group*seq, t)
		out = Reshape(DotGeneral(pg, []int{3}, []int{0, 1}, values(), []int{vAxis}, []int{0, 1}), batch, h, seq, hd)
		if extra := hook.RelativeValues(pe.Ctx, layer, probs, relPos, relKeyPos); extra != nil {
			out = Add(out, extra)
		}
	} else {
		out = SoftmaxValues(logits, values(), vAxis, kvh)
	}
	return Linear(ctx.In("wo"), fromHeads(out), cfg.Dim, cfg.Bias, outStd), cache
}

// widen is x as float32: a cache kept as float16 or bfloat16 read for a product.
func widen(x *Node) *Node {
	if x.DType() == dtypes.Float32 {
		return x
	}
	return ConvertDType(x, dtypes.Float32)
}

// SoftmaxValues is softmax(logits)·v for logits [b, h, s, t] and values v [b, kvh, t, hd]
// (keys on axis vAxis: 2, or 3 when stored transposed [b, kvh, hd, t]), computed as
// (exp(logits - max)·v) / Σ exp(logits - max): the division acts on [.., hd] instead of
// [.., t], and the sum is a dot product with ones: fewer elementwise passes over every key.
// Schemes with relative values need the normalized probabilities and use Softmax. A backend may
// recognize this expression after a mask is added to the logits (engine/cpu then computes it
// over the keys each query sees), so its tests build it from here.
func SoftmaxValues(logits, v *Node, vAxis, kvh int) *Node {
	d := logits.Shape().Dimensions
	b, h, s, t := d[0], d[1], d[2], d[3]
	hd := v.Shape().Dim(5 - vAxis) // the other of axes 2, 3
	e := Exp(Sub(logits, StopGradient(ReduceAndKeep(logits, ReduceMax, -1))))
	eg := Reshape(e, b, kvh, h/kvh*s, t)
	num := DotGeneral(eg, []int{3}, []int{0, 1}, v, []int{vAxis}, []int{0, 1}) // [b, kvh, g·s, hd]
	ones := Ones(logits.Graph(), shapes.Make(logits.DType(), t))
	den := DotGeneral(eg, []int{3}, nil, ones, []int{0}, nil) // [b, kvh, g·s]
	return Reshape(Div(num, ExpandAxes(den, -1)), b, h, s, hd)
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

// CacheWrite places the current chunk's keys and values into a fixed-capacity cache, computed
// once per forward pass and shared by all layers. Each token's key (a [kvHeads, headDim] window)
// is added with a scatter into its slot (not DynamicUpdateSlice, see portable.go); a backend
// scatters in place into the donated cache buffer, so a write costs O(seq·kvHeads·headDim),
// not O(capacity). Slots start at zero and are written once, so adding is placing. A padding
// token adds zeros (to some slot in range; its own is past the row's end).
type CacheWrite struct {
	indices *Node // [b, s, 2]: (row, slot) of each chunk token
	weight  *Node // [b, 1, s, 1]: 1 for real tokens, 0 for padding
	Pos     *Node // [b, c] int32: positions of every slot after the write
	Valid   *Node // [b, c] bool: slots holding a real token after the write
}

// NewCacheWrite places token s of row b at slots[b, s] (which must lie in [0, capacity)) when
// valid[b, s]; cachePos and cacheValid [b, c] describe the slots before the write. The slots'
// positions and validity are scattered as the keys are, one value per token: comparing every
// token with every slot would cost O(s·c), 2-3% of a short model's prefill at 512 tokens.
func NewCacheWrite(slots, valid, pos, cachePos, cacheValid *Node) *CacheWrite {
	g := slots.Graph()
	b, s := slots.Shape().Dim(0), slots.Shape().Dim(1)
	capacity := cachePos.Shape().Dim(1)
	rows := Iota(g, shapes.Make(dtypes.Int32, b, s), 0)
	indices := Stack([]*Node{rows, slots}, -1) // [b, s, 2]
	one := ConvertDType(valid, dtypes.Int32)   // a padding token adds 0 to whatever slot it names
	scatter := func(updates *Node) *Node {
		zeros := Zeros(g, shapes.Make(dtypes.Int32, b, capacity))
		return BackendScatterSum(zeros, indices, updates, 2, nil, []int{0, 1}, []int{0, 1}, false, false)
	}
	written := GreaterThan(scatter(one), ScalarZero(g, dtypes.Int32)) // [b, c]
	newPos := scatter(Mul(pos, one))                                  // each slot is written once
	return &CacheWrite{
		indices: indices,
		weight:  Reshape(ConvertDType(valid, dtypes.Float32), b, 1, s, 1),
		Pos:     Where(written, newPos, cachePos),
		Valid:   LogicalOr(written, cacheValid),
	}
}

// Keys returns the cache with new [b, kvh, s, hd] written in: cache [b, kvh, c, hd] (slotAxis
// 2) or [b, kvh, hd, c] (3), as BlockConfig.CacheSlotAxis says.
func (w *CacheWrite) Keys(cache, new *Node, slotAxis int) *Node {
	return w.scatter(cache, new, slotAxis)
}

// Values is Keys for the values.
func (w *CacheWrite) Values(cache, new *Node, slotAxis int) *Node {
	return w.scatter(cache, new, slotAxis)
}

// scatter adds each token's [kvh, hd] window of new into cache at (row, slot), the slot being
// axis slotAxis of cache. GoMLX's ScatterSum indexes leading axes only; the backend's general
// scatter (XLA semantics) indexes any axes, so the values need no transposing.
func (w *CacheWrite) scatter(cache, new *Node, slotAxis int) *Node {
	if slotAxis != 2 && slotAxis != 3 {
		panic(fmt.Sprintf("layers: a cache's slot axis is 2 or 3, got %d", slotAxis))
	}
	upd := Mul(new, ConvertDType(w.weight, new.DType()))
	if cache.DType() != upd.DType() {
		upd = ConvertDType(upd, cache.DType()) // a cache kept in half precision (engine.SetCacheTypes)
	}
	return BackendScatterSum(cache, w.indices, upd, 2, []int{1, 3}, []int{0, slotAxis}, []int{0, slotAxis}, false, false)
}
