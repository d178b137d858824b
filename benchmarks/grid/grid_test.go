package grid

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/posformer/posformer/benchmarks/recipe"
	"github.com/posformer/posformer/benchmarks/report"
	"github.com/posformer/posformer/engine/train"
	"github.com/posformer/posformer/models"
	"github.com/posformer/posformer/models/safetensors"
)

// fake records what the runner asked for and writes what cmd/train would leave behind.
type fake struct {
	mu        sync.Mutex
	trained   []string
	resumed   []string
	evaluated []string
	failOn    string
	active    int
	maxActive int
	doneAt    map[string]time.Time
	startAt   map[string]time.Time
}

func (f *fake) train(m recipe.Model, resume bool, procs int, progress func(float64)) error {
	f.mu.Lock()
	f.trained = append(f.trained, m.ID())
	if resume {
		f.resumed = append(f.resumed, m.ID())
	}
	f.startAt[m.ID()] = time.Now()
	f.active++
	f.maxActive = max(f.maxActive, f.active)
	fail := m.ID() == f.failOn
	f.mu.Unlock()
	time.Sleep(20 * time.Millisecond)
	progress(0.5)
	f.mu.Lock()
	f.active--
	f.doneAt[m.ID()] = time.Now()
	f.mu.Unlock()
	if fail {
		return errors.New("boom")
	}
	os.MkdirAll(m.Dir, 0o755)
	os.WriteFile(filepath.Join(m.Dir, "loss.csv"), []byte("step,train_loss\n100,"+m.Name+"\n"), 0o644)
	os.WriteFile(filepath.Join(m.Dir, models.ConfigFile), []byte("{}"), 0o644)
	safetensors.Write(filepath.Join(m.Dir, models.WeightsFile), []safetensors.Tensor{{Name: "w", Shape: []int{1}, Data: []float32{float32(m.Seed)}}}, nil)
	js, _ := json.Marshal(map[string]any{"task": m.Task, "scheme": m.Scheme, "seed": m.Seed, "command": "go run ./cmd/train " + strings.Join(m.Args, " ")})
	return os.WriteFile(filepath.Join(m.Dir, "train.json"), js, 0o644)
}

func (f *fake) evaluate(m recipe.Model, threads int, progress func(float64)) ([]report.Result, error) {
	f.mu.Lock()
	f.evaluated = append(f.evaluated, m.ID())
	f.mu.Unlock()
	progress(1)
	return []report.Result{{Task: m.Task, Model: m.Name, Scheme: m.Scheme, Seed: m.Seed, TrainLen: 64, Length: 64, Depth: math.NaN(), Metric: "exact_match", Value: float64(m.Seed)}}, nil
}

func newFake() *fake { return &fake{doneAt: map[string]time.Time{}, startAt: map[string]time.Time{}} }

func grid(weights string) []Cell {
	var cells []Cell
	for _, m := range recipe.V2.Models(weights, []string{"lm"}, []string{"rope", "alibi"}, 2) {
		cells = append(cells, Cell{Model: m})
	}
	return append(cells, BaselineCell("lm"))
}

