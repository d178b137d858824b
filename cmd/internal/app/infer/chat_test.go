package infer

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/posformer/posformer/engine"
	"github.com/posformer/posformer/tokenizer"
	"github.com/posformer/posformer/tokenizer/chat"
)

// Two turns of a conversation with the shipped (base) decoder: the second turn feeds the
// session only its own line and the first reply's last token, which generation chose but had
// not yet fed; the session then holds every token of both turns exactly once.
func TestChatKeepsTheCache(t *testing.T) {
	o := options{model: testModel, n: 8, seed: 1, ignoreEOS: true,
		sampling: engine.Sampling{Temp: 0.8, TopK: 40, TopP: 0.95, RepeatPenalty: 1.1, RepeatLastN: 64}}
	e, err := o.load()
	if err != nil {
		t.Fatal(err)
	}
	m, err := o.chatModel(e)
	if err != nil {
		t.Fatal(err)
	}
	if m.template != nil {
		t.Fatalf("the shipped decoder has no chat template, got %s", m.template.Name)
	}
	lines := []string{"func main() {\n", "\tfor i := 0; i < 3; i++ {\n"}
	var out bytes.Buffer
	turns, err := converse(e, m, o, strings.NewReader(strings.Join(lines, "")+"/exit\n"), &out)
	if err != nil {
		t.Fatal(err)
	}
	if len(turns) != 2 {
		t.Fatalf("%d turns, want 2 (output %q)", len(turns), out.String())
	}
	tok := tokenizer.NewByte()
	first, _ := tok.Encode(lines[0])
	second, _ := tok.Encode(lines[1])
	if turns[0].fed != len(first) || turns[0].generated != o.n {
		t.Errorf("turn 1 fed %d tokens and generated %d, want %d and %d", turns[0].fed, turns[0].generated, len(first), o.n)
	}
	// The reply stopped at -n: its last token is fed with the next line.
	if turns[1].fed != len(second)+1 {
		t.Errorf("turn 2 fed %d tokens, want its %d plus the first reply's last: the history was re-fed", turns[1].fed, len(second))
	}
	if want := len(first) + o.n + len(second) + o.n - 1; turns[1].used != want {
		t.Errorf("the session holds %d tokens after two turns, want %d", turns[1].used, want)
	}
	if c := strings.Count(out.String(), "> "); c != 3 {
		t.Errorf("%d prompts in %q, want 3 (two turns, then /exit)", c, out.String())
	}
}

