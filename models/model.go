package models

import (
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/gomlx/pkg/ml/context/initializers"
	"github.com/posformer/posformer/layers"
	"github.com/posformer/posformer/positional"
)

// Model is a decoder or an encoder: token embedding, positional scheme, n pre-norm blocks,
// final norm, and a head onto the vocabulary. Options of Config add what other checkpoints
// need: a token-type row and a norm on the embeddings, post-norm blocks (no final norm), and
// BERT's masked-LM head (dense, activation, norm, then the vocabulary with a bias).
type Model struct {
	Config Config
	Scheme positional.Scheme
	SSMax  *positional.SSMax // scalable softmax ("ssmax": true in the positional block), or nil
}

// New validates cfg and builds its positional scheme.
func New(cfg Config) (*Model, error) {
	cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s, err := cfg.Scheme()
	if err != nil {
		return nil, err
	}
	ss, err := positional.NewSSMax(cfg.Positional, cfg.Arch())
	if err != nil {
		return nil, err
	}
	return &Model{Config: cfg, Scheme: s, SSMax: ss}, nil
}

// Scope is the context scope that holds the model's variables; optimizers keep theirs elsewhere.
const Scope = "model"

// Cache is the graph-side KV cache: one LayerCache per block (keys and values [batch, kvHeads,
// capacity, headDim], or transposed [batch, kvHeads, headDim, capacity] for heads of fewer than
// 32 values: layers.BlockConfig.CacheSlotAxis), plus the positions and validity of every slot,
// and the slots the current chunk writes to.
type Cache struct {
	Layers []layers.LayerCache
	Pos    *Node // [batch, capacity] int32
	Valid  *Node // [batch, capacity] bool
	Slots  *Node // [batch, seq] int32: where this chunk's tokens go
}

// Forward maps tokens [batch, seq] (int32) at positions pos [batch, seq] (int32), with valid
// [batch, seq] (bool, false for padding), to logits [batch, seq, vocab]. With a cache, the
// chunk also attends to the cached tokens and the updated cache is returned.
//
// ctx is the root context; variables live under ctx.In(Scope).
func (m *Model) Forward(ctx *context.Context, tokens, pos, valid *Node, cache *Cache) (*Node, *Cache) {
	return m.ForwardPick(ctx, tokens, pos, valid, cache, nil)
}

// ForwardPick is Forward that, when pick ([batch] int32) is not nil, returns only the logits of
// token pick[b] of each row, [batch, 1, vocab]. Prefilling a prompt needs the last token's
// logits only, and the output head is the largest matrix of a small model.
func (m *Model) ForwardPick(ctx *context.Context, tokens, pos, valid *Node, cache *Cache, pick *Node) (*Node, *Cache) {
	c := m.Config
	x, out, table := m.hidden(ctx, tokens, pos, valid, cache, pick)
	ctx = ctx.In(Scope)
	if c.HeadTransform {
		x = layers.Activation(c.FFN)(layers.Linear(ctx.In("head").In("dense"), x, c.Dim, true, layers.InitStd))
		x = layers.Norm(ctx.In("head").In("norm"), c.Norm, c.NormEps, x)
	}
	head := table
	if !c.TieEmbeddings {
		head = layers.EmbeddingTable(ctx.In("output"), tokens.Graph(), c.VocabSize, c.Dim, DType)
	}
	logits := layers.Unembed(head, x)
	if c.HeadBias {
		bias := ctx.In("output").WithInitializer(initializers.Zero).VariableWithShape("bias", shapes.Make(DType, c.VocabSize)).ValueGraph(tokens.Graph())
		logits = Add(logits, ExpandLeftToRank(bias, logits.Rank()))
	}
	return logits, out
}

// Hidden is ForwardPick without the output head: the last hidden state [batch, seq, dim] (after
// the final norm of a pre-norm model, as Hugging Face's last_hidden_state), what embeddings pool.
func (m *Model) Hidden(ctx *context.Context, tokens, pos, valid *Node, cache *Cache, pick *Node) (*Node, *Cache) {
	x, out, _ := m.hidden(ctx, tokens, pos, valid, cache, pick)
	return x, out
}

// hidden is Hidden that also returns the token embedding table, which a tied head reuses (a
// checked context refuses to make the same variable twice in one graph).
func (m *Model) hidden(ctx *context.Context, tokens, pos, valid *Node, cache *Cache, pick *Node) (*Node, *Cache, layers.Weight) {
	c := m.Config
	ctx = ctx.In(Scope)
	block := c.Block()
	pe := layers.Positional{Scheme: m.Scheme, Ctx: ctx.In("positional"), SSMax: m.SSMax}

	table := layers.EmbeddingTable(ctx.In("tok_embeddings"), tokens.Graph(), c.VocabSize, c.Dim, DType)
	x := layers.Embed(table, tokens)
	if hook, ok := m.Scheme.(positional.Input); ok {
		x = hook.Input(pe.Ctx, x, pos)
	}
	if c.TokenTypes > 0 {
		// Every token is of type 0 (BERT's default segment); Gather keeps the graph trainable.
		types := layers.EmbeddingTable(ctx.In("token_types"), tokens.Graph(), c.TokenTypes, c.Dim, DType)
		x = Add(x, ExpandLeftToRank(layers.Embed(types, Const(tokens.Graph(), []int32{0})), x.Rank()))
	}
	if c.EmbedNorm {
		x = layers.Norm(ctx.In("embed_norm"), c.Norm, c.NormEps, x)
	}

	// pos may be one row [1, seq] shared by every row of the batch (engine's trainer passes it
	// so): the hooks take it as it is and their results broadcast over the batch; the mask and
	// the cache need a row per sequence.
	full := pos
	if b := tokens.Shape().Dim(0); pos.Shape().Dim(0) != b {
		full = BroadcastToDims(pos, b, pos.Shape().Dim(1))
	}
	att := layers.AttentionInput{Pos: pos, Valid: valid}
	if full != pos {
		att.RowPos = full
	}
	keyPos, keyValid := full, valid
	var out *Cache
	if cache != nil {
		att.Write = layers.NewCacheWrite(cache.Slots, valid, full, cache.Pos, cache.Valid)
		out = &Cache{Pos: att.Write.Pos, Valid: att.Write.Valid, Slots: cache.Slots}
		keyPos, keyValid = att.Write.Pos, att.Write.Valid
	}
	// The mask depends on positions only: build it once for every layer.
	att.Mask = layers.MaskBias(c.Causal(), c.NumHeads, full, keyPos, keyValid)
	for i := 0; i < c.NumLayers; i++ {
		if cache != nil {
			att.Cache = &cache.Layers[i]
		}
		lpe := pe
		if !c.UsesPositions(i) {
			lpe.Scheme = positional.NoPE{}
		}
		var lc *layers.LayerCache
		x, lc = layers.Block(ctx.In(LayerScope(i)), i, block, lpe, x, att)
		if out != nil {
			out.Layers = append(out.Layers, *lc)
		}
	}
	if pick != nil {
		// Every later step acts on each token alone: keep only the picked ones.
		rows := Iota(x.Graph(), shapes.Make(dtypes.Int32, x.Shape().Dim(0)), 0)
		x = ExpandAxes(Gather(x, Stack([]*Node{rows, pick}, -1)), 1) // [batch, 1, dim]
	}
	if c.NormPosition != "post" {
		x = layers.Norm(ctx.In("norm"), c.Norm, c.NormEps, x)
	}
	return x, out, table
}

// DType is the floating-point type of every weight and activation.
const DType = dtypes.Float32
