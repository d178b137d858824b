package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/posformer/posformer/benchmarks/report"
	"github.com/posformer/posformer/engine/train/corpus"
)

// A --quick run's results say which test text scored them, as the grid's do, so that the report
// can refuse to mix two Go installations' results.
func TestQuickResultsNameTheirText(t *testing.T) {
	weights := filepath.Join("..", "..", "..", "..", "weights", "bench")
	if _, err := os.Stat(filepath.Join(weights, "lm", "none")); err != nil {
		t.Skipf("no shipped lm checkpoint: %v", err)
	}
	if _, err := corpus.GoRoot(); err != nil {
		t.Skipf("no Go source tree: %v", err)
	}
	out := t.TempDir()
	if code := Main([]string{"--quick", "-task", "lm", "-scheme", "none", "--weights", weights, "-o", out}); code != 0 {
		t.Fatalf("bench --quick: exit %d", code)
	}
	rs, err := report.ReadCSV(filepath.Join(out, "results", "quick", "lm.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) == 0 {
		t.Fatal("no results")
	}
	for _, r := range rs {
		if !strings.HasPrefix(r.Text, "go1.") || !strings.Contains(r.Text, ":") {
			t.Errorf("%s %s at %d: text %q, want the Go version and the test text's hash", r.Model, r.Metric, r.Length, r.Text)
		}
	}
}
