// Wiring: evaluate checkpoints (default, --quick, -m), run the --full grid, write the report.
package bench

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/posformer/posformer/benchmarks/eval"
	"github.com/posformer/posformer/benchmarks/grid"
	"github.com/posformer/posformer/benchmarks/recipe"
	"github.com/posformer/posformer/benchmarks/report"
	"github.com/posformer/posformer/cmd/internal/progress"
	"github.com/posformer/posformer/cmd/internal/ropeflags"
	"github.com/posformer/posformer/engine"
	"github.com/posformer/posformer/engine/train"
	"github.com/posformer/posformer/engine/train/corpus"
	"github.com/posformer/posformer/engine/train/tasks"
	"github.com/posformer/posformer/models"
)

// userRope holds the --rope-* / --yarn-* flags (unset: none): one more row per RoPE decoder.
var userRope *ropeflags.Flags

func run(o options) error {
	switch {
	case o.reportOnly && !o.full:
		return report.WriteReport(o.out)
	case o.full:
		return runFull(o)
	}
	return runEval(o)
}

// needsCorpus reports whether a task reads the corpus at evaluation: lm and mlm score its text,
// passkey hides its key in it, and every baseline of lm and mlm is its unigram model.
func needsCorpus(taskList []string) bool {
	return slices.ContainsFunc(taskList, func(t string) bool { return t == tasks.LM || t == tasks.MLM || t == tasks.Passkey })
}

// runEval scores finished checkpoints: -m one of them, else every one under -weights.
func runEval(o options) error {
	start := time.Now()
	backend, err := engine.NewBackend(o.backend)
	if err != nil {
		return err
	}
	b := eval.Full
	if o.quick {
		b = eval.Quick
	}
	b.SlidingStride = o.slidingStride
	data := &eval.Texts{Test: &corpus.HeldOut{}}
	stamp := func(rs []report.Result) []report.Result { return rs }
	if needsCorpus(o.tasks) {
		if data, err = eval.LoadCorpus(o.quick); err != nil {
			return err
		}
		// Every results line says which test text scored it, as the grid's do.
		stamp = func(rs []report.Result) []report.Result { return eval.Stamp(rs, data.ID()) }
	}
	type work struct {
		task  string
		group eval.Group
		cells []eval.Cell
	}
	var todo []work
	var missing []string
	total := 0
	for _, task := range o.tasks {
		var rows []eval.Row
		if o.model != "" {
			ti, err := recipe.CheckTask(o.model, task)
			if err != nil {
				return err
			}
			rows = eval.RowsFor(task, ti, o.model, b)
		} else if rows, err = eval.FindRows(o.weights, task, o.schemes, b); err != nil {
			return err
		}
		rows = append(rows, userRows(task, rows)...)
		if len(rows) == 0 {
			missing = append(missing, task)
			continue
		}
		for _, g := range eval.Groups(rows) {
			cells, err := eval.Plan(task, g.Version, g.TrainLen, b, o.lengths, data.Test.Text)
			if err != nil {
				return err
			}
			total += eval.Units(g.Rows, cells)
			todo = append(todo, work{task, g, cells})
		}
	}
	if len(missing) > 0 && len(todo) > 0 {
		// One line for all of them: the shipped weights hold some tasks only (recipe.ShipTasks).
		fmt.Fprintf(os.Stderr, "bench: no finished %s checkpoints under %s for the chosen schemes; train them with --full -task %s\n", strings.Join(missing, ", "), o.weights, strings.Join(missing, ","))
	}
	if len(todo) == 0 {
		return fmt.Errorf("nothing to evaluate: no finished checkpoints under %s (run with --full to train them)", o.weights)
	}
	if o.lengths != nil && o.model == "" && !o.quick {
		return fmt.Errorf("-lengths changes the table's columns; use it with --quick or -m (tables on stdout)")
	}
	bar := progress.New(os.Stderr, "bench", total)
	byTask := map[string][]report.Result{}
	var order []string
	done := 0
	for _, w := range todo {
		base := done
		rs, err := eval.Evaluate(backend, w.task, w.group.Rows, w.cells, b, func(n int, status string) { bar.Set(base+n, status) })
		if err != nil {
			return err
		}
		done = base + eval.Units(w.group.Rows, w.cells)
		bl, err := eval.Baselines(w.task, w.group.Version, w.cells, data.Train, w.group.TrainLen)
		if err != nil {
			return err
		}
		if _, seen := byTask[w.task]; !seen {
			order = append(order, w.task)
		}
		byTask[w.task] = append(byTask[w.task], stamp(append(bl, rs...))...)
	}
	bar.Finish()
	for _, task := range order {
		rs := byTask[task]
		switch {
		case o.model != "":
			printTables(task, rs)
		case o.quick:
			printTables(task, rs)
			if err := report.WriteCSV(filepath.Join(o.out, "results", "quick", task+".csv"), rs); err != nil {
				return err
			}
		default:
			old, err := report.ReadCSV(report.CSVPath(o.out, task))
			if err != nil {
				return err
			}
			if err := report.WriteCSV(report.CSVPath(o.out, task), report.Merge(old, rs)); err != nil {
				return err
			}
		}
	}
	if o.model == "" && !o.quick {
		if err := report.WriteReport(o.out); err != nil {
			return err
		}
		if err := recipe.WriteManifest(o.weights); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "bench: wrote %s and %s in %s\n", filepath.Join(o.out, "RESULTS.md"), filepath.Join(o.out, "results"), time.Since(start).Round(time.Second))
		return nil
	}
	fmt.Fprintf(os.Stderr, "bench: done in %s\n", time.Since(start).Round(time.Second))
	return nil
}

