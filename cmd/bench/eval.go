// Evaluation: which rows (a checkpoint, optionally with its positional config overridden) are
// scored on which examples at which lengths, and the baselines that sit in the same tables.
package main

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/gomlx/gomlx/backends"
	"github.com/posformer/posformer/benchmarks/corpus"
	"github.com/posformer/posformer/benchmarks/tasks"
	"github.com/posformer/posformer/cmd/internal/progress"
	"github.com/posformer/posformer/cmd/internal/ropeflags"
	"github.com/posformer/posformer/engine"
	"github.com/posformer/posformer/models"
)

// row is one line of a results table: a checkpoint, and an edit of its positional block
// (nil: as trained). RoPE-scaling rows are the RoPE checkpoint with a rope_scaling override.
type row struct {
	Model    string // table label: the scheme, "<scheme>-seedN", or "<scheme> + <variant>"
	Scheme   string
	Seed     int
	TrainLen int    // L: the checkpoint's training length
	Variant  string // "" or a name such as "yarn"
	// Override edits the checkpoint's "positional" block for an evaluation length (nil: as
	// trained). It sees the length so that a RoPE-scaling row can use the factor that stretches
	// L to that length.
	Override func(length int, pe map[string]any) error
	Dir      string
}

// result is one CSV line.
type result struct {
	Task, Model, Scheme, Variant string
	Seed                         int
	TrainLen                     int // L of the task's checkpoints
	Length                       int
	Depth                        float64 // passkey only; NaN elsewhere, and for the mean over depths
	Metric                       string
	Value                        float64
	N                            int // scored tokens (or sequences, for exact match / accuracy)
}

// budget is how much each task evaluates; --quick shrinks it.
type budget struct {
	lengths      map[string][]int
	corpusBytes  int // bytes of the eval split scored per length (lm, mlm)
	copyN        int // sequences per length
	passkeyN     int // sequences per (length, depth)
	depths       []float64
	tokensPerRun int // rows per forward pass: tokensPerRun / length
}

var fullBudget = budget{
	lengths: map[string][]int{
		tasks.LM: {64, 128, 256, 512, 1024}, tasks.MLM: {64, 128, 256, 512, 1024},
		tasks.Copy: {16, 32, 64, 128}, tasks.Passkey: {64, 128, 256, 512, 1024},
	},
	corpusBytes: 16384, copyN: 100, passkeyN: 20, depths: []float64{0, 0.25, 0.5, 0.75, 1},
	tokensPerRun: 4096,
}

var quickBudget = budget{
	lengths: map[string][]int{
		tasks.LM: {64, 256}, tasks.MLM: {64, 256}, tasks.Copy: {32, 128}, tasks.Passkey: {64, 256},
	},
	corpusBytes: 1024, copyN: 8, passkeyN: 4, depths: []float64{0, 1},
	tokensPerRun: 4096,
}

// minLength is the shortest sequence a task can be scored on.
func minLength(task string) int {
	switch task {
	case tasks.Copy:
		return 2
	case tasks.Passkey:
		return tasks.MinPasskeyLength
	}
	return 1
}

// examples builds a task's evaluation examples at one length (and depth, for passkey). They
// depend only on the task, length and depth, so every row sees the same ones.
func examples(task string, b budget, evalData []byte, length int, depth float64) []tasks.Example {
	r := rand.New(rand.NewPCG(seedOf(task, length, depth), 2))
	switch task {
	case tasks.LM:
		return tasks.LMExamples(evalData[:min(len(evalData), b.corpusBytes+1)], length, 0)
	case tasks.MLM:
		var out []tasks.Example
		data := evalData[:min(len(evalData), b.corpusBytes)]
		for k := 0; (k+1)*length <= len(data); k++ {
			out = append(out, tasks.MaskedExample(r, data[k*length:(k+1)*length], 0.15))
		}
		return out
	case tasks.Copy:
		out := make([]tasks.Example, b.copyN)
		for i := range out {
			out[i] = tasks.CopyExample(r, length/2)
		}
		return out
	case tasks.Passkey:
		out := make([]tasks.Example, b.passkeyN)
		for i := range out {
			out[i] = tasks.PasskeyExample(r, length, depth)
		}
		return out
	}
	return nil
}

// seedOf gives each (task, length, depth) its own fixed example stream, disjoint from the
// training generators' (seeded by small integers).
func seedOf(task string, length int, depth float64) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "eval/%s/%d/%g", task, length, depth)
	return h.Sum64()
}

