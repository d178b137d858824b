package pe

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/posformer/posformer/benchmarks/plot"
	"github.com/posformer/posformer/models"
)

// emit writes data to path atomically, or to stdout when path is empty.
func emit(data []byte, path string, stdout io.Writer) error {
	if path == "" {
		_, err := stdout.Write(data)
		return err
	}
	return models.WriteFileAtomic(path, data)
}

func writeJSON(rep *report, path string, stdout io.Writer) error {
	data, err := json.Marshal(rep)
	if err != nil {
		return fmt.Errorf("%s: encoding JSON: %w", rep.Scheme, err)
	}
	return emit(append(data, '\n'), path, stdout)
}

// writeCSV prints the main matrix in long form, one value per row under a header: the code
// table (pos,dim,value), else the bias (head,i,j,value), else the scores (head,i,j,value),
// else the buckets (i,j,bucket).
func writeCSV(rep *report, path string, stdout io.Writer) error {
	var b bytes.Buffer
	num := func(v float32) string { return strconv.FormatFloat(float64(v), 'g', -1, 32) }
	heads := func(m [][][]float32) {
		b.WriteString("head,i,j,value\n")
		for h, rows := range m {
			for i, row := range rows {
				for j, v := range row {
					fmt.Fprintf(&b, "%d,%d,%d,%s\n", h, i, j, num(v))
				}
			}
		}
	}
	switch {
	case rep.Table != nil:
		b.WriteString("pos,dim,value\n")
		for p, row := range rep.Table {
			for d, v := range row {
				fmt.Fprintf(&b, "%d,%d,%s\n", p, d, num(v))
			}
		}
	case rep.Bias != nil:
		heads(rep.Bias)
	case rep.Scores != nil:
		heads(rep.Scores)
	case rep.Buckets != nil:
		b.WriteString("i,j,bucket\n")
		for i, row := range rep.Buckets {
			for j, v := range row {
				fmt.Fprintf(&b, "%d,%d,%d\n", i, j, v)
			}
		}
	default:
		return fmt.Errorf("%s: nothing to print: no code table, bias, scores or buckets (hooks: %s); try -format json", rep.Scheme, hookList(rep))
	}
	return emit(b.Bytes(), path, stdout)
}

func hookList(rep *report) string {
	if len(rep.Hooks) == 0 {
		return "none"
	}
	return strings.Join(rep.Hooks, ", ")
}

func writePNG(rep *report, path string) error {
	fig, err := figure(rep)
	if err != nil {
		return err
	}
	data, err := fig.PNG()
	if err != nil {
		return err
	}
	return models.WriteFileAtomic(path, data)
}

// figure lays out one row of panels per view: the code table beside its dot-product decay,
// the bias per head, the scores per head with their decay with distance, the buckets.
func figure(rep *report) (plot.Figure, error) {
	fig := plot.Figure{Title: title(rep), MaxCols: 4}
	if rep.Table == nil && rep.Bias == nil && rep.Scores == nil && rep.Buckets == nil {
		return fig, fmt.Errorf("%s: nothing to draw: no code table, bias, scores or buckets (hooks: %s)", rep.Scheme, hookList(rep))
	}
	causal := rep.Kind == models.Decoder
	if rep.Table != nil {
		// Averaged over i: a code need not say anything at position 0 (FLOATER's starts at 0).
		dot := make([]float64, rep.Len)
		for k := range dot {
			for i := 0; i+k < rep.Len; i++ {
				for d, v := range rep.Table[i] {
					dot[k] += float64(v) * float64(rep.Table[i+k][d])
				}
			}
			dot[k] /= float64(rep.Len - k)
		}
		lineTitle := "<PE(i), PE(i+k)>, mean over i"
		if rep.Rotation != nil {
			lineTitle += fmt.Sprintf("   (rotation residual %.2g)", *rep.Rotation)
		}
		fig.Rows = append(fig.Rows, []plot.Panel{
			heatmap("code PE(pos, d)", "dimension d", "position pos", rows32(rep.Table), false),
			plot.Lines{Title: lineTitle, XLabel: "k", YLabel: "dot product", Series: []plot.Series{{X: iota64(rep.Len), Y: dot}}},
		})
	}
	if rep.Bias != nil {
		fig.Rows = append(fig.Rows, perHead("bias", rep.Bias, rep.Slopes, causal))
	}
	var last []plot.Panel
	if rep.Scores != nil {
		heads := perHead("logits", rep.Scores, nil, causal)
		line := plot.Lines{
			Title:  fmt.Sprintf("logit vs distance (query at %d, key at %d-k)", rep.Len-1, rep.Len-1),
			XLabel: "distance k", YLabel: "logit", Series: decay(rep.Scores),
		}
		if len(heads) < fig.MaxCols { // the decay curve beside the heads, else below them
			fig.Rows = append(fig.Rows, append(heads, line))
		} else {
			fig.Rows, last = append(fig.Rows, heads), append(last, line)
		}
	}
	if rep.Buckets != nil {
		b := make([][]float64, len(rep.Buckets))
		for i, row := range rep.Buckets {
			b[i] = make([]float64, len(row))
			for j, v := range row {
				b[i][j] = float64(v)
			}
		}
		last = append(last, heatmap("buckets", "key j", "query i", b, causal))
	}
	fig.Rows = append(fig.Rows, last)
	return fig, nil
}