// userRows is the row the --rope-* flags ask for, for each plain RoPE decoder row.
func userRows(task string, rows []eval.Row) []eval.Row {
	if !userRope.Given() || tasks.Kind(task) != models.Decoder {
		return nil
	}
	var out []eval.Row
	for _, r := range rows {
		if r.Scheme == "rope" && r.Variant == "" {
			v := r
			v.Variant = userRope.Describe()
			v.Override = func(_ int, c *models.Config) error { return userRope.Apply(c.Positional) }
			out = append(out, v)
		}
	}
	return out
}

func printTables(task string, rs []report.Result) {
	for _, m := range tasks.Metrics(task) {
		fmt.Printf("\n%s %s\n\n%s", task, m, report.Table(task, rs, m, report.AllSubs))
	}
}

// runFull trains and evaluates the recipe's grid, cell by cell, resumably.
func runFull(o options) error {
	start := time.Now()
	r := pickRecipe(o)
	if o.steps > 0 {
		r.StepCap = cloneCaps(r.StepCap, o.steps)
	}
	r.Choose = grid.LRChoice(o.out, r)
	// The cells are built again between waves: a finished learning-rate sweep settles the
	// commands of the cells that wait on it.
	build := func() []grid.Cell {
		var cells []grid.Cell
		for _, m := range r.Models(o.weights, o.tasks, o.schemes, o.seeds) {
			c := grid.Cell{Model: m}
			if o.ship != "" && r.Ships(m) {
				c.Ship = filepath.Join(o.ship, m.Task, m.Name)
			}
			cells = append(cells, c)
		}
		if len(cells) == 0 {
			return nil
		}
		for _, t := range o.tasks {
			cells = append(cells, grid.BaselineCell(t))
		}
		return cells
	}
	cells := build()
	if len(cells) == 0 {
		return grid.ErrNothing
	}
	if o.reportOnly {
		// The report so far, from the finished cells (the grid takes several sessions).
		if o.ship != "" {
			if err := recipe.WriteManifest(o.ship); err != nil {
				return err
			}
		}
		return writeGridReport(o, r, cells)
	}
	if handled, err := runCluster(o, cells); handled {
		return err
	}
	cores := runtime.NumCPU()
	if o.plan {
		grid.Plan(os.Stdout, o.out, cells, o.jobs, cores, r.First)
		return nil
	}
	grid.Plan(os.Stderr, o.out, cells, o.jobs, cores, r.First)
	logs := filepath.Join(o.out, "results", "cells", "logs")
	fmt.Fprintf(os.Stderr, "bench: each model's training log is in %s/<task>-<model>.log\n", logs)
	data, err := eval.LoadCorpus(false)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "bench: texts of %s: test %d documents, %d bytes, SHA-256 %s; validation %d documents, %d bytes, SHA-256 %s\n",
		data.GoVersion, len(data.Test.Docs), len(data.Test.Text), data.Test.SHA256(), len(data.Validation.Docs), len(data.Validation.Text), data.Validation.SHA256())
	var (
		planMu sync.Mutex
		plans  = map[string][]eval.Cell{}
	)
	cellsFor := func(task string, version, L int) ([]eval.Cell, error) {
		planMu.Lock()
		defer planMu.Unlock()
		key := fmt.Sprintf("%s/%d/%d", task, version, L)
		if c, ok := plans[key]; ok {
			return c, nil
		}
		c, err := eval.Plan(task, version, L, eval.Full, nil, data.Test.Text)
		if task == tasks.LM || task == tasks.MLM {
			for i := range c {
				c[i].Docs = data.Test.Docs
			}
		}
		plans[key] = c
		return c, err
	}
	backendName := func(threads int) string {
		if o.backend != "" {
			return o.backend
		}
		return "cpu:threads=" + strconv.Itoa(threads)
	}
	bar := &waveBar{w: os.Stderr}
	runner := &grid.Runner{
		Out: o.out, Jobs: o.jobs, Cores: cores,
		Train: grid.TrainWith(context.Background(), parseTrainArgs, logs, trainBar),
		Evaluate: func(m recipe.Model, threads int, frac func(float64)) ([]report.Result, error) {
			backend, err := engine.NewBackend(backendName(threads))
			if err != nil {
				return nil, err
			}
			defer backend.Finalize() // one per cell: its worker pool goes with it
			ti, err := recipe.CheckTask(m.Dir, m.Task)
			if err != nil {
				return nil, err
			}
			// The pairs scored before a stop are taken up, not scored again (eval.Resume).
			resume, err := eval.OpenResume(m.Dir)
			if err != nil {
				return nil, err
			}
			var out []report.Result
			var docs []eval.DocScore
			for _, g := range eval.Groups(eval.RowsForModel(m.Task, ti, m.Dir, eval.Full, m.Variant)) {
				cs, err := cellsFor(m.Task, g.Version, g.TrainLen)
				if err != nil {
					return nil, err
				}
				units := float64(max(eval.Units(g.Rows, cs), 1))
				rs, ds, err := eval.EvaluateResuming(backend, m.Task, g.Rows, cs, eval.Full, func(n int, _ string) { frac(float64(n) / units) }, resume)
				if err != nil {
					return nil, err
				}
				out, docs = append(out, rs...), append(docs, ds...)
			}
			if m.Task == tasks.LM && ti.Scheme == "rope" {
				// Chen et al.'s passkey test, zero-shot: every RoPE language model, its
				// fine-tunes at 4L (with interpolation, without, YaRN's) among them.
				base := eval.RowsForModel(m.Task, ti, m.Dir, eval.Full, m.Variant)[:1]
				rs, err := eval.ZeroShotPasskey(backend, base, base[0].TrainLen, eval.Full, data.Test.Text)
				if err != nil {
					return nil, err
				}
				out = append(out, rs...)
			}
			if len(docs) > 0 {
				// Beside the cell's results, written first: the cell is done only once both are.
				if err := models.WriteFileAtomic(grid.DocsPath(o.out, grid.Cell{Model: m}), eval.EncodeDocScores(docs)); err != nil {
					return nil, err
				}
			}
			if err := resume.Remove(); err != nil {
				return nil, err
			}
			return eval.Stamp(out, data.ID()), nil
		},
		Baselines: func(task string) ([]report.Result, error) {
			L := r.TrainLen[task]
			cs, err := cellsFor(task, tasks.Version(task), L)
			if err != nil {
				return nil, err
			}
			rs, err := eval.Baselines(task, tasks.Version(task), cs, data.Train, L)
			return eval.Stamp(rs, data.ID()), err
		},
		Progress: bar.Progress,
	}
	if o.within > 0 {
		runner.Deadline = start.Add(o.within)
	}
	if o.cluster.cells != "" {
		return runCells(o, runner, cells, logs)
	}
	// Wave by wave (grid.Wave): the papers' rows first, each wave in grid.Order; the results
	// keep the recipe's order (Assemble, Plan).
	var runErr error
	for {
		wave := grid.Wave(o.out, cells, r.First)
		if wave == nil {
			break
		}
		runErr = runner.Run(grid.Order(wave, r.First))
		bar.Finish()
		// The report after each wave: a grid that runs for days shows what it has.
		if err := writeGridReport(o, r, cells); err != nil && runErr == nil {
			runErr = err
		}
		if runErr != nil || runner.Skipped > 0 {
			break
		}
		cells = build()
	}
	if n := grid.Waiting(cells); n > 0 && runErr == nil && runner.Skipped == 0 {
		fmt.Fprintf(os.Stderr, "bench: %d cells wait on a learning-rate sweep that did not finish (see -plan)\n", n)
	}
	if runner.Skipped > 0 {
		fmt.Fprintf(os.Stderr, "bench: %d cells left for the next run: by their estimates they would not finish within -within %s\n", runner.Skipped, o.within)
	}
	for _, dir := range []string{o.weights, o.ship} {
		if dir == "" {
			continue
		}
		if err := recipe.WriteManifest(dir); err != nil && runErr == nil {
			runErr = err
		}
	}
	if runErr != nil {
		return runErr
	}
	what := "grid done"
	if runner.Skipped > 0 {
		what = "ran"
	}
	fmt.Fprintf(os.Stderr, "bench: %s in %s; wrote %s\n", what, time.Since(start).Round(time.Second), filepath.Join(o.out, "RESULTS.md"))
	return nil
}

