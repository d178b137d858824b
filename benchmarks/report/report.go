package report

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/posformer/posformer/benchmarks/recipe"
	"github.com/posformer/posformer/engine/train/tasks"
	"github.com/posformer/posformer/models"
)

const (
	readingBegin = "<!-- reading:begin (hand-written; cmd/bench keeps this block) -->"
	readingEnd   = "<!-- reading:end -->"
)

// CSVPath is where a task's merged results live under the output root.
func CSVPath(out, task string) string { return filepath.Join(out, "results", task+".csv") }

// about describes each task's data and scoring for RESULTS.md; passkey's depends on the version
// its results were measured on (v1: one digit).
func about(task string, rs []Result) string {
	switch task {
	case tasks.LM:
		return "Next-byte prediction on held-out Go source (files with fnv32a(path) % 10 == 0), the same text cut into\n" +
			"non-overlapping windows at each length (Press et al. 2022). Bits per byte over all positions, and over positions\n" +
			">= L only (what extrapolation alone must predict). `unigram`: the training split's byte frequencies.\n" +
			"`+ sliding L`: the same model never run past L (windows of L sliding by L/2, each byte predicted once with at least\n" +
			"L/2 bytes of context): what a model gets without extrapolating. RoPE rows `+ <type> s=<f>`: the RoPE checkpoint\n" +
			"with its context extended by a fixed factor, no retraining; `+ PI s=4 ft`: fine-tuned with linear interpolation at 4L."
	case tasks.Copy, tasks.Reverse:
		what := "the string again"
		if task == tasks.Reverse {
			what = "the string reversed"
		}
		return "A random string of length/2 letters, `|`, " + what + "; trained on strings of 1..L/2 letters. Scored on the\n" +
			"second half, teacher-forced: exact match (every answer letter is the argmax, i.e. greedy decoding reproduces it) and\n" +
			"per-token accuracy. `chance`: 1/26 per letter; `bag`: a position-blind predictor from the counts of the letters seen\n" +
			"so far. `+ randpos`: trained with randomized positions (Ruoss et al. 2023)."
	case tasks.Passkey:
		for _, r := range rs {
			if r.Label() == "chance" && r.Metric == "exact_match" && r.Value > 0.05 {
				return "Version 1: random letters with `=d` (one random digit) hidden at a depth (0: the start, 1: just before the\n" +
					"question), ending in `?d`. Accuracy: the digit is the argmax, averaged over depths; per-depth tables below. `chance`: 0.1."
			}
		}
		return fmt.Sprintf("Held-out Go source (digits removed) with a %d-digit key `$ddddd` at a depth (0: the start, 1: just before the\n", tasks.KeyDigits) +
			"question) among distractor numbers `#ddddd` (one per 32 tokens), ending in `?` and the key. Exact match: all digits\n" +
			"right; token accuracy: per digit. Averaged over depths; the needle-in-a-haystack grid (per depth) is below.\n" +
			"`chance`: 10^-5 and 0.1; `bag`: a position-blind predictor from the counts of the digits seen."
	case tasks.MQAR:
		return "Multi-query associative recall (Arora et al. 2023): D key-value pairs (64 key and 64 value tokens), then every key\n" +
			"again in another order, spread uniformly among noise letters over the rest of the sequence, each to be answered\n" +
			"with its value. Exact match: all D answers right. Averaged over D; per-D tables below. `chance`: 1/64 per answer."
	case tasks.MLM:
		return "Encoders: 15% of the bytes of held-out windows replaced by `<mask>` (same masks for every model),\n" +
			"bits per masked byte, over all masked positions and over those >= L. xPos is decoder-only."
	}
	return ""
}

// SummaryCSV is the tables as data: per label, length, depth or pairs ("" for the mean over
// them) and metric, the number of seeds, the mean and its 95% interval (equal to the mean for
// one seed).
func SummaryCSV(rs []Result) []byte { return SummaryCSVDocs(rs, nil) }

