package server

// /v1/embeddings for encoder models: each input's embedding is the mean, over its tokens, of
// the model's last hidden state, computed by engine/serve's Embedder one request at a time.

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/posformer/posformer/engine/serve"
	"github.com/posformer/posformer/tokenizer"
)

// maxInputs bounds the inputs of one embeddings request (OpenAI allows 2048; a toy server
// on two cores does not need as many in one request).
const maxInputs = 128

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
	if err := s.checkModel(req.Model); err != nil {
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
	vecs, err := s.embed.Embed(ctx, rows)
	if err != nil {
		if ctx.Err() != nil {
			return s.failed(nil, ctx.Err())
		}
		if errors.Is(err, serve.ErrBusy) {
			return &apiError{Status: http.StatusServiceUnavailable, Type: "unavailable_error", RetryAfter: 1,
				Message: fmt.Sprintf("the server is busy: %d embedding requests are waiting (--queue); retry shortly", s.cfg.queue)}
		}
		return err
	}
	data := make([]any, len(vecs))
	tokens := 0
	defer func() { infoOf(r).promptTokens = tokens }()
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
