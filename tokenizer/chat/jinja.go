package chat

// Running the checkpoint's own Jinja template (GGUF's tokenizer.chat_template,
// tokenizer_config.json's chat_template, or a file given with --chat-template-file), with
// github.com/ardanlabs/jinja. The variables are those Hugging Face's apply_chat_template
// passes: messages, add_generation_prompt, bos_token, eos_token, tools when the request has
// some, and enable_thinking when the caller sets it (Qwen3's switch). Values built from
// JSON keep their key order, so that a template's tojson writes a tool's schema in the order
// the client sent it, as Python's and JavaScript's dictionaries do.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/ardanlabs/jinja"
)

// Options are the rendering switches besides the messages.
type Options struct {
	// AddGenerationPrompt opens the assistant's turn after the messages (what a server
	// wants); false renders the conversation alone (to count or store it).
	AddGenerationPrompt bool
	// Tools is OpenAI's tools array as sent (nil or empty: none).
	Tools json.RawMessage
	// EnableThinking, when set, is passed as enable_thinking (Qwen3 renders an empty
	// <think></think> block when it is false).
	EnableThinking *bool
}

// TemplateError is a conversation the template itself refuses (its raise_exception, such as
// Gemma's "Conversation roles must alternate"): the client's to fix, not a reason to fall
// back to another layout.
type TemplateError struct{ Message string }

func (e *TemplateError) Error() string {
	return "the chat template refuses the conversation: " + e.Message
}

// New returns the template for a checkpoint's Jinja source, with bos and eos the text of its
// BOS and EOS tokens ("" when it has none). The family the source's markers name (Pick) is
// the fallback when the source does not compile or fails to render. A source that does not
// compile is reported in Fallback; the template is usable either way.
func New(source, bos, eos string) Template {
	t := Pick(source)
	if strings.TrimSpace(source) == "" {
		return t
	}
	t.Source, t.bos, t.eos = source, bos, eos
	program, err := jinja.Compile(source)
	if err != nil {
		t.Fallback = fmt.Sprintf("the Jinja template does not compile (%v); rendering the %s layout instead", err, t.Name)
		return t
	}
	t.program = program
	if t.Name == "plain" {
		// An unknown family: its own EOS ends a turn, and the plain layout's next-speaker
		// stop string means nothing to it.
		t.Stops = nil
		if eos != "" {
			t.EndOfTurn = []string{eos}
		}
	}
	return t
}

// FromFile reads a Jinja chat template from a file (llama.cpp's --chat-template-file).
func FromFile(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("reading the chat template: %w", err)
	}
	if strings.TrimSpace(string(data)) == "" {
		return "", fmt.Errorf("the chat template %s is empty; give a file holding a Jinja template", path)
	}
	return string(data), nil
}

// Jinja reports whether the template runs the checkpoint's Jinja program (false: the Go
// layout of its family).
func (t Template) Jinja() bool { return t.program != nil }

// Describe names what renders the conversations, for a server's start-up line.
func (t Template) Describe() string {
	if t.program != nil {
		return fmt.Sprintf("jinja (fallback %s)", t.Name)
	}
	return t.Name
}

// Apply renders msgs as text: with the Jinja program when there is one, else (or when the
// program fails for a reason other than its own raise_exception) with the family's layout.
// The segments tell template markup from message text where the Go layout knows it; a
// Jinja rendering is one special segment, which Encode splits around the messages' text.
func (t Template) Apply(msgs []Message, o Options) ([]Segment, error) {
	if t.program != nil {
		out, err := t.RenderJinja(msgs, o)
		var te *TemplateError
		switch {
		case err == nil:
			return []Segment{{Text: out, Special: true}}, nil
		case errors.As(err, &te):
			return nil, err
		}
		// An engine limit (a filter or method it lacks): the family's layout still serves.
		if t.OnFallback != nil {
			t.OnFallback(err)
		}
	}
	segs := t.Render(msgs)
	if !o.AddGenerationPrompt && t.opens && len(segs) > 0 {
		segs = segs[:len(segs)-1]
	}
	return segs, nil
}

