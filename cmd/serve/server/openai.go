package server

// OpenAI's wire format: request bodies, responses, stream chunks and the error object, with
// the request checks. Field names and shapes follow OpenAI's API reference; top_k,
// repeat_penalty, repeat_last_n and ignore_eos are llama.cpp's additions. Fields the server
// does not know are ignored (clients send many) and named in the request's log line; a known
// field of the wrong type, or one asking for what the server cannot do, is an error naming
// it.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"reflect"
	"slices"
	"strings"

	"github.com/posformer/posformer/tokenizer/chat"
)

// apiError is an error the client gets as OpenAI's error object, with its HTTP status.
type apiError struct {
	Status  int    `json:"-"`
	Message string `json:"message"`
	Type    string `json:"type"`
	Param   any    `json:"param"` // the offending field, or null
	Code    any    `json:"code"`  // a machine-readable reason, or null
	// RetryAfter, in seconds, is sent as the Retry-After header (503).
	RetryAfter int `json:"-"`
}

func (e *apiError) Error() string { return e.Message }

// invalid is a 400 about one field (param may be "").
func invalid(param, format string, args ...any) *apiError {
	e := &apiError{Status: http.StatusBadRequest, Message: fmt.Sprintf(format, args...), Type: "invalid_request_error"}
	if param != "" {
		e.Param = param
	}
	return e
}

// writeError sends err as OpenAI's {"error": {...}}; errors that are not *apiError are
// internal (500).
func writeError(w http.ResponseWriter, err error) {
	var ae *apiError
	if !errors.As(err, &ae) {
		ae = &apiError{Status: http.StatusInternalServerError, Message: err.Error(), Type: "server_error"}
	}
	if ae.RetryAfter > 0 {
		w.Header().Set("Retry-After", fmt.Sprint(ae.RetryAfter))
	}
	writeJSON(w, ae.Status, map[string]any{"error": ae})
}

// writeJSON sends v as JSON. <, > and & are written as they are, not as \u003c...: chat
// templates and prompts are full of them, and a reader of /props or /apply-template should see
// "<|im_start|>" (any JSON parser reads both the same).
func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	data := []byte(`{"error":{"message":"encoding the response failed","type":"server_error","param":null,"code":null}}` + "\n")
	if err := enc.Encode(v); err == nil { // Encode ends the value with a newline
		data = buf.Bytes()
	} else {
		status = http.StatusInternalServerError
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(data)
}

// decodeBody reads a JSON object of at most limit bytes into v, turning every failure into
// the 4xx a client can act on. The body must arrive before the read deadline ServeHTTP set;
// once it is in, net/http lifts the deadline itself (its background read, which notices a
// client that goes away, waits as long as the generation takes).
func decodeBody(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var tooLarge *http.MaxBytesError
	var netErr net.Error
	switch {
	case errors.As(err, &tooLarge):
		return &apiError{Status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error", Code: "request_too_large",
			Message: fmt.Sprintf("request body is larger than %d bytes; send a smaller body or raise --max-body", limit)}
	case errors.As(err, &netErr) && netErr.Timeout():
		return &apiError{Status: http.StatusRequestTimeout, Type: "invalid_request_error", Code: "request_timeout",
			Message: "the request body did not arrive in time; send it whole, without pausing"}
	case err != nil:
		return invalid("", "reading the request body: %v", err)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return decodeError(err)
	}
	infoOf(r).ignored = ignoredFields(body, v)
	return nil
}

// decodeError turns a JSON decoding error into the 400 naming the field.
func decodeError(err error) error {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr) && typeErr.Field != "":
		// The path names embedded structs by their Go type; the client knows JSON names only.
		field := strings.TrimPrefix(typeErr.Field, "genRequest.")
		return invalid(field, "field %q must be %s, not a JSON %s", field, jsonKind(typeErr.Type.Kind().String()), typeErr.Value)
	case errors.As(err, &typeErr):
		return invalid("", "the request body must be a JSON object, not a JSON %s", typeErr.Value)
	case errors.As(err, &syntaxErr):
		return invalid("", "the request body is not valid JSON (%v at byte %d); send a JSON object", err, syntaxErr.Offset)
	}
	return invalid("", "the request body is not valid JSON (%v); send a JSON object", err)
}