// Every cell is trained and evaluated once, two at a time; a fine-tune starts only after its
// base is done; the progress ends at the total; each cell's results are in a file of its own.
func TestRunTrainsEvaluatesAndRespectsNeeds(t *testing.T) {
	dir := t.TempDir()
	cells := grid(filepath.Join(dir, "weights"))
	f := newFake()
	var last, total float64
	r := &Runner{Out: dir, Jobs: 2, Cores: 2, Train: f.train, Evaluate: f.evaluate,
		Baselines: func(task string) ([]report.Result, error) {
			return []report.Result{{Task: task, Model: "unigram", Scheme: "unigram", Depth: math.NaN(), Metric: "bits_per_byte", Value: 5}}, nil
		},
		Progress: func(done, tot float64, _ string) { last, total = done, tot }}
	if err := r.Run(cells); err != nil {
		t.Fatal(err)
	}
	// rope, alibi × 2 seeds, plus the PI fine-tune of each rope seed.
	if len(f.trained) != 6 || len(f.evaluated) != 6 || f.maxActive != 2 {
		t.Fatalf("trained %v, evaluated %v, at most %d at once; want 6, 6, 2", f.trained, f.evaluated, f.maxActive)
	}
	for _, c := range cells {
		if c.Init != "" && !f.startAt[c.ID()].After(f.doneAt["lm/"+c.Init]) {
			t.Errorf("%s started before its base %s finished", c.ID(), c.Init)
		}
		if !Done(dir, c) {
			t.Errorf("%s has no results file", c.ID())
		}
		// A model's evaluation time is kept beside its curve, with the threads it had.
		var et report.EvalTime
		data, err := os.ReadFile(EvalTimePath(dir, c))
		if !c.Baseline && (err != nil || json.Unmarshal(data, &et) != nil || et.Seconds < 0 || et.Threads < 1) {
			t.Errorf("%s's evaluation time: %s (%v)", c.ID(), data, err)
		}
	}
	if math.Abs(last-total) > 1e-6 || total <= 0 {
		t.Errorf("progress ended at %v of %v", last, total)
	}
	if err := Assemble(dir, "lm", cells); err != nil {
		t.Fatal(err)
	}
	rs, err := report.ReadCSV(report.CSVPath(dir, "lm"))
	if err != nil || len(rs) != 7 {
		t.Fatalf("assembled %d results (err %v), want 7", len(rs), err)
	}
	leftovers, _ := filepath.Glob(filepath.Join(dir, "results", "cells", "lm", ".*"))
	if len(leftovers) > 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}
}

// A failure names the cell and how to continue; a rerun runs only what is not finished, resumes an interrupted training, and keeps a finished checkpoint of the same
// command without retraining it.
func TestRerunSkipsFinishedCells(t *testing.T) {
	dir := t.TempDir()
	cells := grid(filepath.Join(dir, "weights"))[:2] // rope seed 1 and its PI fine-tune
	r, err := runFailingFineTune(dir, cells)
	if err == nil || !strings.Contains(err.Error(), cells[1].ID()) || !strings.Contains(err.Error(), "rerun the same command") {
		t.Fatalf("failure: %v", err)
	}
	// The fine-tune was interrupted with its optimizer state on disk.
	os.MkdirAll(cells[1].Dir, 0o755)
	os.WriteFile(filepath.Join(cells[1].Dir, train.StateFile), []byte("x"), 0o644)
	// And the first cell's results are lost, but its checkpoint is finished.
	os.Remove(CellPath(dir, cells[0]))
	g := newFake()
	r.Train, r.Evaluate = g.train, g.evaluate
	if err := r.Run(cells); err != nil {
		t.Fatal(err)
	}
	if len(g.trained) != 1 || g.trained[0] != cells[1].ID() || len(g.resumed) != 1 || len(g.evaluated) != 2 {
		t.Errorf("rerun trained %v (resumed %v), evaluated %v; want only the fine-tune trained, resumed, and both evaluated", g.trained, g.resumed, g.evaluated)
	}
	h := newFake()
	r.Train, r.Evaluate = h.train, h.evaluate
	if err := r.Run(cells); err != nil || len(h.trained)+len(h.evaluated) != 0 {
		t.Errorf("third run did work: %v %v (%v)", h.trained, h.evaluated, err)
	}
}

// A cell whose base is neither finished nor in the grid is an error, not a hang.
func TestMissingBaseIsAnError(t *testing.T) {
	dir := t.TempDir()
	cells := grid(filepath.Join(dir, "weights"))[1:2] // the PI fine-tune alone
	f := newFake()
	err := (&Runner{Out: dir, Jobs: 2, Cores: 2, Train: f.train, Evaluate: f.evaluate}).Run(cells)
	if err == nil || !strings.Contains(err.Error(), "neither finished nor in the grid") {
		t.Errorf("got %v", err)
	}
}

