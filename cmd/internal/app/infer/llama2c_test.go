package infer

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/posformer/posformer/engine"
	"github.com/posformer/posformer/models"
	"github.com/posformer/posformer/models/llama2c"
)

// constantModel writes a llama2.c model whose greedy choice after any token is target: every
// block's output projections are zero, so the final hidden state is the (shared) embedding
// e = (1, 0, ..., 0) normalized, and the classifier scores only row target, with sqrt(dim) > 0.
func constantModel(t *testing.T, vocab, target int) string {
	t.Helper()
	cfg := models.Config{Kind: models.Decoder, VocabSize: vocab, Dim: 8, NumLayers: 1, NumHeads: 2, HiddenDim: 8,
		MaxSeqLen: 16, Positional: map[string]any{"name": "rope", "layout": "interleaved"}}
	h, err := llama2c.HeaderFor(cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	w := llama2c.Weights{}
	for _, e := range h.Layout() {
		v := make([]float32, e.Numel())
		switch {
		case len(e.Shape) == 1: // norms
			for i := range v {
				v[i] = 1
			}
		case e.Name == "tok_embeddings.weight":
			for r := range vocab {
				v[r*8] = 1
			}
		case e.Name == "output.weight":
			v[target*8] = 1
		}
		w[e.Name] = v
	}
	path := filepath.Join(t.TempDir(), fmt.Sprintf("const%d.bin", target))
	if err := llama2c.Write(path, cfg, w, 0); err != nil {
		t.Fatal(err)
	}
	return path
}

// tokenizerFile writes a tokenizer.bin of n tokens: the llama2.c specials and byte pieces,
// then " ", "a", " a", " hi" and fillers.
func tokenizerFile(t *testing.T, n int) string {
	t.Helper()
	pieces := []string{"<unk>", "\n<s>\n", "\n</s>\n"}
	for b := range 256 {
		pieces = append(pieces, fmt.Sprintf("<0x%02X>", b))
	}
	pieces = append(pieces, " ", "a", " a", " hi")
	for len(pieces) < n {
		pieces = append(pieces, fmt.Sprintf("filler%d", len(pieces)))
	}
	out := binary.LittleEndian.AppendUint32(nil, 16)
	for i, p := range pieces {
		out = binary.LittleEndian.AppendUint32(out, math.Float32bits(-float32(i)))
		out = binary.LittleEndian.AppendUint32(out, uint32(len(p)))
		out = append(out, p...)
	}
	path := filepath.Join(t.TempDir(), "tokenizer.bin")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

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
	to7 := constantModel(t, 300, 7)
	toBOS := constantModel(t, 300, 1)
	to262 := constantModel(t, 300, 262) // " hi" in tokenizerFile
	tok := tokenizerFile(t, 300)
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
	model := constantModel(t, 300, 7)
	tok := tokenizerFile(t, 300)
	short := tokenizerFile(t, 280)
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
	o := llama2cOptions("../../../../weights/" + DefaultModel)
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
