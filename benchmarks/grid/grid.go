// Package grid runs the benchmark's full grid (cmd/bench --full): every model of the recipe is
// trained, evaluated, and its results written to a file of its own, atomically (a temporary file
// renamed), so that a rerun of the same command skips every finished cell and an interrupted
// one resumes its training from its last checkpoint. Cells run -jobs at a time, each on
// NumCPU/jobs cores; one progress callback covers the whole grid, weighted by each cell's
// estimated time, so that its rate and ETA mean something.
package grid

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/posformer/posformer/benchmarks/recipe"
	"github.com/posformer/posformer/benchmarks/report"
	"github.com/posformer/posformer/engine/train"
	"github.com/posformer/posformer/models"
)

// Cell is one unit of the grid: a model to train and evaluate, or (Baseline) a task's
// model-free baseline rows.
type Cell struct {
	recipe.Model
	Baseline bool
	// Ship is where the trained checkpoint is shipped (recipe.Ship), "" if it is not.
	Ship string
}

// BaselineCell is a task's baseline cell (it needs no model).
func BaselineCell(task string) Cell {
	return Cell{Model: recipe.Model{Task: task, Name: "_baselines", EvalSeconds: 5}, Baseline: true}
}

// Order puts first the baselines (seconds each, and every table's chance and unigram rows and
// the overview's scale wait on them), then the cells whose training has begun (a loss curve in
// their folder: an earlier run stopped them mid-way), then the cells of first's (task, scheme)
// pairs, every seed of them; then the rest in their order (the recipe's: seed by seed).
// A grid that takes many sessions thus finishes what it began and settles what a report most
// needs (the schemes "against the papers" compares, report.Compared) before it widens, in one
// run: runs one after another would leave a core idle at the end of each while its last cell
// finished.
func Order(cells []Cell, first map[string][]string) []Cell {
	tier := map[string]int{}
	for _, c := range cells {
		tier[c.ID()] = tierOf(c, first)
	}
	out := slices.Clone(cells)
	slices.SortStableFunc(out, func(a, b Cell) int { return tier[a.ID()] - tier[b.ID()] })
	return out
}

// tiers names Order's groups, in their order.
var tiers = []string{"baselines", "begun", "compared schemes", "the rest"}

func tierOf(c Cell, first map[string][]string) int {
	switch {
	case c.Baseline:
		return 0
	case LastStep(c.Dir) > 0:
		return 1
	case slices.Contains(first[c.Task], c.Scheme):
		return 2
	}
	return 3
}

// CellPath is where a cell's results are written: <out>/results/cells/<task>/<name>.csv.
func CellPath(out string, c Cell) string {
	return filepath.Join(out, "results", "cells", c.Task, c.Name+".csv")
}

// DocsPath is where a text task's cell keeps its rows' per-document sums (eval.DocScore), beside
// its results file.
func DocsPath(out string, c Cell) string {
	return filepath.Join(out, "results", "cells", c.Task, c.Name+".docs.csv")
}

// CurvePath is where a trained cell's loss curve is kept beside its results:
// <out>/results/curves/<task>/<name>.loss.csv, and its train.json as <name>.train.json. The
// checkpoints are large and live elsewhere (-weights); these small files go with the results,
// so that a grid spread over several machines keeps every model's curve.
func CurvePath(out string, c Cell) string {
	return filepath.Join(out, "results", "curves", c.Task, c.Name+".loss.csv")
}

// Done reports whether a cell's results file exists (it is only ever written whole).
func Done(out string, c Cell) bool {
	_, err := os.Stat(CellPath(out, c))
	return err == nil
}

// Finished is the set of cells (by ID) that need not run: their results file exists, a shipped
// cell's checkpoint is in its Ship folder, and, if a cell not yet done starts from them (Init),
// their trained checkpoint is still there. A base whose checkpoint was lost (the results live
// in the repository, the weights outside it) is trained again rather than leaving its
// fine-tune nothing to start from; a shipped one, rather than shipping nothing.
func Finished(out string, cells []Cell) map[string]bool {
	done := map[string]bool{}
	for _, c := range cells {
		if Done(out, c) && (c.Ship == "" || recipe.Shipped(c.Ship, c.Args)) {
			done[c.ID()] = true
		}
	}
	byID := map[string]Cell{}
	for _, c := range cells {
		byID[c.ID()] = c
	}
	for _, c := range cells {
		if base, ok := byID[c.Task+"/"+c.Init]; ok && c.Init != "" && !done[c.ID()] && done[base.ID()] {
			if _, err := recipe.ReadTrainInfo(base.Dir); err != nil {
				delete(done, base.ID())
			}
		}
	}
	return done
}