// The results and curves live in the repository and the checkpoints outside it, so a new
// machine has the one without the other: each trained cell's loss curve and train.json are kept
// beside its results, and a base whose checkpoint is gone is trained again only while a cell
// that starts from it is still to run.
func TestCurvesKeptAndLostBaseRetrained(t *testing.T) {
	dir := t.TempDir()
	cells := grid(filepath.Join(dir, "weights"))[:2] // rope seed 1 and its PI fine-tune
	r, err := runFailingFineTune(dir, cells)
	if err == nil {
		t.Fatal("the fine-tune was meant to fail")
	}
	curve, err := os.ReadFile(CurvePath(dir, cells[0]))
	if err != nil || !strings.Contains(string(curve), "100,"+cells[0].Name) {
		t.Fatalf("curve %q (%v), want the model's loss.csv", curve, err)
	}
	if _, err := os.Stat(strings.TrimSuffix(CurvePath(dir, cells[0]), ".loss.csv") + ".train.json"); err != nil {
		t.Errorf("train.json not kept: %v", err)
	}
	os.RemoveAll(filepath.Join(dir, "weights")) // a new machine: results, no checkpoints
	if got := Finished(dir, cells); got[cells[0].ID()] {
		t.Errorf("the base counts as finished with its checkpoint gone and its fine-tune to run")
	}
	g := newFake()
	r.Train, r.Evaluate = g.train, g.evaluate
	if err := r.Run(cells); err != nil {
		t.Fatal(err)
	}
	if len(g.trained) != 2 || g.trained[0] != cells[0].ID() {
		t.Fatalf("trained %v, want the base again, then its fine-tune", g.trained)
	}
	os.RemoveAll(filepath.Join(dir, "weights"))
	if got := Finished(dir, cells); !got[cells[0].ID()] || !got[cells[1].ID()] {
		t.Errorf("with every cell done, lost checkpoints need nothing run: %v", got)
	}
}

// A shipped cell is copied to its Ship folder when it finishes; with the copy gone (or of
// another command) it is not finished: its checkpoint, still there, is evaluated and shipped
// again without retraining.
func TestShippedCells(t *testing.T) {
	dir := t.TempDir()
	cells := grid(filepath.Join(dir, "weights"))[:1]
	cells[0].Ship = filepath.Join(dir, "bench", cells[0].Task, cells[0].Name)
	f := newFake()
	r := &Runner{Out: dir, Jobs: 1, Cores: 2, Train: f.train, Evaluate: f.evaluate}
	if err := r.Run(cells); err != nil {
		t.Fatal(err)
	}
	if !recipe.Shipped(cells[0].Ship, cells[0].Args) || !Finished(dir, cells)[cells[0].ID()] {
		t.Fatal("the cell was not shipped")
	}
	if m := recipe.ReadManifest(filepath.Join(dir, "bench")); len(m) != 1 || m[0].Dir != cells[0].Task+"/"+cells[0].Name {
		t.Errorf("the shipped folder's manifest: %+v", m)
	}
	os.RemoveAll(cells[0].Ship)
	if Finished(dir, cells)[cells[0].ID()] {
		t.Fatal("a shipped cell without its shipped copy counts as finished")
	}
	g := newFake()
	r.Train, r.Evaluate = g.train, g.evaluate
	if err := r.Run(cells); err != nil {
		t.Fatal(err)
	}
	if len(g.trained) != 0 || len(g.evaluated) != 1 || !recipe.Shipped(cells[0].Ship, cells[0].Args) {
		t.Errorf("trained %v, evaluated %v; want the kept checkpoint evaluated and shipped again", g.trained, g.evaluated)
	}
}

// runFailingFineTune runs cells (a base and its PI fine-tune, cells[1]) one at a time with the
// fine-tune's training failing: the base is done, the fine-tune is not.
func runFailingFineTune(dir string, cells []Cell) (*Runner, error) {
	f := newFake()
	f.failOn = cells[1].ID()
	r := &Runner{Out: dir, Jobs: 1, Cores: 2, Train: f.train, Evaluate: f.evaluate}
	return r, r.Run(cells)
}

func TestLastStep(t *testing.T) {
	dir := t.TempDir()
	if LastStep(dir) != 0 {
		t.Error("no loss.csv: want 0")
	}
	os.WriteFile(filepath.Join(dir, "loss.csv"), []byte("step,train_loss,eval_loss,lr,seconds\n200,1,1,0.001,3\n400,1,1,0.001,6\n"), 0o644)
	if got := LastStep(dir); got != 400 {
		t.Errorf("LastStep %d, want 400", got)
	}
}

