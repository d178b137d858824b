package speed

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/posformer/posformer/benchmarks/plot"
	"github.com/posformer/posformer/models"
)

// WriteTable writes the results as Markdown tables: one row per model of the single-sequence
// figures, then the prefill rate by prompt length and the batched decode rate by batch size.
func WriteTable(w io.Writer, rs []Result) {
	fmt.Fprintln(w, "| model | params | load s | first token s | warm-up s (graphs) | decode tok/s | decode CPU ms/token | ms/token first→last | graphs after warm-up | peak RSS MB (weights+KV MB) |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	for _, r := range rs {
		first, last := 0.0, 0.0
		if n := len(r.MsPerToken); n > 0 {
			first, last = mean(r.MsPerToken[:min(8, n)]), mean(r.MsPerToken[max(0, n-8):])
		}
		fmt.Fprintf(w, "| %s | %.2fM | %.2f | %.2f | %.2f (%d) | %.1f (%d tokens) | %.2f | %.2f → %.2f | %d | %.0f (%.0f) |\n",
			r.Model, float64(r.Params)/1e6, r.LoadSec, r.FirstTokenSec, r.WarmupSec, r.CompiledAtWarmup,
			r.DecodeTokPerSec, r.Generated, r.DecodeCPUMsPerToken, first, last, r.CompiledLate, mb(r.PeakRSS), mb(r.WeightBytes+r.KVBytes))
	}
	fmt.Fprintln(w)
	var lens, bs []int
	for _, r := range rs {
		for _, p := range r.Prefill {
			if !slices.Contains(lens, p.Tokens) {
				lens = append(lens, p.Tokens)
			}
		}
		for _, b := range r.Batched {
			if !slices.Contains(bs, b.Batch) {
				bs = append(bs, b.Batch)
			}
		}
	}
	slices.Sort(lens)
	slices.Sort(bs)
	header := func(first string, cols []int, name string) {
		fmt.Fprintf(w, "| %s |", first)
		for _, c := range cols {
			fmt.Fprintf(w, " %s %d |", name, c)
		}
		fmt.Fprint(w, "\n|"+strings.Repeat(" --- |", len(cols)+1)+"\n")
	}
	header("prefill tok/s", lens, "prompt")
	for _, r := range rs {
		fmt.Fprintf(w, "| %s |", r.Model)
		for _, n := range lens {
			i := slices.IndexFunc(r.Prefill, func(p PrefillPoint) bool { return p.Tokens == n })
			if i < 0 {
				fmt.Fprint(w, " - |")
				continue
			}
			fmt.Fprintf(w, " %.0f |", r.Prefill[i].TokPerSec)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
	header("batched decode tok/s, all rows (CPU ms/token)", bs, "batch")
	for _, r := range rs {
		fmt.Fprintf(w, "| %s |", r.Model)
		for _, b := range r.Batched {
			fmt.Fprintf(w, " %.0f (%.2f) |", b.TokPerSec, b.CPUMsPerToken)
		}
		fmt.Fprintln(w)
	}
}

func mb(b int64) float64 { return float64(b) / (1 << 20) }

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// CSV is speed.csv: the columns model, figure, x, value, one row per model and figure; x is the
// prompt length, batch size or tokens generated where the figure has one, else 0.
func CSV(rs []Result) []byte {
	var sb strings.Builder
	sb.WriteString("model,figure,x,value\n")
	row := func(model, fig string, x int, v float64) { fmt.Fprintf(&sb, "%s,%s,%d,%g\n", model, fig, x, v) }
	for _, r := range rs {
		row(r.Model, "params", 0, float64(r.Params))
		row(r.Model, "load_s", 0, r.LoadSec)
		row(r.Model, "first_token_s", 0, r.FirstTokenSec)
		row(r.Model, "warmup_s", 0, r.WarmupSec)
		row(r.Model, "graphs_at_warmup", 0, float64(r.CompiledAtWarmup))
		row(r.Model, "graphs_after_warmup", 0, float64(r.CompiledLate))
		row(r.Model, "decode_tok_s", r.Generated, r.DecodeTokPerSec)
		row(r.Model, "decode_cpu_ms_per_token", r.Generated, r.DecodeCPUMsPerToken)
		for _, p := range r.Prefill {
			row(r.Model, "prefill_tok_s", p.Tokens, p.TokPerSec)
		}
		for _, b := range r.Batched {
			row(r.Model, "batched_decode_tok_s", b.Batch, b.TokPerSec)
			row(r.Model, "batched_decode_cpu_ms_per_token", b.Batch, b.CPUMsPerToken)
		}
		row(r.Model, "peak_rss_bytes", 0, float64(r.PeakRSS))
		row(r.Model, "weights_plus_kv_bytes", 0, float64(r.WeightBytes+r.KVBytes))
	}
	return []byte(sb.String())
}

// PositionsCSV is speed-positions.csv: the columns model, position, ms; the ms of each decode
// step by the position of the token it decodes.
func PositionsCSV(rs []Result) []byte {
	var sb strings.Builder
	sb.WriteString("model,position,ms\n")
	for _, r := range rs {
		for i, ms := range r.MsPerToken {
			fmt.Fprintf(&sb, "%s,%d,%.4f\n", r.Model, i+1, ms)
		}
	}
	return []byte(sb.String())
}

// PNG is speed.png: ms per decoded token against position, a panel per model.
func PNG(rs []Result) ([]byte, error) {
	var panels []plot.Panel
	for _, r := range rs {
		s := plot.Series{Label: r.Model}
		for i, ms := range r.MsPerToken {
			s.X, s.Y = append(s.X, float64(i+1)), append(s.Y, ms)
		}
		panels = append(panels, plot.Lines{Title: s.Label, XLabel: "position", YLabel: "ms per decoded token", Series: []plot.Series{s}})
	}
	return plot.Figure{Title: "decode cost as the context fills (greedy, batch 1)", Rows: [][]plot.Panel{panels}, CellWidth: 520}.PNG()
}

// WriteFiles writes speed.csv, speed-positions.csv and speed.png (see CSV, PositionsCSV and
// PNG) into dir, creating it, each file atomically.
func WriteFiles(dir string, rs []Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := models.WriteFileAtomic(filepath.Join(dir, "speed.csv"), CSV(rs)); err != nil {
		return err
	}
	if err := models.WriteFileAtomic(filepath.Join(dir, "speed-positions.csv"), PositionsCSV(rs)); err != nil {
		return err
	}
	png, err := PNG(rs)
	if err != nil {
		return err
	}
	return models.WriteFileAtomic(filepath.Join(dir, "speed.png"), png)
}
