// Reports: CSV files (one per task, one line per model × length × depth × metric), Markdown
// tables (models × lengths, seeds averaged with their range) and PNG plots (metric vs length,
// one curve per model, the training length marked). RESULTS.md is regenerated on every run
// except for the text between the reading markers, which is written by hand and kept.
package main

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/posformer/posformer/benchmarks/plot"
	"github.com/posformer/posformer/benchmarks/tasks"
	"github.com/posformer/posformer/models"
)

var csvHeader = []string{"task", "model", "scheme", "variant", "seed", "train_len", "length", "depth", "metric", "value", "n"}

func writeCSV(path string, rs []result) error {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.Write(csvHeader)
	for _, r := range rs {
		w.Write([]string{r.Task, r.Model, r.Scheme, r.Variant, strconv.Itoa(r.Seed), strconv.Itoa(r.TrainLen), strconv.Itoa(r.Length), depthString(r.Depth),
			r.Metric, strconv.FormatFloat(r.Value, 'g', 6, 64), strconv.Itoa(r.N)})
	}
	w.Flush()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return models.WriteFileAtomic(path, buf.Bytes())
}

// readCSV reads a results file written by writeCSV; a missing file is no results.
func readCSV(path string) ([]result, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	recs, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil || len(recs) == 0 || !slices.Equal(recs[0], csvHeader) {
		return nil, fmt.Errorf("reading %s: not a results file of this version (delete it and rerun)", path)
	}
	var out []result
	for _, f := range recs[1:] {
		r := result{Task: f[0], Model: f[1], Scheme: f[2], Variant: f[3], Metric: f[8], Depth: math.NaN()}
		r.Seed, _ = strconv.Atoi(f[4])
		r.TrainLen, _ = strconv.Atoi(f[5])
		r.Length, _ = strconv.Atoi(f[6])
		if f[7] != "" {
			r.Depth, _ = strconv.ParseFloat(f[7], 64)
		}
		r.Value, _ = strconv.ParseFloat(f[9], 64)
		r.N, _ = strconv.Atoi(f[10])
		out = append(out, r)
	}
	return out, nil
}

// merge replaces in old every line of a (model, variant) that fresh has, keeping the rest, so
// that `-scheme rope` updates the RoPE rows without dropping the others.
func merge(old, fresh []result) []result {
	redone := map[string]bool{}
	for _, r := range fresh {
		redone[label(r)] = true
	}
	var out []result
	for _, r := range old {
		if !redone[label(r)] {
			out = append(out, r)
		}
	}
	return append(out, fresh...)
}

// metricsOf lists a task's metrics: the first is its headline.
func metricsOf(task string) []string {
	switch task {
	case tasks.LM:
		return []string{"bits_per_byte", "bits_per_byte_beyond_L"}
	case tasks.MLM:
		return []string{"bits_per_masked_byte", "bits_per_masked_byte_beyond_L"}
	default:
		return []string{"exact_match", "token_accuracy"}
	}
}

// series is one table row / plot curve: a model label's value at each length, averaged over
// seeds (and over depths for passkey), with the seeds' range.
type series struct {
	label        string
	order        int
	mean, lo, hi map[int]float64
	seeds        int
}

// aggregate groups one metric's results by label and length. Passkey values are first averaged
// over depths (every depth has the same number of sequences), then over seeds.
func aggregate(rs []result, metric string) ([]series, []int) {
	type key struct {
		label  string
		seed   int
		length int
	}
	sum, cnt := map[key]float64{}, map[key]int{}
	lengthSet := map[int]bool{}
	for _, r := range rs {
		if r.Metric != metric {
			continue
		}
		lab := r.Scheme
		if r.Variant != "" {
			lab += " + " + r.Variant
		}
		k := key{lab, r.Seed, r.Length}
		sum[k] += r.Value
		cnt[k]++
		lengthSet[r.Length] = true
	}
	bySeries := map[string]*series{}
	seedsOf := map[string]map[int]bool{}
	type cell struct {
		label  string
		length int
	}
	seedsAt := map[cell]int{} // seeds averaged into each mean
	for k, s := range sum {
		v := s / float64(cnt[k])
		sr := bySeries[k.label]
		if sr == nil {
			sr = &series{label: k.label, mean: map[int]float64{}, lo: map[int]float64{}, hi: map[int]float64{}}
			bySeries[k.label] = sr
			seedsOf[k.label] = map[int]bool{}
		}
		seedsOf[k.label][k.seed] = true
		if _, ok := sr.lo[k.length]; !ok {
			sr.lo[k.length], sr.hi[k.length] = v, v
		}
		sr.mean[k.length] += v
		seedsAt[cell{k.label, k.length}]++
		sr.lo[k.length], sr.hi[k.length] = math.Min(sr.lo[k.length], v), math.Max(sr.hi[k.length], v)
	}
	var out []series
	for lab, sr := range bySeries {
		sr.seeds = len(seedsOf[lab])
		for l := range sr.mean {
			sr.mean[l] /= float64(seedsAt[cell{lab, l}])
		}
		base, variant, _ := strings.Cut(lab, " + ")
		sr.order = schemeOrder(base) * 100
		if variant != "" {
			sr.order += 1 + len(ropeScalingTypes)
			for i, t := range ropeScalingTypes {
				if strings.HasPrefix(variant, t+" ") {
					sr.order = schemeOrder(base)*100 + 1 + i
				}
			}
		}
		if base == "unigram" || base == "chance" {
			sr.order = -1
		}
		out = append(out, *sr)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].order != out[j].order {
			return out[i].order < out[j].order
		}
		return out[i].label < out[j].label
	})
	var lengths []int
	for l := range lengthSet {
		lengths = append(lengths, l)
	}
	sort.Ints(lengths)
	return out, lengths
}