func title(rep *report) string {
	t := fmt.Sprintf("%s · %s · len %d · dim %d · %d heads · layer %d", rep.Scheme, rep.Kind, rep.Len, rep.Dim, rep.Heads, rep.Layer)
	var opts []string
	for k, v := range rep.Options {
		opts = append(opts, fmt.Sprintf("%s=%v", k, v))
	}
	sort.Strings(opts)
	if len(opts) > 0 {
		t += " · " + strings.Join(opts, " ")
	}
	if rep.SSMax != nil {
		// The factor the scores carry, for the query that sees all len keys.
		var f []string
		for _, x := range rep.SSMax.Factor {
			f = append(f, strconv.FormatFloat(x, 'f', 3, 64))
		}
		t += fmt.Sprintf(" · ssmax s·ln %d = %s", rep.Len, strings.Join(f, ", "))
	}
	if rep.Model != "" {
		t += " · " + rep.Model
	}
	return t
}

// perHead draws one heatmap per head, or a single one when every head is the same (as the
// logits of RoPE are for a constant content vector).
func perHead(what string, m [][][]float32, slopes []float64, causal bool) []plot.Panel {
	if len(m) > 1 && allEqual(m) {
		return []plot.Panel{heatmap(what+", every head", "key j", "query i", rows32(m[0]), causal)}
	}
	var row []plot.Panel
	for h := range m {
		t := fmt.Sprintf("%s, head %d", what, h)
		if h < len(slopes) {
			t += fmt.Sprintf(" (slope %.3g)", slopes[h])
		}
		row = append(row, heatmap(t, "key j", "query i", rows32(m[h]), causal))
	}
	return row
}

// allEqual reports whether every head's matrix equals the first's, up to float32 rounding.
func allEqual(m [][][]float32) bool {
	for _, head := range m[1:] {
		for i, row := range head {
			for j, v := range row {
				ref := float64(m[0][i][j])
				if math.Abs(float64(v)-ref) > 1e-6*max(1, math.Abs(ref)) {
					return false
				}
			}
		}
	}
	return true
}

// heatmap draws m; in a decoder the keys after the query (j > i), which the causal mask hides
// from attention, are greyed out.
func heatmap(title, x, y string, m [][]float64, causal bool) plot.Heatmap {
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, row := range m {
		for j, v := range row {
			if causal && j > i {
				row[j] = math.NaN()
				continue
			}
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	if causal {
		title += ", j > i masked"
	}
	return plot.Heatmap{Title: title, XLabel: x, YLabel: y, Z: m, Diverging: lo < 0 && hi > 0}
}

// decay is each head's logits of the last query against keys k positions back; heads with the
// same curve (constant content makes RoPE's heads alike) are drawn once.
func decay(scores [][][]float32) []plot.Series {
	n := len(scores[0])
	var series []plot.Series
	for h, m := range scores {
		y := make([]float64, n)
		for k := range y {
			y[k] = float64(m[n-1][n-1-k])
		}
		series = append(series, plot.Series{Label: fmt.Sprintf("head %d", h), X: iota64(n), Y: y})
	}
	if allEqual(scores) {
		series = series[:1]
		series[0].Label = ""
		if len(scores) > 1 {
			series[0].Label = "every head"
		}
	}
	return series
}

func rows32(m [][]float32) [][]float64 {
	out := make([][]float64, len(m))
	for i, row := range m {
		out[i] = make([]float64, len(row))
		for j, v := range row {
			out[i][j] = float64(v)
		}
	}
	return out
}

func iota64(n int) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = float64(i)
	}
	return x
}