// Runner holds how to do each part of a cell; tests replace them.
type Runner struct {
	Out  string
	Jobs int
	// Train trains a model (resume: continue from the checkpoint in its folder) on procs cores,
	// reporting its progress as the fraction of its step cap done.
	Train func(m recipe.Model, resume bool, procs int, progress func(frac float64)) error
	// Evaluate scores a trained model on threads cores.
	Evaluate func(m recipe.Model, threads int, progress func(frac float64)) ([]report.Result, error)
	// Baselines scores a task's model-free rows.
	Baselines func(task string) ([]report.Result, error)
	// Progress is told the estimated seconds done and in total, and what runs.
	Progress func(done, total float64, status string)
	// Cores is the number of cores shared by the lanes (runtime.NumCPU()).
	Cores int
	// Deadline, when set, is when the machine goes away: no cell starts whose estimate (at its
	// step cap, an upper bound) would end it later, since its work would be lost; Skipped counts
	// the cells left for the next run.
	Deadline time.Time
	Skipped  int
	now      func() time.Time // time.Now; tests replace it

	shipMu sync.Mutex
}

// Run runs every unfinished cell, Jobs at a time, each when the cell it starts from (Init) is
// done. A failed cell does not stop the grid, which may run unattended for hours: the others go
// on (not those that start from it), and the error at the end names every failed cell and
// says how to continue.
func (r *Runner) Run(cells []Cell) error {
	r.Skipped = 0
	if err := restoreShipped(r.Out, cells); err != nil {
		return err
	}
	finished := Finished(r.Out, cells)
	var todo []Cell
	for _, c := range cells {
		if !finished[c.ID()] {
			todo = append(todo, c)
		}
	}
	// A resumed cell's steps trained before this run count neither in the total nor as done:
	// the rate and ETA drawn from them are this run's.
	left := make([]float64, len(todo))
	total := 0.0
	for i, c := range todo {
		left[i] = c.Seconds() - trainedBefore(c)
		total += left[i]
	}
	lanes := min(max(r.Jobs, 1), max(len(todo), 1))
	procs := max(r.Cores/lanes, 1)
	var (
		mu       sync.Mutex
		cond     = sync.NewCond(&mu)
		running  = map[string]float64{} // estimated seconds done of each running cell
		status   = map[string]string{}  // what each running cell is doing
		doneSec  float64
		firstErr error    // the grid cannot go on (a cell's base is not in it)
		failures []string // cells that failed, or did not start because their base failed
		failed   = map[string]bool{}
		next     int
		started  = make([]bool, len(todo))
		skipped  = map[string]bool{}
	)
	tell := func() {
		if r.Progress == nil {
			return
		}
		d := doneSec
		var what []string
		for id, s := range running {
			d += s
			what = append(what, status[id])
		}
		sort.Strings(what)
		r.Progress(d, total, strings.Join(what, " · "))
	}
	ready := func(c Cell) bool { return c.Init == "" || finished[c.Task+"/"+c.Init] }
	// pick returns the index of the first unstarted ready cell, -1 if none is ready yet, or
	// len(todo) when nothing is left (or the grid cannot go on). Called with mu held.
	pick := func() int {
		for {
			if firstErr != nil {
				return len(todo)
			}
			waiting := false
			for i := next; i < len(todo); i++ {
				if started[i] {
					continue
				}
				if c := todo[i]; c.Init != "" && failed[c.Task+"/"+c.Init] {
					started[i], failed[c.ID()] = true, true
					failures = append(failures, fmt.Sprintf("%s: not started, %s/%s failed", c.ID(), c.Task, c.Init))
					total -= left[i]
					continue
				}
				if c := todo[i]; !r.Deadline.IsZero() && (skipped[c.Task+"/"+c.Init] ||
					r.clock().Add(time.Duration(c.Seconds()*float64(time.Second))).After(r.Deadline)) {
					// It would not finish in time (or starts from a cell that will not run).
					started[i], skipped[c.ID()] = true, true
					r.Skipped++
					total -= left[i]
					continue
				}
				if ready(todo[i]) {
					started[i] = true
					return i
				}
				waiting = true
			}
			for next < len(todo) && started[next] {
				next++
			}
			if !waiting {
				return len(todo)
			}
			if len(running) == 0 {
				// Nothing runs that could make a waiting cell ready: its base is not in the grid.
				for i := next; i < len(todo); i++ {
					if !started[i] {
						firstErr = fmt.Errorf("%s starts from %s/%s, which is neither finished nor in the grid; run its task without -scheme filters", todo[i].ID(), todo[i].Task, todo[i].Init)
						break
					}
				}
				return len(todo)
			}
			cond.Wait()
		}
	}
	var wg sync.WaitGroup
	for range lanes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := pick()
				if i == len(todo) {
					mu.Unlock()
					return
				}
				c := todo[i]
				id := c.ID()
				running[id], status[id] = 0, id
				tell()
				mu.Unlock()
				err := r.runMarked(c, procs, func(frac float64, phase string) { // cells.go: under the cell's lock, a failure leaves a marker
					mu.Lock()
					running[id], status[id] = max(0, frac*c.Seconds()-(c.Seconds()-left[i])), id+" "+phase
					tell()
					mu.Unlock()
				})
				mu.Lock()
				delete(running, id)
				delete(status, id)
				if err != nil {
					failed[id] = true
					failures = append(failures, fmt.Sprintf("%s: %v", id, err))
					total -= left[i]
				} else {
					finished[id] = true
					doneSec += left[i]
				}
				tell()
				cond.Broadcast()
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	if len(failures) > 0 {
		return fmt.Errorf("%d of %d cells failed, the others ran (rerun the same command to retry them; finished cells are kept): %s",
			len(failures), len(todo), strings.Join(failures, "; "))
	}
	return nil
}

