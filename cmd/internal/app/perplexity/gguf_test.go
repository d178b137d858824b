package perplexity

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/posformer/posformer/engine"
	"github.com/posformer/posformer/models"
	"github.com/posformer/posformer/models/gguf"
	"github.com/posformer/posformer/models/llama2c"
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
	const vocab, dim, seq, target = 300, 8, 16, 3 + 256 + 1 // target: the piece "a"
	cfg := models.Config{Kind: models.Decoder, VocabSize: vocab, Dim: dim, NumLayers: 1, NumHeads: 2, HiddenDim: 8,
		MaxSeqLen: seq, Positional: map[string]any{"name": "rope", "layout": "interleaved"}}
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
				v[r*dim] = 1
			}
		case e.Name == "output.weight":
			v[target*dim] = 1
		}
		w[e.Name] = v
	}
	model := filepath.Join(t.TempDir(), "const.bin")
	if err := llama2c.Write(model, cfg, w, 0); err != nil {
		t.Fatal(err)
	}
	// tokenizer.bin: the llama2.c specials, the 256 byte pieces, then " " and "a".
	pieces := []string{"<unk>", "\n<s>\n", "\n</s>\n"}
	for b := range 256 {
		pieces = append(pieces, fmt.Sprintf("<0x%02X>", b))
	}
	pieces = append(pieces, " ", "a")
	for len(pieces) < vocab {
		pieces = append(pieces, fmt.Sprintf("filler%d", len(pieces)))
	}
	out := binary.LittleEndian.AppendUint32(nil, 16)
	for i, p := range pieces {
		out = binary.LittleEndian.AppendUint32(out, math.Float32bits(-float32(i)))
		out = binary.LittleEndian.AppendUint32(out, uint32(len(p)))
		out = append(out, p...)
	}
	tokFile := filepath.Join(t.TempDir(), "tokenizer.bin")
	if err := os.WriteFile(tokFile, out, 0o644); err != nil {
		t.Fatal(err)
	}
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
