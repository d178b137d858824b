package server

// llama-server's own endpoints beside OpenAI's, with its field names: POST /tokenize,
// /detokenize and /apply-template, GET /props and /slots; and the model check every
// generation endpoint shares.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/posformer/posformer/tokenizer"
	"github.com/posformer/posformer/tokenizer/chat"
)

// checkModel accepts a request's model field when it is absent, the served model's id
// (/v1/models, --alias) or the checkpoint as given with -m; anything else is OpenAI's 404
// model_not_found, so that a client pointed at the wrong server learns it at once.
func (s *server) checkModel(name string) error {
	if name == "" || name == s.m.name || name == s.m.path {
		return nil
	}
	return &apiError{Status: http.StatusNotFound, Type: "invalid_request_error", Param: "model", Code: "model_not_found",
		Message: fmt.Sprintf("The model `%s` does not exist: this server serves `%s` (GET /v1/models); send that or leave model out", name, s.m.name)}
}

type tokenizeRequest struct {
	Content      *string `json:"content"`
	AddSpecial   bool    `json:"add_special"`
	ParseSpecial *bool   `json:"parse_special"` // default true, as llama-server's
	WithPieces   bool    `json:"with_pieces"`
}

// tokenPiece is a token with its text; the piece is a string when the token's bytes are valid
// UTF-8, else the list of its bytes (llama-server's shape).
type tokenPiece struct {
	ID    int `json:"id"`
	Piece any `json:"piece"`
}

// tokenize is POST /tokenize: {"content"} → {"tokens": [ids]} (or [{"id", "piece"}] with
// with_pieces). add_special adds what the tokenizer adds around a text (BOS, or [CLS] ...
// [SEP]); parse_special (default true) reads special-token literals as their tokens.
func (s *server) tokenize(w http.ResponseWriter, r *http.Request) error {
	var req tokenizeRequest
	if err := decodeBody(w, r, s.cfg.maxBody, &req); err != nil {
		return err
	}
	if req.Content == nil {
		return invalid("content", "field \"content\" is missing; send the text to tokenize")
	}
	parse := req.ParseSpecial == nil || *req.ParseSpecial
	ids, err := tokenizer.EncodeWith(s.m.tok, *req.Content, tokenizer.EncodeOptions{ParseSpecial: parse})
	if err != nil {
		return invalid("content", "tokenizing the content: %v", err)
	}
	if req.AddSpecial {
		ids, err = s.addSpecial(*req.Content, ids, parse)
		if err != nil {
			return invalid("content", "tokenizing the content: %v", err)
		}
	}
	infoOf(r).promptTokens = len(ids)
	if !req.WithPieces {
		if ids == nil {
			ids = []int{}
		}
		writeJSON(w, http.StatusOK, map[string]any{"tokens": ids})
		return nil
	}
	pieces := make([]tokenPiece, len(ids))
	for i, id := range ids {
		text := tokenizer.DecodeWith(s.m.tok, []int{id}, tokenizer.DecodeOptions{KeepSpecial: true})
		pieces[i] = tokenPiece{ID: id, Piece: text}
		if !utf8.ValidString(text) {
			pieces[i].Piece = bytesOf(text)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"tokens": pieces})
	return nil
}

// addSpecial adds the tokens a checkpoint puts around a text: the BOS a GGUF file or a
// llama2.c checkpoint asks for, or the tokenizer's own (Hugging Face's post-processor).
func (s *server) addSpecial(text string, ids []int, parse bool) ([]int, error) {
	if s.m.addBOS {
		return append([]int{s.m.bos}, ids...), nil
	}
	return tokenizer.EncodeWith(s.m.tok, text, tokenizer.EncodeOptions{AddSpecial: true, ParseSpecial: parse})
}

// bytesOf is a piece that is not whole characters (one byte of a multi-byte character), as
// the list of its bytes: a JSON string would replace them.
func bytesOf(s string) []int {
	out := make([]int, len(s))
	for i := range len(s) {
		out[i] = int(s[i])
	}
	return out
}

type detokenizeRequest struct {
	Tokens []int `json:"tokens"`
}