// SummaryCSVDocs is SummaryCSV with lm's and mlm's per-document scores: their intervals are the
// tables' (the bootstrap over seeds and documents), and a last column names the method.
func SummaryCSVDocs(rs []Result, idx DocIndex) []byte {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	header := []string{"label", "length", "sub", "metric", "seeds", "mean", "lo95", "hi95"}
	if idx != nil {
		header = append(header, "interval")
	}
	w.Write(header)
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	metrics := map[string]bool{}
	var order []string
	for _, r := range rs {
		if !metrics[r.Metric] {
			metrics[r.Metric] = true
			order = append(order, r.Metric)
		}
	}
	for _, metric := range order {
		for _, sub := range append([]float64{AllSubs}, Subs(rs, metric)...) {
			ss, lengths := AggregateDocs(rs, metric, sub, idx)
			subText := ""
			if sub != AllSubs {
				subText = f(sub)
			}
			for _, s := range ss {
				for _, l := range lengths {
					if c, ok := s.Cells[l]; ok {
						line := []string{s.Label, strconv.Itoa(l), subText, metric, strconv.Itoa(c.N), f(c.Mean), f(c.Lo), f(c.Hi)}
						if idx != nil {
							method := ByT
							if s.Bootstrapped[l] {
								method = ByBootstrap
							}
							line = append(line, method)
						}
						w.Write(line)
					}
				}
			}
		}
	}
	w.Flush()
	return buf.Bytes()
}

// OneText is the test text every result was scored on (Result.Text; "" for results from before
// texts were recorded), or an error naming two texts found: a report never averages scores of
// different texts (another Go installation's standard library).
func OneText(byTask map[string][]Result) (string, error) {
	text, where := "", ""
	for _, task := range tasks.Names() {
		for _, r := range byTask[task] {
			if r.Text == "" || r.Text == text {
				continue
			}
			if text != "" {
				return "", fmt.Errorf("%s %s was scored on text %s, %s on %s: results of two Go installations; rerun the older cells (delete their results/cells files) on one", task, r.Model, r.Text, where, text)
			}
			text, where = r.Text, task+" "+r.Model
		}
	}
	return text, nil
}