// With a deadline, a cell whose estimate would end it later does not start, nor does a
// fine-tune whose base did not; cells that fit still run, and a later run does the rest.
func TestDeadlineLeavesCellsForTheNextRun(t *testing.T) {
	dir := t.TempDir()
	cells := grid(filepath.Join(dir, "weights")) // rope seed 1, its PI fine-tune, alibi seed 1, ... baseline
	start := time.Date(2026, 11, 26, 16, 0, 0, 0, time.UTC)
	f := newFake()
	r := &Runner{Out: dir, Jobs: 1, Cores: 2, Train: f.train, Evaluate: f.evaluate,
		Baselines: func(task string) ([]report.Result, error) {
			return []report.Result{{Task: task, Model: "unigram", Scheme: "unigram", Depth: math.NaN(), Metric: "bits_per_byte", Value: 5}}, nil
		},
		now: func() time.Time { return start }}
	// Room for the baseline (seconds) but not for an lm model (minutes at its cap).
	r.Deadline = start.Add(time.Duration(BaselineCell("lm").Seconds()+1) * time.Second)
	if err := r.Run(cells); err != nil {
		t.Fatal(err)
	}
	if len(f.trained) != 0 || r.Skipped != len(cells)-1 || !Done(dir, cells[len(cells)-1]) {
		t.Fatalf("trained %v, skipped %d of %d; want only the baseline run", f.trained, r.Skipped, len(cells))
	}
	r.Deadline = time.Time{}
	if err := r.Run(cells); err != nil || r.Skipped != 0 || len(f.trained) != len(cells)-1 {
		t.Errorf("the next run trained %v, skipped %d (%v)", f.trained, r.Skipped, err)
	}
}

// A shipped base whose checkpoint is gone is put back from its shipped copy for the fine-tune
// that starts from it, not trained again.
func TestShippedBaseRestoredForItsFineTune(t *testing.T) {
	dir := t.TempDir()
	cells := grid(filepath.Join(dir, "weights"))[:2] // rope seed 1 and its PI fine-tune
	for i := range cells {
		cells[i].Ship = filepath.Join(dir, "bench", cells[i].Task, cells[i].Name)
	}
	r, err := runFailingFineTune(dir, cells)
	if err == nil {
		t.Fatal("the fine-tune was meant to fail")
	}
	os.RemoveAll(filepath.Join(dir, "weights")) // a new machine
	g := newFake()
	r.Train, r.Evaluate = g.train, g.evaluate
	if err := r.Run(cells); err != nil {
		t.Fatal(err)
	}
	if len(g.trained) != 1 || g.trained[0] != cells[1].ID() {
		t.Errorf("trained %v, want the fine-tune only (its base restored from %s)", g.trained, cells[0].Ship)
	}
	if _, err := recipe.ReadTrainInfo(cells[0].Dir); err != nil {
		t.Errorf("the base was not restored: %v", err)
	}
}

// A shipped cell whose results were removed (to score a new evaluation row) on a machine that
// lost the grid's checkpoint is evaluated from its shipped copy, not trained again.
func TestShippedCellReevaluatedFromItsCopy(t *testing.T) {
	dir := t.TempDir()
	cells := grid(filepath.Join(dir, "weights"))[:1]
	cells[0].Ship = filepath.Join(dir, "bench", cells[0].Task, cells[0].Name)
	r := &Runner{Out: dir, Jobs: 1, Cores: 2, Train: newFake().train, Evaluate: newFake().evaluate}
	if err := r.Run(cells); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(filepath.Join(dir, "weights"))
	os.Remove(CellPath(dir, cells[0]))
	g := newFake()
	r.Train, r.Evaluate = g.train, g.evaluate
	if err := r.Run(cells); err != nil {
		t.Fatal(err)
	}
	if len(g.trained) != 0 || len(g.evaluated) != 1 || !Done(dir, cells[0]) {
		t.Errorf("trained %v, evaluated %v; want the shipped copy evaluated", g.trained, g.evaluated)
	}
}