func (r *Runner) clock() time.Time {
	if r.now != nil {
		return r.now()
	}
	return time.Now()
}

// runCell trains (unless a finished checkpoint of the same command is there) and evaluates one
// cell, then writes its results file.
func (r *Runner) runCell(c Cell, procs int, progress func(frac float64, phase string)) error {
	var rs []report.Result
	var err error
	if c.Baseline {
		if rs, err = r.Baselines(c.Task); err != nil {
			return err
		}
		return report.WriteCSV(CellPath(r.Out, c), rs)
	}
	trainShare := c.TrainSeconds / max(c.Seconds(), 1e-9)
	ti, infoErr := recipe.ReadTrainInfo(c.Dir)
	if infoErr != nil || !recipe.SameCommand(ti.Command, c.Args) {
		_, stateErr := os.Stat(filepath.Join(c.Dir, train.StateFile))
		resume := stateErr == nil && infoErr != nil // interrupted (no train.json yet), same folder
		if !resume {
			// A finished model of another command (an older recipe), or debris: start afresh.
			if err := os.RemoveAll(c.Dir); err != nil {
				return fmt.Errorf("clearing %s: %w", c.Dir, err)
			}
		}
		if err := r.Train(c.Model, resume, procs, func(f float64) { progress(trainShare*f, "train") }); err != nil {
			return err
		}
		// The optimizer state doubles the checkpoint and is only needed to resume.
		os.Remove(filepath.Join(c.Dir, train.StateFile))
	}
	progress(trainShare, "eval")
	// The evaluation runs on this goroutine: locked to its thread, that thread's CPU time is its
	// cost on one core, whatever time the process spent waiting.
	runtime.LockOSThread()
	start := time.Now()
	cpuStart, cpuOK := train.ThreadCPU()
	rs, err = r.Evaluate(c.Model, procs, func(f float64) { progress(trainShare+(1-trainShare)*f, "eval") })
	cpuEnd, _ := train.ThreadCPU()
	wall := time.Since(start)
	runtime.UnlockOSThread()
	if err != nil {
		return err
	}
	if err := keepCurve(r.Out, c); err != nil {
		return err
	}
	cpu := time.Duration(-1)
	if cpuOK {
		cpu = cpuEnd - cpuStart
	}
	if err := writeEvalTime(r.Out, c, wall, cpu, procs); err != nil {
		return err
	}
	if c.Ship != "" {
		// One at a time, so that each manifest is written after the folders it lists.
		r.shipMu.Lock()
		err := recipe.Ship(c.Dir, c.Ship)
		if err == nil {
			err = recipe.WriteManifest(filepath.Dir(filepath.Dir(c.Ship))) // <root>/<task>/<name>
		}
		r.shipMu.Unlock()
		if err != nil {
			return err
		}
	}
	return report.WriteCSV(CellPath(r.Out, c), rs)
}

