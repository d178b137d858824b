package report

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/posformer/posformer/benchmarks/plot"
	"github.com/posformer/posformer/benchmarks/recipe"
	"github.com/posformer/posformer/engine/train/tasks"
)

// The overview puts every scheme and every task on one scale: how much of what a model does at
// its training length L it still does at k·L. The tasks' metrics differ (bits, accuracies), so
// each is measured from the task's know-nothing baseline: for an accuracy, the share of the
// model's lead over chance at L that is left at kL,
//
//	kept = (m(kL) − chance(kL)) / (m(L) − chance(L)),
//
// and for bits the same with the unigram model, whose bits the model is below:
// (unigram(kL) − m(kL)) / (unigram(L) − m(L)). 1 keeps it all (more, as ALiBi's loss falling
// past L, shows as 1), 0 is no better than the baseline. A model whose lead at L is under
// minLead of the way from the baseline to a perfect score (0 bits) never learned the task (an
// encoder without positions barely beats the unigram model): there is nothing to keep, and its
// cell is left blank rather than called a failure to extrapolate.

// overviewMetric is the metric each task is read by: token accuracy for copy and reverse,
// where whole strings past L are rare for every scheme and exact match would show only zeros.
func overviewMetric(task string) string {
	switch task {
	case tasks.LM:
		return "bits_per_byte"
	case tasks.MLM:
		return "bits_per_masked_byte"
	case tasks.Copy, tasks.Reverse:
		return "token_accuracy"
	}
	return "exact_match"
}

// minLead is the smallest lead over chance at L, as a share of the way to a perfect score, of
// a model that learned the task (mqar's schemes that did not stay under 0.03).
const minLead = 0.2

// overviewMultiples are the lengths the overview plots, in multiples of L; its table shows the
// two of overviewTable.
var overviewMultiples, overviewTable = []int{2, 4, 8, 16}, []int{4, 16}

// OverviewGrid is the overview's numbers: Kept[q][i][j] is scheme Schemes[i]'s kept share on
// task Tasks[j] at Multiples[q]·L, NaN where the task has no result for the scheme at L or kL,
// or the scheme did not learn the task at L.
type OverviewGrid struct {
	Schemes, Tasks []string // rows in the report's order (variants such as `+ randpos` left out); columns
	Multiples      []int
	Kept           [][][]float64
}

// Overview computes the grid at each multiple of L in ks.
func Overview(byTask map[string][]Result, ks []int) OverviewGrid {
	type key struct {
		task, label string
		length      int
	}
	g := OverviewGrid{Multiples: ks}
	mean := map[key]float64{}
	trainLen := map[string]int{}
	for _, task := range tasks.Names() {
		rs := byTask[task]
		if len(rs) == 0 {
			continue
		}
		g.Tasks = append(g.Tasks, task)
		trainLen[task] = TrainLen(rs)
		ss, _ := Aggregate(rs, overviewMetric(task), AllSubs)
		for _, s := range ss {
			if !IsBaseline(s.Label) && !strings.Contains(s.Label, " + ") && !slices.Contains(g.Schemes, s.Label) {
				g.Schemes = append(g.Schemes, s.Label)
			}
			for l, c := range s.Cells {
				mean[key{task, s.Label, l}] = c.Mean
			}
		}
	}
	slices.SortStableFunc(g.Schemes, func(a, b string) int { return recipe.SchemeOrder(a) - recipe.SchemeOrder(b) })
	for _, k := range ks {
		z := make([][]float64, len(g.Schemes))
		for i, s := range g.Schemes {
			z[i] = make([]float64, len(g.Tasks))
			for j, task := range g.Tasks {
				z[i][j] = keptShare(task, func(label string, length int) (float64, bool) {
					v, ok := mean[key{task, label, length}]
					return v, ok && !math.IsNaN(v)
				}, s, trainLen[task], k)
			}
		}
		g.Kept = append(g.Kept, z)
	}
	return g
}

// keptShare is one cell of the overview (see above); value looks a row's mean up by length.
func keptShare(task string, value func(label string, length int) (float64, bool), scheme string, L, k int) float64 {
	m1, ok1 := value(scheme, L)
	mk, ok2 := value(scheme, k*L)
	if !ok1 || !ok2 {
		return math.NaN()
	}
	if !tasks.HigherIsBetter(overviewMetric(task)) {
		u1, ok1 := value("unigram", L)
		uk, ok2 := value("unigram", k*L)
		if !ok1 || !ok2 || u1-m1 < minLead*u1 { // a perfect model needs 0 bits
			return math.NaN()
		}
		return clamp01((uk - mk) / (u1 - m1))
	}
	c1, ok1 := value("chance", L)
	ck, ok2 := value("chance", k*L)
	if !ok1 || !ok2 || m1-c1 < minLead*(1-c1) {
		return math.NaN()
	}
	return clamp01((mk - ck) / (m1 - c1))
}

func clamp01(x float64) float64 { return math.Max(0, math.Min(1, x)) }

// Table is the grid's numbers at the multiples ks (each one of g.Multiples): per scheme and
// task, "4L / 16L" in a cell ("·" where blank).
func (g OverviewGrid) Table(ks ...int) string {
	if len(g.Schemes) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("| scheme |")
	for _, t := range g.Tasks {
		fmt.Fprintf(&b, " %s |", t)
	}
	b.WriteString("\n| --- |" + strings.Repeat(" ---: |", len(g.Tasks)) + "\n")
	for i, s := range g.Schemes {
		fmt.Fprintf(&b, "| `%s` |", s)
		for j := range g.Tasks {
			var parts []string
			for _, k := range ks {
				v := g.Kept[slices.Index(g.Multiples, k)][i][j]
				if math.IsNaN(v) {
					parts = append(parts, "·")
				} else {
					parts = append(parts, fmt.Sprintf("%.2f", v))
				}
			}
			b.WriteString(" " + strings.Join(parts, " / ") + " |")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// PNG draws the grid, one heatmap per multiple, schemes down and tasks across, on one
// red-to-green scale from 0 to 1. Nil when there is nothing to draw.
func (g OverviewGrid) PNG() ([]byte, error) {
	if len(g.Schemes) == 0 || len(g.Tasks) == 0 {
		return nil, nil
	}
	var panels []plot.Panel
	for q, k := range g.Multiples {
		panels = append(panels, plot.Heatmap{Title: fmt.Sprintf("at %dL", k), XLabel: "task", YLabel: "scheme",
			Z: g.Kept[q], ZMin: 0, ZMax: 1, RedToGreen: true, XTicks: g.Tasks, YTicks: g.Schemes})
	}
	title := "Share of its lead over chance at L that each scheme keeps at kL (mean over seeds; grey: not learned at L)"
	return plot.Figure{Title: title, Rows: [][]plot.Panel{panels}, CellWidth: 560, CellHeight: 420, MaxCols: 2}.PNG()
}

const overviewAbout = "Every scheme on every task on one scale, computed from the tables below: the share of its lead over\n" +
	"chance at L (for lm and mlm, of its bits below the unigram model's) that a model keeps at kL, from the means over\n" +
	"seeds (the tables have the intervals). 1 keeps it all, 0 is no better than chance; blank (grey, `·`) where the\n" +
	"scheme did not learn the task at L (a lead under a fifth of the way to a perfect score) or has no result there\n" +
	"(xPos is decoder-only). Read by token accuracy on copy and reverse, exact match on passkey and mqar. The table\n" +
	"gives 4L / 16L."
