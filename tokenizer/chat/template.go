// Package chat lays out a conversation in a model's chat template and turns it into tokens.
//
// Checkpoints carry their template as a Jinja program (GGUF's tokenizer.chat_template, Hugging
// Face's tokenizer_config.json, read by HFTemplate). New compiles it and Apply runs it
// (jinja.go), as Hugging Face's apply_chat_template does. Beside it, as llama.cpp does
// (llm_chat_detect_template), Pick recognizes the common families by their markers, and Go
// code renders them: the layout used when a checkpoint's program does not compile or fails to
// render. A checkpoint without a template (the project's own toy models) gets the plain
// template, which any model trained on prose can follow.
package chat

import (
	"encoding/json"
	"strings"

	"github.com/ardanlabs/jinja"
)

// Message is a chat message; Role is system, developer, user, assistant or tool (OpenAI's
// roles). The Go layouts read Role and Content alone; a Jinja template sees every field that
// is set.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	// ReasoningContent is an assistant's thinking, apart from its answer (Qwen3's
	// reasoning_content).
	ReasoningContent string `json:"reasoning_content,omitempty"`
	// ToolCalls is an assistant's tool_calls array as sent (OpenAI's shape).
	ToolCalls json.RawMessage `json:"tool_calls,omitempty"`
	// ToolCallID and Name identify the call a tool message answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	Name       string `json:"name,omitempty"`
}

// Segment is a piece of a rendered conversation: template markup (special: its special-token
// literals become their ids) or message text (encoded as plain text).
type Segment struct {
	Text    string
	Special bool
}

// Template renders a conversation up to the opening of the assistant's reply.
type Template struct {
	Name string
	// Render lays out the messages and opens the assistant's turn.
	Render func([]Message) []Segment
	// EndOfTurn are special-token literals that close a turn: sampling one ends the reply.
	EndOfTurn []string
	// Stops are strings that end the reply when generated (the plain template's next speaker).
	Stops []string
	// opens: Render's last segment opens the assistant's turn (left out without
	// add_generation_prompt).
	opens bool

	// Source is the checkpoint's Jinja program ("" when it has none); program is it compiled
	// (nil when there is none or it does not compile), run with bos and eos as bos_token and
	// eos_token.
	Source   string
	program  *jinja.Template
	bos, eos string
	// Fallback says why a checkpoint's Jinja program is not run ("" when it is, or there is
	// none).
	Fallback string
	// OnFallback, when set, hears of each rendering the Jinja program failed in the engine
	// and the family's layout served instead (a server logs it).
	OnFallback func(error)
}

// templates in the order Pick tries them; each is recognized by all of its markers.
var templates = []struct {
	markers []string
	t       Template
}{
	{[]string{"<|im_start|>"}, chatML},
	{[]string{"<|start_header_id|>", "<|eot_id|>"}, llama3},
	{[]string{"<start_of_turn>"}, gemma},
	{[]string{"[INST]"}, llama2},
}

// Pick chooses the template for a checkpoint's Jinja source ("" when it has none).
func Pick(jinja string) Template {
	for _, c := range templates {
		all := true
		for _, m := range c.markers {
			all = all && strings.Contains(jinja, m)
		}
		if all && jinja != "" {
			return c.t
		}
	}
	return plain
}

// plain writes one "Role: text" line per message and opens "Assistant:"; the reply ends where
// the model starts the user's next line.
var plain = Template{
	Name: "plain",
	Render: func(msgs []Message) []Segment {
		var b strings.Builder
		for _, m := range msgs {
			b.WriteString(plainRole(m.Role) + ": " + m.Content + "\n")
		}
		b.WriteString("Assistant:")
		return []Segment{{Text: b.String()}}
	},
	Stops: []string{"\nUser:"},
	opens: true,
}

func plainRole(role string) string {
	switch role {
	case "system", "developer":
		return "System"
	case "assistant":
		return "Assistant"
	}
	return "User"
}

// chatML is Qwen's and many fine-tunes' format.
var chatML = Template{
	Name: "chatml",
	Render: func(msgs []Message) []Segment {
		var out []Segment
		for _, m := range msgs {
			out = append(out, Segment{"<|im_start|>" + templateRole(m.Role) + "\n", true}, Segment{Text: m.Content}, Segment{"<|im_end|>\n", true})
		}
		return append(out, Segment{"<|im_start|>assistant\n", true})
	},
	EndOfTurn: []string{"<|im_end|>"},
	opens:     true,
}

// llama3 is Llama 3's header format.
var llama3 = Template{
	Name: "llama3",
	Render: func(msgs []Message) []Segment {
		out := []Segment{{"<|begin_of_text|>", true}}
		for _, m := range msgs {
			out = append(out, Segment{"<|start_header_id|>" + templateRole(m.Role) + "<|end_header_id|>\n\n", true}, Segment{Text: strings.TrimSpace(m.Content)}, Segment{"<|eot_id|>", true})
		}
		return append(out, Segment{"<|start_header_id|>assistant<|end_header_id|>\n\n", true})
	},
	EndOfTurn: []string{"<|eot_id|>"},
	opens:     true,
}

// gemma has user and model turns only: a system message opens the first user turn.
var gemma = Template{
	Name: "gemma",
	Render: func(msgs []Message) []Segment {
		out := []Segment{{"<bos>", true}}
		system := ""
		for _, m := range msgs {
			role := "user"
			switch m.Role {
			case "system", "developer":
				system += m.Content + "\n\n"
				continue
			case "assistant":
				role = "model"
			}
			// Gemma 3's template trims the message, not the system text before it.
			text := strings.TrimSpace(m.Content)
			if role == "user" {
				text, system = system+text, ""
			}
			out = append(out, Segment{"<start_of_turn>" + role + "\n", true}, Segment{Text: text}, Segment{"<end_of_turn>\n", true})
		}
		return append(out, Segment{"<start_of_turn>model\n", true})
	},
	EndOfTurn: []string{"<end_of_turn>"},
	opens:     true,
}

// llama2 wraps each user message in [INST] ... [/INST], the system message in <<SYS>> inside
// the first one, and closes each assistant reply with </s>.
var llama2 = Template{
	Name: "llama2",
	Render: func(msgs []Message) []Segment {
		var out []Segment
		system := ""
		open := false // an [INST] waits for its reply
		for _, m := range msgs {
			switch m.Role {
			case "system", "developer":
				system += m.Content
			case "assistant":
				out = append(out, Segment{Text: " " + strings.TrimSpace(m.Content) + " "}, Segment{"</s>", true})
				open = false
			default:
				out = append(out, Segment{"<s>[INST] ", true})
				if system != "" {
					out = append(out, Segment{"<<SYS>>\n", true}, Segment{Text: system}, Segment{"\n<</SYS>>\n\n", true})
					system = ""
				}
				out = append(out, Segment{Text: strings.TrimSpace(m.Content)}, Segment{" [/INST]", true})
				open = true
			}
		}
		if !open { // a conversation ending on a system or assistant message
			out = append(out, Segment{"<s>[INST] ", true}, Segment{Text: system}, Segment{" [/INST]", true})
		}
		return out
	},
}

// templateRole maps OpenAI's newer "developer" role to "system", which the templates know.
func templateRole(role string) string {
	if role == "developer" {
		return "system"
	}
	return role
}
