package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/posformer/posformer/benchmarks/plot"
	"github.com/posformer/posformer/benchmarks/recipe"
	"github.com/posformer/posformer/benchmarks/stats"
)

// Curve is one trained model's record as the grid keeps it beside the results
// (results/curves/<task>/<name>.loss.csv and .train.json): how it stopped, and its held-out
// loss at L at every evaluation.
type Curve struct {
	Name, Label string
	Info        recipe.TrainInfo
	Steps       []float64
	Eval        []float64 // held-out loss at L, nats per scored token
	EvalSeconds float64   // the model's evaluation time on one core (EvalTime.CoreSeconds); NaN where not recorded (no eval.json)
}

// EvalTime is a model's evaluation time, kept by the grid beside its curve as
// <name>.eval.json: a grid's time is its models' training (train.json) and this.
type EvalTime struct {
	Seconds   float64 `json:"eval_seconds"`
	Threads   int     `json:"threads"`
	ThreadCPU float64 `json:"thread_cpu_seconds,omitempty"` // the evaluating thread's CPU time (0: not measured)
}

// CoreSeconds is the evaluation's cost in seconds of one core: the thread's CPU time where it ran
// on one thread and was measured, else its wall time.
func (et EvalTime) CoreSeconds() float64 {
	secs, _ := recipe.CoreSeconds(et.ThreadCPU, et.Seconds, et.Threads)
	return secs
}

// ReadCurves reads a task's kept curves (none if the folder is absent: a report of v1, or a grid
// that has not trained that task yet).
func ReadCurves(out, task string) ([]Curve, error) {
	dir := filepath.Join(out, "results", "curves", task)
	infos, err := filepath.Glob(filepath.Join(dir, "*.train.json"))
	if err != nil {
		return nil, err
	}
	var cs []Curve
	for _, path := range infos {
		c := Curve{Name: strings.TrimSuffix(filepath.Base(path), ".train.json")}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(data, &c.Info); err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		c.Label = c.Info.Scheme
		if v := c.Info.Variant(); v != "" {
			c.Label += " + " + v
		}
		lossPath := filepath.Join(dir, c.Name+".loss.csv")
		data, err = os.ReadFile(lossPath)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		recs, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", lossPath, err)
		}
		for i, r := range recs {
			if i == 0 || len(r) < 3 {
				continue // the header
			}
			step, err1 := strconv.ParseFloat(r[0], 64)
			loss, err2 := strconv.ParseFloat(r[2], 64)
			if err := errors.Join(err1, err2); err != nil {
				return nil, fmt.Errorf("reading %s: %w", lossPath, err)
			}
			c.Steps, c.Eval = append(c.Steps, step), append(c.Eval, loss)
		}
		_, curveWall := recipe.CurveEnd(data)
		c.Info.WallSeconds = max(c.Info.WallSeconds, curveWall)
		c.EvalSeconds = math.NaN()
		evalPath := filepath.Join(dir, c.Name+".eval.json")
		if data, err := os.ReadFile(evalPath); err == nil {
			var et EvalTime
			if err := json.Unmarshal(data, &et); err != nil {
				return nil, fmt.Errorf("reading %s: %w", evalPath, err)
			}
			c.EvalSeconds = et.CoreSeconds()
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		cs = append(cs, c)
	}
	sort.SliceStable(cs, func(i, j int) bool {
		if a, b := labelOrder(cs[i].Label), labelOrder(cs[j].Label); a != b {
			return a < b
		}
		return cs[i].Info.Seed < cs[j].Info.Seed
	})
	return cs, nil
}

// modelKey names one trained model among a task's: its label and seed.
func modelKey(label string, seed int) string { return fmt.Sprintf("%s/%d", label, seed) }

// trainedModels is one result for each model the results name that was trained: not the
// baselines, nor the rows scored from another model's checkpoint (recipe.EvalOnly).
func trainedModels(rs []Result) []Result {
	var out []Result
	seen := map[string]bool{}
	for _, r := range rs {
		key := modelKey(r.Label(), r.Seed)
		if IsBaseline(r.Label()) || recipe.EvalOnly(r.Variant) || seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, r)
	}
	return out
}