// ignoredFields names the top-level fields of body that v (a request struct) has no field
// for, sorted.
func ignoredFields(body []byte, v any) []string {
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &fields) != nil {
		return nil
	}
	known := jsonNames(reflect.TypeOf(v))
	var out []string
	for name := range fields {
		if !known[name] {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// jsonNames are the JSON names of a struct's fields, embedded structs' included.
func jsonNames(t reflect.Type) map[string]bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	out := map[string]bool{}
	if t.Kind() != reflect.Struct {
		return out
	}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case f.Anonymous && name == "":
			maps.Copy(out, jsonNames(f.Type))
		case name != "" && name != "-":
			out[name] = true
		}
	}
	return out
}

// jsonKind names a Go kind as the JSON type a client should send.
func jsonKind(kind string) string {
	switch {
	case strings.HasPrefix(kind, "int"), strings.HasPrefix(kind, "uint"):
		return "an integer"
	case strings.HasPrefix(kind, "float"):
		return "a number"
	case kind == "bool":
		return "true or false"
	case kind == "string":
		return "a string"
	case kind == "slice":
		return "an array"
	}
	return "an object"
}

// streamOptions is OpenAI's stream_options.
type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// genRequest holds the fields /v1/completions and /v1/chat/completions share. Pointers tell
// "absent" (the server's default) from a given zero.
type genRequest struct {
	Model               string          `json:"model"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"` // chat's newer name
	Temperature         *float64        `json:"temperature"`
	TopP                *float64        `json:"top_p"`
	TopK                *int            `json:"top_k"`
	RepeatPenalty       *float64        `json:"repeat_penalty"`
	RepeatLastN         *int            `json:"repeat_last_n"`
	Seed                *int64          `json:"seed"`
	Stop                json.RawMessage `json:"stop"`
	Stream              bool            `json:"stream"`
	StreamOptions       *streamOptions  `json:"stream_options"`
	IgnoreEOS           bool            `json:"ignore_eos"`
	N                   *int            `json:"n"`
	ResponseFormat      json.RawMessage `json:"response_format"`
	// Known to OpenAI but not served here: refused by name rather than silently ignored.
	BestOf           *int            `json:"best_of"`
	Echo             bool            `json:"echo"`
	Suffix           *string         `json:"suffix"`
	Logprobs         json.RawMessage `json:"logprobs"`
	TopLogprobs      *int            `json:"top_logprobs"`
	FrequencyPenalty *float64        `json:"frequency_penalty"`
	PresencePenalty  *float64        `json:"presence_penalty"`
	LogitBias        json.RawMessage `json:"logit_bias"`
	MinP             *float64        `json:"min_p"` // llama-server's
}

type completionRequest struct {
	genRequest
	Prompt json.RawMessage `json:"prompt"`
}

type chatRequest struct {
	genRequest
	Messages []rawMessage `json:"messages"`
	// Tools are rendered into the prompt by a checkpoint's Jinja template; calls come back
	// as text (see docs/serving.md).
	Tools              json.RawMessage `json:"tools"`
	ChatTemplateKwargs *templateKwargs `json:"chat_template_kwargs"` // llama-server's
	// AddGenerationPrompt is /apply-template's (default true).
	AddGenerationPrompt *bool `json:"add_generation_prompt"`
}

// templateKwargs are the chat template's extra variables a request may set (llama-server's
// chat_template_kwargs); others are refused by name.
type templateKwargs struct {
	EnableThinking *bool `json:"enable_thinking"`
}

