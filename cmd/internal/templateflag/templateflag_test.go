package templateflag

import (
	"flag"
	"strings"
	"testing"
)

// The file replaces the checkpoint's template; without it the checkpoint's is run; a file that
// cannot be read is an error naming it.
func TestTemplate(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	var path string
	Var(fs, &path)
	if err := fs.Parse([]string{"--chat-template-file", "../../../tokenizer/chat/testdata/gemma3.jinja"}); err != nil {
		t.Fatal(err)
	}
	checkpoint := "{% for m in messages %}<|im_start|>{{ m.content }}{% endfor %}"
	tmpl, err := Template(path, checkpoint, "<bos>", "<end_of_turn>")
	if err != nil || !tmpl.Jinja() || tmpl.Name != "gemma" || !strings.Contains(tmpl.Source, "<start_of_turn>") {
		t.Errorf("with the file: %s %v, want Gemma's template run", tmpl.Describe(), err)
	}
	tmpl, err = Template("", checkpoint, "", "")
	if err != nil || tmpl.Source != checkpoint || tmpl.Name != "chatml" {
		t.Errorf("without the file: %s %v, want the checkpoint's", tmpl.Describe(), err)
	}
	if _, err := Template("no/such.jinja", checkpoint, "", ""); err == nil || !strings.Contains(err.Error(), "no/such.jinja") {
		t.Errorf("a missing file: %v", err)
	}
}
