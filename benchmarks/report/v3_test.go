package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/posformer/posformer/benchmarks/recipe"
)

const synthText = "go1.26.8:0123456789ab"

// synthV3 writes a v3 output folder whose verdicts are known by construction: lm rows built from
// per-document scores (each document a shared difficulty, so rows compared on the same text
// move together), the synthetic tasks from per-seed values, and kept curves with a learning-rate
// sweep. What each finding should say is in the comments beside the values.
func synthV3(t *testing.T, dir string) {
	t.Helper()
	const L, docs = 128, 24
	type row struct {
		scheme, variant string
		gap             func(k int) float64 // bits over the scheme's sliding row at k·L
		lengths         []int               // in units of L
	}
	all := []int{1, 2, 4, 8, 16}
	c := func(v float64) func(int) float64 { return func(int) float64 { return v } }
	rows := []row{
		{"alibi", "", c(0.02), all},  // flat: Press reproduced
		{"kerple", "", c(0.03), all}, // flat: Chi reproduced
		{"fire", "", func(k int) float64 { return map[bool]float64{true: 0.04, false: 0.6}[k <= 4] }, all}, // flat to 4L only: Li reproduced
		{"sinusoidal", "", c(1.5), all}, {"rope", "", c(1.2), all}, {"t5", "", c(0.4), all},
		{"dape", "", c(-0.05), all}, {"dape", "kerple", c(0.0), all}, {"dape", "fire", c(0.2), all},
		{"rope", "p=0.75", c(1.2), all}, {"rope", "SSMax", c(0.5), all}, {"rope", "PoSE 4L", c(0.3), all},
		{"rope", "yarn s=4", c(0.4), []int{4}}, {"rope", "linear s=4", c(0.7), []int{4}},
		{"rope", "yarn s=16", c(0.6), []int{16}}, {"rope", "linear s=16", c(0.5), []int{16}}, // YaRN behind linear at 16L: disagree
		{"rope", "yarn β=32 s=4", c(0.5), []int{4}}, {"rope", "yarn β=32 s=16", c(0.55), []int{16}},
		{"rope", "PI s=4 ft", c(-0.1), []int{4}}, {"rope", "4L ft", c(0.1), []int{4}}, {"rope", "yarn s=4 ft", c(-0.09), []int{4}},
		{"rope", "lr=0.002", c(0.2), all},                                                                   // a sweep's other rate: in no table
		{"rope", "self-extend W=L/2", c(0.5), []int{4, 16}},                                                 // ahead of rope, paired: reproduced
		{"rope", "StreamingLLM", c(0.05), []int{16, 32}}, {"alibi", "StreamingLLM", c(0.02), []int{16, 32}}, // as good as sliding: reproduced
		{"none", "StreamingLLM", c(0.8), []int{16, 32}}, // shown, not judged
	}
	var rs []Result
	for _, scheme := range []string{"alibi", "kerple", "fire", "sinusoidal", "rope", "t5", "dape", "none"} {
		rows = append(rows, row{scheme, recipe.SlidingVariant, c(0), append(slices.Clone(all), 32)})
	}
	for _, r := range rows {
		for seed := 1; seed <= 3; seed++ {
			model := recipe.ModelName(r.scheme, strings.ToLower(strings.ReplaceAll(r.variant, " ", "")), seed)
			var lines []string
			for _, k := range r.lengths {
				var bits, ns []string
				sb, sn := 0.0, 0.0
				for d := range docs {
					difficulty := 0.4 * math.Sin(float64(7*d+1))
					n := float64(400 + 37*(d%7))
					v := (2.0 + 0.05*float64(seed) + r.gap(k) + difficulty + 0.01*math.Cos(float64(d*seed+k))) * n
					bits, ns = append(bits, strconv.FormatFloat(v, 'f', 2, 64)), append(ns, strconv.Itoa(int(n)))
					v, _ = strconv.ParseFloat(strconv.FormatFloat(v, 'f', 2, 64), 64)
					sb, sn = sb+v, sn+n
				}
				lines = append(lines, fmt.Sprintf("%s,%s,%d,%s,%s", model, r.variant, k*L, strings.Join(bits, " "), strings.Join(ns, " ")))
				rs = append(rs, Result{Task: "lm", Model: model, Scheme: r.scheme, Variant: r.variant, Seed: seed, TrainLen: L, Length: k * L,
					Depth: math.NaN(), Metric: "bits_per_byte", Value: sb / sn, N: int(sn), Text: synthText})
			}
			path := filepath.Join(dir, "results", "cells", "lm", model+"-"+strings.ReplaceAll(r.variant, " ", "")+".docs.csv")
			os.MkdirAll(filepath.Dir(path), 0o755)
			if err := os.WriteFile(path, docFile(lines...), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := WriteCSV(CSVPath(dir, "lm"), rs); err != nil {
		t.Fatal(err)
	}
	// The synthetic tasks, L = 64: values per seed (±0.01·seed).
	syn := func(task, scheme, variant string, k int, metric string, vals ...float64) []Result {
		var out []Result
		for i, v := range vals {
			out = append(out, Result{Task: task, Model: recipe.ModelName(scheme, variant, i+1), Scheme: scheme, Variant: variant, Seed: i + 1,
				TrainLen: 64, Length: k * 64, Depth: math.NaN(), Metric: metric, Value: v, N: 100, Text: synthText})
		}
		return out
	}
	three := func(v float64) []float64 { return []float64{v + 0.01, v + 0.02, v + 0.03} }
	byTask := map[string][]Result{}
	for _, task := range []string{"copy", "reverse"} {
		x := byTask[task]
		em := map[string]float64{"none": 0.8, "t5": 0.75, "alibi": 0.3, "rope": 0.2, "sinusoidal": 0.1, "learned": 0.15}
		for s, v := range em {
			x = append(x, syn(task, s, "BOS", 2, "exact_match", three(v)...)...) // with BOS: reproduced
			if s == "alibi" {
				v = 0.9 // without BOS, ALiBi ahead of NoPE: the headline contradicted
			}
			x = append(x, syn(task, s, "", 2, "exact_match", three(v)...)...)
		}
		for _, k := range []int{2, 4, 8, 16} {
			x = append(x, syn(task, "sinusoidal", "", k, "token_accuracy", three(0.3)...)...)
			x = append(x, syn(task, "sinusoidal", "randpos", k, "token_accuracy", three(0.6)...)...) // randpos helps
			x = append(x, syn(task, "rope", "", k, "token_accuracy", three(0.3)...)...)
			x = append(x, syn(task, "rope", "randpos", k, "token_accuracy", 0.2, 0.5, 0.35)...) // overlaps: inconclusive
		}
		x = append(x, syn(task, "chance", "", 2, "exact_match", 0)...)
		byTask[task] = x
	}
	byTask["copy"] = append(byTask["copy"], syn("copy", "cope", "", 2, "exact_match", 0.9, 0.02, 0.85)...) // 2 of 3 learned
	byTask["mqar"] = append(syn("mqar", "cope", "", 2, "exact_match", three(0.5)...), syn("mqar", "rope", "", 2, "exact_match", three(0.2)...)...)
	pk := syn("passkey", "rope", "PI s=4 ft", 4, "exact_match", 0.9, 0.6, 0.95)
	pk = append(pk, syn("passkey", "rope", "4L ft", 4, "exact_match", 0.7, 0.4, 0.75)...) // PI ahead of its control by 0.2 on every base seed
	pk = append(pk, syn("passkey", "rope", "", 16, "exact_match", three(0.05)...)...)
	pk = append(pk, syn("passkey", "rope", "SSMax", 16, "exact_match", three(0.5)...)...)
	pk = append(pk, syn("passkey", "rope", "", 4, "exact_match", three(0.1)...)...)
	pk = append(pk, syn("passkey", "rope", "PoSE 4L", 4, "exact_match", three(0.6)...)...)
	pk = append(pk, syn("passkey", "rope", "self-extend W=L/2", 4, "exact_match", three(0.3)...)...)
	byTask["passkey"] = pk
	for task, x := range byTask {
		if err := WriteCSV(CSVPath(dir, task), x); err != nil {
			t.Fatal(err)
		}
	}
	// Kept curves of lm: rope's sweep (2e-3 chosen) and alibi at the default rate.
	for _, cv := range []struct {
		name, scheme string
		seed         int
		loss, wall   float64
	}{{"rope", "rope", 1, 1.30, 3600}, {"rope-lr0.0005", "rope", 1, 1.40, 3600}, {"rope-lr0.002", "rope", 1, 1.20, 3600}, {"rope-seed2", "rope", 2, 1.22, 3600}, {"alibi", "alibi", 1, 1.1, 1800}} {
		cdir := filepath.Join(dir, "results", "curves", "lm")
		os.MkdirAll(cdir, 0o755)
		ti := recipe.TrainInfo{Task: "lm", Scheme: cv.scheme, Seed: cv.seed, FinalEvalLoss: recipe.Loss(cv.loss), WallSeconds: cv.wall, Steps: 3000, Stop: "plateau"}
		data, _ := json.Marshal(ti)
		os.WriteFile(filepath.Join(cdir, cv.name+".train.json"), data, 0o644)
		os.WriteFile(filepath.Join(cdir, cv.name+".eval.json"), []byte(`{"eval_seconds": 360, "threads": 1}`), 0o644)
	}
}

// A v3 report from synthetic files: the recipe's description and the text in the header, the
// findings with the verdicts the construction fixes, bootstrap captions on lm, the sweep's other
// rate only in its own table, and the cost from the kept records.
func TestWriteReportV3(t *testing.T) {
	dir := t.TempDir()
	synthV3(t, dir)
	if err := WriteReport(dir); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "RESULTS.md"))
	_, papers, _ := bytes.Cut(md, []byte("## Against the papers"))
	papers, _, _ = bytes.Cut(papers, []byte("\n## "))
	t.Logf("## Against the papers%s", papers)
	if os.Getenv("REPORT_SHOW") != "" {
		t.Logf("%s", md)
	}
	for _, want := range []string{
		"Recipe v3:", "standard library of Go version go1.26.8, SHA-256 `0123456789ab…`", "Training: 5 models with kept curves (the learning-rate sweeps' included), 4.5 h",
		"| Press et al. 2022 (ALiBi, Fig. 1) (lm; bits per byte at 16L minus the same model's sliding-window row at 16L, per seed; flat: interval under +0.1 bit, degrades: over it; intervals: bootstrap over seeds and documents; 4 comparisons)",
		"mean [95% interval]: bootstrap over seeds and the test text's documents (2000 resamples)",
		"## Learning rates", "| lm | `rope` | 0.002 | **1.200** | ✓ |", "## Cost", "| lm | 5 | 4.5 | 0.5 | 0 |",
		"| 2/3 learned: 0.875 |", reading(""),
	} {
		if !bytes.Contains(md, []byte(want)) {
			t.Errorf("RESULTS.md lacks %q", want)
		}
	}
	if bytes.Contains(md, []byte("`rope + lr=0.002`")) {
		t.Error("a sweep's other rate reached a table")
	}
	fs := Papers(Source{ByTask: readAll(t, dir), Docs: map[string]DocIndex{"lm": mustDocs(t, dir)}})
	want := map[string]string{
		"Press et al. 2022 (ALiBi, Fig. 1)": Reproduced, "Chi et al. 2022 (KERPLE)": Reproduced, "Li et al. 2023 (FIRE)": Reproduced,
		"Kazemnejad et al. 2023 (NoPE), with a BOS token, as the paper trains": Reproduced,
		"Kazemnejad et al. 2023 (NoPE), without a BOS token (v2's rows)":       NotReproduced,
		"Ruoss et al. 2023 (randomized positions)":                             Inconclusive,
		"Chen et al. 2023 (position interpolation)":                            Reproduced,
		"Peng et al. 2023 (YaRN)":                                              NotReproduced,
		"Golovneva et al. 2024 (CoPE)":                                         Inconclusive,
		"Nakanishi 2025 (SSMax)":                                               Reproduced,
		"Zheng et al. 2024 (DAPE)":                                             Inconclusive,
		"Barbero et al. 2024 (p-RoPE)":                                         Inconclusive,
		"Zhu et al. 2023 (PoSE)":                                               Reproduced,
		"Jin et al. 2024 (Self-Extend)":                                        Reproduced,
		"Xiao et al. 2023 (StreamingLLM)":                                      Reproduced,
	}
	for _, f := range fs {
		if w, ok := want[f.Paper]; !ok || f.Verdict != w {
			t.Errorf("%s: %s (want %s): %s", f.Paper, f.Verdict, w, f.Reason)
		}
	}
}

func reading(s string) string { return readingBegin }

func readAll(t *testing.T, dir string) map[string][]Result {
	by := map[string][]Result{}
	for _, task := range []string{"lm", "copy", "reverse", "passkey", "mqar"} {
		rs, err := ReadCSV(CSVPath(dir, task))
		if err != nil {
			t.Fatal(err)
		}
		by[task] = WithoutSweepRates(rs)
	}
	return by
}

func mustDocs(t *testing.T, dir string) DocIndex {
	idx, err := ReadDocs(dir, "lm")
	if err != nil {
		t.Fatal(err)
	}
	return idx
}
