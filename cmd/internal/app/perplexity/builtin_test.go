package perplexity

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/posformer/posformer/engine/train/corpus"
	"github.com/posformer/posformer/weights"
)

// heldOutGo returns about n bytes of the Go tree's evaluation split (corpus.IsEval), which the
// shipped decoders never trained on, in the corpus's file order.
func heldOutGo(t *testing.T, n int) []byte {
	t.Helper()
	root, err := corpus.GoRoot()
	if err != nil {
		t.Skipf("no Go source tree: %v", err)
	}
	files, err := corpus.SourceFiles(root)
	if err != nil {
		t.Skipf("no Go source tree: %v", err)
	}
	var text []byte
	for _, rel := range files {
		if !corpus.IsEval(rel) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(root, "src", filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		if text = append(text, data...); len(text) >= n {
			break
		}
	}
	return text
}

// The built-in decoder knows Go: on held-out Go source it scores well below the 2.39 bits per
// byte of the byte-level model it replaced (and far below the unigram's 5.4), each token scored
// with at least half a training window of context, as llama-perplexity scores.
func TestBuiltinModelKnowsGo(t *testing.T) {
	if testing.Short() {
		t.Skip("scores 16 windows of 256 tokens with the 7 M-parameter model")
	}
	file := filepath.Join(t.TempDir(), "heldout.go.txt")
	if err := os.WriteFile(file, heldOutGo(t, 64<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	model := filepath.Join("../../../../weights", weights.DefaultName)
	stdout, stderr, code := runCmd(t, "", "-m", model, "-f", file, "-c", "256", "--chunks", "16")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	m := bpbRE.FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no bits per byte in %q", stdout)
	}
	bpb, _ := strconv.ParseFloat(m[1], 64)
	t.Logf("%s on %s tokens of held-out Go: %.3f bits per byte", weights.DefaultName, m[2], bpb)
	if bpb > 1.4 {
		t.Errorf("%.3f bits per byte on held-out Go; the shipped decoder scores about 1.18", bpb)
	}
}
