package main

// /v1/embeddings for encoder models: each input's embedding is the mean, over its tokens, of
// the model's last hidden state (models.Model.Hidden: the blocks' output after the final norm,
// before the vocabulary head). An encoder has no cache to share between requests, so requests
// run one at a time, each as one or a few batched forward passes.

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/posformer/posformer/engine"
	"github.com/posformer/posformer/tokenizer"
)

// maxInputs bounds the inputs of one embeddings request (OpenAI allows 2048; a toy server
// on two cores does not need as many in one request).
const maxInputs = 128

// embedBatch is the most inputs one forward pass takes; shapes are bucketed to powers of two,
// so a few compiled graphs serve every request.
const embedBatch = 16

// embedder runs the hidden-state graph of an encoder.
type embedder struct {
	e       *engine.Engine
	exec    *mlctx.Exec
	turn    chan struct{} // a token: the request holding it runs
	waiting atomic.Int32  // requests running or waiting for the turn
	queue   int
}

func newEmbedder(e *engine.Engine, queue int) *embedder {
	em := &embedder{e: e, turn: make(chan struct{}, 1), queue: queue}
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

// hidden returns the last hidden state of each row's tokens, [row][token][dim], padding the
// batch and the lengths to powers of two.
func (em *embedder) hidden(rows [][]int) ([][][]float32, error) {
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

// embed waits for its turn (or the end of ctx) and returns each row's embedding.
func (em *embedder) embed(ctx context.Context, rows [][]int) ([][]float32, error) {
	if int(em.waiting.Add(1)) > em.queue+1 {
		em.waiting.Add(-1)
		return nil, &apiError{Status: http.StatusServiceUnavailable, Type: "unavailable_error", RetryAfter: 1,
			Message: fmt.Sprintf("the server is busy: %d embedding requests are waiting (--queue); retry shortly", em.queue)}
	}
	defer em.waiting.Add(-1)
	select {
	case <-em.turn:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { em.turn <- struct{}{} }()
	h, err := em.hidden(rows)
	if err != nil {
		return nil, err
	}
	out := make([][]float32, len(h))
	for i := range h {
		out[i] = meanPool(h[i])
	}
	return out, nil
}

// inputs parses input: a string, an array of strings, an array of token ids, or an array of
// arrays of token ids.
func (s *server) inputs(raw json.RawMessage) ([][]int, error) {
	if len(raw) == 0 || isJSON(raw, "null") {
		return nil, invalid("input", "field \"input\" is missing; send a string or an array of strings")
	}
	vocab := s.m.e.Model.Config.VocabSize
	var texts []string
	var one string
	var ids []int
	var idRows [][]int
	switch {
	case json.Unmarshal(raw, &one) == nil:
		texts = []string{one}
	case json.Unmarshal(raw, &texts) == nil:
	case json.Unmarshal(raw, &ids) == nil:
		idRows = [][]int{ids}
	case json.Unmarshal(raw, &idRows) == nil:
	default:
		return nil, invalid("input", "field \"input\" must be a string, an array of strings, or token ids")
	}
	for _, t := range texts {
		ids, err := s.m.encodeEmbedding(t)
		if err != nil {
			return nil, invalid("input", "%v", err)
		}
		idRows = append(idRows, ids)
	}
	switch {
	case len(idRows) == 0:
		return nil, invalid("input", "input is an empty array; send at least one string")
	case len(idRows) > maxInputs:
		return nil, invalid("input", "input has %d items; send at most %d per request", len(idRows), maxInputs)
	}
	limit := s.m.e.SequenceLimit()
	for i, r := range idRows {
		switch {
		case len(r) == 0:
			return nil, invalid("input", "input %d is empty; embeddings need at least one token", i)
		case len(r) > limit:
			return nil, &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: "input", Code: "context_length_exceeded",
				Message: fmt.Sprintf("input %d is %d tokens but the model takes at most %d (--ctx-size); shorten it", i, len(r), limit)}
		}
		for _, id := range r {
			if id < 0 || id >= vocab {
				return nil, invalid("input", "token id %d in input %d is outside the vocabulary [0, %d)", id, i, vocab)
			}
		}
	}
	return idRows, nil
}

// encodeEmbedding tokenizes an embedding input.
func (m *model) encodeEmbedding(text string) ([]int, error) {
	var ids []int
	var err error
	if m.specialEmbed {
		ids, err = tokenizer.EncodeWith(m.tok, text, tokenizer.EncodeOptions{AddSpecial: true})
	} else {
		ids, err = m.tok.Encode(text)
	}
	if err != nil {
		return nil, fmt.Errorf("tokenizing the input: %w", err)
	}
	return ids, nil
}

func (s *server) embeddings(w http.ResponseWriter, r *http.Request) error {
	var req embeddingRequest
	if err := decodeBody(w, r, s.cfg.maxBody, &req); err != nil {
		return err
	}
	if s.embed == nil {
		return invalid("", "%s is a decoder: /v1/embeddings needs an encoder model (start the server with -m weights/sinusoidal-encoder, say)", s.m.name)
	}
	dim := s.m.e.Model.Config.Dim
	switch req.EncodingFormat {
	case "", "float", "base64":
	default:
		return invalid("encoding_format", "encoding_format %q: use float or base64", req.EncodingFormat)
	}
	if req.Dimensions != nil && *req.Dimensions != dim {
		return invalid("dimensions", "dimensions = %d: this model's embeddings have %d; leave the field out", *req.Dimensions, dim)
	}
	rows, err := s.inputs(req.Input)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.timeout)
	defer cancel()
	vecs, err := s.embed.embed(ctx, rows)
	if err != nil {
		if ctx.Err() != nil {
			return s.failed(nil, ctx.Err())
		}
		return err
	}
	data := make([]any, len(vecs))
	tokens := 0
	for i, v := range vecs {
		tokens += len(rows[i])
		var emb any = v
		if req.EncodingFormat == "base64" {
			emb = base64Floats(v)
		}
		data[i] = map[string]any{"object": "embedding", "index": i, "embedding": emb}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"object": "list", "data": data, "model": s.m.name, "created": time.Now().Unix(),
		"usage": map[string]int{"prompt_tokens": tokens, "total_tokens": tokens},
	})
	return nil
}

// base64Floats is OpenAI's base64 encoding of an embedding: the float32 values little-endian.
func base64Floats(v []float32) string {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return base64.StdEncoding.EncodeToString(b)
}
