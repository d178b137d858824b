package report

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The training section counts how each label's seeds stopped, averages their final held-out
// loss, names the models that reached the cap and the trained models whose curves were not
// kept (never the baselines); the plot has seed 1 only.
func TestTrainingSection(t *testing.T) {
	out := t.TempDir()
	dir := filepath.Join(out, "results", "curves", "copy")
	os.MkdirAll(dir, 0o755)
	write := func(name, scheme string, seed int, stop string, loss float64) {
		info := map[string]any{"task": "copy", "scheme": scheme, "seed": seed, "stop": stop, "steps": 1100,
			"final_eval_loss": loss, "wall_seconds": 600}
		if strings.HasSuffix(name, "-pi4") {
			info["init"] = "rope"
			info["positional"] = map[string]any{"name": "rope", "rope_scaling": map[string]any{"rope_type": "linear", "factor": 4.0}}
		}
		js, _ := json.Marshal(info)
		os.WriteFile(filepath.Join(dir, name+".train.json"), js, 0o644)
		os.WriteFile(filepath.Join(dir, name+".loss.csv"), []byte("step,train_loss,eval_loss,lr,seconds\n100,3,2.5,0.001,60\n200,1,0.5,0.001,120\n"), 0o644)
	}
	write("rope", "rope", 1, "plateau at step 900, cool-down to 1100", 0.1)
	write("rope-seed2", "rope", 2, "step cap 3000", 0.2)
	write("alibi", "alibi", 1, "plateau at step 600, cool-down to 700", 0.05)
	write("rope-pi4", "rope", 1, "-steps 1000", 0.3) // a fine-tune: neither plateau nor cap
	// Evaluation times kept for the two rope seeds (90 s, and 150 s of CPU time in 400 of wall
	// time: the CPU time counts), not for the others.
	os.WriteFile(filepath.Join(dir, "rope.eval.json"), []byte(`{"eval_seconds": 90, "threads": 1}`), 0o644)
	os.WriteFile(filepath.Join(dir, "rope-seed2.eval.json"), []byte(`{"eval_seconds": 400, "threads": 1, "thread_cpu_seconds": 150}`), 0o644)
	cs, err := ReadCurves(out, "copy")
	if err != nil || len(cs) != 4 {
		t.Fatalf("read %d curves (%v), want 4", len(cs), err)
	}
	if cs[0].Label != "rope" || cs[2].Label != "rope + PI s=4 ft" || cs[3].Label != "alibi" || len(cs[0].Steps) != 2 || cs[0].Eval[1] != 0.5 {
		t.Fatalf("curves out of order or misread: %+v", cs)
	}
	nan := math.NaN()
	rs := []Result{
		{Task: "copy", Model: "rope", Scheme: "rope", Seed: 1, Depth: nan, Metric: "exact_match"},
		{Task: "copy", Model: "rope-seed2", Scheme: "rope", Seed: 2, Depth: nan, Metric: "exact_match"},
		{Task: "copy", Model: "none", Scheme: "none", Seed: 1, Depth: nan, Metric: "exact_match"},
		{Task: "copy", Model: "none", Scheme: "none", Seed: 1, Depth: nan, Metric: "token_accuracy"},
		{Task: "copy", Model: "chance", Scheme: "chance", Seed: 1, Depth: nan, Metric: "exact_match"},
	}
	s := TrainingSection("copy", cs, rs, "copy-curves.png")
	// rope: losses 0.1 and 0.2, mean 0.15, half width t(0.975, 1)·sd/√2 = 12.706·0.0707/1.414 = 0.635.
	if cs[0].EvalSeconds != 90 || !math.IsNaN(cs[3].EvalSeconds) {
		t.Errorf("evaluation times %v and %v, want 90 and NaN", cs[0].EvalSeconds, cs[3].EvalSeconds)
	}
	for _, want := range []string{"| `rope` | 2 | 1 of 2 | 1100, 1100 | 0.150 ± 0.635 | 10 | 2.0 |", "| `alibi` | 1 | 1 of 1 |",
		"| 10 | — |", "Evaluation (every length", "2 models, 4 min, 2.0 min a model",
		"`rope` seed 2 (0.200)", "not kept", "4 models, 0.7 h of training on one core", "`none` seed 1.", "results/copy-curves.png"} {
		if !strings.Contains(s, want) {
			t.Errorf("section lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "(0.300)") {
		t.Errorf("a fine-tune listed as stopped at the cap:\n%s", s)
	}
	if strings.Contains(s, "chance") || strings.Count(s, "`none` seed 1") != 1 {
		t.Errorf("baseline listed or a model listed twice:\n%s", s)
	}
	png, err := PlotCurves("copy", cs)
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Errorf("plot: %d bytes, %v", len(png), err)
	}
}

// A task whose results are baselines only has no training subsection.
func TestTrainingSectionEmptyForBaselines(t *testing.T) {
	rs := []Result{{Task: "lm", Model: "unigram", Scheme: "unigram", Seed: 1, Depth: math.NaN(), Metric: "bits_per_byte"}}
	if s := TrainingSection("lm", nil, rs, ""); s != "" {
		t.Errorf("baselines only: got\n%s", s)
	}
}
