package main

// Chat templates. Checkpoints carry theirs as a Jinja program (GGUF's tokenizer.chat_template,
// Hugging Face's tokenizer_config.json); running Jinja would take an interpreter, so, as
// llama.cpp does (llm_chat_detect_template), the server recognizes the common families by
// their markers and renders them with Go code. A template it does not recognize, and a
// checkpoint without one (the project's own toy models), get the plain template, which any
// model trained on prose can follow.

import "strings"

// segment is a piece of a rendered conversation: template markup (special: its special-token
// literals become their ids) or message text (encoded as plain text).
type segment struct {
	text    string
	special bool
}

// chatTemplate renders a conversation up to the opening of the assistant's reply.
type chatTemplate struct {
	name string
	// render lays out the messages and opens the assistant's turn.
	render func([]chatMessage) []segment
	// endOfTurn are special-token literals that close a turn: sampling one ends the reply.
	endOfTurn []string
	// stops are strings that end the reply when generated (the plain template's next speaker).
	stops []string
}

// templates in the order pickTemplate tries them; each is recognized by all of its markers.
var templates = []struct {
	markers []string
	t       chatTemplate
}{
	{[]string{"<|im_start|>"}, chatML},
	{[]string{"<|start_header_id|>", "<|eot_id|>"}, llama3},
	{[]string{"<start_of_turn>"}, gemma},
	{[]string{"[INST]"}, llama2},
}

// pickTemplate chooses the template for a checkpoint's Jinja source ("" when it has none).
func pickTemplate(jinja string) chatTemplate {
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
var plain = chatTemplate{
	name: "plain",
	render: func(msgs []chatMessage) []segment {
		var b strings.Builder
		for _, m := range msgs {
			b.WriteString(plainRole(m.Role) + ": " + m.Content + "\n")
		}
		b.WriteString("Assistant:")
		return []segment{{text: b.String()}}
	},
	stops: []string{"\nUser:"},
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
var chatML = chatTemplate{
	name: "chatml",
	render: func(msgs []chatMessage) []segment {
		var out []segment
		for _, m := range msgs {
			out = append(out, segment{"<|im_start|>" + templateRole(m.Role) + "\n", true}, segment{text: m.Content}, segment{"<|im_end|>\n", true})
		}
		return append(out, segment{"<|im_start|>assistant\n", true})
	},
	endOfTurn: []string{"<|im_end|>"},
}

// llama3 is Llama 3's header format.
var llama3 = chatTemplate{
	name: "llama3",
	render: func(msgs []chatMessage) []segment {
		out := []segment{{"<|begin_of_text|>", true}}
		for _, m := range msgs {
			out = append(out, segment{"<|start_header_id|>" + templateRole(m.Role) + "<|end_header_id|>\n\n", true}, segment{text: strings.TrimSpace(m.Content)}, segment{"<|eot_id|>", true})
		}
		return append(out, segment{"<|start_header_id|>assistant<|end_header_id|>\n\n", true})
	},
	endOfTurn: []string{"<|eot_id|>"},
}

// gemma has user and model turns only: a system message opens the first user turn.
var gemma = chatTemplate{
	name: "gemma",
	render: func(msgs []chatMessage) []segment {
		out := []segment{{"<bos>", true}}
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
			text := m.Content
			if role == "user" {
				text, system = system+text, ""
			}
			out = append(out, segment{"<start_of_turn>" + role + "\n", true}, segment{text: strings.TrimSpace(text)}, segment{"<end_of_turn>\n", true})
		}
		return append(out, segment{"<start_of_turn>model\n", true})
	},
	endOfTurn: []string{"<end_of_turn>"},
}

// llama2 wraps each user message in [INST] ... [/INST], the system message in <<SYS>> inside
// the first one, and closes each assistant reply with </s>.
var llama2 = chatTemplate{
	name: "llama2",
	render: func(msgs []chatMessage) []segment {
		var out []segment
		system := ""
		open := false // an [INST] waits for its reply
		for _, m := range msgs {
			switch m.Role {
			case "system", "developer":
				system += m.Content
			case "assistant":
				out = append(out, segment{text: " " + strings.TrimSpace(m.Content) + " "}, segment{"</s>", true})
				open = false
			default:
				out = append(out, segment{"<s>[INST] ", true})
				if system != "" {
					out = append(out, segment{"<<SYS>>\n", true}, segment{text: system}, segment{"\n<</SYS>>\n\n", true})
					system = ""
				}
				out = append(out, segment{text: strings.TrimSpace(m.Content)}, segment{" [/INST]", true})
				open = true
			}
		}
		if !open { // a conversation ending on a system or assistant message
			out = append(out, segment{"<s>[INST] ", true}, segment{text: system}, segment{" [/INST]", true})
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
