package train

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// -data trains on the text it names, and resumes on it: the second run continues from the
// first's step with the same split. Text too short for -seq is refused naming both sizes.
func TestTrainOnOwnText(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a tiny model for 4 steps")
	}
	text := filepath.Join(t.TempDir(), "text.txt")
	if err := os.WriteFile(text, []byte(strings.Repeat("abcdefghij", 100)), 0o644); err != nil { // 950 + 50 bytes
		t.Fatal(err)
	}
	dir := t.TempDir()
	o := Options{Kind: "decoder", Scheme: "rope", Out: dir, PE: map[string]any{}, Dim: 16, Layers: 1, Heads: 2, KV: 1,
		Hidden: 16, Ctx: 64, Steps: 2, Batch: 2, Seq: 16, LR: 1e-3, Warmup: 1, Seed: 1, EvalEvery: 2, SaveEvery: 2,
		EvalWindows: 2, MaskRate: 0.15, Data: text}
	r, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if r.Steps != 2 {
		t.Errorf("first run ended at step %d, want 2", r.Steps)
	}
	o.Steps, o.Resume = 4, true
	if r, err = Run(context.Background(), o); err != nil || r.Steps != 4 {
		t.Errorf("resumed run: step %d, %v; want step 4", r.Steps, err)
	}
	o.Resume, o.Force, o.Seq = false, true, 64 // 50 held-out bytes hold no window of 65
	if _, err := Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), "952 bytes to train on and 52 held out") {
		t.Errorf("-seq 64 on 50 held-out bytes: %v; want the sizes named", err)
	}
}
