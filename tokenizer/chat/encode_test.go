package chat

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/posformer/posformer/tokenizer"
)

// Chat prompts start with BOS once (a template that writes it gets no second), and a
// special-token literal inside a message stays text.
func TestEncodeChat(t *testing.T) {
	tok := tokenizer.NewByte()
	bos, eos := tok.Special().BOS, tok.Special().EOS
	for _, tmpl := range []Template{plain, llama2} {
		ids, err := tmpl.Encode(tok, conversation, bos)
		if err != nil {
			t.Fatal(err)
		}
		if ids[0] != bos || slices.Index(ids[1:], bos) == 0 {
			t.Errorf("%s: prompt starts %v, want one BOS", tmpl.Name, ids[:3])
		}
		// The user's "</s>" is bytes; only llama2's own closing of the assistant turn is EOS.
		wantEOS := map[string]int{"plain": 0, "llama2": 1}[tmpl.Name]
		if got := countOf(ids, eos); got != wantEOS {
			t.Errorf("%s: %d EOS tokens in the prompt, want %d", tmpl.Name, got, wantEOS)
		}
	}
}

func countOf(ids []int, id int) int {
	n := 0
	for _, x := range ids {
		if x == id {
			n++
		}
	}
	return n
}

// Without a BOS to add, the prompt is the rendered conversation's tokens alone.
func TestEncodeWithoutBOS(t *testing.T) {
	tok := tokenizer.NewByte()
	ids, err := plain.Encode(tok, conversation, -1)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := tok.Encode("System: Be brief.\nUser: Hi <|im_end|> </s>\nAssistant: Hello.\nUser: Bye\nAssistant:")
	if !slices.Equal(ids, want) {
		t.Errorf("prompt %v, want the bytes of the plain layout %v", ids, want)
	}
}

// An end-of-turn literal counts when the tokenizer has it as one token: the byte tokenizer has
// "</s>" (its EOS) but not "<|im_end|>".
func TestEndOfTurnIDs(t *testing.T) {
	tok := tokenizer.NewByte()
	if got := chatML.EndOfTurnIDs(tok); len(got) != 0 {
		t.Errorf("chatml's <|im_end|> in the byte tokenizer: %v, want none", got)
	}
	tmpl := Template{EndOfTurn: []string{"</s>", "<|im_end|>"}}
	if got := tmpl.EndOfTurnIDs(tok); !slices.Equal(got, []int{tok.Special().EOS}) {
		t.Errorf("</s> and <|im_end|>: %v, want the EOS %d alone", got, tok.Special().EOS)
	}
}

// tokenizer_config.json gives the template as a string or as named templates ("default" is
// chat's); a directory without the file has none, and a broken file is an error naming it.
func TestHFTemplate(t *testing.T) {
	for body, want := range map[string]string{
		`{"chat_template": "{{ '<|im_start|>' }}"}`:                                                        "{{ '<|im_start|>' }}",
		`{"chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}]}`: "D",
		`{"chat_template": [{"name": "rag", "template": "R"}]}`:                                            "",
		`{"bos_token": "<s>"}`: "",
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if got, err := HFTemplate(dir); err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", body, got, err, want)
		}
	}
	if got, err := HFTemplate(t.TempDir()); err != nil || got != "" {
		t.Errorf("no tokenizer_config.json: %q, %v; want none", got, err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), []byte("{"), 0o644)
	if _, err := HFTemplate(dir); err == nil || !strings.Contains(err.Error(), "tokenizer_config.json") {
		t.Errorf("broken tokenizer_config.json: %v, want an error naming it", err)
	}
}

// tokenizer_config.json gives bos_token and eos_token as strings or AddedToken objects, or
// null (Qwen3 has no BOS).
func TestHFTokens(t *testing.T) {
	for body, want := range map[string][2]string{
		`{"bos_token": "<s>", "eos_token": "</s>"}`:                                                                {"<s>", "</s>"},
		`{"bos_token": {"content": "<|begin_of_text|>", "lstrip": false}, "eos_token": {"content": "<|eot_id|>"}}`: {"<|begin_of_text|>", "<|eot_id|>"},
		`{"bos_token": null, "eos_token": "<|im_end|>"}`:                                                           {"", "<|im_end|>"},
		`{}`: {"", ""},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		bos, eos, err := HFTokens(dir)
		if err != nil || bos != want[0] || eos != want[1] {
			t.Errorf("%s: %q %q %v, want %q %q", body, bos, eos, err, want[0], want[1])
		}
	}
	if bos, eos, err := HFTokens(t.TempDir()); bos != "" || eos != "" || err != nil {
		t.Errorf("no tokenizer_config.json: %q %q %v", bos, eos, err)
	}
}

// FromFile reads a template and refuses an empty file or a missing one, naming it.
func TestFromFile(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.jinja")
	os.WriteFile(empty, []byte(" \n"), 0o644)
	if _, err := FromFile(empty); err == nil || !strings.Contains(err.Error(), "empty.jinja is empty") {
		t.Errorf("an empty template: %v", err)
	}
	if _, err := FromFile(filepath.Join(dir, "missing.jinja")); err == nil || !strings.Contains(err.Error(), "missing.jinja") {
		t.Errorf("a missing template: %v", err)
	}
	src, err := FromFile("testdata/llama3.jinja")
	if err != nil || !strings.Contains(src, "<|start_header_id|>") {
		t.Errorf("llama3.jinja: %v", err)
	}
}