// restoreShipped puts back the checkpoint of a shipped cell that is still needed, when the
// grid's own copy is gone with its machine: for another cell that starts from it (a PI
// fine-tune from its RoPE base), or for its own evaluation (its results removed so that a new
// evaluation row is scored). The shipped copy, whose weights are the trained ones rounded to
// float16 (the loader widens them), is what a reader has; training it again would give
// another model.
func restoreShipped(out string, cells []Cell) error {
	needed := map[string]bool{}
	for _, c := range cells {
		if c.Init != "" {
			needed[c.Task+"/"+c.Init] = true
		}
		if !Done(out, c) {
			needed[c.ID()] = true
		}
	}
	for _, c := range cells {
		if c.Ship == "" || !needed[c.ID()] || !recipe.Shipped(c.Ship, c.Args) {
			continue
		}
		if _, err := recipe.ReadTrainInfo(c.Dir); err == nil {
			continue
		}
		if err := os.RemoveAll(c.Dir); err != nil {
			return fmt.Errorf("restoring %s: %w", c.ID(), err)
		}
		if err := os.MkdirAll(c.Dir, 0o755); err != nil {
			return fmt.Errorf("restoring %s: %w", c.ID(), err)
		}
		entries, err := os.ReadDir(c.Ship)
		if err != nil {
			return fmt.Errorf("restoring %s: %w", c.ID(), err)
		}
		for _, e := range entries {
			if err := models.CopyFileAtomic(filepath.Join(c.Ship, e.Name()), filepath.Join(c.Dir, e.Name())); err != nil {
				return fmt.Errorf("restoring %s: %w", c.ID(), err)
			}
		}
	}
	return nil
}

// keepCurve copies a trained model's loss.csv and train.json beside the results (CurvePath).
// A model without them (a test's fake) has nothing to keep.
func keepCurve(out string, c Cell) error {
	dst := CurvePath(out, c)
	for _, f := range []struct{ from, to string }{
		{"loss.csv", dst},
		{"train.json", strings.TrimSuffix(dst, ".loss.csv") + ".train.json"},
	} {
		from := filepath.Join(c.Dir, f.from)
		if _, err := os.Stat(from); errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(f.to), 0o755); err != nil {
			return fmt.Errorf("keeping %s's curve: %w", c.ID(), err)
		}
		if err := models.CopyFileAtomic(from, f.to); err != nil {
			return fmt.Errorf("keeping %s's curve: %w", c.ID(), err)
		}
	}
	return nil
}

// EvalTimePath is where a cell's evaluation wall time is kept, beside its curve (report.EvalTime).
func EvalTimePath(out string, c Cell) string {
	return strings.TrimSuffix(CurvePath(out, c), ".loss.csv") + ".eval.json"
}

func writeEvalTime(out string, c Cell, d, cpu time.Duration, threads int) error {
	et := report.EvalTime{Seconds: math.Round(d.Seconds()*10) / 10, Threads: threads}
	if cpu >= 0 {
		et.ThreadCPU = math.Round(cpu.Seconds()*10) / 10
	}
	data, err := json.Marshal(et)
	if err != nil {
		return err
	}
	path := EvalTimePath(out, c)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("keeping %s's evaluation time: %w", c.ID(), err)
	}
	return models.WriteFileAtomic(path, append(data, '\n'))
}

