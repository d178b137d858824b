package infer

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/posformer/posformer/cmd/internal/llama2ctest"
	"github.com/posformer/posformer/engine"
	"github.com/posformer/posformer/models/gguf"
	"github.com/posformer/posformer/models/llama2c"
	"github.com/posformer/posformer/tokenizer"
)

// exportGGUF writes the model at path (a llama2.c file or a checkpoint directory) as GGUF with
// the given tokenizer (nil: none).
func exportGGUF(t *testing.T, path string, tok tokenizer.Tokenizer) string {
	t.Helper()
	backend, err := engine.NewBackend("cpu")
	if err != nil {
		t.Fatal(err)
	}
	var e *engine.Engine
	m, ctx, err := llama2c.Load(path, backend)
	if err != nil {
		if e, err = engine.Load(path, "cpu", 0); err != nil {
			t.Fatal(err)
		}
		m, ctx = e.Model, e.Ctx
	}
	var vocab gguf.Vocab
	if tok != nil {
		v, err := tokenizer.ToGGUF(tok, m.Config.VocabSize)
		if err != nil {
			t.Fatal(err)
		}
		vocab = gguf.Vocab(v)
	} else {
		vocab = gguf.Vocab{BOS: 1, EOS: 2, UNK: -1, PAD: -1, AddBOS: true}
	}
	out := filepath.Join(t.TempDir(), "model.gguf")
	if err := gguf.Export(out, m, ctx, gguf.ExportOptions{Vocab: vocab.KVs()}); err != nil {
		t.Fatal(err)
	}
	return out
}

func ggufOptions(model string) options {
	return options{model: model, prompt: "func main() {", n: 24, sampling: engine.Sampling{TopK: 40, TopP: 0.95, RepeatPenalty: 1.1, RepeatLastN: 64}, seed: 1, set: map[string]bool{}}
}

// The shipped byte-level decoder, as GGUF with its tokenizer in the file, prints what the
// checkpoint directory prints: the prompt, then the same greedy continuation.
func TestGGUFLikeCheckpoint(t *testing.T) {
	dir := testModel
	path := exportGGUF(t, dir, tokenizer.NewByte())
	o := ggufOptions(path)
	var out bytes.Buffer
	if err := runGGUF(o, &out); err != nil {
		t.Fatal(err)
	}
	e, err := engine.Load(dir, "cpu", 0)
	if err != nil {
		t.Fatal(err)
	}
	ids, _ := tokenizer.NewByte().Encode(o.prompt)
	sm, _ := o.sampler()
	var gen []int
	if _, err := e.Generate(ids, o.n, sm, []int{257}, func(t int) { gen = append(gen, t) }); err != nil {
		t.Fatal(err)
	}
	if want := o.prompt + tokenizer.NewByte().Decode(gen) + "\n"; out.String() != want {
		t.Errorf("printed %q\nwant    %q", out.String(), want)
	}
}

// A SentencePiece vocabulary in the file: BOS first, the text decoded with its spaces (which
// decoding token by token would lose), and -z replacing the file's tokenizer.
func TestGGUFText(t *testing.T) {
	tokPath := llama2ctest.Tokenizer(t, 300, " ", "a", " a", " hi")
	l2c, err := tokenizer.LoadLlama2C(tokPath, 300)
	if err != nil {
		t.Fatal(err)
	}
	to262 := exportGGUF(t, llama2ctest.ConstantModel(t, 300, 262), l2c) // " hi" every step
	o := ggufOptions(to262)
	o.prompt, o.n, o.sampling.RepeatPenalty = "a", 4, 1
	var out bytes.Buffer
	if err := runGGUF(o, &out); err != nil {
		t.Fatal(err)
	}
	if want := "a hi hi hi hi\n"; out.String() != want {
		t.Errorf("printed %q, want %q", out.String(), want)
	}
	// The same model without a vocabulary: -z gives one, --prompt-ids needs none.
	bare := exportGGUF(t, llama2ctest.ConstantModel(t, 300, 262), nil)
	o.model = bare
	if err := runGGUF(o, new(bytes.Buffer)); err == nil || !strings.Contains(err.Error(), "has no vocabulary: pass a tokenizer with -z") {
		t.Errorf("no vocabulary: %v", err)
	}
	out.Reset()
	o.tokenizer = tokPath
	if err := runGGUF(o, &out); err != nil || out.String() != "a hi hi hi hi\n" {
		t.Errorf("-z: printed %q (%v)", out.String(), err)
	}
	out.Reset()
	o.tokenizer, o.promptIDs = "", "5,6"
	if err := runGGUF(o, &out); err != nil || out.String() != "262 262 262 262 \n" {
		t.Errorf("--prompt-ids: printed %q (%v)", out.String(), err)
	}
	// Through run, as the command line takes it.
	o.promptIDs, o.set["p"] = "5", true
	if err := run(o, nil); err == nil || !strings.Contains(err.Error(), "either as text (-p) or as ids") {
		t.Errorf("both prompts: %v", err)
	}
	o = ggufOptions(filepath.Join(t.TempDir(), "missing.gguf"))
	if err := run(o, nil); err == nil || !strings.Contains(err.Error(), "no such file") || strings.Contains(err.Error(), "llama2") {
		t.Errorf("missing file: %v", err)
	}
}