// rawMessage is a chat message as sent; content is a string or an array of parts.
type rawMessage struct {
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content"`
	ReasoningContent string          `json:"reasoning_content"`
	ToolCalls        json.RawMessage `json:"tool_calls"`
	ToolCallID       string          `json:"tool_call_id"`
	Name             string          `json:"name"`
}

// unsupported refuses the fields the server does not implement.
func (r *genRequest) unsupported() error {
	switch {
	case r.N != nil && *r.N != 1:
		return invalid("n", "n = %d: this server returns one choice per request; send n = 1 (or leave it out) and send several requests", *r.N)
	case r.BestOf != nil && *r.BestOf > 1:
		return invalid("best_of", "best_of is not supported; leave it out")
	case r.Echo:
		return invalid("echo", "echo is not supported; the response holds the completion only")
	case r.Suffix != nil && *r.Suffix != "":
		return invalid("suffix", "suffix (insertion) is not supported; leave it out")
	case len(r.Logprobs) > 0 && !isJSON(r.Logprobs, "null", "false", "0"):
		return invalid("logprobs", "logprobs are not supported; leave the field out")
	case r.TopLogprobs != nil && *r.TopLogprobs > 0:
		return invalid("top_logprobs", "top_logprobs are not supported; leave the field out")
	case r.FrequencyPenalty != nil && *r.FrequencyPenalty != 0:
		return invalid("frequency_penalty", "frequency_penalty is not supported; use repeat_penalty (llama.cpp's)")
	case r.PresencePenalty != nil && *r.PresencePenalty != 0:
		return invalid("presence_penalty", "presence_penalty is not supported; use repeat_penalty (llama.cpp's)")
	case len(r.LogitBias) > 0 && !isJSON(r.LogitBias, "null", "{}"):
		return invalid("logit_bias", "logit_bias is not supported; leave it out")
	case r.MinP != nil && *r.MinP != 0:
		return invalid("min_p", "min_p sampling is not supported; use top_p or top_k")
	}
	return checkResponseFormat(r.ResponseFormat)
}

// checkResponseFormat takes response_format {"type": "text"} (what the server does anyway) and
// refuses the JSON modes: they need constrained decoding, which the server does not do, and
// a reply that merely looks like JSON would break the client's parser later.
func checkResponseFormat(raw json.RawMessage) error {
	if len(raw) == 0 || isJSON(raw, "null") {
		return nil
	}
	var f struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		return invalid("response_format", "response_format must be an object such as {\"type\": \"text\"}")
	}
	switch f.Type {
	case "text":
		return nil
	case "json_object", "json_schema":
		return invalid("response_format", "response_format type %s is not supported: the server has no constrained decoding; leave response_format out or use {\"type\": \"text\"}", f.Type)
	}
	return invalid("response_format", "response_format type %q is not one of text, json_object, json_schema; use {\"type\": \"text\"} or leave it out", f.Type)
}

func isJSON(raw json.RawMessage, values ...string) bool {
	s := strings.Join(strings.Fields(string(raw)), "")
	for _, v := range values {
		if s == v {
			return true
		}
	}
	return false
}

