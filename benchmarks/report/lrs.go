package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/posformer/posformer/benchmarks/recipe"
)

// v3Label is a kept curve's row label where train.json alone does not tell the variant (a BOS
// row, a fine-tune without interpolation, a v3 variant): read from the model's folder name,
// which the recipe builds from the variant's tag (recipe.ModelName).
func v3Label(c Curve) string {
	if c.Label != c.Info.Scheme {
		return c.Label
	}
	r := recipe.V3
	tagged := func(tag string) bool { return c.Name == recipe.ModelName(c.Info.Scheme, tag, c.Info.Seed) }
	for _, v := range r.Variants {
		if slices.Contains(v.Schemes, c.Info.Scheme) && tagged(v.Tag) {
			return c.Info.Scheme + " + " + v.Label
		}
	}
	for _, ft := range r.FineTunes {
		if tagged(ft.Tag) {
			return c.Info.Scheme + " + " + ft.Label
		}
	}
	return c.Label
}

// LRRow is one model of a learning-rate sweep.
type LRRow struct {
	Task, Scheme string
	Rate, Loss   float64 // the validation loss at L at the end (train.json's final_eval_loss)
	Chosen       bool
	DivergedAt   int // the step its loss stopped being finite (0: it did not)
}

// sweepRate is the rate of a sweep model of seed 1 by its name (recipe.SweepIDs: the default
// rate's model is the scheme's plain one), or false.
func sweepRate(r recipe.Recipe, scheme, name string) (float64, bool) {
	for _, lr := range r.LRs {
		want := recipe.ModelName(scheme, "lr"+strconv.FormatFloat(lr, 'g', -1, 64), 1)
		if lr == r.DefaultLR() {
			want = recipe.ModelName(scheme, "", 1)
		}
		if name == want {
			return lr, true
		}
	}
	return 0, false
}

// SplitSweep separates a sweep task's kept curves: the learning-rate table's rows, and the curves
// of the tables' models (the chosen rate's model as its scheme's seed 1; the other rates' models
// left out, as the results leave them out). The choice is grid.LRChoice's: the lowest
// validation loss once every rate has finished, a diverged (NaN) model losing to any, ties to
// the rate listed first; until then every rate is shown and none chosen.
func SplitSweep(task string, cs []Curve) (rows []LRRow, kept []Curve) {
	r := recipe.V3
	if r.LRSweeps[task] != task {
		return nil, cs
	}
	byScheme := map[string][]int{} // indices into cs
	for i, c := range cs {
		if _, ok := sweepRate(r, c.Info.Scheme, c.Name); ok {
			byScheme[c.Info.Scheme] = append(byScheme[c.Info.Scheme], i)
		}
	}
	drop := map[int]bool{}
	for _, scheme := range r.Schemes {
		idx := byScheme[scheme]
		if len(idx) == 0 {
			continue
		}
		chosen := -1
		if len(idx) == len(r.LRs) {
			best := math.Inf(1)
			for _, lr := range r.LRs {
				for _, i := range idx {
					if rate, _ := sweepRate(r, scheme, cs[i].Name); rate == lr {
						if l := float64(cs[i].Info.FinalEvalLoss); !math.IsNaN(l) && l < best {
							chosen, best = i, l
						}
					}
				}
			}
		}
		for _, i := range idx {
			rate, _ := sweepRate(r, scheme, cs[i].Name)
			rows = append(rows, LRRow{Task: task, Scheme: scheme, Rate: rate, Loss: float64(cs[i].Info.FinalEvalLoss), Chosen: i == chosen,
				DivergedAt: cs[i].Info.DivergedAt})
			if i != chosen {
				drop[i] = true
			}
		}
	}
	for i, c := range cs {
		if !drop[i] {
			kept = append(kept, c)
		}
	}
	slices.SortStableFunc(rows, func(a, b LRRow) int {
		if a.Scheme != b.Scheme {
			return recipe.SchemeOrder(a.Scheme) - recipe.SchemeOrder(b.Scheme)
		}
		return cmp.Compare(a.Rate, b.Rate)
	})
	return rows, kept
}

// LRTable renders the sweeps: per task and scheme, each rate's validation loss, the chosen one
// in bold.
func LRTable(rows []LRRow) string {
	if len(rows) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("| task | scheme | learning rate | validation loss at L (nats) | chosen |\n| --- | --- | ---: | ---: | :---: |\n")
	for _, x := range rows {
		mark, loss := "", Num(x.Loss)
		if x.DivergedAt > 0 {
			loss = fmt.Sprintf("diverged at step %d", x.DivergedAt)
		}
		if x.Chosen {
			mark, loss = "✓", "**"+loss+"**"
		}
		fmt.Fprintf(&b, "| %s | `%s` | %g | %s | %s |\n", x.Task, x.Scheme, x.Rate, loss, mark)
	}
	return b.String()
}

// KeptCost is the "Cost" table: per task, hours of one core spent training (every kept
// train.json's CoreSeconds, the sweeps' other rates included) and evaluating (eval.json).
func KeptCost(curves map[string][]Curve, taskNames []string) string {
	var b strings.Builder
	b.WriteString("| task | models | training h | evaluation h | models without an eval.json |\n| --- | ---: | ---: | ---: | ---: |\n")
	var n, noEval int
	var train, eval float64
	for _, task := range taskNames {
		cs := curves[task]
		if len(cs) == 0 {
			continue
		}
		var tr, ev float64
		ne := 0
		for _, c := range cs {
			secs, _ := c.Info.CoreSeconds()
			tr += secs
			if math.IsNaN(c.EvalSeconds) {
				ne++
			} else {
				ev += c.EvalSeconds
			}
		}
		fmt.Fprintf(&b, "| %s | %d | %.1f | %.1f | %d |\n", task, len(cs), tr/3600, ev/3600, ne)
		n, noEval, train, eval = n+len(cs), noEval+ne, train+tr, eval+ev
	}
	fmt.Fprintf(&b, "| all | %d | %.1f | %.1f | %d |\n\nHours of one core (one of two, both busy); the machine took about half the sum, %.1f h.\n", n, train/3600, eval/3600, noEval, (train+eval)/3600/2)
	return b.String()
}
