package perplexity

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/posformer/posformer/cmd/internal/llama2ctest"
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

// A llama2.c .bin whose every block's output is zero predicts the same distribution after any
// token: logit l = 1/sqrt(1/dim + eps) for one token (the final RMS norm of the embedding
// (1, 0, ..., 0)), 0 for the others. Each scored token's NLL is then log(V-1+e^l) - l when it
// is that token and log(V-1+e^l) otherwise; the default -c is the model's seq_len, 16.
func TestLlama2CClosedForm(t *testing.T) {
	const vocab, dim, seq, target = 300, llama2ctest.Dim, llama2ctest.SeqLen, 3 + 256 + 1 // target: the piece "a"
	model := llama2ctest.ConstantModel(t, vocab, target)
	tokFile := llama2ctest.Tokenizer(t, vocab, " ", "a")
	tok, err := tokenizer.LoadLlama2C(tokFile, vocab)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("a a a b ", 10)
	stdout, stderr, code := runCmd(t, text, "-m", model, "-z", tokFile, "-f", "-")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	ids, err := tok.Encode(text)
	if err != nil {
		t.Fatal(err)
	}
	ids = append([]int{1}, ids...)       // run.c's BOS
	logit := 1 / math.Sqrt(1.0/dim+1e-5) // RMS norm with llama2.c's eps
	z := math.Log(vocab - 1 + math.Exp(logit))
	var nll float64
	n, hits := 0, 0
	for c := 0; (c+1)*seq <= len(ids); c++ {
		for _, id := range ids[c*seq+seq/2+1 : (c+1)*seq] {
			nll += z
			if id == target {
				nll -= logit
				hits++
			}
			n++
		}
	}
	if hits == 0 || hits == n {
		t.Fatalf("%d of the %d scored tokens are the predicted one: the text tests one case only", hits, n)
	}
	if want := fmt.Sprintf("Final estimate: PPL = %.4f", math.Exp(nll/float64(n))); !strings.HasPrefix(stdout, want) {
		t.Errorf("%q, want %q", stdout, want)
	}
	if want := fmt.Sprintf("(%d tokens scored,", n); !strings.Contains(stdout, want) {
		t.Errorf("%q, want %q", stdout, want)
	}
	if _, stderr, code := runCmd(t, text, "-m", model, "-f", "-"); code != 1 || !strings.Contains(stderr, "pass its tokenizer.bin with -z") {
		t.Errorf("without -z: exit %d, %q", code, stderr)
	}
}
