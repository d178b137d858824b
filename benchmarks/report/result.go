// Package report turns the benchmark's results into what people read: CSV files (one line per
// model × length × depth or pairs × metric), Markdown tables of the mean over seeds with its
// 95% interval, rankings only where intervals do not overlap, PNG plots with error bars, and
// RESULTS.md with its "against the papers" section, computed from the numbers.
package report

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/posformer/posformer/models"
)

// Result is one CSV line: a metric of one model (or baseline) at one length, and at one depth
// (passkey) or number of pairs (mqar).
type Result struct {
	Task, Model, Scheme, Variant string
	Seed                         int
	TrainLen                     int // L of the task's checkpoints
	Length                       int
	Depth                        float64 // passkey only; NaN elsewhere
	Pairs                        int     // mqar only; 0 elsewhere
	Metric                       string
	Value                        float64
	N                            int // scored tokens (or sequences, for exact match / accuracy)
	// Text names the test text that scored it (eval.Texts.ID; "" before version 3).
	Text string
}

// Label is what groups seeds into one table row: the scheme, and its variant if any.
func (r Result) Label() string {
	if r.Variant != "" {
		return r.Scheme + " + " + r.Variant
	}
	return r.Scheme
}

// Sub is the result's second axis: its depth or number of pairs (NaN if it has neither).
func (r Result) Sub() float64 {
	if r.Pairs > 0 {
		return float64(r.Pairs)
	}
	return r.Depth
}

// csvHeader is version 3's; version 2 lacks "text" and version 1 (the v1 results) "pairs" too,
// and both are still read.
var (
	csvHeader   = []string{"task", "model", "scheme", "variant", "seed", "train_len", "length", "depth", "pairs", "metric", "value", "n", "text"}
	csvHeaderV2 = csvHeader[:12]
	csvHeaderV1 = []string{"task", "model", "scheme", "variant", "seed", "train_len", "length", "depth", "metric", "value", "n"}
)

// EncodeCSV renders results as CSV.
func EncodeCSV(rs []Result) []byte {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.Write(csvHeader)
	for _, r := range rs {
		pairs := ""
		if r.Pairs > 0 {
			pairs = strconv.Itoa(r.Pairs)
		}
		w.Write([]string{r.Task, r.Model, r.Scheme, r.Variant, strconv.Itoa(r.Seed), strconv.Itoa(r.TrainLen), strconv.Itoa(r.Length),
			DepthString(r.Depth), pairs, r.Metric, strconv.FormatFloat(r.Value, 'g', 6, 64), strconv.Itoa(r.N), r.Text})
	}
	w.Flush()
	return buf.Bytes()
}

// WriteCSV writes results to path atomically (a temporary file renamed), creating its folder.
func WriteCSV(path string, rs []Result) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return models.WriteFileAtomic(path, EncodeCSV(rs))
}

// ReadCSV reads a results file written by WriteCSV (or by v1's cmd/bench); a missing file is no
// results.
func ReadCSV(path string) ([]Result, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	recs, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	v1 := err == nil && len(recs) > 0 && slices.Equal(recs[0], csvHeaderV1)
	v2 := err == nil && len(recs) > 0 && slices.Equal(recs[0], csvHeaderV2)
	if err != nil || len(recs) == 0 || !(v1 || v2 || slices.Equal(recs[0], csvHeader)) {
		return nil, fmt.Errorf("reading %s: not a results file of this version (delete it and rerun)", path)
	}
	var out []Result
	for i, f := range recs[1:] {
		if v1 {
			f = append(f[:8:8], append([]string{""}, f[8:]...)...)
		}
		r := Result{Task: f[0], Model: f[1], Scheme: f[2], Variant: f[3], Metric: f[9], Depth: math.NaN()}
		var errs []error
		var e error
		r.Seed, e = strconv.Atoi(f[4])
		errs = append(errs, e)
		r.TrainLen, e = strconv.Atoi(f[5])
		errs = append(errs, e)
		r.Length, e = strconv.Atoi(f[6])
		errs = append(errs, e)
		if f[7] != "" {
			r.Depth, e = strconv.ParseFloat(f[7], 64)
			errs = append(errs, e)
		}
		if f[8] != "" {
			r.Pairs, e = strconv.Atoi(f[8])
			errs = append(errs, e)
		}
		r.Value, e = strconv.ParseFloat(f[10], 64)
		errs = append(errs, e)
		r.N, e = strconv.Atoi(f[11])
		errs = append(errs, e)
		if len(f) > 12 {
			r.Text = f[12]
		}
		if err := errors.Join(errs...); err != nil {
			return nil, fmt.Errorf("reading %s line %d: %w", path, i+2, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// Merge replaces in old every line of a model (with its variant) that fresh has, keeping the
// rest, so that `-scheme rope` updates the RoPE rows without dropping the others.
func Merge(old, fresh []Result) []Result {
	redone := map[string]bool{}
	for _, r := range fresh {
		redone[r.Model+"\x00"+r.Variant] = true
	}
	var out []Result
	for _, r := range old {
		if !redone[r.Model+"\x00"+r.Variant] {
			out = append(out, r)
		}
	}
	return append(out, fresh...)
}

// DepthString prints a depth without trailing zeros ("" for NaN).
func DepthString(d float64) string {
	if math.IsNaN(d) {
		return ""
	}
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.2f", d), "0"), ".")
}
