package engine

import (
	"fmt"
	"math/bits"
	"sync/atomic"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/posformer/posformer/layers"
	"github.com/posformer/posformer/models"
	"github.com/posformer/posformer/positional"
)

// Engine holds a model's weights on a backend and its compiled graphs.
type Engine struct {
	Backend  backends.Backend
	Model    *models.Model
	Ctx      *context.Context
	Capacity int // KV-cache slots per sequence (the context size)

	builds atomic.Int64 // graphs built (and so compiled): one per new input shape
	full   *context.Exec
	cached *context.Exec
}

// Load opens the checkpoint in dir on the named backend (see NewBackend) with a KV cache of
// capacity slots per sequence (0: the model's max_seq_len); edits adjust its configuration first.
func Load(dir, backendName string, capacity int, edits ...models.Edit) (*Engine, error) {
	backend, err := NewBackend(backendName)
	if err != nil {
		return nil, err
	}
	m, ctx, err := models.Load(dir, backend, edits...)
	if err != nil {
		return nil, err
	}
	return New(backend, m, ctx, capacity)
}

// New wraps a model whose variables are in ctx.
func New(backend backends.Backend, m *models.Model, ctx *context.Context, capacity int) (*Engine, error) {
	if capacity <= 0 {
		capacity = m.Config.MaxSeqLen
	}
	e := &Engine{Backend: backend, Model: m, Ctx: ctx.Checked(false), Capacity: capacity}
	var err error
	e.full, err = context.NewExec(backend, e.Ctx, e.fullGraph)
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	e.cached, err = context.NewExec(backend, e.Ctx, e.cachedGraph)
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	// Shapes are bucketed (powers of two), so a few dozen graphs cover every prompt length
	// and batch size in use; the default cache of 32 could evict and recompile.
	e.full.SetMaxCache(128)
	e.cached.SetMaxCache(128)
	return e, nil
}

// Compilations counts the graphs built so far; after warm-up it must stop growing.
func (e *Engine) Compilations() int { return int(e.builds.Load()) }

func (e *Engine) fullGraph(ctx *context.Context, tokens, pos, valid *Node) *Node {
	e.builds.Add(1)
	logits, _ := e.Model.Forward(ctx, tokens, pos, valid, nil)
	return logits
}

// cachedGraph's inputs: tokens, pos, valid, slots [b, s]; cache pos, cache valid [b, c];
// then K and V of every layer. Outputs: logits, then the new cache in the same order.
func (e *Engine) cachedGraph(ctx *context.Context, in []*Node) []*Node {
	e.builds.Add(1)
	n := e.Model.Config.NumLayers
	cache := &models.Cache{Slots: in[3], Pos: in[4], Valid: in[5]}
	for i := 0; i < n; i++ {
		cache.Layers = append(cache.Layers, layers.LayerCache{K: in[6+2*i], V: in[7+2*i]})
	}
	logits, out := e.Model.Forward(ctx, in[0], in[1], in[2], cache)
	outs := []*Node{logits, out.Pos, out.Valid}
	for _, l := range out.Layers {
		outs = append(outs, l.K, l.V)
	}
	return outs
}

// Bucket rounds a sequence length up to a power of two, so that a handful of compiled graphs
// serve every length.
func Bucket(n int) int {
	if n <= 1 {
		return 1
	}
	return 1 << bits.Len(uint(n-1))
}

// checkPositions rejects positions the scheme cannot encode (past a learned table, say).
func (e *Engine) checkPositions(positions [][]int) error {
	limit := e.positionLimit()
	if limit == 0 {
		return nil
	}
	for _, row := range positions {
		for _, p := range row {
			if p >= limit {
				return fmt.Errorf("position %d is past what %s can encode: %s", p, e.Model.Scheme.Name(), e.limitFix())
			}
		}
	}
	return nil
}

// limitFix explains the scheme's position limit, for error messages.
func (e *Engine) limitFix() string {
	if lim, ok := e.Model.Scheme.(positional.Limited); ok {
		return lim.LimitFix()
	}
	return ""
}

// positionLimit is the number of positions the scheme can encode, or 0 for no bound.
func (e *Engine) positionLimit() int {
	if lim, ok := e.Model.Scheme.(positional.Limited); ok {
		return lim.Limit()
	}
	return 0
}

// batchInputs pads ragged rows to [len(rows), Bucket(longest)] tensors.
func batchInputs(tokens, positions [][]int) (tok, pos, valid *tensors.Tensor, seq int, err error) {
	if len(tokens) == 0 || len(tokens) != len(positions) {
		return nil, nil, nil, 0, fmt.Errorf("need one positions row per tokens row (got %d and %d)", len(tokens), len(positions))
	}
	longest := 0
	for i, row := range tokens {
		if len(row) != len(positions[i]) {
			return nil, nil, nil, 0, fmt.Errorf("row %d has %d tokens but %d positions", i, len(row), len(positions[i]))
		}
		longest = max(longest, len(row))
	}
	if longest == 0 {
		return nil, nil, nil, 0, fmt.Errorf("empty input: give at least one token")
	}
	seq = Bucket(longest)
	b := len(tokens)
	tok = tensors.FromShape(shapes.Make(dtypes.Int32, b, seq))
	pos = tensors.FromShape(shapes.Make(dtypes.Int32, b, seq))
	valid = tensors.FromShape(shapes.Make(dtypes.Bool, b, seq))
	tensors.MustMutableFlatData(tok, func(t []int32) {
		tensors.MustMutableFlatData(pos, func(p []int32) {
			tensors.MustMutableFlatData(valid, func(v []bool) {
				for i, row := range tokens {
					for j, id := range row {
						t[i*seq+j] = int32(id)
						p[i*seq+j] = int32(positions[i][j])
						v[i*seq+j] = true
					}
				}
			})
		})
	})
	return tok, pos, valid, seq, nil
}

// unpackLogits returns, for each row, the logits of its real (unpadded) tokens.
func unpackLogits(t *tensors.Tensor, tokens [][]int) [][][]float32 {
	dims := t.Shape().Dimensions
	seq, vocab := dims[1], dims[2]
	out := make([][][]float32, len(tokens))
	tensors.MustConstFlatData(t, func(flat []float32) {
		for i, row := range tokens {
			out[i] = make([][]float32, len(row))
			for j := range row {
				start := (i*seq + j) * vocab
				out[i][j] = append([]float32(nil), flat[start:start+vocab]...)
			}
		}
	})
	return out
}

// Forward runs the model without a cache on ragged rows of tokens at explicit positions and
// returns logits [row][token][vocab]. Encoders use it; so do tests, as the reference that
// cached decoding must match.
func (e *Engine) Forward(tokens, positions [][]int) ([][][]float32, error) {
	if err := e.checkPositions(positions); err != nil {
		return nil, err
	}
	tok, pos, valid, _, err := batchInputs(tokens, positions)
	if err != nil {
		return nil, err
	}
	outs, err := e.full.Exec(tok, pos, valid)
	if err != nil {
		return nil, fmt.Errorf("forward: %w", err)
	}
	return unpackLogits(outs[0], tokens), nil
}
