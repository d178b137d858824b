// Package bench is the bench command (cmd/bench, posformer bench), the extrapolation benchmark:
// every positional scheme, trained alike on each task at length L, scored at lengths past L. With
// --full it trains and evaluates the recipe's whole grid and writes the benchmark's report:
// benchmarks/results/<task>.csv, PNG plots with 95% intervals and benchmarks/RESULTS.md, all
// atomically, with a progress bar. Without it, it scores finished checkpoints, by default the
// shipped ones in weights/bench (the grid's lm and passkey models of seed 1), into
// benchmarks/shipped/ (ignored by git), so that re-scoring them never overwrites the grid's
// report.
//
//	go run ./cmd/bench --full -plan     # the grid and its estimated wall time, without running it
//	go run ./cmd/bench --full           # train and evaluate every cell not done yet (rerun to resume)
//	go run ./cmd/bench --full --report  # rewrite benchmarks/RESULTS.md from the finished cells
//	go run ./cmd/bench                  # score the checkpoints in weights/bench at every length
//	go run ./cmd/bench --quick          # fewer lengths and examples, < 60 s; tables on stdout
//	go run ./cmd/bench -task lm -scheme rope,alibi
//	go run ./cmd/bench -m DIR -task copy    # one checkpoint, tables on stdout
//	go run ./cmd/bench -report              # rewrite benchmarks/shipped/RESULTS.md from its CSVs
//	go run ./cmd/bench -task lm -scheme rope --rope-scaling yarn --rope-scale 8   # an extra RoPE row
//
// The logic lives in benchmarks/: recipe (the models and their training command), eval (rows,
// cells, baselines), stats, report (tables, plots, RESULTS.md and its "against the papers"
// section), grid (the resumable --full runner, which trains in this process with engine/train),
// and speed for the -speed mode (speed.go); the tasks (generators and scorers) and the corpus are
// engine/train's. This command holds the flags and the wiring.
package bench

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/posformer/posformer/benchmarks/recipe"
	"github.com/posformer/posformer/cmd/internal/backendflag"
	"github.com/posformer/posformer/cmd/internal/flaghelp"
	"github.com/posformer/posformer/cmd/internal/intlist"
	"github.com/posformer/posformer/cmd/internal/modelhome"
	"github.com/posformer/posformer/cmd/internal/ropeflags"
	"github.com/posformer/posformer/engine/train/tasks"
)

// modes are sub-commands selected by the first argument (-NAME or --NAME), each parsing its own
// flags: `go run ./cmd/bench -speed ...`. Other files register theirs from init, so the
// benchmark's flags below stay its own.
var modes = map[string]func(args []string) error{}

type options struct {
	quick, full        bool
	reportOnly, plan   bool
	tasks, schemes     []string
	lengths            []int
	weights, out, ship string
	model              string
	backend            string
	seeds, jobs, steps int
	slidingStride      int
	within             time.Duration
	cluster            clusterOptions // cluster.go
}

// Main runs the command with args (the arguments after the command's name) and returns its
// exit status: 2 for a bad flag, 1 for a failure.
func Main(args []string) int {
	if len(args) > 0 {
		name := strings.TrimLeft(args[0], "-")
		if run, ok := modes[name]; ok && strings.HasPrefix(args[0], "-") {
			if err := run(args[1:]); err != nil {
				fmt.Fprintf(os.Stderr, "bench %s: %v\n", name, err)
				return 1
			}
			return 0
		}
	}
	o, err := parseFlags(args)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		return 2
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	return 0
}

// ChildPrefix is what precedes this command's own arguments when the speed mode runs this
// program again for each model: nothing for cmd/bench, "bench" for the posformer binary.
var ChildPrefix []string

