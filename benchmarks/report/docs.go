package report

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/posformer/posformer/benchmarks/stats"
	"github.com/posformer/posformer/engine/train/tasks"
)

// DocIndex is a task's per-document scores (results/cells/<task>/<model>.docs.csv, written by
// eval.EncodeDocScores), by model, variant and length.
type DocIndex map[docKey]stats.Docs

type docKey struct {
	model, variant string
	length         int
}

// DocsMetric is the metric a task's per-document sums score: the bits over every position of
// lm and mlm ("" for the other tasks, which have none).
func DocsMetric(task string) string {
	if task == tasks.LM || task == tasks.MLM {
		return tasks.Metrics(task)[0]
	}
	return ""
}

// ReadDocs reads every docs file of a task under out (none: an empty index, and the tables fall
// back to t-intervals over seeds).
func ReadDocs(out, task string) (DocIndex, error) {
	paths, err := filepath.Glob(filepath.Join(out, "results", "cells", task, "*.docs.csv"))
	if err != nil {
		return nil, err
	}
	idx := DocIndex{}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", p, err)
		}
		if err := idx.add(data); err != nil {
			return nil, fmt.Errorf("reading %s: %w", p, err)
		}
	}
	return idx, nil
}

// add parses one docs file: header model,variant,length,bits,n; bits and n space-separated.
func (idx DocIndex) add(data []byte) error {
	recs, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil {
		return err
	}
	if len(recs) == 0 || !slices.Equal(recs[0], []string{"model", "variant", "length", "bits", "n"}) {
		return errors.New("not a per-document scores file (header model,variant,length,bits,n)")
	}
	for i, f := range recs[1:] {
		length, err := strconv.Atoi(f[2])
		if err != nil {
			return fmt.Errorf("line %d: %w", i+2, err)
		}
		bits, n := strings.Fields(f[3]), strings.Fields(f[4])
		if len(bits) != len(n) {
			return fmt.Errorf("line %d: %d bits for %d counts", i+2, len(bits), len(n))
		}
		d := stats.Docs{Bits: make([]float64, len(bits)), N: make([]float64, len(n))}
		for j := range bits {
			b, err1 := strconv.ParseFloat(bits[j], 64)
			c, err2 := strconv.ParseFloat(n[j], 64)
			if err := errors.Join(err1, err2); err != nil {
				return fmt.Errorf("line %d: %w", i+2, err)
			}
			d.Bits[j], d.N[j] = b, c
		}
		idx[docKey{f[0], f[1], length}] = d
	}
	return nil
}

// sweepTag strips a learning-rate sweep's "lr=<rate>" (and its " · ") from a relabelled
// variant (grid.SweepLabels): the docs file keeps the variant the evaluation wrote.
func sweepTag(variant string) string {
	if !strings.HasPrefix(variant, "lr=") {
		return variant
	}
	_, rest, _ := strings.Cut(variant, " · ")
	return rest
}

// IsSweepRate reports whether a label is a learning-rate sweep's model at a rate not chosen.
func IsSweepRate(label string) bool {
	_, v, _ := strings.Cut(label, " + ")
	return strings.HasPrefix(v, "lr=")
}

// WithoutSweepRates drops the sweep's other rates: they appear only in the learning-rate table.
func WithoutSweepRates(rs []Result) []Result {
	var out []Result
	for _, r := range rs {
		if !IsSweepRate(r.Label()) {
			out = append(out, r)
		}
	}
	return out
}

