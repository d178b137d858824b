package perplexity

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/posformer/posformer/engine"
	"github.com/posformer/posformer/models/gguf"
	"github.com/posformer/posformer/tokenizer"
)

// A GGUF file that adds BOS: the text is scored with BOS first and each chunk's first token
// replaced by BOS, as llama-perplexity does, and gives what the checkpoint folder it was
// exported from gives for those chunks.
func TestGGUFWithBOS(t *testing.T) {
	dir := tinyModel(t)
	e, err := engine.Load(dir, "", 64)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.Load("byte")
	if err != nil {
		t.Fatal(err)
	}
	v, err := tokenizer.ToGGUF(tok, e.Model.Config.VocabSize)
	if err != nil {
		t.Fatal(err)
	}
	vocab := gguf.Vocab(v)
	vocab.AddBOS = true
	file := filepath.Join(t.TempDir(), "model.gguf")
	if err := gguf.Export(file, e.Model, e.Ctx, gguf.ExportOptions{Vocab: vocab.KVs()}); err != nil {
		t.Fatal(err)
	}
	text := sampleText()
	stdout, stderr, code := runCmd(t, text, "-m", file, "-f", "-", "-c", "64")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	bos := tok.Special().BOS
	ids, err := tok.Encode(text)
	if err != nil {
		t.Fatal(err)
	}
	ids = append([]int{bos}, ids...)
	if want := fmt.Sprintf("%d tokens, %d chunks", len(ids), len(ids)/64); !strings.Contains(stderr, want) {
		t.Errorf("stderr %q, want %q (the text's bytes and BOS)", stderr, want)
	}
	// Each chunk's first token replaced by BOS, by hand, scored without BOS.
	replaced := append([]int(nil), ids...)
	for c := 0; c < len(replaced); c += 64 {
		replaced[c] = bos
	}
	s, err := Score(e, replaced, 64, -1, -1, nil, tok.Decode)
	if err != nil {
		t.Fatal(err)
	}
	ppl, se := s.Estimate()
	if want := fmt.Sprintf("Final estimate: PPL = %.4f +/- %.5f\n", ppl, se); !strings.HasPrefix(stdout, want) {
		t.Errorf("GGUF: %q, want %q", stdout, want)
	}
}