func parseFlags(args []string) (options, error) {
	var o options
	var taskList, schemeList, lengthList string
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.BoolVar(&o.quick, "quick", false, "re-evaluate the shipped checkpoints on fewer lengths and examples (< 60 s); tables on stdout, CSVs in benchmarks/results/quick")
	fs.BoolVar(&o.full, "full", false, "train (into -weights) and evaluate every cell of the recipe's grid not done yet; a rerun resumes")
	fs.BoolVar(&o.plan, "plan", false, "with --full: print the grid and its estimated wall time, run nothing")
	fs.BoolVar(&o.reportOnly, "report", false, "only rewrite RESULTS.md and the plots from the CSVs in <o>/results (no evaluation); with --full, from the grid's finished cells")
	fs.StringVar(&taskList, "task", "", "comma-separated tasks (default all): "+strings.Join(tasks.Names(), ", "))
	fs.StringVar(&schemeList, "scheme", "", "comma-separated schemes (default all): see positional.Names()")
	fs.StringVar(&lengthList, "lengths", "", "comma-separated evaluation lengths in tokens (default: per task, 1x..16x L)")
	fs.StringVar(&o.weights, "weights", "weights/bench", "checkpoint root: <weights>/<task>/<scheme>[-seedN]/ (with --full: weights/grid, which git ignores)")
	fs.StringVar(&o.out, "o", "benchmarks/shipped", "output root: <o>/RESULTS.md and <o>/results/ (with --full: benchmarks, the benchmark's report)")
	fs.StringVar(&o.ship, "ship", "weights/bench", "with --full: copy the recipe's shipped models (lm and passkey, seed 1) here as float16 once trained; \"\" for none (never with -steps)")
	fs.StringVar(&o.model, "m", "", "evaluate this one checkpoint directory, or a model in $POSFORMER_HOME by name (needs -task); tables on stdout")
	fs.IntVar(&o.slidingStride, "sliding-stride", 0, "with -m and -task lm: slide the sliding-window row by this many tokens (1 to L) instead of L/2")
	backendflag.Var(fs, &o.backend, "")
	userRope = ropeflags.Register(fs)
	registerCluster(fs, &o.cluster)
	fs.IntVar(&o.seeds, "seeds", 0, "with --full: seeds per (task, scheme) (0: the recipe's, 3)")
	fs.IntVar(&o.jobs, "jobs", runtime.NumCPU(), "with --full: cells run at once, each on NumCPU/jobs cores (small models train faster one per core)")
	fs.DurationVar(&o.within, "within", 0, "with --full: start no cell whose estimate (at its step cap) would end it later than this from now, e.g. 2h30m before a machine goes away; the rest waits for the next run")
	fs.IntVar(&o.steps, "steps", 0, "with --full: cap every model at this many steps instead of the recipe's (a pilot; such models are not the benchmark's)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(os.Stderr)
			fmt.Fprintln(os.Stderr, "usage: bench [--quick | --full] [-task T,...] [-scheme S,...] [-lengths N,...] [-m DIR]")
			flaghelp.PrintDefaults(fs)
			return o, err
		}
		if strings.HasSuffix(err.Error(), "not defined: -resume") {
			// Older commands carry it; it never changed what --full does.
			return o, fmt.Errorf("-resume is not needed: --full always keeps finished cells and resumes interrupted ones; drop -resume")
		}
		return o, fmt.Errorf("%v (run with -h for the flags)", err)
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q; flags only (see -h)", fs.Arg(0))
	}
	if o.quick && o.full {
		return o, fmt.Errorf("--quick and --full exclude each other: --quick only evaluates, --full retrains")
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if (o.plan || o.steps != 0 || o.seeds != 0 || set["ship"] || set["within"]) && !o.full {
		return o, fmt.Errorf("-plan, -steps, -seeds, -ship and -within shape the --full grid; add --full")
	}
	if o.within < 0 {
		return o, fmt.Errorf("-within %s: want a positive duration such as 2h30m", o.within)
	}
	if o.full {
		// The grid's own places: every checkpoint it trains in a folder git ignores, its results
		// beside the benchmark's report; only the shipped subset lands in weights/bench (-ship).
		if !set["weights"] {
			o.weights = filepath.Join("weights", "grid")
		}
		if !set["o"] {
			o.out = "benchmarks"
		}
		if o.steps != 0 {
			o.ship = "" // a pilot's models are not the benchmark's
		}
	}
	if err := checkCluster(&o, set); err != nil {
		return o, err
	}
	var err error
	if o.tasks, err = pickTasks(taskList); err != nil {
		return o, err
	}
	if o.schemes, err = pickSchemes(schemeList); err != nil {
		return o, err
	}
	if o.lengths, err = parseLengths(lengthList); err != nil {
		return o, err
	}
	if o.model != "" && (taskList == "" || len(o.tasks) != 1) {
		return o, fmt.Errorf("-m DIR needs one -task (the task the checkpoint was trained for)")
	}
	if userRope.Given() {
		// Checked now, so that a bad value is a one-line error before any work.
		if err := userRope.Apply(map[string]any{"name": "rope"}); err != nil {
			return o, err
		}
	}
	if o.jobs < 1 {
		return o, fmt.Errorf("-jobs %d: want at least 1", o.jobs)
	}
	if o.seeds < 0 {
		return o, fmt.Errorf("-seeds %d: want 0 (the recipe's) or more", o.seeds)
	}
	if o.steps < 0 {
		return o, fmt.Errorf("-steps %d: want 0 (the recipe's caps) or more", o.steps)
	}
	if o.slidingStride != 0 && (o.model == "" || len(o.tasks) != 1 || o.tasks[0] != tasks.LM || o.slidingStride < 1) {
		return o, fmt.Errorf("--sliding-stride %d: want a stride of at least 1 token, with -m DIR -task lm (the grid's row slides by L/2)", o.slidingStride)
	}
	if o.full && (o.model != "" || o.lengths != nil || userRope.Given()) {
		return o, fmt.Errorf("--full runs the recipe's grid; -m, -lengths and the --rope-* flags are for evaluating checkpoints (drop them or --full)")
	}
	if o.model != "" {
		// Last: the flags' own errors come first, as they are cheaper to fix.
		if o.model, err = modelhome.Resolve(o.model); err != nil {
			return o, err
		}
	}
	return o, nil
}

// parseLengths reads -lengths; every length must be at least 1.
func parseLengths(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	out, _, ok := intlist.Parse(s, nil)
	if !ok {
		return nil, fmt.Errorf("-lengths %q: want comma-separated token counts, e.g. 64,256,1024", s)
	}
	for _, n := range out {
		if n < 1 {
			return nil, fmt.Errorf("-lengths: %d is below 1; lengths are token counts, e.g. 64,256,1024", n)
		}
	}
	return out, nil
}

func pickTasks(list string) ([]string, error) {
	if list == "" {
		return tasks.Names(), nil
	}
	var out []string
	for _, t := range strings.Split(list, ",") {
		t = strings.TrimSpace(t)
		if err := tasks.Check(t); err != nil {
			return nil, fmt.Errorf("-task: %w", err)
		}
		out = append(out, t)
	}
	return out, nil
}

func pickSchemes(list string) ([]string, error) {
	if list == "" {
		return recipe.V3.Schemes, nil
	}
	var out []string
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		if !slices.Contains(recipe.Schemes(), s) {
			return nil, fmt.Errorf("-scheme: unknown scheme %q (valid: %s)", s, strings.Join(recipe.Schemes(), ", "))
		}
		out = append(out, s)
	}
	return out, nil
}