// writeGridReport assembles each task's results from the finished cells (the sweep's choice
// relabelling its models) and rewrites RESULTS.md.
func writeGridReport(o options, r recipe.Recipe, cells []grid.Cell) error {
	for _, t := range o.tasks {
		if err := grid.Assemble(o.out, t, cells, func(rs []report.Result) []report.Result { return grid.SweepLabels(r, t, rs) }); err != nil {
			return err
		}
	}
	return report.WriteReport(o.out)
}

// parseTrainArgs reads a recipe model's arguments as cmd/train does.
func parseTrainArgs(args []string) (train.Options, error) {
	return train.ParseArgs(args, func(fs *flag.FlagSet) func(map[string]any) error { return ropeflags.Register(fs).Apply })
}

// trainBar draws a training's progress lines in its log, as cmd/train draws them.
func trainBar(w io.Writer, what string, total int) train.Bar { return progress.New(w, what, total) }

// cloneCaps is caps with every value set to steps, without touching the recipe's own map.
func cloneCaps(caps map[string]int, steps int) map[string]int {
	out := map[string]int{}
	for t := range caps {
		out[t] = steps
	}
	return out
}

// waveBar draws the grid's progress one wave at a time: each runner.Run reports the estimated
// one-core seconds of its own cells, done of total, so every wave gets a bar of its own (one
// bar for all of them would measure later waves against the first wave's total). Units are
// seconds, so the rate and ETA are in time.
type waveBar struct {
	mu   sync.Mutex
	w    io.Writer
	bar  *progress.Bar
	wave int
}

func (b *waveBar) Progress(done, total float64, status string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bar == nil {
		b.wave++
		b.bar = progress.New(b.w, fmt.Sprintf("bench --full, wave %d", b.wave), int(total))
	}
	b.bar.Set(int(done), status)
}

// Finish ends the current wave's bar; the next report starts the next wave's.
func (b *waveBar) Finish() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bar != nil {
		b.bar.Finish()
		b.bar = nil
	}
}