// RenderJinja runs the Jinja program on msgs. A template's raise_exception is a
// *TemplateError.
func (t Template) RenderJinja(msgs []Message, o Options) (string, error) {
	if t.program == nil {
		return "", errors.New("the template has no Jinja program")
	}
	list := make([]jinja.Value, len(msgs))
	for i, m := range msgs {
		v, err := m.value()
		if err != nil {
			return "", fmt.Errorf("message %d: %w", i, err)
		}
		list[i] = v
	}
	// raise_exception is replaced so that the template's own refusal can be told from an
	// engine error (the engine's wraps the message in plain text).
	var raised *TemplateError
	data := map[string]jinja.Value{
		"messages":              jinja.NewList(list),
		"add_generation_prompt": jinja.NewBool(o.AddGenerationPrompt),
		"bos_token":             jinja.NewString(t.bos),
		"eos_token":             jinja.NewString(t.eos),
		"raise_exception": jinja.NewCallable("raise_exception", func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
			msg := "raise_exception"
			switch {
			case len(args) > 0 && args[0].IsString():
				msg = args[0].AsString()
			case len(args) > 0:
				msg = args[0].String()
			}
			raised = &TemplateError{Message: msg}
			return jinja.Undefined(), raised
		}),
	}
	if len(o.Tools) > 0 && !bytes.Equal(bytes.TrimSpace(o.Tools), []byte("null")) {
		tools, err := jsonValue(o.Tools)
		if err != nil {
			return "", fmt.Errorf("tools: %w", err)
		}
		if tools.IsList() && tools.AsList().Len() > 0 {
			data["tools"] = tools
		}
	}
	if o.EnableThinking != nil {
		data["enable_thinking"] = jinja.NewBool(*o.EnableThinking)
	}
	out, err := t.program.RenderValues(data)
	if raised != nil {
		return "", raised
	}
	if err != nil {
		return "", fmt.Errorf("rendering the chat template: %w", err)
	}
	return out, nil
}

// value is the message as the template sees it: role and content always, the optional
// fields only when set (templates test them with "is defined"). OpenAI's newer "developer"
// role is "system", the role the templates know (most ignore a role they do not know).
func (m Message) value() (jinja.Value, error) {
	v := jinja.NewDict()
	d := v.AsDict()
	d.Set("role", jinja.NewString(templateRole(m.Role)))
	d.Set("content", jinja.NewString(m.Content))
	if m.ReasoningContent != "" {
		d.Set("reasoning_content", jinja.NewString(m.ReasoningContent))
	}
	if len(m.ToolCalls) > 0 {
		calls, err := jsonValue(m.ToolCalls)
		if err != nil {
			return jinja.Value{}, fmt.Errorf("tool_calls: %w", err)
		}
		d.Set("tool_calls", calls)
	}
	if m.ToolCallID != "" {
		d.Set("tool_call_id", jinja.NewString(m.ToolCallID))
	}
	if m.Name != "" {
		d.Set("name", jinja.NewString(m.Name))
	}
	return v, nil
}

// jsonValue decodes JSON into template values, objects keeping their key order. OpenAI's
// tool call arguments arrive as a JSON string; they stay a string (the templates test
// "is string" and write it as it is).
func jsonValue(raw json.RawMessage) (jinja.Value, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return jinja.Value{}, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return jinja.Value{}, errors.New("trailing data after the JSON value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder) (jinja.Value, error) {
	tok, err := dec.Token()
	if err != nil {
		return jinja.Value{}, err
	}
	switch x := tok.(type) {
	case json.Delim:
		switch x {
		case '[':
			var items []jinja.Value
			for dec.More() {
				item, err := decodeValue(dec)
				if err != nil {
					return jinja.Value{}, err
				}
				items = append(items, item)
			}
			_, err := dec.Token() // ]
			return jinja.NewList(items), err
		case '{':
			v := jinja.NewDict()
			for dec.More() {
				key, err := dec.Token()
				if err != nil {
					return jinja.Value{}, err
				}
				item, err := decodeValue(dec)
				if err != nil {
					return jinja.Value{}, err
				}
				v.AsDict().Set(key.(string), item)
			}
			_, err := dec.Token() // }
			return v, err
		}
		return jinja.Value{}, fmt.Errorf("unexpected %q", x)
	default:
		// nil, bool, string and json.Number convert as the engine converts Go values.
		return jinja.FromGoValue(x), nil
	}
}
