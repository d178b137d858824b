package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/posformer/posformer/benchmarks/stats"
	"github.com/posformer/posformer/engine/train/tasks"
)

// CostTable is what the grid's models took, per task: training from each model's train.json and
// evaluation from its eval.json, both on one core of two. Some models have neither record (copy's
// and reverse's first seed were trained before the grid kept curves, and the earliest models'
// evaluations were not timed): those count at the mean of their label's recorded seeds, or of their task's
// where no seed of the label has one, and the table says how many were estimated so. The sums are
// the grid as it ran, across machines and versions of the engine, not what a run from scratch
// takes today (that is `--full -plan`).
func CostTable(byTask map[string][]Result, curves map[string][]Curve) string {
	var b strings.Builder
	b.WriteString("| task | models | training h | models without a kept curve | evaluation h | models without a timed evaluation |\n" +
		"| --- | ---: | ---: | ---: | ---: | ---: |\n")
	var models, noTrain, noEval int
	var train, eval float64
	var untimed []string
	for _, task := range tasks.Names() {
		c := taskCost(byTask[task], curves[task])
		if c.models == 0 {
			continue
		}
		evalText := fmt.Sprintf("%.1f", c.eval/3600)
		if c.noEval == c.models {
			evalText, untimed = "—", append(untimed, task)
		}
		fmt.Fprintf(&b, "| %s | %d | %.1f | %d | %s | %d |\n", task, c.models, c.train/3600, c.noTrain, evalText, c.noEval)
		models, noTrain, noEval = models+c.models, noTrain+c.noTrain, noEval+c.noEval
		train, eval = train+c.train, eval+c.eval
	}
	fmt.Fprintf(&b, "| all | %d | %.1f | %d | %.1f | %d |\n", models, train/3600, noTrain, eval/3600, noEval)
	fmt.Fprintf(&b, "\nTwo models at a time on 2 cores: about %.1f h of the machine", (train+eval)/3600/2)
	if len(untimed) > 0 {
		fmt.Fprintf(&b, ", without the evaluation of %s (no model of theirs was timed)", strings.Join(untimed, ", "))
	}
	b.WriteString(".\n")
	return b.String()
}

type cost struct {
	models, noTrain, noEval int
	train, eval             float64 // seconds
}

// taskCost sums a task's trained models (trainedModels), filling the missing records as
// CostTable says.
func taskCost(rs []Result, cs []Curve) cost {
	type rec struct{ train, eval []float64 }
	byLabel := map[string]*rec{}
	var all rec
	recorded := map[string]Curve{}
	for _, c := range cs {
		recorded[modelKey(c.Label, c.Info.Seed)] = c
		r := byLabel[c.Label]
		if r == nil {
			r = &rec{}
			byLabel[c.Label] = r
		}
		secs, _ := c.Info.CoreSeconds()
		r.train, all.train = append(r.train, secs), append(all.train, secs)
		if !math.IsNaN(c.EvalSeconds) {
			r.eval, all.eval = append(r.eval, c.EvalSeconds), append(all.eval, c.EvalSeconds)
		}
	}
	// The label's mean where it has records, else the task's; 0 where the task has none either
	// (CostTable then shows the task as untimed rather than summing it).
	fill := func(label string, pick func(*rec) []float64) float64 {
		xs := pick(&all)
		if r := byLabel[label]; r != nil && len(pick(r)) > 0 {
			xs = pick(r)
		}
		if len(xs) == 0 {
			return 0
		}
		return stats.Summarize(xs).Mean
	}
	var out cost
	for _, r := range trainedModels(rs) {
		out.models++
		c, ok := recorded[modelKey(r.Label(), r.Seed)]
		if ok {
			secs, _ := c.Info.CoreSeconds()
			out.train += secs
		} else {
			out.noTrain++
			out.train += fill(r.Label(), func(r *rec) []float64 { return r.train })
		}
		if ok && !math.IsNaN(c.EvalSeconds) {
			out.eval += c.EvalSeconds
		} else {
			out.noEval++
			out.eval += fill(r.Label(), func(r *rec) []float64 { return r.eval })
		}
	}
	return out
}
