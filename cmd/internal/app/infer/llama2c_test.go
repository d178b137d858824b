package infer

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/posformer/posformer/cmd/internal/llama2ctest"
	"github.com/posformer/posformer/engine"
)

// llama2cOptions are the flag defaults, with the given flags marked as set.
func llama2cOptions(model string, set ...string) options {
	o := options{model: model, prompt: "func main() {", n: 128, sampling: engine.Sampling{Temp: 0.8, TopK: 40, TopP: 0.95, RepeatPenalty: 1.1, RepeatLastN: 64}, seed: 1,
		set: map[string]bool{"temp": true}}
	for _, s := range set {
		o.set[s] = true
	}
	o.sampling.Temp = 0
	return o
}

func TestLlama2CLikeRunC(t *testing.T) {
	to7 := llama2ctest.ConstantModel(t, 300, 7)
	toBOS := llama2ctest.ConstantModel(t, 300, 1)
	to262 := llama2ctest.ConstantModel(t, 300, 262) // " hi" in the tokenizer.bin
	tok := llama2ctest.Tokenizer(t, 300, " ", "a", " a", " hi")
	cases := []struct {
		name string
		o    options
		want string
	}{
		// run.c counts steps as positions, prompt (with BOS) included: BOS 5 6 then 10-3+1
		// sampled tokens, all printed after BOS.
		{"steps", func() options { o := llama2cOptions(to7, "n", "prompt-ids"); o.n, o.promptIDs = 10, "5,6"; return o }(), "5 6 7 7 7 7 7 7 7 7 \n"},
		// -n 0 means the model's seq_len (16).
		{"seq_len", func() options { o := llama2cOptions(to7, "n", "prompt-ids"); o.n, o.promptIDs = 0, "5,6"; return o }(), "5 6" + strings.Repeat(" 7", 14) + " \n"},
		// Greedy from BOS alone, default 256 steps clamped to seq_len.
		{"from BOS", llama2cOptions(to7), strings.Repeat("7 ", 16) + "\n"},
		// The model emits BOS at once: run.c stops and prints only the prompt.
		{"stop at BOS", func() options { o := llama2cOptions(toBOS, "prompt-ids"); o.promptIDs = "5,6"; return o }(), "5 6 \n"},
		// With -z: "a" encodes to [" a"] after the dummy prefix merge; its leading space goes
		// after BOS; then " hi" each step.
		{"text", func() options {
			o := llama2cOptions(to262, "n", "p")
			o.n, o.prompt, o.tokenizer = 5, "a", tok
			return o
		}(), "a hi hi hi hi\n"},
	}
	for _, c := range cases {
		var out bytes.Buffer
		if err := runLlama2C(c.o, &out); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if out.String() != c.want {
			t.Errorf("%s: printed %q, want %q", c.name, out.String(), c.want)
		}
	}
}

func TestLlama2CBadFlags(t *testing.T) {
	model := llama2ctest.ConstantModel(t, 300, 7)
	tok := llama2ctest.Tokenizer(t, 300, " ", "a", " a", " hi")
	short := llama2ctest.Tokenizer(t, 280, " ", "a", " a", " hi")
	cases := []struct {
		mutate func(*options)
		want   string
	}{
		{func(o *options) { o.set["p"], o.prompt = true, "hi" }, "needs the model's tokenizer: pass -z"},
		{func(o *options) { o.set["p"], o.prompt, o.promptIDs = true, "hi", "5" }, "either as text (-p) or as ids"},
		{func(o *options) { o.promptIDs = "5,x" }, `--prompt-ids: "x" is not a token id in [0, 300)`},
		{func(o *options) { o.promptIDs = "300" }, "not a token id"},
		{func(o *options) { o.promptIDs, o.n, o.set["n"] = "5,6", 2, true }, "the prompt is 3 tokens with BOS but -n allows 2 steps"},
		{func(o *options) { o.tokenizer = filepath.Join(t.TempDir(), "none.bin") }, "-z: loading llama2.c tokenizer"},
		{func(o *options) { o.tokenizer = short }, "token 280: file ends"},
		{func(o *options) { o.tokenizer, o.ctxSize, o.n, o.set["n"] = tok, 8, 12, true }, "-n 12 steps exceed the context size 8"},
		{func(o *options) { o.model = filepath.Join(t.TempDir(), "missing.bin") }, "no such file"},
	}
	for _, c := range cases {
		o := llama2cOptions(model)
		c.mutate(&o)
		err := run(o, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("want a one-line error mentioning %q, got %v", c.want, err)
		}
	}
	// -z and --prompt-ids belong to llama2.c models.
	o := llama2cOptions(testModel)
	o.tokenizer = tok
	if err := run(o, nil); err == nil || !strings.Contains(err.Error(), "-z and --prompt-ids are for llama2.c") {
		t.Errorf("-z with a checkpoint directory: %v", err)
	}
}

// --prompt-ids takes ids in [0, vocab), spaces allowed, and names the first bad one.
func TestParseIDs(t *testing.T) {
	if ids, err := parseIDs(" 5,17 ,0", 32); err != nil || !slices.Equal(ids, []int{5, 17, 0}) {
		t.Errorf("parseIDs(\" 5,17 ,0\") = %v, %v", ids, err)
	}
	for s, bad := range map[string]string{"5,32": "32", "-1": "-1", "5,,6": "", "5, x": " x"} {
		want := fmt.Sprintf("--prompt-ids: %q is not a token id in [0, 32); give comma-separated ids such as 5,17,300", bad)
		if _, err := parseIDs(s, 32); err == nil || err.Error() != want {
			t.Errorf("parseIDs(%q): %v, want %q", s, err, want)
		}
	}
}