// Order runs the baselines first, resumes begun cells, then runs every seed of the compared
// schemes, then the rest in the recipe's order (seed by seed; a fine-tune after its base).
func TestOrder(t *testing.T) {
	weights := t.TempDir()
	var cells []Cell
	for _, m := range recipe.V2.Models(weights, []string{"copy", "lm"}, []string{"none", "rope", "alibi"}, 2) {
		cells = append(cells, Cell{Model: m})
	}
	begun := filepath.Join(weights, "lm", "alibi")
	if err := os.MkdirAll(begun, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(begun, "loss.csv"), []byte("step,train_loss,eval_loss,lr,seconds\n200,2.1,2.3,0.001,70.5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cells = append(cells, BaselineCell("copy"), BaselineCell("lm"))
	var got []string
	for _, c := range Order(cells, map[string][]string{"lm": {"rope"}, "copy": {"none"}}) {
		got = append(got, c.ID())
	}
	want := []string{
		"copy/_baselines", "lm/_baselines",
		"lm/alibi",
		"copy/none", "lm/rope", "lm/rope-pi4", "copy/none-seed2", "lm/rope-seed2", "lm/rope-pi4-seed2",
		"copy/rope", "copy/rope-randpos", "copy/alibi", "lm/none",
		"copy/rope-seed2", "copy/rope-randpos-seed2", "copy/alibi-seed2", "lm/none-seed2", "lm/alibi-seed2",
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("order:\n got %v\nwant %v", got, want)
	}
}

// -plan counts the cells of each of Order's groups that are still to run.
func TestPlanTiers(t *testing.T) {
	out := t.TempDir()
	cells := grid(filepath.Join(out, "w")) // lm rope (+ PI), alibi, two seeds; the baselines
	var b strings.Builder
	Plan(&b, out, cells, 2, 2, map[string][]string{"lm": {"rope"}})
	if want := "in this order on 2 cores: baselines, 1 cell (0 h 00 min); then compared schemes, 4 cells"; !strings.Contains(b.String(), want) ||
		!strings.Contains(b.String(), "then the rest, 2 cells") || strings.Contains(b.String(), "at the pace") {
		t.Errorf("plan:\n%s\nwant %q, the rest's 2 cells, and no pace before a model is finished", b.String(), want)
	}

	// lm/alibi finished in a quarter of its estimated training time: the other cells are expected
	// to take a quarter of theirs too (plus their evaluation).
	alibi := cells[slices.IndexFunc(cells, func(c Cell) bool { return c.ID() == "lm/alibi" })]
	for path, data := range map[string]string{
		CellPath(out, alibi): "task,model\n",
		filepath.Join(out, "results", "curves", "lm", alibi.Name+".train.json"): fmt.Sprintf(`{"wall_seconds": %g}`, alibi.TrainSeconds/4),
	} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var want float64
	for _, c := range cells {
		if c.ID() != alibi.ID() {
			want += c.TrainSeconds/4 + c.EvalSeconds
		}
	}
	b.Reset()
	Plan(&b, out, cells, 2, 2, nil)
	if line := fmt.Sprintf("at the pace of the 1 finished models with kept curves (their training took 25%% of its estimate), about %s on 2 cores", recipe.Hours(want/2)); !strings.Contains(b.String(), line) {
		t.Errorf("plan:\n%s\nwant %q", b.String(), line)
	}
}

// A failed cell does not stop the grid: the cells that do not start from it still run, the one
// that does is not started, and the error names both and how to continue.
func TestFailureDoesNotStopTheGrid(t *testing.T) {
	dir := t.TempDir()
	cells := grid(filepath.Join(dir, "weights"))[:3] // rope seed 1, its PI fine-tune, alibi seed 1
	f := newFake()
	f.failOn = cells[0].ID()
	r := &Runner{Out: dir, Jobs: 1, Cores: 2, Train: f.train, Evaluate: f.evaluate}
	err := r.Run(cells)
	if err == nil || !strings.Contains(err.Error(), "2 of 3 cells failed") || !strings.Contains(err.Error(), cells[0].ID()+": boom") ||
		!strings.Contains(err.Error(), cells[1].ID()+": not started") || !strings.Contains(err.Error(), "rerun the same command") {
		t.Fatalf("error %v, want the failed base and its fine-tune named", err)
	}
	if strings.Join(f.trained, " ") != cells[0].ID()+" "+cells[2].ID() || !Done(dir, cells[2]) || Done(dir, cells[1]) {
		t.Errorf("trained %v; want the base (failed) and %s (done), not the fine-tune", f.trained, cells[2].ID())
	}
}

// finishAtPace writes a finished cell's results and its train.json, whose training took ratio
// of its estimate, in passes of micro sequences of 32 (0: one pass).
func finishAtPace(t *testing.T, out string, c Cell, ratio float64, micro int) {
	t.Helper()
	for path, data := range map[string]string{
		CellPath(out, c): "task,model\n",
		filepath.Join(out, "results", "curves", c.Task, c.Name+".train.json"): fmt.Sprintf(`{"wall_seconds": %g, "batch": 32, "micro_batch": %d}`, c.TrainSeconds*ratio, micro),
	} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// A task's own pace counts once three of its models are finished: before, the overall pace
// stands in for it (mlm's first model, NoPE, stopped at a fifth of its cap and would have set
// the pace of the 39 others).
func TestPaceNeedsThreeModels(t *testing.T) {
	out := t.TempDir()
	var cells []Cell
	for _, m := range recipe.V2.Models(filepath.Join(out, "w"), []string{"copy", "lm"}, []string{"rope", "alibi"}, 2) {
		cells = append(cells, Cell{Model: m})
	}
	finish := func(c Cell, ratio float64) { finishAtPace(t, out, c, ratio, 0) }
	finished := map[string]bool{}
	var copies, lms []Cell
	for _, c := range cells {
		if c.Task == "copy" {
			copies = append(copies, c)
		} else {
			lms = append(lms, c)
		}
	}
	// Three copy models at half their estimate; one lm model at a tenth of its.
	for _, c := range copies[:3] {
		finish(c, 0.5)
		finished[c.ID()] = true
	}
	finish(lms[0], 0.1)
	finished[lms[0].ID()] = true
	var sumA, sumE float64
	for _, c := range append(slices.Clone(copies[:3]), lms[0]) {
		r := 0.5
		if c.Task == "lm" {
			r = 0.1
		}
		sumA, sumE = sumA+c.TrainSeconds*r, sumE+c.TrainSeconds
	}
	var want float64
	for _, c := range cells {
		switch {
		case finished[c.ID()]:
		case c.Task == "copy":
			want += c.TrainSeconds*0.5 + c.EvalSeconds
		default:
			want += c.TrainSeconds*sumA/sumE + c.EvalSeconds
		}
	}
	got, n, _, _ := atPace(out, cells, finished)
	if n != 4 || math.Abs(got-want) > 1e-6*want {
		t.Errorf("atPace: %g s from %d models, want %g s from 4 (lm at the overall pace %.3f, not its one model's 0.1)", got, n, want, sumA/sumE)
	}
}

// Once three of a task's models trained in passes, the cells left go at their pace, not at that
// of all its models (most trained in one pass, slower a step); with two, at all its models'.
func TestPaceOfPasses(t *testing.T) {
	for _, inPasses := range []int{3, 2} {
		out := t.TempDir()
		cells := map[string]Cell{}
		var all []Cell
		for _, m := range recipe.V2.Models(filepath.Join(out, "w"), []string{"lm"}, []string{"rope", "alibi"}, 3) {
			c := Cell{Model: m}
			cells[c.ID()] = c
			all = append(all, c)
		}
		finished := map[string]bool{}
		var sumA, sumE float64
		finish := func(id string, ratio float64, micro int) {
			c, ok := cells[id]
			if !ok {
				t.Fatalf("no cell %s", id)
			}
			finishAtPace(t, out, c, ratio, micro)
			finished[id] = true
			sumA, sumE = sumA+c.TrainSeconds*ratio, sumE+c.TrainSeconds
		}
		for _, id := range []string{"lm/rope", "lm/alibi", "lm/rope-seed2"} {
			finish(id, 0.5, 0)
		}
		for _, id := range []string{"lm/alibi-seed2", "lm/rope-pi4", "lm/alibi-seed3"}[:inPasses] {
			finish(id, 0.3, 4)
		}
		finish("lm/rope-pi4-seed2", 0.4, 32) // a batch in one pass of all its sequences is not in passes
		r := 0.3
		if inPasses < minPaceModels {
			r = sumA / sumE
		}
		var want float64
		for _, c := range all {
			if !finished[c.ID()] {
				want += c.TrainSeconds*r + c.EvalSeconds
			}
		}
		got, n, passes, _ := atPace(out, all, finished)
		if n != 4+inPasses || passes != inPasses || math.Abs(got-want) > 1e-6*want {
			t.Errorf("%d in passes: atPace %g s from %d models (%d in passes), want %g s at ratio %.3f from %d (%d)",
				inPasses, got, n, passes, want, r, 4+inPasses, inPasses)
		}
	}
}

// TrainWith trains a recipe's model in this process: the arguments read as cmd/train reads
// them, on the given cores, the log beside the others, the progress up to the whole cap; an
// interrupted run resumes from its checkpoint to the same end.
func TestTrainWithInProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a tiny model")
	}
	dir := t.TempDir()
	m := recipe.Model{Task: "copy", Scheme: "rope", Name: "rope", Dir: filepath.Join(dir, "w", "copy", "rope"), Steps: 4}
	m.Args = []string{"-task", "copy", "-scheme", "rope", "-dim", "16", "-layers", "1", "-heads", "2", "-kv-heads", "1", "-hidden", "16",
		"-seq", "16", "-batch", "2", "-warmup", "1", "-eval-every", "2", "-save-every", "2", "-eval-windows", "2", "-steps", "2", "-o", m.Dir}
	parse := func(args []string) (train.Options, error) { return train.ParseArgs(args, nil) }
	logs := filepath.Join(dir, "logs")
	var fracs []float64
	run := TrainWith(context.Background(), parse, logs, nil)
	if err := run(m, false, 1, func(f float64) { fracs = append(fracs, f) }); err != nil {
		t.Fatal(err)
	}
	// Two more steps, resumed: the progress counts the two before.
	m.Args[len(m.Args)-3] = "4"
	fracs = nil
	if err := run(m, true, 1, func(f float64) { fracs = append(fracs, f) }); err != nil {
		t.Fatal(err)
	}
	if want := []float64{0.75, 1, 1}; !slices.Equal(fracs, want) {
		t.Errorf("resumed progress %v, want %v", fracs, want)
	}
	ti, err := recipe.ReadTrainInfo(m.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if ti.Steps != 4 || ti.GOMAXPROCS != 1 || !recipe.SameCommand(ti.Command, m.Args) {
		t.Errorf("train.json: steps %d, gomaxprocs %d, command %q", ti.Steps, ti.GOMAXPROCS, ti.Command)
	}
	log, err := os.ReadFile(filepath.Join(logs, "copy-rope.log"))
	if err != nil || !strings.Contains(string(log), "train: done in") || !strings.Contains(string(log), "1 threads") {
		t.Errorf("log: %v\n%s", err, log)
	}
	m.Args = append(m.Args, "-bogus")
	if err := run(m, false, 1, func(float64) {}); err == nil || !strings.Contains(err.Error(), "-bogus") {
		t.Errorf("bad arguments: %v", err)
	}
}

// A training that panics fails its cell with an error (its stack in the log) instead of
// taking the grid's process, and the other cells, with it.
func TestTrainWithPanicIsAnError(t *testing.T) {
	dir := t.TempDir()
	m := recipe.Model{Task: "copy", Scheme: "rope", Name: "rope", Dir: filepath.Join(dir, "w")}
	parse := func([]string) (train.Options, error) {
		o := train.Defaults()
		o.Out = m.Dir
		o.Rope = func(map[string]any) error { panic("boom") }
		return o, nil
	}
	err := TrainWith(context.Background(), parse, dir, nil)(m, false, 1, func(float64) {})
	if err == nil || !strings.Contains(err.Error(), "panic: boom") || strings.Contains(err.Error(), "\n") {
		t.Errorf("error %v, want one line naming the panic", err)
	}
	if log, _ := os.ReadFile(filepath.Join(dir, "copy-rope.log")); !strings.Contains(string(log), "goroutine") {
		t.Errorf("log has no stack:\n%s", log)
	}
}

// A cell resumed halfway through its training counts only what is left, in the total and as
// done: the wave's rate and ETA are of this run's work.
func TestRunCountsOnlyTheWorkLeftOfAResumedCell(t *testing.T) {
	dir := t.TempDir()
	var c Cell
	for _, d := range grid(filepath.Join(dir, "weights")) {
		if !d.Baseline && d.Init == "" {
			c = d
			break
		}
	}
	os.MkdirAll(c.Dir, 0o755)
	os.WriteFile(filepath.Join(c.Dir, "loss.csv"), []byte(fmt.Sprintf("step,train_loss\n%d,1.5\n", c.Steps/2)), 0o644)
	f := newFake()
	var dones, totals []float64
	r := &Runner{Out: dir, Jobs: 1, Cores: 1, Evaluate: f.evaluate,
		Train: func(m recipe.Model, resume bool, procs int, progress func(float64)) error {
			progress(0.5) // where the checkpoint left it
			progress(0.75)
			return f.train(m, resume, procs, func(float64) { progress(1) })
		},
		Progress: func(done, tot float64, _ string) { dones, totals = append(dones, done), append(totals, tot) }}
	if err := r.Run([]Cell{c}); err != nil {
		t.Fatal(err)
	}
	wantTotal := c.Seconds() - c.TrainSeconds/2
	for i := range dones {
		if math.Abs(totals[i]-wantTotal) > 1e-6 || dones[i] < -1e-9 || dones[i] > totals[i]+1e-6 {
			t.Fatalf("report %d: %g done of %g, want of %g (the half trained before not counted)", i, dones[i], totals[i], wantTotal)
		}
	}
	if got := dones[1:3]; math.Abs(got[0]) > 1e-6 || math.Abs(got[1]-c.TrainSeconds/4) > 1e-6 {
		t.Errorf("at the checkpoint and a quarter later: %v done, want [0 %g]", got, c.TrainSeconds/4)
	}
	if last := dones[len(dones)-1]; math.Abs(last-wantTotal) > 1e-6 {
		t.Errorf("progress ended at %g of %g", last, wantTotal)
	}
}

// The pace counts a model's training thread's CPU time where train.json records it on one
// thread, not its wall time, which also counts the time the grid was stopped: here each finished
// model waited five times its estimate and computed for half of it.
func TestPaceCountsThreadCPUTime(t *testing.T) {
	out := t.TempDir()
	var cells []Cell
	for _, m := range recipe.V2.Models(filepath.Join(out, "w"), []string{"copy"}, []string{"rope", "alibi"}, 2) {
		cells = append(cells, Cell{Model: m})
	}
	finished := map[string]bool{}
	for _, c := range cells[:3] {
		for path, data := range map[string]string{
			CellPath(out, c): "task,model\n",
			filepath.Join(out, "results", "curves", c.Task, c.Name+".train.json"): fmt.Sprintf(
				`{"wall_seconds": %g, "thread_cpu_seconds": %g, "gomaxprocs": 1, "batch": 32}`, c.TrainSeconds*5, c.TrainSeconds*0.5),
		} {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		finished[c.ID()] = true
	}
	var want float64
	for _, c := range cells[3:] {
		want += c.TrainSeconds*0.5 + c.EvalSeconds
	}
	got, n, _, ratio := atPace(out, cells, finished)
	if n != 3 || math.Abs(got-want) > 1e-6*want || math.Abs(ratio-0.5) > 1e-9 {
		t.Errorf("atPace: %g s from %d models at %.3f of the estimate, want %g s from 3 at 0.5", got, n, ratio, want)
	}
}