// TrainWith returns a Runner.Train that trains in this process (train.Run), each model on
// procs cores (the cpu backend's threads; the process's GOMAXPROCS stays the machine's, which
// GoMLX's pure-Go backend, not the grid's, would use in full), its log and progress lines to
// <logs>/<task>-<name>.log. parse reads the recipe's arguments: cmd/train's flags
// (train.ParseArgs with the commands' --rope-* flags); bar, if not nil, draws the log's progress
// lines (cmd/train's bar). A cancelled ctx stops the runs between steps, resumable.
func TrainWith(ctx context.Context, parse func(args []string) (train.Options, error), logs string,
	bar func(w io.Writer, what string, total int) train.Bar) func(m recipe.Model, resume bool, procs int, progress func(float64)) error {
	return func(m recipe.Model, resume bool, procs int, progress func(float64)) error {
		args := m.Args
		if resume {
			args = append(append([]string(nil), m.Args...), "-resume")
		}
		o, err := parse(args)
		if err != nil {
			return fmt.Errorf("the recipe's training arguments: %w", err)
		}
		if err := os.MkdirAll(logs, 0o755); err != nil {
			return err
		}
		logPath := filepath.Join(logs, m.Task+"-"+m.Name+".log")
		f, err := os.Create(logPath)
		if err != nil {
			return fmt.Errorf("creating the training log: %w", err)
		}
		defer f.Close()
		o.Cores, o.Log = procs, f
		o.KeepDiverged = true // a sweep's rate that diverges loses; it does not block the sweep
		o.Bar = func(what string, total int) train.Bar {
			// total is the steps left of the cap: the fraction done counts the steps before too.
			b := &stepBar{before: o.Steps - total, steps: o.Steps, progress: progress}
			if bar != nil {
				b.log = bar(f, what, total)
			}
			return b
		}
		if err := runLogged(ctx, o, f); err != nil {
			return fmt.Errorf("training: %w (log in %s)", err, logPath)
		}
		progress(1)
		return nil
	}
}

// runLogged is train.Run with a panic turned into the run's error, its stack into the log: one
// model's crash fails its cell, as a crashed process of its own did, and the grid goes on.
func runLogged(ctx context.Context, o train.Options, log io.Writer) (err error) {
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(log, "panic: %v\n\n%s", p, debug.Stack())
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	_, err = train.Run(ctx, o)
	return err
}

// stepBar passes a run's steps to the grid's progress (the fraction of the step cap done) and
// to the log's bar.
type stepBar struct {
	before, steps int // steps done before this run (a resumed one), the cap
	progress      func(float64)
	log           train.Bar
}

func (b *stepBar) Set(done int, status string) {
	if b.log != nil {
		b.log.Set(done, status)
	}
	b.progress(min(1, float64(b.before+done)/float64(max(b.steps, 1))))
}

func (b *stepBar) Finish() {
	if b.log != nil {
		b.log.Finish()
	}
}

// trainedBefore is the estimated seconds of a cell's training already done: the steps its
// checkpoint's loss.csv records, of its step cap.
func trainedBefore(c Cell) float64 {
	if c.Steps <= 0 {
		return 0
	}
	return c.TrainSeconds * min(1, float64(LastStep(c.Dir))/float64(c.Steps))
}

// LastStep is the last step a run's loss.csv records (0 if none).
func LastStep(dir string) int {
	data, err := os.ReadFile(filepath.Join(dir, "loss.csv"))
	if err != nil {
		return 0
	}
	step, _ := recipe.CurveEnd(data)
	return step
}

// Assemble writes a task's results file from its cells' files (the order of cells), so the
// report sees one CSV per task. Cells not finished yet are left out.
func Assemble(out, task string, cells []Cell, relabel ...func([]report.Result) []report.Result) error {
	var all []report.Result
	for _, c := range cells {
		if c.Task != task {
			continue
		}
		rs, err := report.ReadCSV(CellPath(out, c))
		if err != nil {
			return err
		}
		all = append(all, rs...)
	}
	if len(all) == 0 {
		return nil
	}
	for _, f := range relabel {
		all = f(all)
	}
	return report.WriteCSV(report.CSVPath(out, task), all)
}