// TrainingSection is a task's "training" subsection: per label, how the seeds stopped, their
// steps, final held-out loss and time on one core; the models that reached the cap by name; the models
// of the results whose curves were not kept. rs are the task's results (for that last list).
// It is empty for a task with nothing trained (baselines only).
func TrainingSection(task string, cs []Curve, rs []Result, plotName string) string {
	kept := map[string]bool{}
	for _, c := range cs {
		kept[modelKey(c.Label, c.Info.Seed)] = true
	}
	var lost []string
	for _, r := range trainedModels(rs) {
		if !kept[modelKey(r.Label(), r.Seed)] {
			lost = append(lost, fmt.Sprintf("`%s` seed %d", r.Label(), r.Seed))
		}
	}
	if len(cs) == 0 && len(lost) == 0 {
		return "" // baselines only: nothing was trained
	}
	var b strings.Builder
	b.WriteString("\n### training\n\n")
	if plotName != "" {
		fmt.Fprintf(&b, "![%s held-out loss during training](results/%s)\n\n", task, plotName)
	}
	if len(cs) > 0 {
		b.WriteString("Held-out loss at L (nats per scored token) at the last evaluation. Stopped by the plateau rule or at the step cap " +
			"(fine-tunes run a fixed number of steps, at their own length); time on one core of two, both busy: the thread's CPU " +
			"time where train.json and eval.json record it, else wall time.\n\n")
		b.WriteString("| model | seeds | stopped by the plateau | steps | held-out loss | train min | eval min |\n| --- | ---: | ---: | --- | --- | ---: | ---: |\n")
	}
	byLabel := map[string][]Curve{}
	var labels []string
	for _, c := range cs {
		if byLabel[c.Label] == nil {
			labels = append(labels, c.Label)
		}
		byLabel[c.Label] = append(byLabel[c.Label], c)
	}
	var capped []string
	total, evalTotal, evalN := 0.0, 0.0, 0
	for _, l := range labels {
		var plateau int
		var steps []string
		var loss, train, eval []float64
		for _, c := range byLabel[l] {
			switch {
			case c.Info.Plateaued():
				plateau++
			case strings.HasPrefix(c.Info.Stop, "step cap"):
				capped = append(capped, fmt.Sprintf("`%s` seed %d (%s)", l, c.Info.Seed, Num(float64(c.Info.FinalEvalLoss))))
			} // else a fixed number of steps (a fine-tune): neither
			secs, _ := c.Info.CoreSeconds()
			total += secs
			steps = append(steps, strconv.Itoa(c.Info.Steps))
			loss = append(loss, float64(c.Info.FinalEvalLoss))
			train = append(train, secs/60)
			if !math.IsNaN(c.EvalSeconds) {
				eval = append(eval, c.EvalSeconds/60)
				evalTotal, evalN = evalTotal+c.EvalSeconds, evalN+1
			}
		}
		n := len(byLabel[l])
		evalText := "—"
		if len(eval) > 0 {
			evalText = fmt.Sprintf("%.1f", stats.Summarize(eval).Mean)
		}
		fmt.Fprintf(&b, "| `%s` | %d | %d of %d | %s | %s | %.0f | %s |\n", l, n, plateau, n, strings.Join(steps, ", "),
			fmtSummary(stats.Summarize(loss)), stats.Summarize(train).Mean, evalText)
	}
	if len(cs) > 0 {
		fmt.Fprintf(&b, "\n%d models, %.1f h of training on one core in all.", len(cs), total/3600)
		if evalN > 0 {
			fmt.Fprintf(&b, " Evaluation (every length and row of the tables above, where an eval.json records it; \"eval min\", mean over the timed seeds): %d models, %s, %.1f min a model.", evalN, duration(evalTotal), evalTotal/60/float64(evalN))
		}
		b.WriteString("\n")
	}
	if len(capped) > 0 {
		fmt.Fprintf(&b, "\nAt the step cap while still improving (the plateau rule never fired: every 500 steps gained 1%% or more; final held-out loss): %s.\n", strings.Join(capped, ", "))
	}
	if len(lost) > 0 {
		fmt.Fprintf(&b, "\nCurves not kept (trained before the grid kept them beside the results): %s.\n", strings.Join(lost, ", "))
	}
	return b.String()
}

// duration is seconds as hours, or minutes under an hour.
func duration(secs float64) string {
	if secs < 3600 {
		return fmt.Sprintf("%.0f min", secs/60)
	}
	return fmt.Sprintf("%.1f h", secs/3600)
}

// fmtSummary is a mean with its interval's half width, or the value alone for one seed.
func fmtSummary(s stats.Summary) string {
	if s.N == 0 {
		return "-"
	}
	if !s.HasInterval() {
		return Num(s.Mean)
	}
	return Num(s.Mean) + " ± " + Num(s.HalfWidth())
}

// PlotCurves draws seed 1's held-out loss against the step, a curve per label, on a log scale
// (the synthetic tasks fall by decades). Nil when there is nothing to draw.
func PlotCurves(task string, cs []Curve) ([]byte, error) {
	var ss []plot.Series
	for _, c := range cs {
		if c.Info.Seed != 1 || c.Info.Init != "" {
			continue // one seed keeps the lines apart; fine-tunes start mid-way on other lengths
		}
		s := plot.Series{Label: c.Label, Style: 1 + len(ss)}
		for i, y := range c.Eval {
			if y > 0 && !math.IsNaN(y) {
				s.X, s.Y = append(s.X, c.Steps[i]), append(s.Y, y)
			}
		}
		if len(s.X) > 0 {
			ss = append(ss, s)
		}
	}
	if len(ss) == 0 {
		return nil, nil
	}
	l := plot.Lines{Title: task + ": held-out loss at L during training, seed 1", XLabel: "step", YLabel: "nats per scored token",
		Series: ss, LogY: true, MaxLegend: 24}
	return plot.Figure{Rows: [][]plot.Panel{{l}}, CellWidth: 760, CellHeight: 520}.PNG()
}