// findRows lists the finished checkpoints of a task under weights, for the chosen schemes.
func findRows(weights, task string, schemes []string) ([]row, error) {
	entries, err := os.ReadDir(filepath.Join(weights, task))
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("listing %s: %w", filepath.Join(weights, task), err)
	}
	var rows []row
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(weights, task, e.Name())
		ti, err := readTrainInfo(dir)
		if err != nil {
			continue // unfinished: --full -resume completes it
		}
		if !slices.Contains(schemes, ti.Scheme) {
			continue
		}
		if _, err := checkTask(dir, task); err != nil {
			return nil, err
		}
		rows = append(rows, row{Model: e.Name(), Scheme: ti.Scheme, Seed: ti.Seed, TrainLen: ti.SeqLen, Dir: dir})
		rows = append(rows, variantRows(task, rows[len(rows)-1])...)
	}
	sort.SliceStable(rows, func(i, j int) bool { return schemeOrder(rows[i].Scheme) < schemeOrder(rows[j].Scheme) })
	return rows, nil
}

// ropeScalingTypes are the RoPE-scaling rows: each evaluates the RoPE checkpoint, unretrained,
// with its rotary frequencies rescaled by factor s = length / L (1 at and below L).
var ropeScalingTypes = []string{"linear", "ntk", "dynamic", "yarn"}

// variantRows are the rows a checkpoint adds with its positional config edited: the
// RoPE-scaling rows for a rope checkpoint of any decoder task (they cost four more rope rows,
// about 7 minutes on passkey), and the row the --rope-* flags ask for.
func variantRows(task string, base row) []row {
	if base.Scheme != "rope" || tasks.Kind(task) != models.Decoder {
		return nil
	}
	var out []row
	for _, t := range ropeScalingTypes {
		v := base
		v.Variant = t + " s=n/L"
		v.Override = func(length int, pe map[string]any) error {
			pe["rope_scaling"] = ropeScaling(t, length, base.TrainLen)
			return nil
		}
		out = append(out, v)
	}
	if userRope != nil && userRope.Given() {
		// The row asked for on the command line with llama.cpp's flags.
		v := base
		v.Variant = userRope.Describe()
		v.Override = func(_ int, pe map[string]any) error { return userRope.Apply(pe) }
		out = append(out, v)
	}
	return out
}

// userRope holds the --rope-* / --yarn-* flags given to cmd/bench (nil or unset: none).
var userRope *ropeflags.Flags

// ropeScaling is the Hugging Face style block for a type stretching L to length.
func ropeScaling(t string, length, trainLen int) map[string]any {
	return map[string]any{"rope_type": t, "factor": math.Max(1, float64(length)/float64(trainLen)), "original_max_position_embeddings": float64(trainLen)}
}

// schemeOrder groups the table: no positions, absolute, rotary, biases, relative.
func schemeOrder(s string) int {
	order := []string{"none", "sinusoidal", "learned", "multiplicative", "floater", "rope", "xpos", "alibi", "kerple", "fire", "t5", "shaw", "xl", "deberta"}
	for i, n := range order {
		if n == s {
			return i
		}
	}
	return len(order)
}

// loadRow loads a checkpoint with the row's edit of its positional block for this length.
func loadRow(backend backends.Backend, r row, length int) (*engine.Engine, error) {
	var edits []models.Edit
	if r.Override != nil {
		edits = append(edits, func(c *models.Config) error { return r.Override(length, c.Positional) })
	}
	m, ctx, err := models.Load(r.Dir, backend, edits...)
	if err != nil {
		return nil, err
	}
	return engine.New(backend, m, ctx, 0)
}

// cell is one (length, depth) of one task, with its examples.
type cell struct {
	length int
	depth  float64
	exs    []tasks.Example
}

// plan builds the cells of a task.
func plan(task string, b budget, lengths []int, evalData []byte) ([]cell, error) {
	if lengths == nil {
		lengths = b.lengths[task]
	}
	var cells []cell
	for _, n := range lengths {
		if n < minLength(task) {
			return nil, fmt.Errorf("-lengths: %s needs lengths >= %d, got %d", task, minLength(task), n)
		}
		if task == tasks.Passkey {
			for _, d := range b.depths {
				cells = append(cells, cell{n, d, examples(task, b, evalData, n, d)})
			}
			continue
		}
		exs := examples(task, b, evalData, n, math.NaN())
		if len(exs) == 0 {
			return nil, fmt.Errorf("-lengths: %d is longer than the %d bytes of eval text scored; use shorter lengths", n, b.corpusBytes)
		}
		cells = append(cells, cell{n, math.NaN(), exs})
	}
	return cells, nil
}