// table renders one metric as Markdown: a row per model, a column per length.
func table(rs []result, metric string) string {
	ss, lengths := aggregate(rs, metric)
	if len(ss) == 0 {
		return ""
	}
	trainLen := taskTrainLen(rs)
	var b strings.Builder
	b.WriteString("| model |")
	for _, l := range lengths {
		fmt.Fprintf(&b, " %d (%gL) |", l, float64(l)/float64(trainLen))
	}
	b.WriteString("\n| --- |" + strings.Repeat(" ---: |", len(lengths)) + "\n")
	for _, s := range ss {
		name := "`" + s.label + "`"
		if s.label == "none" {
			name += " (position-blind)"
		}
		if s.seeds > 1 {
			name += fmt.Sprintf(" (%d seeds)", s.seeds)
		}
		b.WriteString("| " + name + " |")
		for _, l := range lengths {
			v, ok := s.mean[l]
			switch {
			case !ok:
				b.WriteString(" |")
			case math.IsNaN(v):
				b.WriteString(" — |")
			case s.seeds > 1 && s.hi[l] > s.lo[l]:
				fmt.Fprintf(&b, " %s (%s–%s) |", num(v), num(s.lo[l]), num(s.hi[l]))
			default:
				fmt.Fprintf(&b, " %s |", num(v))
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// depthTable shows passkey accuracy per depth: one cell per length holding the accuracies at
// each depth, first (key at the start) to last (key just before the question).
func depthTable(rs []result, metric string) string {
	depthSet := map[float64]bool{}
	for _, r := range rs {
		if r.Metric == metric && !math.IsNaN(r.Depth) {
			depthSet[r.Depth] = true
		}
	}
	var depths []float64
	for d := range depthSet {
		depths = append(depths, d)
	}
	sort.Float64s(depths)
	var parts []string
	for _, d := range depths {
		var sub []result
		for _, r := range rs {
			if r.Metric == metric && r.Depth == d {
				sub = append(sub, r)
			}
		}
		parts = append(parts, fmt.Sprintf("Key at depth %s:\n\n%s", depthString(d), table(sub, metric)))
	}
	return strings.Join(parts, "\n")
}

// taskTrainLen is L of a task's results (the same for all its checkpoints by the recipe).
func taskTrainLen(rs []result) int {
	for _, r := range rs {
		if r.TrainLen > 0 {
			return r.TrainLen
		}
	}
	return 1
}

func num(v float64) string {
	switch {
	case math.IsNaN(v):
		return "—"
	case v != 0 && math.Abs(v) < 0.001:
		return fmt.Sprintf("%.0e", v)
	}
	return fmt.Sprintf("%.3f", v)
}

// plotMetric draws one metric against length, a curve per model, the training length marked.
func plotMetric(rs []result, task, metric string) ([]byte, error) {
	ss, _ := aggregate(rs, metric)
	var lines []plot.Series
	lo, hi := math.Inf(1), math.Inf(-1)
	base := math.NaN()
	for _, s := range ss {
		var ps plot.Series
		ps.Label = s.label
		ps.Style = 1 + len(lines)
		var ls []int
		for l := range s.mean {
			ls = append(ls, l)
		}
		sort.Ints(ls)
		for _, l := range ls {
			if v := s.mean[l]; !math.IsNaN(v) {
				ps.X, ps.Y = append(ps.X, float64(l)), append(ps.Y, v)
				lo, hi = math.Min(lo, v), math.Max(hi, v)
				if s.order == -1 {
					base = v
				}
			}
		}
		if len(ps.X) > 0 {
			lines = append(lines, ps)
		}
	}
	if len(lines) == 0 {
		return nil, nil
	}
	// Edited rows (RoPE scaling) get a panel of their own, beside the model they edit, so that
	// neither panel has more curves than a reader can follow.
	var schemes, edited []plot.Series
	editedBase := map[string]bool{}
	for _, ps := range lines {
		if b, _, ok := strings.Cut(ps.Label, " + "); ok {
			edited = append(edited, ps)
			editedBase[b] = true
		}
	}
	var editedFirst []plot.Series
	for _, ps := range lines {
		if !strings.Contains(ps.Label, " + ") {
			schemes = append(schemes, ps)
			if editedBase[ps.Label] || ps.Label == "unigram" || ps.Label == "chance" {
				editedFirst = append(editedFirst, ps)
			}
		}
	}
	edited = append(editedFirst, edited...)
	panel := func(title string, ss []plot.Series) plot.Lines {
		l := plot.Lines{Title: title, XLabel: "evaluation length (tokens); dashed: training length L", YLabel: metric,
			Series: ss, LogX: true, Marks: []float64{float64(taskTrainLen(rs))}, MaxLegend: 24}
		if strings.HasPrefix(metric, "bits") && !math.IsNaN(base) {
			// Schemes that fail past L leave the chart by several bits; clipping at the unigram
			// baseline plus a margin keeps the others readable (the tables have every value).
			l.YMin, l.YMax = math.Max(0, lo-0.2), math.Min(hi, base+1)
		} else {
			l.YMin, l.YMax = -0.02, 1.02
		}
		return l
	}
	row := []plot.Panel{panel(task+": "+metric, schemes)}
	if len(editedBase) > 0 {
		row = append(row, panel(task+": "+metric+", RoPE scaling without retraining", edited))
	}
	return plot.Figure{Rows: [][]plot.Panel{row}, CellWidth: 700, CellHeight: 520}.PNG()
}

const (
	readingBegin = "<!-- reading:begin (hand-written; cmd/bench keeps this block) -->"
	readingEnd   = "<!-- reading:end -->"
)

// results file paths.
func csvPath(out, task string) string { return filepath.Join(out, "results", task+".csv") }

// writeReport regenerates RESULTS.md and the plots from every task's CSV under out.
func writeReport(out string) error {
	path := filepath.Join(out, "RESULTS.md")
	reading := "(No reading yet: write one between these markers.)"
	if old, err := os.ReadFile(path); err == nil {
		if _, rest, ok := strings.Cut(string(old), readingBegin); ok {
			if body, _, ok := strings.Cut(rest, readingEnd); ok {
				reading = strings.TrimSpace(body)
			}
		}
	}
	var b strings.Builder
	b.WriteString("# Extrapolation benchmark\n\n")
	b.WriteString("Generated by `go run ./cmd/bench` (issue 7) from `benchmarks/results/*.csv`; the checkpoints and how they were\n" +
		"trained are in `weights/bench/MANIFEST.md`. Every model of a task has the same size, data, steps, seeds and\n" +
		"optimizer; only the positional scheme differs. Tasks train at L = 64 tokens (copy: 32); lengths are the tokens\n" +
		"the model reads. Rows with several seeds show their mean and range. Only the text between the reading markers\n" +
		"is written by hand.\n\n")
	b.WriteString("## Reading\n\n" + readingBegin + "\n" + reading + "\n" + readingEnd + "\n")
	about := map[string]string{
		tasks.LM: "Next-byte prediction on held-out Go source (files with fnv32a(path) % 10 == 0), the same 16 KiB cut into\n" +
			"non-overlapping windows at each length (Press et al. 2022). Bits per byte over all positions, and over positions\n" +
			">= L only (what extrapolation alone must predict). `unigram`: the training split's byte frequencies.",
		tasks.Copy: "A random string of length/2 letters, `|`, the string again; trained on strings of 1..16 letters\n" +
			"(inputs up to L = 32 tokens). Scored on the copied half, teacher-forced: exact match (every copied letter is the argmax,\n" +
			"i.e. greedy decoding reproduces the string) and per-token accuracy. `chance`: 1/26 per letter.",
		tasks.Passkey: "Random letters with `=d` (one random digit) hidden at a depth (0: the start, 1: just before the question),\n" +
			"ending in `?d`; trained on lengths 5..64 at uniform depths. Accuracy: the digit is the argmax, averaged over depths\n" +
			"0, 0.25, 0.5, 0.75, 1; per-depth tables below. `chance`: 0.1.",
		tasks.MLM: "Encoders: 15% of the bytes of held-out windows replaced by `<mask>` (same masks for every model),\n" +
			"bits per masked byte, over all masked positions and over those >= L. xPos is decoder-only.",
	}
	for _, task := range tasks.Names() {
		rs, err := readCSV(csvPath(out, task))
		if err != nil {
			return err
		}
		if len(rs) == 0 {
			fmt.Fprintf(&b, "\n## %s\n\nNot evaluated yet: `go run ./cmd/bench -task %s`.\n", task, task)
			continue
		}
		fmt.Fprintf(&b, "\n## %s\n\n%s\n", task, about[task])
		for _, metric := range metricsOf(task) {
			png, err := plotMetric(rs, task, metric)
			if err != nil {
				return fmt.Errorf("plotting %s %s: %w", task, metric, err)
			}
			name := task + "-" + metric + ".png"
			if png != nil {
				if err := models.WriteFileAtomic(filepath.Join(out, "results", name), png); err != nil {
					return err
				}
			}
			fmt.Fprintf(&b, "\n### %s\n\n", metric)
			if png != nil {
				fmt.Fprintf(&b, "![%s %s vs length](results/%s)\n\n", task, metric, name)
			}
			b.WriteString(table(rs, metric))
		}
		if task == tasks.Passkey {
			b.WriteString("\n### exact_match by depth\n\n" + depthTable(rs, "exact_match"))
		}
	}
	return models.WriteFileAtomic(path, []byte(b.String()))
}
