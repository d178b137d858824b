// Command bench is the extrapolation benchmark (issue 7): every positional scheme, trained alike
// on each task at length L, scored at lengths past L. It evaluates the checkpoints shipped in
// weights/bench (or retrains them with --full), writes benchmarks/results/<task>.csv, PNG plots
// and benchmarks/RESULTS.md, all atomically, and shows a progress bar.
//
//	go run ./cmd/bench                  # evaluate the shipped checkpoints at every length
//	go run ./cmd/bench --quick          # fewer lengths and examples, < 60 s; tables on stdout
//	go run ./cmd/bench --full           # retrain every model, then evaluate (ETA shown first)
//	go run ./cmd/bench -task lm -scheme rope,alibi
//	go run ./cmd/bench -m DIR -task copy    # one checkpoint, tables on stdout
//	go run ./cmd/bench -report              # rewrite RESULTS.md and plots from the CSVs
//	go run ./cmd/bench -task lm -scheme rope --rope-scaling yarn --rope-scale 8   # an extra RoPE row
//
// Tasks and their metrics are in benchmarks/tasks; the training recipe, identical for every
// scheme of a task, is in recipe.go.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/posformer/posformer/cmd/internal/ropeflags"
)

// modes are sub-commands selected by the first argument (-NAME or --NAME), each parsing its own
// flags: `go run ./cmd/bench -speed ...`. Other files register theirs from init, so the
// benchmark's flags below stay its own.
var modes = map[string]func(args []string) error{}

type options struct {
	quick, full, resume bool
	reportOnly          bool
	tasks, schemes      []string
	lengths             []int
	weights, out        string
	model               string
	backend             string
	seeds, jobs         int
}

func main() {
	if len(os.Args) > 1 {
		name := strings.TrimLeft(os.Args[1], "-")
		if run, ok := modes[name]; ok && strings.HasPrefix(os.Args[1], "-") {
			if err := run(os.Args[2:]); err != nil {
				fmt.Fprintf(os.Stderr, "bench %s: %v\n", name, err)
				os.Exit(1)
			}
			return
		}
	}
	o, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (options, error) {
	var o options
	var taskList, schemeList, lengthList string
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.BoolVar(&o.quick, "quick", false, "re-evaluate the shipped checkpoints on fewer lengths and examples (< 60 s); tables on stdout, CSVs in benchmarks/results/quick")
	fs.BoolVar(&o.full, "full", false, "retrain every selected model from scratch (into -weights), then evaluate")
	fs.BoolVar(&o.reportOnly, "report", false, "only rewrite RESULTS.md and the plots from the CSVs in <o>/results (no evaluation)")
	fs.BoolVar(&o.resume, "resume", false, "with --full: keep finished models and resume interrupted ones")
	fs.StringVar(&taskList, "task", "", "comma-separated tasks (default all): "+strings.Join(taskNames(), ", "))
	fs.StringVar(&schemeList, "scheme", "", "comma-separated schemes (default all): see positional.Names()")
	fs.StringVar(&lengthList, "lengths", "", "comma-separated evaluation lengths in tokens (default: per task, 1x..16x L)")
	fs.StringVar(&o.weights, "weights", "weights/bench", "checkpoint root: <weights>/<task>/<scheme>[-seedN]/")
	fs.StringVar(&o.out, "o", "benchmarks", "output root: <o>/RESULTS.md and <o>/results/")
	fs.StringVar(&o.model, "m", "", "evaluate this one checkpoint directory (needs -task); tables on stdout")
	fs.StringVar(&o.backend, "backend", "", "cpu (default, or $GOMLX_BACKEND; cpu:threads=N), go (GoMLX pure Go), xla:cpu or xla:cuda")
	userRope = ropeflags.Register(fs)
	fs.IntVar(&o.seeds, "seeds", 0, "with --full: seeds per model (0: the recipe's, 3 for copy and 1 otherwise)")
	fs.IntVar(&o.jobs, "jobs", runtime.NumCPU(), "with --full: models trained at once, each on NumCPU/jobs cores (tiny models train faster one per core)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(os.Stderr)
			fmt.Fprintln(os.Stderr, "usage: bench [--quick | --full [-resume]] [-task T,...] [-scheme S,...] [-lengths N,...] [-m DIR]")
			fs.PrintDefaults()
			return o, err
		}
		return o, fmt.Errorf("%v (run with -h for the flags)", err)
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q; flags only (see -h)", fs.Arg(0))
	}
	if o.quick && o.full {
		return o, fmt.Errorf("--quick and --full exclude each other: --quick only evaluates, --full retrains")
	}
	if o.resume && !o.full {
		return o, fmt.Errorf("-resume continues an interrupted --full run; add --full")
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
	return o, nil
}

// parseLengths reads -lengths; every length must be at least 1.
func parseLengths(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("-lengths %q: want comma-separated token counts, e.g. 64,256,1024", s)
		}
		if n < 1 {
			return nil, fmt.Errorf("-lengths: %d is below 1; lengths are token counts, e.g. 64,256,1024", n)
		}
		out = append(out, n)
	}
	return out, nil
}