// detokenize is POST /detokenize: {"tokens": [ids]} → {"content"}, special tokens written out.
func (s *server) detokenize(w http.ResponseWriter, r *http.Request) error {
	var req detokenizeRequest
	if err := decodeBody(w, r, s.cfg.maxBody, &req); err != nil {
		return err
	}
	vocab := s.m.tok.VocabSize()
	for _, id := range req.Tokens {
		if id < 0 || id >= vocab {
			return invalid("tokens", "token id %d is outside the vocabulary [0, %d)", id, vocab)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"content": tokenizer.DecodeWith(s.m.tok, req.Tokens, tokenizer.DecodeOptions{KeepSpecial: true})})
	return nil
}

// applyTemplate is POST /apply-template: the messages (and tools) of a chat request rendered
// by the chat template, {"prompt": "..."}, nothing generated. add_generation_prompt defaults
// to true, as the chat endpoint renders.
func (s *server) applyTemplate(w http.ResponseWriter, r *http.Request) error {
	var req chatRequest
	if err := decodeBody(w, r, s.cfg.maxBody, &req); err != nil {
		return err
	}
	msgs, o, err := s.chatInput(&req)
	if err != nil {
		return err
	}
	if req.AddGenerationPrompt != nil {
		o.AddGenerationPrompt = *req.AddGenerationPrompt
	}
	segs, err := s.m.template.Apply(msgs, o)
	if err != nil {
		return invalid("messages", "%v", err)
	}
	var b strings.Builder
	for _, seg := range segs {
		b.WriteString(seg.Text)
	}
	writeJSON(w, http.StatusOK, map[string]any{"prompt": b.String()})
	return nil
}

// chatInput checks what the chat endpoints share: model, messages, tools and the template's
// switches.
func (s *server) chatInput(req *chatRequest) ([]chat.Message, chat.Options, error) {
	o := chat.Options{AddGenerationPrompt: true}
	if err := s.checkModel(req.Model); err != nil {
		return nil, o, err
	}
	msgs, err := req.messages()
	if err != nil {
		return nil, o, err
	}
	if len(req.Tools) > 0 && !isJSON(req.Tools, "null", "[]") {
		var tools []json.RawMessage
		if json.Unmarshal(req.Tools, &tools) != nil {
			return nil, o, invalid("tools", "field \"tools\" must be an array of tools")
		}
		if !s.m.template.Jinja() {
			return nil, o, invalid("tools", "tools need the checkpoint's Jinja chat template to be written into the prompt; this model's chat template is the %s layout, which has no place for them: leave tools out, or give a template with --chat-template-file", s.m.template.Name)
		}
		o.Tools = req.Tools
	}
	if req.ChatTemplateKwargs != nil {
		o.EnableThinking = req.ChatTemplateKwargs.EnableThinking
	}
	return msgs, o, nil
}

// props is GET /props: llama-server's global properties.
func (s *server) props(w http.ResponseWriter, r *http.Request) error {
	sp := s.cfg.defaults
	nPredict := s.cfg.nPredict
	settings := map[string]any{
		"id": 0, "id_task": -1, "n_ctx": s.m.e.Capacity, "is_processing": false,
		"params": map[string]any{
			"n_predict": nPredict, "max_tokens": nPredict, "seed": s.cfg.seed,
			"temperature": sp.Temp, "top_k": sp.TopK, "top_p": sp.TopP,
			"repeat_penalty": sp.RepeatPenalty, "repeat_last_n": sp.RepeatLastN,
			"ignore_eos": false, "stream": false, "stop": []string{},
		},
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"default_generation_settings": settings,
		"total_slots":                 s.cfg.parallel,
		"model_path":                  s.m.path,
		"model_alias":                 s.m.name,
		"chat_template":               s.m.template.Source,
		"chat_template_layout":        s.m.template.Describe(),
		"bos_token":                   s.m.bosText,
		"eos_token":                   s.m.eosText,
		"modalities":                  map[string]bool{"vision": false, "audio": false},
		"is_sleeping":                 false,
	})
	return nil
}

// slots is GET /slots: each of the --parallel slots, whether it runs a request and the tokens
// in its cache (an encoder has none: an empty list).
func (s *server) slots(w http.ResponseWriter, r *http.Request) error {
	out := []any{}
	if s.sched != nil {
		for _, v := range s.sched.Slots() {
			remain := -1
			if v.Processing {
				remain = v.Max - v.Generated
			}
			out = append(out, map[string]any{
				"id": v.ID, "n_ctx": s.m.e.Capacity, "is_processing": v.Processing, "tokens_cached": v.Tokens,
				"next_token": map[string]any{"has_next_token": v.Processing, "n_decoded": v.Generated, "n_remain": remain},
			})
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
