package serve

// Embeddings for encoder models: each input's embedding is the mean, over its tokens, of the
// model's last hidden state (models.Model.Hidden: the blocks' output after the final norm,
// before the vocabulary head). An encoder has no cache to share between requests, so requests
// run one at a time, each as one or a few batched forward passes.

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/posformer/posformer/engine"
)

// embedBatch is the most inputs one forward pass takes; shapes are bucketed to powers of two,
// so a few compiled graphs serve every request.
const embedBatch = 16

// ErrBusy refuses an embedding request when as many others as NewEmbedder's queue are
// waiting already.
var ErrBusy = errors.New("too many embedding requests waiting")

// Embedder runs the hidden-state graph of an encoder.
type Embedder struct {
	e       *engine.Engine
	exec    *mlctx.Exec
	turn    chan struct{} // a token: the request holding it runs
	waiting atomic.Int32  // requests running or waiting for the turn
	queue   int
}

// NewEmbedder compiles (on first use) the hidden-state graph of the encoder e; up to queue
// requests may wait while one runs.
func NewEmbedder(e *engine.Engine, queue int) *Embedder {
	em := &Embedder{e: e, turn: make(chan struct{}, 1), queue: queue}
	em.turn <- struct{}{}
	var err error
	em.exec, err = mlctx.NewExec(e.Backend, e.Ctx, func(ctx *mlctx.Context, tokens, pos, valid *graph.Node) *graph.Node {
		h, _ := e.Model.Hidden(ctx, tokens, pos, valid, nil, nil)
		return h
	})
	if err != nil {
		// NewExec only checks its arguments' types, which are fixed here.
		panic(fmt.Sprintf("internal: the hidden-state graph: %v", err))
	}
	em.exec.SetMaxCache(64)
	return em
}

// Hidden returns the last hidden state of each row's tokens, [row][token][dim], padding the
// batch and the lengths to powers of two.
func (em *Embedder) Hidden(rows [][]int) ([][][]float32, error) {
	if err := em.check(rows); err != nil {
		return nil, err
	}
	out := make([][][]float32, 0, len(rows))
	for start := 0; start < len(rows); start += embedBatch {
		part := rows[start:min(start+embedBatch, len(rows))]
		b, longest := engine.Bucket(len(part)), 0
		for _, r := range part {
			longest = max(longest, len(r))
		}
		seq := engine.Bucket(longest)
		tok, pos, valid := make([]int32, b*seq), make([]int32, b*seq), make([]bool, b*seq)
		for i := range b {
			r := part[min(i, len(part)-1)] // padding rows repeat the last input, never empty
			for j, id := range r {
				tok[i*seq+j], pos[i*seq+j], valid[i*seq+j] = int32(id), int32(j), true
			}
		}
		res, err := em.exec.Exec(tensors.FromFlatDataAndDimensions(tok, b, seq),
			tensors.FromFlatDataAndDimensions(pos, b, seq), tensors.FromFlatDataAndDimensions(valid, b, seq))
		if err != nil {
			return nil, fmt.Errorf("computing embeddings: %w", err)
		}
		dim := res[0].Shape().Dim(2)
		tensors.MustConstFlatData(res[0], func(flat []float32) {
			for i, r := range part {
				h := make([][]float32, len(r))
				for j := range r {
					at := (i*seq + j) * dim
					h[j] = append([]float32(nil), flat[at:at+dim]...)
				}
				out = append(out, h)
			}
		})
		res[0].FinalizeAll()
	}
	return out, nil
}

// check refuses an empty row (it has no mean), one longer than the model takes, and token ids
// outside the vocabulary.
func (em *Embedder) check(rows [][]int) error {
	vocab, limit := em.e.Model.Config.VocabSize, em.e.SequenceLimit()
	for i, r := range rows {
		switch {
		case len(r) == 0:
			return fmt.Errorf("input %d is empty; embeddings need at least one token", i)
		case len(r) > limit:
			return fmt.Errorf("input %d is %d tokens but the model takes at most %d; shorten it", i, len(r), limit)
		}
		for _, id := range r {
			if id < 0 || id >= vocab {
				return fmt.Errorf("token id %d in input %d is outside the vocabulary [0, %d)", id, i, vocab)
			}
		}
	}
	return nil
}

// meanPool averages a row's token vectors.
func meanPool(h [][]float32) []float32 {
	out := make([]float32, len(h[0]))
	for _, v := range h {
		for k, x := range v {
			out[k] += x
		}
	}
	for k := range out {
		out[k] /= float32(len(h))
	}
	return out
}

// Embed waits for its turn (or the end of ctx) and returns each row's embedding; ErrBusy when
// the queue is full.
func (em *Embedder) Embed(ctx context.Context, rows [][]int) ([][]float32, error) {
	if int(em.waiting.Add(1)) > em.queue+1 {
		em.waiting.Add(-1)
		return nil, ErrBusy
	}
	defer em.waiting.Add(-1)
	select {
	case <-em.turn:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { em.turn <- struct{}{} }()
	h, err := em.Hidden(rows)
	if err != nil {
		return nil, err
	}
	out := make([][]float32, len(h))
	for i := range h {
		out[i] = meanPool(h[i])
	}
	return out, nil
}
