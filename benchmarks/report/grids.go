package report

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/posformer/posformer/benchmarks/plot"
	"github.com/posformer/posformer/engine/train/tasks"
)

// PlotSubGrid draws a task's metric by length and by depth (passkey: the needle-in-a-haystack
// grid, depth down, length across) or by number of pairs (mqar), one heatmap per model on one
// colour scale from 0 to 1, mean over seeds; a cell with no sequences (mqar has more pairs at
// longer lengths) is grey. Nil when the task has no such axis or nothing to draw.
func PlotSubGrid(rs []Result, task, metric string) ([]byte, error) {
	sub := tasks.Sub(task)
	subs := Subs(rs, metric)
	if sub == "" || len(subs) == 0 {
		return nil, nil
	}
	var lengths []int
	bySub := make([]map[string]Series, len(subs))
	var labels []string
	for i, d := range subs {
		ss, ls := Aggregate(rs, metric, d)
		for _, l := range ls {
			if !slices.Contains(lengths, l) {
				lengths = append(lengths, l)
			}
		}
		bySub[i] = map[string]Series{}
		for _, s := range ss {
			if IsBaseline(s.Label) {
				continue
			}
			if !slices.Contains(labels, s.Label) {
				labels = append(labels, s.Label)
			}
			bySub[i][s.Label] = s
		}
	}
	slices.Sort(lengths)
	if len(labels) == 0 {
		return nil, nil
	}
	L := TrainLen(rs)
	xt := make([]string, len(lengths))
	for j, l := range lengths {
		xt[j] = strconv.Itoa(l / L)
		if l%L != 0 {
			xt[j] = strconv.FormatFloat(float64(l)/float64(L), 'g', 3, 64)
		}
	}
	yt := make([]string, len(subs))
	for i, d := range subs {
		yt[i] = DepthString(d)
	}
	var panels []plot.Panel
	for _, lab := range labels {
		z := make([][]float64, len(subs))
		for i := range subs {
			z[i] = make([]float64, len(lengths))
			for j, l := range lengths {
				z[i][j] = math.NaN()
				if c, ok := bySub[i][lab].Cells[l]; ok {
					z[i][j] = c.Mean
				}
			}
		}
		panels = append(panels, plot.Heatmap{Title: lab, XLabel: "length (× L)", YLabel: sub, Z: z,
			ZMin: 0, ZMax: 1, RedToGreen: true, XTicks: xt, YTicks: yt})
	}
	title := fmt.Sprintf("%s: %s by %s and length (L = %d), mean over seeds", task, metric, sub, L)
	return plot.Figure{Title: title, Rows: [][]plot.Panel{panels}, CellWidth: 280, CellHeight: 240, MaxCols: 5}.PNG()
}