// Plan describes the grid before it runs: cells, how many are done, the estimated wall time on
// the given cores with the given lanes (the training part at the step caps: an upper bound).
func Plan(w io.Writer, out string, cells []Cell, jobs, cores int, first map[string][]string) {
	var todo, done int
	var secs float64
	perTask := map[string]float64{}
	doneIn, cellsIn := map[string]int{}, map[string]int{}
	tierCells, tierSecs := make([]int, len(tiers)), make([]float64, len(tiers))
	var order []string
	finished := Finished(out, cells)
	for _, c := range cells {
		if _, ok := cellsIn[c.Task]; !ok {
			order = append(order, c.Task)
		}
		cellsIn[c.Task]++
		if finished[c.ID()] {
			done++
			doneIn[c.Task]++
			continue
		}
		todo++
		secs += c.Seconds()
		perTask[c.Task] += c.Seconds()
		t := tierOf(c, first)
		tierCells[t]++
		tierSecs[t] += c.Seconds()
	}
	lanes := max(1, min(jobs, cores))
	fmt.Fprintf(w, "grid: %d cells (%d done, %d to run); estimated %s on %d cores with %d at a time (%s of one-core work, training at the step caps)\n",
		len(cells), done, todo, recipe.Hours(secs/float64(lanes)), cores, lanes, recipe.Hours(secs))
	if likely, n, inPasses, ratio := atPace(out, cells, finished); n > 0 {
		fmt.Fprintf(w, "  at the pace of the %d finished models with kept curves (their training took %.0f%% of its estimate), about %s on %d cores\n",
			n, 100*ratio, recipe.Hours(likely/float64(lanes)), cores)
		if inPasses > 0 {
			fmt.Fprintf(w, "  (%d of them trained in passes; a task with %d such goes at their pace)\n", inPasses, minPaceModels)
		}
	}
	for _, t := range order {
		fmt.Fprintf(w, "  %-8s %3d of %3d cells done, %s of one-core work to go\n", t, doneIn[t], cellsIn[t], recipe.Hours(perTask[t]))
	}
	var parts []string
	for i, name := range tiers {
		if tierCells[i] > 0 {
			noun := "cells"
			if tierCells[i] == 1 {
				noun = "cell"
			}
			parts = append(parts, fmt.Sprintf("%s, %d %s (%s)", name, tierCells[i], noun, recipe.Hours(tierSecs[i]/float64(lanes))))
		}
	}
	if len(parts) > 0 {
		fmt.Fprintf(w, "  in this order on %d cores: %s\n", cores, strings.Join(parts, "; then "))
	}
}

// atPace estimates the one-core seconds the unfinished cells will take from what the finished
// ones took: each task's training time scaled by the ratio of its finished models' wall time
// (train.json, kept beside the results) to their estimates at the step cap, since the plateau
// rule stops most models early. n is how many finished models it rests on, ratio the overall
// one, inPasses how many of them trained in passes (cmd/train's default,
// 21-27% faster a step than one pass). A task's own ratio is used once it rests on
// minPaceModels models, and the ratio of its models trained in passes once there are that many
// of them: the cells left will train so. Before, one model that the plateau rule stopped at a
// fifth of its cap (mlm's NoPE) would set the pace of all the rest.
func atPace(out string, cells []Cell, finished map[string]bool) (secs float64, n, inPasses int, ratio float64) {
	type pace struct {
		actual, estimated float64
		n                 int
	}
	add := func(p *pace, wall, est float64) { p.actual, p.estimated, p.n = p.actual+wall, p.estimated+est, p.n+1 }
	var all pace
	perTask, passesPerTask := map[string]*pace{}, map[string]*pace{}
	infos := map[string]map[string]recipe.TrainInfo{}
	for _, c := range cells {
		if c.Baseline || !finished[c.ID()] {
			continue
		}
		if infos[c.Task] == nil {
			infos[c.Task] = map[string]recipe.TrainInfo{}
			perTask[c.Task], passesPerTask[c.Task] = &pace{}, &pace{}
			cs, err := report.ReadCurves(out, c.Task)
			if err != nil {
				continue
			}
			for _, cv := range cs {
				infos[c.Task][cv.Name] = cv.Info
			}
		}
		info := infos[c.Task][c.Name]
		if wall, _ := info.CoreSeconds(); wall > 0 && c.TrainSeconds > 0 {
			add(&all, wall, c.TrainSeconds)
			add(perTask[c.Task], wall, c.TrainSeconds)
			if info.MicroBatch > 0 && info.MicroBatch < info.Batch {
				add(passesPerTask[c.Task], wall, c.TrainSeconds)
				inPasses++
			}
		}
	}
	if all.n == 0 {
		return 0, 0, 0, 0
	}
	for _, c := range cells {
		if finished[c.ID()] {
			continue
		}
		r := all.actual / all.estimated // a task with too few finished models goes at the overall pace
		if p := perTask[c.Task]; p != nil && p.n >= minPaceModels {
			r = p.actual / p.estimated
		}
		if p := passesPerTask[c.Task]; p != nil && p.n >= minPaceModels {
			r = p.actual / p.estimated
		}
		secs += c.TrainSeconds*r + c.EvalSeconds
	}
	return secs, all.n, inPasses, all.actual / all.estimated
}

// minPaceModels is how many finished models of a task set its own pace in atPace.
const minPaceModels = 3

// ErrNothing is returned when the filters leave no cell.
var ErrNothing = errors.New("the -task and -scheme filters leave no model to train")