// seedDocs is each seed's per-document scores of a label at a length, or nil unless every seed
// with a value has them (a bootstrap over some seeds only would hide the rest).
func seedDocs(rs []Result, idx DocIndex, label, metric string, length int) map[int]stats.Docs {
	if len(idx) == 0 {
		return nil
	}
	out := map[int]stats.Docs{}
	for _, r := range rs {
		if r.Metric != metric || r.Label() != label || r.Length != length {
			continue
		}
		d, ok := idx[docKey{r.Model, sweepTag(r.Variant), r.Length}]
		if !ok {
			return nil
		}
		out[r.Seed] = d
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// Interval methods, for captions and findings.
const (
	ByT         = "t over seeds"
	ByBootstrap = "bootstrap over seeds and documents"
)

// cellSummary is a cell's mean and 95% interval: the bootstrap over seeds and documents where
// every seed's per-document scores are there (metric DocsMetric), else Student t over seeds.
func cellSummary(rs []Result, idx DocIndex, label, metric string, length int, bySeed map[int]float64) (stats.Summary, string) {
	if ds := seedDocs(rs, idx, label, metric, length); ds != nil && len(ds) == len(bySeed) {
		var arm []stats.Docs
		for _, s := range slices.Sorted(maps.Keys(ds)) {
			arm = append(arm, ds[s])
		}
		return stats.Bootstrap([][]stats.Docs{arm}, nil).Summary(), ByBootstrap
	}
	return summaryOf(bySeed), ByT
}

// pairedSummary is a(seed) at la minus b(seed) at lb over the seeds both have, where the design
// pairs them (a row and its own sliding row, a fine-tune and its control from one base): the
// paired bootstrap over seeds and documents where both have per-document scores, else Student
// t over the per-seed differences.
func pairedSummary(rs []Result, idx DocIndex, metric, a string, la int, b string, lb int) (stats.Summary, string) {
	va, vb := seedValues(rs, a, metric, la), seedValues(rs, b, metric, lb)
	da, db := seedDocs(rs, idx, a, metric, la), seedDocs(rs, idx, b, metric, lb)
	if da != nil && db != nil {
		var armA, armB []stats.Docs
		for _, s := range slices.Sorted(maps.Keys(da)) {
			if d, ok := db[s]; ok && len(d.Bits) == len(da[s].Bits) {
				armA, armB = append(armA, da[s]), append(armB, d)
			}
		}
		if len(armA) > 0 && len(armA) == len(pairsOf(va, vb)) {
			iv := stats.Bootstrap([][]stats.Docs{armA, armB}, func(v []float64) float64 { return v[0] - v[1] })
			return iv.Summary(), ByBootstrap
		}
	}
	return pairedDelta(va, vb), ByT
}

// pairsOf is the seeds both have.
func pairsOf(a, b map[int]float64) []int {
	var out []int
	for s := range a {
		if _, ok := b[s]; ok {
			out = append(out, s)
		}
	}
	return out
}

// sharedTextSummary is a at la minus b at lb for two different models (seeds not paired) on the
// same text: the bootstrap with each arm's own seeds and the documents shared, false unless
// every seed of both has per-document scores (over as many documents).
func sharedTextSummary(rs []Result, idx DocIndex, metric, a string, la int, b string, lb int) (stats.Summary, bool) {
	da, db := seedDocs(rs, idx, a, metric, la), seedDocs(rs, idx, b, metric, lb)
	if da == nil || db == nil || len(da) != len(seedValues(rs, a, metric, la)) || len(db) != len(seedValues(rs, b, metric, lb)) {
		return stats.Summary{}, false
	}
	arm := func(m map[int]stats.Docs) []stats.Docs {
		var out []stats.Docs
		for _, s := range slices.Sorted(maps.Keys(m)) {
			out = append(out, m[s])
		}
		return out
	}
	armA, armB := arm(da), arm(db)
	if len(armA[0].Bits) != len(armB[0].Bits) {
		return stats.Summary{}, false
	}
	iv := stats.BootstrapSharedText([][]stats.Docs{armA, armB}, func(v []float64) float64 { return v[0] - v[1] })
	s := iv.Summary()
	s.N = min(len(armA), len(armB)) // an interval needs two seeds on each side
	if s.N < 2 {
		s.Lo, s.Hi = s.Mean, s.Mean
	}
	return s, true
}