// stops parses stop: a string or an array of up to 4 strings (OpenAI's limit).
func (r *genRequest) stops() ([]string, error) {
	if len(r.Stop) == 0 || isJSON(r.Stop, "null") {
		return nil, nil
	}
	var one string
	if json.Unmarshal(r.Stop, &one) == nil {
		if one == "" {
			return nil, nil
		}
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(r.Stop, &many); err != nil {
		return nil, invalid("stop", "field \"stop\" must be a string or an array of strings")
	}
	if len(many) > 4 {
		return nil, invalid("stop", "stop has %d strings; send at most 4", len(many))
	}
	var out []string
	for _, s := range many {
		if s != "" {
			out = append(out, s)
		}
	}
	return out, nil
}

// promptText parses a completion prompt: a string, an array of one string, or an array of
// token ids (as llama.cpp takes them).
func (r *completionRequest) prompt(vocab int) (text string, ids []int, err error) {
	if len(r.Prompt) == 0 || isJSON(r.Prompt, "null") {
		return "", nil, invalid("prompt", "field \"prompt\" is missing; send the text to continue")
	}
	if json.Unmarshal(r.Prompt, &text) == nil {
		return text, nil, nil
	}
	var texts []string
	if json.Unmarshal(r.Prompt, &texts) == nil {
		if len(texts) != 1 {
			return "", nil, invalid("prompt", "prompt is an array of %d strings; this server takes one prompt per request", len(texts))
		}
		return texts[0], nil, nil
	}
	if err := json.Unmarshal(r.Prompt, &ids); err != nil {
		return "", nil, invalid("prompt", "field \"prompt\" must be a string, an array of one string or an array of token ids")
	}
	for _, id := range ids {
		if id < 0 || id >= vocab {
			return "", nil, invalid("prompt", "token id %d in prompt is outside the vocabulary [0, %d)", id, vocab)
		}
	}
	if len(ids) == 0 {
		return "", nil, invalid("prompt", "prompt is an empty array; send text or token ids")
	}
	return "", ids, nil
}

// messages checks the chat messages and flattens their content to text.
func (r *chatRequest) messages() ([]chat.Message, error) {
	if len(r.Messages) == 0 {
		return nil, invalid("messages", "field \"messages\" is missing or empty; send at least one {\"role\": \"user\", \"content\": \"...\"}")
	}
	out := make([]chat.Message, len(r.Messages))
	for i, m := range r.Messages {
		param := fmt.Sprintf("messages[%d]", i)
		switch m.Role {
		case "system", "developer", "user", "assistant", "tool":
		case "":
			return nil, invalid(param+".role", "%s has no role; use system, user, assistant or tool", param)
		default:
			return nil, invalid(param+".role", "%s has role %q; this server takes system, developer, user, assistant and tool", param, m.Role)
		}
		text, err := contentText(m.Content)
		if err != nil {
			return nil, invalid(param+".content", "%s: %v", param, err)
		}
		if len(m.ToolCalls) > 0 && !isJSON(m.ToolCalls, "null", "[]") {
			var calls []json.RawMessage
			if json.Unmarshal(m.ToolCalls, &calls) != nil {
				return nil, invalid(param+".tool_calls", "%s: tool_calls must be an array of tool calls", param)
			}
		} else {
			m.ToolCalls = nil
		}
		out[i] = chat.Message{Role: m.Role, Content: text, ReasoningContent: m.ReasoningContent,
			ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID, Name: m.Name}
	}
	return out, nil
}

// contentText reads a message's content: a string, null, or an array of {"type": "text",
// "text": ...} parts (joined; other part types are refused).
func contentText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || isJSON(raw, "null") {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("content must be a string or an array of text parts")
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type != "text" {
			return "", fmt.Errorf("content part of type %q is not supported; send text parts only", p.Type)
		}
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

// embeddingRequest is /v1/embeddings' body.
type embeddingRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat string          `json:"encoding_format"`
	Dimensions     *int            `json:"dimensions"`
}

// usage is OpenAI's token count.
type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// choice is one element of choices: text for completions, message (whole) or delta (stream)
// for chat. finish_reason is null until the last chunk; logprobs is always null.
type choice struct {
	Index        int      `json:"index"`
	Text         *string  `json:"text,omitempty"`
	Message      *message `json:"message,omitempty"`
	Delta        *message `json:"delta,omitempty"`
	FinishReason *string  `json:"finish_reason"`
	Logprobs     any      `json:"logprobs"`
}

// message is an assistant message or a stream delta (fields left out when empty).
type message struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitempty"`
}

// response is a completion, a chat completion or one of their stream chunks.
type response struct {
	ID      string   `json:"id"`
	Object  string   `json:"object"`
	Created int64    `json:"created"`
	Model   string   `json:"model"`
	Choices []choice `json:"choices"`
	Usage   *usage   `json:"usage,omitempty"`
}