// evaluate scores every row of a task on every cell, advancing bar by examples scored.
func evaluate(backend backends.Backend, task string, rows []row, cells []cell, b budget, bar *progress.Bar, done *int) ([]result, error) {
	var out []result
	for _, r := range rows {
		var e *engine.Engine
		for i, c := range cells {
			// A row without an override keeps one engine (and its compiled graphs) for every
			// length; an override may differ per length, so it is reloaded (weights are small).
			if e == nil || (r.Override != nil && (i == 0 || cells[i-1].length != c.length)) {
				var err error
				if e, err = loadRow(backend, r, c.length); err != nil {
					return nil, err
				}
			}
			var s tasks.Scores
			batch := max(1, b.tokensPerRun/c.length)
			base := *done
			err := tasks.Score(e, c.exs, batch, r.TrainLen, &s, func(n int) {
				bar.Set(base+n, fmt.Sprintf("%s %s len %d", task, r.Model, c.length))
			})
			*done = base + len(c.exs)
			if err != nil {
				// A scheme that refuses a length (a learned table too short, xPos past its
				// float32 range) gets empty cells, and the reason once on stderr.
				fmt.Fprintf(os.Stderr, "\nbench: %s %s at length %d: %v\n", task, r.Model, c.length, err)
				s = tasks.Scores{}
			}
			out = append(out, metrics(task, r, c, s)...)
		}
	}
	return out, nil
}

// metrics turns a cell's scores into the task's CSV lines.
func metrics(task string, r row, c cell, s tasks.Scores) []result {
	mk := func(metric string, v float64, n int) result {
		return result{Task: task, Model: r.Model, Scheme: r.Scheme, Variant: r.Variant, Seed: r.Seed, TrainLen: r.TrainLen,
			Length: c.length, Depth: c.depth, Metric: metric, Value: v, N: n}
	}
	switch task {
	case tasks.LM:
		return []result{mk("bits_per_byte", s.BitsPerToken(), s.N), mk("bits_per_byte_beyond_L", s.BitsBeyond(), s.NBeyond)}
	case tasks.MLM:
		return []result{mk("bits_per_masked_byte", s.BitsPerToken(), s.N), mk("bits_per_masked_byte_beyond_L", s.BitsBeyond(), s.NBeyond)}
	default:
		return []result{mk("exact_match", s.ExactMatch(), s.Seqs), mk("token_accuracy", s.TokenAccuracy(), s.N)}
	}
}

// baseline scores what needs no model: the unigram model of the training split's bytes for
// lm and mlm (predicting every byte by its frequency), chance for copy (26 letters) and
// passkey (10 digits per key digit).
func baseline(task string, cells []cell, train []byte, trainLen int) []result {
	var logp [256]float64
	var counts [256]float64
	for _, b := range train {
		counts[b]++
	}
	best := 0
	for i := range counts {
		logp[i] = math.Log((counts[i] + 1) / (float64(len(train)) + 256))
		if counts[i] > counts[best] {
			best = i
		}
	}
	var out []result
	for _, c := range cells {
		r := row{Model: "unigram", Scheme: "unigram", TrainLen: trainLen}
		var s tasks.Scores
		switch task {
		case tasks.LM, tasks.MLM:
			for _, ex := range c.exs {
				nll, right := make([]float64, len(ex.Target)), make([]bool, len(ex.Target))
				for j, t := range ex.Target {
					if t >= 0 && t < 256 {
						nll[j], right[j] = -logp[t], int(t) == best
					}
				}
				s.Add(nll, right, ex.Weight, trainLen)
			}
			out = append(out, metrics(task, r, c, s)...)
		case tasks.Copy, tasks.Passkey:
			r.Model, r.Scheme = "chance", "chance"
			k, n := 26.0, c.length/2
			if task == tasks.Passkey {
				k, n = 10, tasks.KeyDigits
			}
			exact := math.Pow(1/k, float64(n))
			out = append(out, result{Task: task, Model: r.Model, Scheme: r.Scheme, TrainLen: trainLen, Length: c.length, Depth: c.depth, Metric: "exact_match", Value: exact},
				result{Task: task, Model: r.Model, Scheme: r.Scheme, TrainLen: trainLen, Length: c.length, Depth: c.depth, Metric: "token_accuracy", Value: 1 / k})
		}
	}
	return out
}

// loadCorpus reads the corpus splits (the training split only for the unigram baseline).
func loadCorpus(quick bool) (*corpus.Corpus, error) {
	root, err := corpus.GoRoot()
	if err != nil {
		return nil, err
	}
	maxBytes := 0
	if quick {
		// Enough eval text for the quick budget and a unigram estimate a few hundredths of a
		// bit from the full one, in a fraction of the load time.
		maxBytes = 4 << 20
	}
	return corpus.Load(root, maxBytes)
}

func label(r result) string {
	if r.Variant != "" {
		return r.Model + " + " + r.Variant
	}
	return r.Model
}

func depthString(d float64) string {
	if math.IsNaN(d) {
		return ""
	}
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.2f", d), "0"), ".")
}
