package engine

import (
	"fmt"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/posformer/posformer/models"
)

// Session is the state of a batch of sequences being decoded: a fixed-capacity KV cache
// (keys and values [batch, kvHeads, capacity, headDim] per layer, plus each slot's position
// and validity), so that every step runs one already-compiled graph.
type Session struct {
	e     *Engine
	batch int
	cache []*tensors.Tensor // pos, valid, then K and V of each layer
	Used  []int             // slots filled, per row
}

// NewSession starts an empty cache for batch sequences.
func (e *Engine) NewSession(batch int) *Session {
	c := e.Model.Config
	b := c.Block()
	s := &Session{e: e, batch: batch, Used: make([]int, batch)}
	s.cache = append(s.cache,
		tensors.FromShape(shapes.Make(dtypes.Int32, batch, e.Capacity)),
		tensors.FromShape(shapes.Make(dtypes.Bool, batch, e.Capacity)))
	for i := 0; i < 2*c.NumLayers; i++ {
		s.cache = append(s.cache, tensors.FromShape(shapes.Make(models.DType, batch, b.NumKVHeads, e.Capacity, b.HeadDim)))
	}
	return s
}

// Append feeds one chunk per row (rows may differ in length; a row may be empty) at explicit
// positions, writes it into the cache, and returns the logits of each row's chunk tokens.
func (s *Session) Append(tokens, positions [][]int) ([][][]float32, error) {
	if len(tokens) != s.batch {
		return nil, fmt.Errorf("session has %d rows, got %d", s.batch, len(tokens))
	}
	for i, row := range tokens {
		if s.Used[i]+len(row) > s.e.Capacity {
			return nil, fmt.Errorf("context full: row %d would hold %d tokens but the context size is %d; raise -c / --ctx-size", i, s.Used[i]+len(row), s.e.Capacity)
		}
	}
	if err := s.e.checkPositions(positions); err != nil {
		return nil, err
	}
	tok, pos, valid, seq, err := batchInputs(tokens, positions)
	if err != nil {
		return nil, err
	}
	slots := tensors.FromShape(shapes.Make(dtypes.Int32, s.batch, seq))
	tensors.MustMutableFlatData(slots, func(flat []int32) {
		for i := range s.batch {
			for j := range seq {
				flat[i*seq+j] = int32(s.Used[i] + j)
			}
		}
	})
	args := []any{tok, pos, valid, slots}
	for _, t := range s.cache {
		// Donated: the backend may write the new cache into the old buffers.
		d, err := graph.DonateTensorBuffer(t, s.e.Backend, 0)
		if err != nil {
			return nil, fmt.Errorf("donating cache buffer: %w", err)
		}
		args = append(args, d)
	}
	outs, err := s.e.cached.Exec(args...)
	if err != nil {
		return nil, fmt.Errorf("decoding: %w", err)
	}
	s.cache = outs[1:]
	for i, row := range tokens {
		s.Used[i] += len(row)
	}
	return unpackLogits(outs[0], tokens), nil
}