// A conversation longer than the context: without --context-shift it ends with an error naming
// the flag; with it, old tokens are dropped after the first --keep and every turn is answered,
// the cache never holding more than -c tokens.
func TestChatContextShift(t *testing.T) {
	lines := strings.Repeat("\tx := compute(a, b, c)\n", 8) // 8 turns of 22 bytes, 16 generated each
	o := options{model: testModel, n: 16, seed: 1, ignoreEOS: true, ctxSize: 96,
		sampling: engine.Sampling{Temp: 0.8, TopK: 40, TopP: 0.95, RepeatPenalty: 1}}
	e, err := o.load()
	if err != nil {
		t.Fatal(err)
	}
	m, err := o.chatModel(e)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := converse(e, m, o, strings.NewReader(lines), &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "--context-shift") {
		t.Fatalf("without --context-shift: %v, want an error naming it", err)
	}
	o.contextShift, o.keep = true, 4
	turns, err := converse(e, m, o, strings.NewReader(lines), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	shifts := 0
	for i, tn := range turns {
		shifts += tn.shifts
		if tn.generated != o.n || tn.used > 96 {
			t.Errorf("turn %d: generated %d of %d, %d tokens in a cache of 96", i+1, tn.generated, o.n, tn.used)
		}
	}
	if len(turns) != 8 || shifts == 0 {
		t.Fatalf("%d turns with %d shifts, want 8 turns and at least one shift", len(turns), shifts)
	}
}

// The end of input ends a conversation as /exit does, after answering a last line that has
// no newline.
func TestChatEndsAtEOF(t *testing.T) {
	o := options{model: testModel, n: 4, seed: 1, ignoreEOS: true,
		sampling: engine.Sampling{TopK: 40, TopP: 0.95, RepeatPenalty: 1}}
	e, err := o.load()
	if err != nil {
		t.Fatal(err)
	}
	m, err := o.chatModel(e)
	if err != nil {
		t.Fatal(err)
	}
	turns, err := converse(e, m, o, strings.NewReader("x := 1"), &bytes.Buffer{})
	if err != nil || len(turns) != 1 || turns[0].fed != 6 {
		t.Fatalf("turns %+v, err %v; want one turn feeding 6 tokens", turns, err)
	}
}

// -p - and -f - read the prompt from standard input, -f FILE from the file; -p with -f is
// refused.
func TestPromptSources(t *testing.T) {
	file := filepath.Join(t.TempDir(), "prompt.txt")
	if err := os.WriteFile(file, []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	model := testModel
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-p", "-"}, "from stdin"},
		{[]string{"-f", "-"}, "from stdin"},
		{[]string{"--file", file}, "package main\n"},
		{[]string{"-p", "hi"}, "hi"},
		{nil, "func main() {"},
	} {
		o, _, err := parse(append([]string{"-m", model}, c.args...), &bytes.Buffer{})
		if err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		if err := o.resolve(strings.NewReader("from stdin")); err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		if o.prompt != c.want {
			t.Errorf("%v: prompt %q, want %q", c.args, o.prompt, c.want)
		}
	}
	if _, _, err := parse([]string{"-p", "x", "-f", file}, &bytes.Buffer{}); err == nil {
		t.Errorf("-p with -f: no error")
	}
	o, _, err := parse([]string{"-t", "3", "--backend", "cpu"}, &bytes.Buffer{})
	if err != nil || o.backend != "cpu:threads=3" {
		t.Errorf("-t 3: backend %q, %v; want cpu:threads=3", o.backend, err)
	}
	var help bytes.Buffer
	if _, h, _ := parse([]string{"-h"}, &help); !h || strings.Count(help.String(), "tokens to generate") != 1 || !strings.Contains(help.String(), "-n, --n-predict int") {
		t.Errorf("-h lists -n and --n-predict apart, or not at all:\n%s", help.String())
	}
}

// With a chat template (llama2's, on the shipped byte-level decoder), the first turn is the
// system message (-p) and the user's in the template, after BOS; the second turn is the
// user's message alone, after the first reply's last token (its end of turn, or the token
// that -n cut off), never the conversation again.
func TestChatTemplateTurns(t *testing.T) {
	o := options{model: testModel, n: 6, seed: 1, prompt: "Be brief.", set: map[string]bool{"p": true},
		sampling: engine.Sampling{Temp: 0.8, TopK: 40, TopP: 0.95, RepeatPenalty: 1.1, RepeatLastN: 64}}
	e, err := o.load()
	if err != nil {
		t.Fatal(err)
	}
	m, err := o.chatModel(e)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := chat.Pick("{{ '[INST] ' + message['content'] + ' [/INST]' }}")
	if tmpl.Name != "llama2" {
		t.Fatalf("picked %s, want llama2", tmpl.Name)
	}
	m.template, m.bos = &tmpl, m.tok.Special().BOS
	turns, err := converse(e, m, o, strings.NewReader("Hi\nBye\n"), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	first, err := tmpl.Encode(m.tok, []chat.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hi"}}, m.bos)
	if err != nil {
		t.Fatal(err)
	}
	second, err := tmpl.Encode(m.tok, []chat.Message{{Role: "user", Content: "Bye"}}, -1)
	if err != nil {
		t.Fatal(err)
	}
	if len(turns) != 2 || turns[0].fed != len(first) || turns[1].fed != len(second)+1 {
		t.Errorf("turns %+v; want the first to feed %d tokens and the second %d + 1", turns, len(first), len(second))
	}
	// Every reply token is in the cache but one that -n cut off (an end of turn was never fed).
	want := turns[0].used + turns[1].fed + turns[1].generated
	if turns[1].generated == o.n {
		want--
	}
	if turns[1].used != want {
		t.Errorf("the session holds %d tokens after two turns, want %d", turns[1].used, want)
	}
}
