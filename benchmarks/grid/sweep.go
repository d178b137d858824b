package grid

import (
	"fmt"
	"math"
	"os"
	"strings"

	"github.com/posformer/posformer/benchmarks/recipe"
	"github.com/posformer/posformer/benchmarks/report"
)

// LRChoice is a recipe's learning-rate choice from its finished sweep: for a (sweep task,
// scheme), the rate whose model of seed 1 ended with the lowest validation loss (train.json's
// final_eval_loss, kept beside the results), once every rate of the sweep has finished. A
// diverged model (NaN) loses to any other; ties go to the rate listed first.
func LRChoice(out string, r recipe.Recipe) func(task, scheme string) (float64, bool) {
	return func(task, scheme string) (float64, bool) {
		ids := r.SweepIDs(task, scheme)
		if len(ids) == 0 {
			return 0, false
		}
		best, bestLoss := r.LRs[0], math.Inf(1)
		for i, id := range ids {
			t, name, _ := strings.Cut(id, "/")
			c := Cell{Model: recipe.Model{Task: t, Name: name}}
			if !Done(out, c) {
				return 0, false
			}
			ti, err := KeptInfo(out, c)
			if err != nil {
				return 0, false
			}
			if loss := float64(ti.FinalEvalLoss); !math.IsNaN(loss) && loss < bestLoss {
				best, bestLoss = r.LRs[i], loss
			}
		}
		return best, true
	}
}

// KeptInfo reads the train.json kept beside a trained cell's results (keepCurve).
func KeptInfo(out string, c Cell) (*recipe.TrainInfo, error) {
	path := strings.TrimSuffix(CurvePath(out, c), ".loss.csv") + ".train.json"
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	ti, err := recipe.ParseTrainInfo(data)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return ti, nil
}

// Wave is the part of a grid to run now: the cells whose command is final (not Waiting on a
// sweep), and, while any of the papers' rows (first) is left to run, only those. Finished
// cells stay in, so that a fine-tune finds its base. A run goes wave by wave, re-reading the
// recipe between them: a finished sweep turns its waiting cells into runnable ones.
func Wave(out string, cells []Cell, first map[string][]string) []Cell {
	finished := Finished(out, cells)
	papersLeft := false
	for _, c := range cells {
		if c.Waiting == "" && !finished[c.ID()] && tierOf(c, first) <= 1 && !c.Baseline {
			papersLeft = true
		}
	}
	var wave []Cell
	todo := 0
	for _, c := range cells {
		if c.Waiting != "" {
			continue
		}
		if finished[c.ID()] || !papersLeft || tierOf(c, first) <= 1 {
			wave = append(wave, c)
			if !finished[c.ID()] {
				todo++
			}
		}
	}
	if todo == 0 {
		return nil
	}
	return wave
}

// Waiting counts the cells whose command waits on a sweep.
func Waiting(cells []Cell) int {
	n := 0
	for _, c := range cells {
		if c.Waiting != "" {
			n++
		}
	}
	return n
}

// SweepLabels relabels a task's results by the learning-rate sweep's choice: the rows of the
// model at the chosen rate are the scheme's seed-1 rows (a sweep model's "lr=..." dropped from
// its label); the other rates' models keep "lr=<rate>" in front of every row's label, so that
// they never join the scheme's seeds. Before the choice is made every sweep model is labelled
// by its rate.
func SweepLabels(r recipe.Recipe, task string, rs []report.Result) []report.Result {
	if r.LRSweeps[task] != task || len(r.LRs) == 0 {
		return rs
	}
	rate := map[string]float64{} // sweep model name -> its rate
	scheme := map[string]string{}
	for _, s := range r.Schemes {
		for i, id := range r.SweepIDs(task, s) {
			_, name, _ := strings.Cut(id, "/")
			rate[name], scheme[name] = r.LRs[i], s
		}
	}
	out := make([]report.Result, 0, len(rs))
	for _, x := range rs {
		lr, ok := rate[x.Model]
		if !ok {
			out = append(out, x)
			continue
		}
		tag := recipe.SweepVariant(lr)
		rest := strings.TrimPrefix(strings.TrimPrefix(x.Variant, tag), " · ")
		chosen := false
		if r.Choose != nil {
			c, ok := r.Choose(task, scheme[x.Model])
			chosen = ok && c == lr
		}
		switch {
		case chosen:
			x.Variant = rest
		case rest == "":
			x.Variant = tag
		default:
			x.Variant = tag + " · " + rest
		}
		out = append(out, x)
	}
	return out
}