// WriteReport regenerates RESULTS.md and the plots from every task's CSV under out, keeping
// the hand-written reading between its markers.
func WriteReport(out string) error {
	path := filepath.Join(out, "RESULTS.md")
	reading := "(No reading yet: write one between these markers.)"
	if old, err := os.ReadFile(path); err == nil {
		if _, rest, ok := strings.Cut(string(old), readingBegin); ok {
			if body, _, ok := strings.Cut(rest, readingEnd); ok {
				reading = strings.TrimSpace(body)
			}
		}
	}
	byTask := map[string][]Result{}
	for _, task := range tasks.Names() {
		rs, err := ReadCSV(CSVPath(out, task))
		if err != nil {
			return err
		}
		byTask[task] = rs
	}
	text, err := OneText(byTask)
	if err != nil {
		return err
	}
	// Version 3's results name their text; its learning-rate sweeps' other rates are kept out of
	// every table and finding (they have a table of their own), and lm's and mlm's per-document
	// scores give their intervals.
	v3 := text != ""
	docs := map[string]DocIndex{}
	for _, task := range tasks.Names() {
		if v3 {
			byTask[task] = WithoutSweepRates(byTask[task])
		}
		if docs[task], err = ReadDocs(out, task); err != nil {
			return err
		}
	}
	// The grid keeps every trained model's curve beside its results; v1's report has none.
	_, err = os.Stat(filepath.Join(out, "results", "curves"))
	keptCurves := err == nil
	var b strings.Builder
	b.WriteString("# Extrapolation benchmark\n\n")
	if keptCurves {
		b.WriteString("Generated by `go run ./cmd/bench --full` from `results/*.csv` beside this page; every trained model's\n" +
			"command, stopping point and loss curve are in `results/curves/`, and the shipped subset of the checkpoints is\n" +
			"listed in `weights/bench/MANIFEST.md`. Every model of a task has the same\n")
	} else {
		b.WriteString("Generated by `go run ./cmd/bench` from `results/*.csv` beside this page: the scores of finished checkpoints\n" +
			"(by default the shipped ones in `weights/bench`, listed with their training commands in its `MANIFEST.md`); the\n" +
			"benchmark's report, every task and seed, is `benchmarks/RESULTS.md` (`--full`). Every model of a task has the same\n")
	}
	b.WriteString(
		"size, data, optimizer, stopping rule and seeds; only the positional scheme differs. Lengths are the tokens the\n" +
			"model reads. A cell is the mean over seeds ± the half width of its 95% interval (Student t; no interval for one\n" +
			"seed), or on lm and mlm, where each document's scores were kept, the mean and its 95% interval from a bootstrap\n" +
			"over seeds and documents (each table's caption says which). A ranking is called only between schemes whose intervals do not overlap (groups split by `>`, or, where\n" +
			"one wide interval joins them, letters: schemes that share none differ). In the plots the curves are shifted a\n" +
			"little along the length axis so that their error bars do not hide each other. Only the text between the\n" +
			"reading markers is written by hand.\n\n")
	curves := map[string][]Curve{}    // by task, read once for the header and the training sections
	allCurves := map[string][]Curve{} // with the sweeps' other rates, for the cost
	var lrRows []LRRow
	if keptCurves {
		n, nCPU, secs := 0, 0, 0.0
		for _, task := range tasks.Names() {
			cs, err := ReadCurves(out, task)
			if err != nil {
				return err
			}
			allCurves[task] = cs
			if v3 {
				for i := range cs {
					cs[i].Label = v3Label(cs[i])
				}
				var rows []LRRow
				rows, cs = SplitSweep(task, cs)
				lrRows = append(lrRows, rows...)
			}
			curves[task] = cs
			for _, c := range allCurves[task] {
				one, cpu := c.Info.CoreSeconds()
				n, secs = n+1, secs+one
				if cpu {
					nCPU++
				}
			}
		}
		switch {
		case n > 0 && v3:
			fmt.Fprintf(&b, "Training: %d models with kept curves (the learning-rate sweeps' included), %.1f h on one core "+
				"each (%s); the grid trains two at a time on 2 cores, so about %.1f h of the machine (\"Cost\", at the end, adds evaluation).\n\n",
				n, secs/3600, cpuShare(nCPU, n), secs/3600/2)
		case n > 0:
			fmt.Fprintf(&b, "Training: %d models with kept curves, %.1f h on one core each (%s); the grid trains two at a "+
				"time on 2 cores, so about %.1f h of the machine (each task's training table has its share; \"What the grid took\", "+
				"at the end, adds evaluation and the models without a kept curve).\n\n", n, secs/3600, cpuShare(nCPU, n), secs/3600/2)
		}
	}
	if v3 {
		goVersion, sha, _ := strings.Cut(text, ":")
		fmt.Fprintf(&b, "%s\n\nEvery number was scored on the test text drawn from the standard library of Go version %s, SHA-256 `%s…` (cmd/bench prints both texts' whole hashes).\n\n",
			recipe.V3.Describe(), goVersion, sha)
	}
	b.WriteString("## Reading\n\n" + readingBegin + "\n" + reading + "\n" + readingEnd + "\n")
	ov := Overview(byTask, overviewMultiples)
	png, err := ov.PNG()
	if err != nil {
		return fmt.Errorf("plotting the overview: %w", err)
	}
	if png != nil {
		if err := models.WriteFileAtomic(filepath.Join(out, "results", "overview.png"), png); err != nil {
			return err
		}
		b.WriteString("\n## Overview\n\n" + overviewAbout + "\n\n![every scheme on every task](results/overview.png)\n\n" +
			ov.Table(overviewTable...))
	}
	b.WriteString("\n## Against the papers\n\n" + PapersSection(Papers(Source{ByTask: byTask, Docs: docs})))
	for _, task := range tasks.Names() {
		rs := byTask[task]
		if len(rs) == 0 {
			fmt.Fprintf(&b, "\n## %s\n\nNot evaluated yet: `go run ./cmd/bench -task %s`.\n", task, task)
			continue
		}
		if err := models.WriteFileAtomic(filepath.Join(out, "results", task+"-summary.csv"), SummaryCSVDocs(rs, docs[task])); err != nil {
			return err
		}
		fmt.Fprintf(&b, "\n## %s\n\nL = %d. %s Per-seed values: `results/%s.csv`; means and intervals: `results/%s-summary.csv`.\n",
			task, TrainLen(rs), about(task, rs), task, task)
		for _, metric := range tasks.Metrics(task) {
			png, err := PlotMetricDocs(rs, task, metric, docs[task])
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
			b.WriteString(TableDocs(task, rs, metric, AllSubs, docs[task]))
			if r := RankingDocs(task, rs, metric, docs[task]); r != "" {
				b.WriteString("\n" + r)
			}
		}
		if sub := tasks.Sub(task); sub != "" {
			fmt.Fprintf(&b, "\n### exact_match by %s\n\n", sub)
			png, err := PlotSubGrid(rs, task, "exact_match")
			if err != nil {
				return fmt.Errorf("plotting %s by %s: %w", task, sub, err)
			}
			if png != nil {
				name := task + "-exact_match-by-" + sub + ".png"
				if err := models.WriteFileAtomic(filepath.Join(out, "results", name), png); err != nil {
					return err
				}
				fmt.Fprintf(&b, "![%s exact_match by %s and length](results/%s)\n\n", task, sub, name)
			}
			b.WriteString(SubTables(task, rs, "exact_match"))
		}
		if keptCurves {
			cs := curves[task]
			png, err := PlotCurves(task, cs)
			if err != nil {
				return fmt.Errorf("plotting %s's curves: %w", task, err)
			}
			name := ""
			if png != nil {
				name = task + "-curves.png"
				if err := models.WriteFileAtomic(filepath.Join(out, "results", name), png); err != nil {
					return err
				}
			}
			b.WriteString(TrainingSection(task, cs, rs, name))
		}
	}
	if len(lrRows) > 0 {
		b.WriteString("\n## Learning rates\n\n" + lrAbout + "\n\n" + LRTable(lrRows))
	}
	switch {
	case keptCurves && v3:
		b.WriteString("\n## Cost\n\n" + KeptCost(allCurves, tasks.Names()))
	case keptCurves:
		b.WriteString("\n## What the grid took\n\n" + costAbout + "\n\n" + CostTable(byTask, curves))
	}
	return models.WriteFileAtomic(path, []byte(b.String()))
}

