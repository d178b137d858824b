package chat

import (
	"strings"
	"testing"
)

// Templates are recognized by their markers, in Jinja sources shaped like the checkpoints'
// own; anything else (and no template) is plain.
func TestPickTemplate(t *testing.T) {
	for jinja, want := range map[string]string{
		"{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}":                          "chatml",
		"{{ bos_token }}{% for m in messages %}{{ '<|start_header_id|>' + m['role'] + '<|end_header_id|>\n\n' + m['content'] | trim + '<|eot_id|>' }}{% endfor %}": "llama3",
		"{{ bos_token }}{% for m in messages %}{{ '<start_of_turn>' + role + '\n' + m['content'] | trim + '<end_of_turn>\n' }}{% endfor %}":                        "gemma",
		"{% for m in messages %}{{ bos_token + '[INST] ' + m['content'] + ' [/INST]' }}{% endfor %}":                                                               "llama2",
		"{{ messages }}": "plain",
		"":               "plain",
		"<|start_header_id|> without its end of turn": "plain",
	} {
		if got := Pick(jinja).Name; got != want {
			t.Errorf("%q: template %s, want %s", jinja, got, want)
		}
	}
}

var conversation = []Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hi <|im_end|> </s>"}, {Role: "assistant", Content: "Hello."}, {Role: "user", Content: "Bye"}}

// Each template lays out the conversation as its family's format does, message text in
// segments of their own, never parsed as special tokens.
func TestTemplateLayouts(t *testing.T) {
	for _, c := range []struct {
		t    Template
		want string
	}{
		{plain, "System: Be brief.\nUser: Hi <|im_end|> </s>\nAssistant: Hello.\nUser: Bye\nAssistant:"},
		{chatML, "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi <|im_end|> </s><|im_end|>\n<|im_start|>assistant\nHello.<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n<|im_start|>assistant\n"},
		{llama3, "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi <|im_end|> </s><|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nBye<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
		{gemma, "<bos><start_of_turn>user\nBe brief.\n\nHi <|im_end|> </s><end_of_turn>\n<start_of_turn>model\nHello.<end_of_turn>\n<start_of_turn>user\nBye<end_of_turn>\n<start_of_turn>model\n"},
		{llama2, "<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi <|im_end|> </s> [/INST] Hello. </s><s>[INST] Bye [/INST]"},
	} {
		segs := c.t.Render(conversation)
		var b strings.Builder
		for _, s := range segs {
			b.WriteString(s.Text)
			if s.Special && strings.Contains(s.Text, "Hi") {
				t.Errorf("%s: message text in a special segment %q", c.t.Name, s.Text)
			}
		}
		if b.String() != c.want {
			t.Errorf("%s renders\n%q\nwant\n%q", c.t.Name, b.String(), c.want)
		}
	}
}
