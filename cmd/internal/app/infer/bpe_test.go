package infer

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/posformer/posformer/engine/train"
	"github.com/posformer/posformer/tokenizer"
)

// A decoder trained on BPE tokens (cmd/train -bpe) runs from its checkpoint folder with the
// tokenizer.json its config names, prints the prompt and whole characters, and prints the
// same greedy text from its GGUF export, which carries the vocabulary.
func TestBPECheckpointRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a tiny model for 1 step")
	}
	text := filepath.Join(t.TempDir(), "text.go")
	var b strings.Builder
	for i := range 200 {
		b.WriteString("func main() { s := \"日本語 é\"; n := " + strings.Repeat("1", i%9+1) + " }\n")
	}
	if err := os.WriteFile(text, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	o := train.Options{Kind: "decoder", Scheme: "rope", Out: dir, PE: map[string]any{}, Dim: 16, Layers: 1, Heads: 2, KV: 1,
		Hidden: 16, Ctx: 64, Steps: 1, Batch: 2, Seq: 16, LR: 1e-3, Warmup: 1, Seed: 1, EvalEvery: 1, SaveEvery: 1,
		EvalWindows: 2, Data: text, BPE: 280}
	if _, err := train.Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	prompt := "func main() {"
	run := func(model string) string {
		var stderr bytes.Buffer
		var code int
		// A one-shot generation streams to the process's standard output.
		out := captureStdout(t, func() {
			code = Run([]string{"-m", model, "-p", prompt, "-n", "16", "-temp", "0"}, strings.NewReader(""), io.Discard, &stderr)
		})
		if code != 0 {
			t.Fatalf("run -m %s exited %d: %s", model, code, stderr.String())
		}
		return out
	}
	got := run(dir)
	if !strings.HasPrefix(got, prompt) || !utf8.ValidString(got) || strings.ContainsRune(got, utf8.RuneError) || len(got) <= len(prompt)+1 {
		t.Errorf("run printed %q: want the prompt and more whole characters", got)
	}
	tok, err := tokenizer.Load(filepath.Join(dir, train.TokenizerFile))
	if err != nil {
		t.Fatal(err)
	}
	if fromGGUF := run(exportGGUF(t, dir, tok)); fromGGUF != got {
		t.Errorf("the GGUF export printed %q, the checkpoint %q", fromGGUF, got)
	}
}

// captureStdout returns what f writes to os.Stdout.
func captureStdout(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stdout
	os.Stdout = w
	done := make(chan string)
	go func() {
		data, _ := io.ReadAll(r)
		done <- string(data)
	}()
	defer func() { os.Stdout = saved }()
	f()
	w.Close()
	return <-done
}