const lrAbout = "Seed 1 of every scheme trained on lm and on copy at each rate; the rate with the lowest validation loss at L\n" +
	"(marked) trains every other model of the scheme (lm's choice for lm and mlm, copy's for the synthetic tasks), and its\n" +
	"seed-1 model is the tables' row. The other rates' models appear only here."

const costAbout = "Time on one core of two, both busy (the thread's CPU time where `train.json` or `eval.json` records it, else\n" +
	"wall time), summed over the trained models (RoPE-scaling rows, capped FIRE\n" +
	"and the sliding window are evaluated from their model's checkpoint and count in its evaluation). Training is\n" +
	"each model's `train.json`, evaluation (every length and row of the tables) its `eval.json`; a model without a\n" +
	"record counts at its label's mean, or its task's where no seed of the label has one, and the table says how many\n" +
	"did. This is the grid as it ran, across machines and versions of the engine that made training faster\n" +
	"(`benchmarks/README.md`), not what a run from scratch takes today: `go run ./cmd/bench --full -plan`\n" +
	"estimates that."

// cpuShare says how the training times were measured: the training thread's CPU time (which does
// not count the time the grid waited, stopped or sharing its cores) or the wall time.
func cpuShare(cpu, n int) string {
	switch cpu {
	case n:
		return "the training thread's CPU time"
	case 0:
		return "wall time"
	}
	return fmt.Sprintf("the training thread's CPU time for %d of them, wall time for the others", cpu)
}
