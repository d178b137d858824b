package grid

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/posformer/posformer/benchmarks/recipe"
	"github.com/posformer/posformer/benchmarks/report"
)

// A v3 grid run as cmd/bench runs it, wave by wave: the sweep's models first, then the cells
// waiting on it at the rate with the lowest validation loss, lm's choice for lm and copy's for
// the synthetic tasks; the results relabelled so that the chosen model is the seed-1 row.
func TestSweepWaves(t *testing.T) {
	out := t.TempDir()
	r := recipe.V3
	r.Choose = LRChoice(out, r)
	best := map[string]float64{"rope": 0.002, "none": 0.0005} // the fake's best rate per scheme
	f := newFake()
	train := func(m recipe.Model, resume bool, procs int, progress func(float64)) error {
		if err := f.train(m, resume, procs, progress); err != nil {
			return err
		}
		lr, _ := strconv.ParseFloat(argOf(m.Args, "-lr"), 64)
		loss := 1 + math.Abs(math.Log(lr/best[m.Scheme]))
		js, _ := json.Marshal(map[string]any{"task": m.Task, "scheme": m.Scheme, "seed": m.Seed, "final_eval_loss": loss,
			"command": "go run ./cmd/train " + strings.Join(m.Args, " ")})
		return os.WriteFile(filepath.Join(m.Dir, "train.json"), js, 0o644)
	}
	build := func() []Cell {
		var cells []Cell
		for _, m := range r.Models(filepath.Join(out, "w"), []string{"copy", "reverse"}, []string{"none", "rope"}, 2) {
			cells = append(cells, Cell{Model: m})
		}
		return cells
	}
	runner := &Runner{Out: out, Jobs: 2, Cores: 2, Train: train, Evaluate: f.evaluate}
	cells := build()
	if n := Waiting(cells); n == 0 {
		t.Fatal("nothing waits on the sweep before it ran")
	}
	waves := 0
	for {
		wave := Wave(out, cells, r.First)
		if wave == nil {
			break
		}
		if err := runner.Run(Order(wave, r.First)); err != nil {
			t.Fatal(err)
		}
		waves++
		cells = build()
		if waves > 5 {
			t.Fatal("the waves do not end")
		}
	}
	if n := Waiting(cells); n != 0 {
		t.Fatalf("%d cells still wait after %d waves", n, waves)
	}
	for _, c := range cells {
		if !Done(out, c) {
			t.Errorf("%s not done", c.ID())
		}
		if c.Task == "reverse" || c.Seed > 1 {
			if got, want := argOf(c.Args, "-lr"), strconv.FormatFloat(best[c.Scheme], 'g', -1, 64); got != want {
				t.Errorf("%s trained at -lr %s, want the sweep's %s", c.ID(), got, want)
			}
		}
	}
	// The sweep's models trained before any model that waited on them.
	last := f.doneAt["copy/rope-lr0.002"]
	for _, id := range []string{"copy/rope-lr0.0005", "copy/rope"} {
		if f.doneAt[id].After(last) {
			last = f.doneAt[id]
		}
	}
	if start := f.startAt["reverse/rope"]; start.Before(last) {
		t.Errorf("reverse/rope started at %v, before copy's sweep of rope ended at %v", start, last)
	}
	var rs []report.Result
	for _, c := range cells {
		if c.Task == "copy" {
			more, err := report.ReadCSV(CellPath(out, c))
			if err != nil {
				t.Fatal(err)
			}
			rs = append(rs, more...)
		}
	}
	labels := map[string]string{}
	for _, x := range SweepLabels(r, "copy", rs) {
		labels[x.Model] = x.Variant
	}
	for model, want := range map[string]string{"rope-lr0.002": "", "rope": "lr=0.001", "rope-lr0.0005": "lr=0.0005", "none-lr0.0005": "", "none": "lr=0.001", "rope-seed2": ""} {
		if labels[model] != want {
			t.Errorf("%s labelled %q, want %q", model, labels[model], want)
		}
	}
}

// A rate whose model is not finished chooses nothing; a diverged one (NaN, never written as
// such by JSON, so infinite here) loses.
func TestLRChoicePartial(t *testing.T) {
	out := t.TempDir()
	r := recipe.V3
	choose := LRChoice(out, r)
	ids := r.SweepIDs("lm", "alibi")
	if len(ids) != len(r.LRs) || !slices.Contains(ids, "lm/alibi") {
		t.Fatalf("sweep ids %v", ids)
	}
	for i, id := range ids[:2] {
		task, name, _ := strings.Cut(id, "/")
		c := Cell{Model: recipe.Model{Task: task, Name: name}}
		report.WriteCSV(CellPath(out, c), nil)
		os.MkdirAll(filepath.Dir(CurvePath(out, c)), 0o755)
		os.WriteFile(strings.TrimSuffix(CurvePath(out, c), ".loss.csv")+".train.json", []byte(`{"final_eval_loss": `+[]string{"2.0", "1.5"}[i]+`}`), 0o644)
	}
	if _, ok := choose("lm", "alibi"); ok {
		t.Error("a choice before the third rate finished")
	}
	task, name, _ := strings.Cut(ids[2], "/")
	c := Cell{Model: recipe.Model{Task: task, Name: name}}
	report.WriteCSV(CellPath(out, c), nil)
	os.WriteFile(strings.TrimSuffix(CurvePath(out, c), ".loss.csv")+".train.json", []byte(`{"final_eval_loss": 1.7}`), 0o644)
	if lr, ok := choose("lm", "alibi"); !ok || lr != r.LRs[1] {
		t.Errorf("choice %g (%v), want %g, the lowest validation loss", lr, ok, r.LRs[1])
	}
}

// A rate whose run diverged (train.json's losses null, as cmd/train writes them) loses to the
// others, even with higher losses; null must not read as a loss of 0.
func TestLRChoiceDiverged(t *testing.T) {
	out := t.TempDir()
	r := recipe.V3
	ids := r.SweepIDs("copy", "shaw")
	for i, id := range ids {
		task, name, _ := strings.Cut(id, "/")
		c := Cell{Model: recipe.Model{Task: task, Name: name}}
		report.WriteCSV(CellPath(out, c), nil)
		os.MkdirAll(filepath.Dir(CurvePath(out, c)), 0o755)
		js := []string{`{"final_eval_loss": 2.0}`, `{"final_eval_loss": null, "diverged_at": 300}`, `{"final_eval_loss": 1.9}`}[i]
		os.WriteFile(strings.TrimSuffix(CurvePath(out, c), ".loss.csv")+".train.json", []byte(js), 0o644)
	}
	if lr, ok := LRChoice(out, r)("copy", "shaw"); !ok || lr != r.LRs[2] {
		t.Errorf("choice %g (%v), want %g: the diverged %g must lose", lr, ok, r.LRs[2], r.LRs[1])
	}
}

func argOf(args []string, flag string) string {
	if i := slices.Index(args, flag); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}
