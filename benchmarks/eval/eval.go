// Package eval scores checkpoints on the benchmark's tasks: which rows (a checkpoint, or the
// checkpoint with its positional config edited, or run through sliding windows) are scored on
// which examples at which lengths, and the model-free baselines that sit in the same tables.
// Every row of a task sees the same examples, fixed by (task, version, length, depth or pairs).
package eval

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gomlx/gomlx/backends"
	"github.com/posformer/posformer/benchmarks/recipe"
	"github.com/posformer/posformer/benchmarks/report"
	"github.com/posformer/posformer/engine"
	"github.com/posformer/posformer/engine/train/corpus"
	"github.com/posformer/posformer/engine/train/tasks"
	"github.com/posformer/posformer/models"
)

// Row is one line of a results table: a checkpoint, optionally with an edit of its config.
type Row struct {
	Model       string // the checkpoint's folder name (seeds of one label are grouped by Scheme+Variant)
	Scheme      string
	Variant     string // "" or a label such as "yarn s=4", "sliding L", "randpos"
	Seed        int
	TrainLen    int // L: the checkpoint's training length
	TaskVersion int
	Dir         string
	// Override edits the checkpoint's config for an evaluation length (nil: as trained).
	Override func(length int, c *models.Config) error
	// Sliding scores the row through windows of L sliding by L/2 (tasks.Sliding), or by
	// SlidingStride tokens when it is set: every token then has at least L − SlidingStride of
	// context, L − 1 at a stride of 1 (Press et al.'s sliding evaluation), at L/stride times
	// the cost of a plain pass.
	Sliding       bool
	SlidingStride int
	// MaxLength skips longer cells (0: none skipped): only bias schemes run lm at 32L.
	MaxLength int
	// RandomPositions is the range a randomized-positions model (Ruoss et al. 2023) was trained
	// on (0: off): it is scored on sorted random subsets of [0, RandomPositions) too, as it was
	// trained, not on 0..n-1, a placement it never saw.
	RandomPositions int
	// BOS: the model was trained with a BOS token first (cmd/train -bos) and is scored with it.
	BOS bool
	// StreamSinks > 0 scores the row as StreamingLLM (Xiao et al. 2023) runs a long text:
	// through a cache of L entries, the first StreamSinks tokens kept as attention sinks and half
	// of the rest dropped whenever it is full (engine.StreamLogProbs). Every byte then has between
	// L/2 and L of context, as in the sliding-window row; the difference is the sinks and the
	// cached keys' moved positions. MinLength skips shorter cells.
	StreamSinks, MinLength int
}

// randomPlacement is a model scored at sorted random positions of [0, n), a fixed draw.
type randomPlacement struct {
	f   tasks.Forwarder
	n   int
	rng *rand.Rand
}

func (r randomPlacement) Forward(tokens, positions [][]int) ([][][]float32, error) {
	placed := make([][]int, len(positions))
	for i, row := range positions {
		picked := r.rng.Perm(max(r.n, len(row)))[:len(row)]
		slices.Sort(picked)
		placed[i] = picked
	}
	return r.f.Forward(tokens, placed)
}

// Budget is how much each task evaluates; Quick shrinks it.
type Budget struct {
	Factors      []int // lengths in units of L
	BiasFactors  []int // more, for Recipe.BiasSchemes on lm
	CorpusBytes  int   // bytes of the eval split scored per length (lm, mlm)
	StringN      int   // copy and reverse sequences per length
	PasskeyN     int   // sequences per (length, depth)
	Depths       []float64
	MQARN        int // sequences per (length, pairs)
	Pairs        []int
	RopeFactors  []float64 // RoPE-scaling rows at these fixed factors
	TokensPerRun int       // rows per forward pass: TokensPerRun / length
	// SlidingStride, when set, is the stride of the lm sliding-window row instead of L/2 (the
	// row is then labelled "sliding L by <stride>"): cmd/bench -m --sliding-stride.
	SlidingStride int
}

// Full is the budget of the published tables.
var Full = Budget{
	Factors: recipe.V3.Factors, BiasFactors: recipe.V3.BiasFactors,
	CorpusBytes: corpus.TestBytes, StringN: 100, PasskeyN: 20, Depths: []float64{0, 0.25, 0.5, 0.75, 1}, MQARN: 32, Pairs: []int{4, 8, 16},
	RopeFactors: recipe.V3.RopeFactors, TokensPerRun: 4096,
}

// Quick re-scores the shipped checkpoints in well under a minute: two lengths, a few examples.
var Quick = Budget{
	Factors:     []int{1, 4},
	CorpusBytes: 1024, StringN: 8, PasskeyN: 4, Depths: []float64{0, 1}, MQARN: 4, Pairs: []int{4, 16},
	RopeFactors: []float64{4}, TokensPerRun: 4096,
}

// Cell is one (length, depth or pairs) of a task, with its examples.
type Cell struct {
	Length int
	Depth  float64 // passkey; NaN elsewhere
	Pairs  int     // mqar; 0 elsewhere
	Exs    []tasks.Example
	// Docs, for a cell cut from the test text (lm, mlm), are its documents: Evaluate then sums
	// each row's bits per document (DocScore), for intervals that include the text's variance.
	Docs []corpus.Doc
}

// DocScore is a row's score at one length, per document of the test text: Bits[d] bits over
// N[d] scored bytes of document d (bytes between documents count to the one before).
type DocScore struct {
	Model, Variant string
	Length         int
	Bits           []float64
	N              []int
}

// docOf finds the document a text byte belongs to: the last one starting at or before it.
func docOf(docs []corpus.Doc, at int) int {
	i := sort.Search(len(docs), func(i int) bool { return docs[i].Start > at })
	return max(i-1, 0)
}

// minLength is the shortest sequence a task can be scored on.
func minLength(task string, version int) int {
	switch {
	case task == tasks.Copy || task == tasks.Reverse:
		return 2
	case task == tasks.Passkey && version == 1:
		return tasks.MinPasskeyDigitLength
	case task == tasks.Passkey:
		return tasks.MinPasskeyLength
	case task == tasks.MQAR:
		return tasks.MinMQARLength(1)
	}
	return 1
}

// seedOf gives each cell its own fixed example stream, disjoint from the training generators'
// (seeded by small integers).
func seedOf(task string, version, length int, sub float64) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "eval/%s/v%d/%d/%g", task, version, length, sub)
	return h.Sum64()
}

// Plan builds a task's cells at the given lengths (nil: the budget's factors of L, and the
// bias factors on lm). evalData is the corpus's evaluation split (lm, mlm, and passkey's hay).
func Plan(task string, version, trainLen int, b Budget, lengths []int, evalData []byte) ([]Cell, error) {
	if lengths == nil {
		fs := b.Factors
		if task == tasks.LM {
			fs = append(slices.Clone(fs), b.BiasFactors...)
		}
		for _, f := range fs {
			lengths = append(lengths, f*trainLen)
		}
	}
	var hay []byte
	if task == tasks.Passkey && version >= 2 {
		hay = tasks.Haystack(evalData)
	}
	var cells []Cell
	for _, n := range lengths {
		if n < minLength(task, version) {
			return nil, fmt.Errorf("-lengths: %s needs lengths >= %d, got %d", task, minLength(task, version), n)
		}
		switch task {
		case tasks.Passkey:
			for _, d := range b.Depths {
				r := rand.New(rand.NewPCG(seedOf(task, version, n, d), 2))
				c := Cell{Length: n, Depth: d}
				for range b.PasskeyN {
					if version == 1 {
						c.Exs = append(c.Exs, tasks.PasskeyDigitExample(r, n, d))
					} else {
						c.Exs = append(c.Exs, tasks.PasskeyExample(r, hay, n, d))
					}
				}
				cells = append(cells, c)
			}
		case tasks.MQAR:
			for _, p := range b.Pairs {
				if n < tasks.MinMQARLength(p) {
					continue // too short for this many pairs
				}
				r := rand.New(rand.NewPCG(seedOf(task, version, n, float64(p)), 2))
				c := Cell{Length: n, Depth: math.NaN(), Pairs: p}
				for range b.MQARN {
					c.Exs = append(c.Exs, tasks.MQARExample(r, n, p))
				}
				cells = append(cells, c)
			}
		default:
			r := rand.New(rand.NewPCG(seedOf(task, version, n, math.NaN()), 2))
			c := Cell{Length: n, Depth: math.NaN()}
			switch task {
			case tasks.LM:
				c.Exs = tasks.LMExamples(evalData[:min(len(evalData), b.CorpusBytes+1)], n, 0)
			case tasks.MLM:
				data := evalData[:min(len(evalData), b.CorpusBytes)]
				for k := 0; (k+1)*n <= len(data); k++ {
					ex := tasks.MaskedExample(r, data[k*n:(k+1)*n], 0.15)
					ex.TextStart = k * n
					c.Exs = append(c.Exs, ex)
				}
			case tasks.Copy, tasks.Reverse:
				for range b.StringN {
					if task == tasks.Copy {
						c.Exs = append(c.Exs, tasks.CopyExample(r, n/2))
					} else {
						c.Exs = append(c.Exs, tasks.ReverseExample(r, n/2))
					}
				}
			}
			if len(c.Exs) == 0 {
				return nil, fmt.Errorf("-lengths: %d is longer than the %d bytes of eval text scored; use shorter lengths", n, b.CorpusBytes)
			}
			cells = append(cells, c)
		}
	}
	return cells, nil
}

// FindRows lists the finished checkpoints of a task under weights for the chosen schemes, with
// the rows each adds (RowsFor).
func FindRows(weights, task string, schemes []string, b Budget) ([]Row, error) {
	entries, err := os.ReadDir(filepath.Join(weights, task))
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("listing %s: %w", filepath.Join(weights, task), err)
	}
	var rows []Row
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(weights, task, e.Name())
		ti, err := recipe.ReadTrainInfo(dir)
		if err != nil {
			continue // unfinished: --full completes it
		}
		if !slices.Contains(schemes, ti.Scheme) {
			continue
		}
		if _, err := recipe.CheckTask(dir, task); err != nil {
			return nil, err
		}
		rows = append(rows, RowsFor(task, ti, dir, b)...)
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if oi, oj := recipe.SchemeOrder(rows[i].Scheme), recipe.SchemeOrder(rows[j].Scheme); oi != oj {
			return oi < oj
		}
		return rows[i].Variant < rows[j].Variant
	})
	return rows, nil
}

// RowsFor is a checkpoint's row and the evaluation-only rows it adds: on lm the sliding-window
// row of a plain model, and for FIRE its normaliser capped at L; for a plain RoPE decoder on lm
// and passkey the RoPE-scaling rows at the budget's fixed factors. Only bias schemes are scored
// past the recipe's largest factor.
func RowsFor(task string, ti *recipe.TrainInfo, dir string, b Budget) []Row {
	return RowsForModel(task, ti, dir, b, "")
}

// RowsForModel is RowsFor with the row's label given by the recipe (variant; "" reads it from
// train.json). A learning-rate sweep's model ("lr=...") gets every row a plain model gets: the
// sweep's choice becomes the table's seed-1 model.
func RowsForModel(task string, ti *recipe.TrainInfo, dir string, b Budget, variant string) []Row {
	if variant == "" {
		variant = ti.Variant()
	}
	base := Row{Model: filepath.Base(dir), Scheme: ti.Scheme, Variant: variant, Seed: ti.Seed, TrainLen: ti.SeqLen, TaskVersion: ti.TaskVersion, Dir: dir, RandomPositions: ti.RandomPositions, BOS: ti.BOS}
	if ti.Init != "" {
		// A fine-tune trains at s·L; its L for the tables is the base model's.
		s := factorOf(ti.Positional)
		if s <= 1 {
			s = float64(recipe.V3.PIFactor) // a fine-tune at s·L without interpolation
		}
		base.TrainLen = ti.SeqLen / max(1, int(math.Round(s)))
	}
	if len(b.Factors) > 0 && !slices.Contains(recipe.V3.BiasSchemes, ti.Scheme) {
		base.MaxLength = slices.Max(b.Factors) * base.TrainLen
	}
	rows := []Row{base}
	plain := base.Variant == "" || strings.HasPrefix(base.Variant, "lr=")
	if task == tasks.LM && plain {
		s := base
		// Windows of L at every length, 32L too: the reference StreamingLLM's rows are judged
		// against, and no more costly per byte at 32L than at 2L.
		s.Variant, s.Sliding, s.MaxLength = recipe.SlidingVariant, true, 0
		if b.SlidingStride > 0 {
			s.Variant, s.SlidingStride = fmt.Sprintf("%s by %d", recipe.SlidingVariant, b.SlidingStride), b.SlidingStride
		}
		rows = append(rows, s)
	}
	if task == tasks.LM && ti.Scheme == "fire" && plain {
		c := base
		c.Variant = recipe.FIRECapVariant
		c.Override = func(_ int, cfg *models.Config) error {
			cfg.Positional["norm_max"] = float64(base.TrainLen)
			return nil
		}
		rows = append(rows, c)
	}
	if task == tasks.LM && plain && slices.Contains(recipe.V3.StreamSchemes, ti.Scheme) {
		st := base
		st.Variant, st.StreamSinks, st.MinLength, st.MaxLength = recipe.StreamVariant, recipe.V3.StreamSinks, recipe.V3.StreamFactor*base.TrainLen, 0
		rows = append(rows, st)
	}
	if ti.Scheme == "rope" && plain && slices.Contains(recipe.V3.RopeTasks, task) && tasks.Kind(task) == models.Decoder {
		// Self-Extend (Jin et al. 2024): neighbours within W = L/2 as trained, the rest at
		// positions floor(p/G), G the smallest group that keeps every position under L.
		se := base
		se.Variant = recipe.SelfExtendVariant
		se.Override = func(length int, c *models.Config) error {
			w := base.TrainLen / 2
			g := max(1, (length-w+base.TrainLen-w-1)/(base.TrainLen-w))
			c.Positional["self_extend"] = map[string]any{"group": float64(g), "window": float64(w)}
			return nil
		}
		rows = append(rows, se)
		for _, t := range recipe.V3.RopeTypes {
			for _, f := range b.RopeFactors {
				v := base
				v.Variant = recipe.ScalingVariant(t, f)
				v.Override = func(_ int, c *models.Config) error {
					c.Positional["rope_scaling"] = scalingBlock(t, f, base.TrainLen, recipe.YaRNBetaFast, recipe.YaRNBetaSlow)
					return nil
				}
				rows = append(rows, v)
			}
		}
		// YaRN with LLaMA's ramp (β = 32), v2's setting: at head dim 32 and this L it
		// interpolates every pair.
		for _, f := range b.RopeFactors {
			v := base
			v.Variant = recipe.ScalingVariant("yarn β=32", f)
			v.Override = func(_ int, c *models.Config) error {
				c.Positional["rope_scaling"] = scalingBlock("yarn", f, base.TrainLen, 32, 1)
				return nil
			}
			rows = append(rows, v)
		}
	}
	return rows
}

// scalingBlock is a config's rope_scaling block for a RoPE-scaling row; YaRN's ramp is given.
func scalingBlock(typ string, f float64, L int, betaFast, betaSlow float64) map[string]any {
	b := map[string]any{"rope_type": typ, "factor": f, "original_max_position_embeddings": float64(L)}
	if typ == "yarn" {
		b["beta_fast"], b["beta_slow"] = betaFast, betaSlow
	}
	return b
}

func factorOf(pe map[string]any) float64 {
	block, _ := pe["rope_scaling"].(map[string]any)
	f, _ := block["factor"].(float64)
	return max(f, 1)
}

// loadRow loads a checkpoint with the row's edit of its config for this length.
func loadRow(backend backends.Backend, r Row, length int) (*engine.Engine, error) {
	var edits []models.Edit
	if r.Override != nil {
		edits = append(edits, func(c *models.Config) error { return r.Override(length, c) })
	}
	edits = append(edits, func(c *models.Config) error {
		// The engine's context must hold the longest evaluation.
		c.MaxSeqLen = max(c.MaxSeqLen, length+1) // +1: a BOS token
		return nil
	})
	m, ctx, err := models.Load(r.Dir, backend, edits...)
	if err != nil {
		return nil, err
	}
	return engine.New(backend, m, ctx, 0)
}

// Progress is told after each batch how many examples of the whole evaluation are done.
type Progress func(done int, status string)

// Units is the work Evaluate reports through Progress: examples scored over rows and cells.
func Units(rows []Row, cells []Cell) int {
	n := 0
	for _, r := range rows {
		for _, c := range cells {
			if (r.MaxLength == 0 || c.Length <= r.MaxLength) && c.Length >= r.MinLength {
				n += len(c.Exs)
			}
		}
	}
	return n
}

// Evaluate scores every row on every cell (up to its MaxLength). A scheme that refuses a length
// (a learned table too short, xPos past its float32 range) gets empty (NaN) cells and the reason
// once on stderr.
func Evaluate(backend backends.Backend, task string, rows []Row, cells []Cell, b Budget, progress Progress) ([]report.Result, error) {
	rs, _, err := EvaluateDocs(backend, task, rows, cells, b, progress)
	return rs, err
}

// EvaluateDocs is Evaluate with, for the cells that have Docs, each row's per-document sums.
func EvaluateDocs(backend backends.Backend, task string, rows []Row, cells []Cell, b Budget, progress Progress) ([]report.Result, []DocScore, error) {
	return EvaluateResuming(backend, task, rows, cells, b, progress, nil)
}

// EvaluateResuming is EvaluateDocs that takes the (row, length) pairs resume holds from it
// instead of scoring them again, and saves there every pair it scores (resume nil: none).
func EvaluateResuming(backend backends.Backend, task string, rows []Row, cells []Cell, b Budget, progress Progress, resume *Resume) ([]report.Result, []DocScore, error) {
	var out []report.Result
	var docScores []DocScore
	done := 0
	for _, r := range rows {
		stride := r.SlidingStride
		if stride <= 0 {
			stride = max(1, r.TrainLen/2)
		}
		if r.Sliding && stride > r.TrainLen {
			return nil, nil, fmt.Errorf("sliding stride %d is longer than the window, L = %d: use a stride from 1 to %d", stride, r.TrainLen, r.TrainLen)
		}
		var e *engine.Engine
		for i, c := range cells {
			if r.MaxLength > 0 && c.Length > r.MaxLength || c.Length < r.MinLength {
				continue
			}
			key := pairKey(task, r, c.Length)
			if p, ok := resume.get(key); ok {
				out = append(out, p.Results...)
				if p.Doc != nil {
					docScores = append(docScores, *p.Doc)
				}
				done += len(c.Exs)
				if progress != nil {
					progress(done, fmt.Sprintf("%s %s len %d (resumed)", task, label(r), c.Length))
				}
				continue
			}
			// A row without an override keeps one engine (and its compiled graphs) for every
			// length; an override may differ per length, so it is reloaded (weights are small).
			if e == nil || (r.Override != nil && (i == 0 || cells[i-1].Length != c.Length)) {
				var err error
				if e, err = loadRow(backend, r, c.Length); err != nil {
					return nil, nil, err
				}
			}
			exs := c.Exs
			if r.Sliding {
				exs = nil
				for _, ex := range c.Exs {
					exs = append(exs, tasks.Sliding(ex, r.TrainLen, stride)...)
				}
			}
			var s tasks.Scores
			batch := max(1, b.TokensPerRun/min(c.Length, len(exs[0].Input)))
			base := done
			scale := float64(len(c.Exs)) / float64(len(exs))
			var f tasks.Forwarder = e
			if r.RandomPositions > 0 {
				f = randomPlacement{f: e, n: r.RandomPositions, rng: rand.New(rand.NewPCG(uint64(c.Length), 17))}
			}
			if r.BOS {
				f = tasks.WithBOS(f)
			}
			var ds *DocScore
			var each func(tasks.Example, []float64)
			if len(c.Docs) > 0 {
				ds = &DocScore{Model: r.Model, Variant: r.Variant, Length: c.Length, Bits: make([]float64, len(c.Docs)), N: make([]int, len(c.Docs))}
				each = func(ex tasks.Example, nll []float64) {
					for j, w := range ex.Weight {
						if w > 0 {
							d := docOf(c.Docs, ex.TextStart+ex.Offset+j)
							ds.Bits[d] += nll[j] / math.Ln2
							ds.N[d]++
						}
					}
				}
			}
			tell := func(n int) {
				if progress != nil {
					progress(base+int(float64(n)*scale), fmt.Sprintf("%s %s len %d", task, label(r), c.Length))
				}
			}
			var err error
			if r.StreamSinks > 0 {
				err = scoreStreaming(e, exs, r, &s, tell, each)
			} else {
				err = tasks.ScoreEach(f, exs, batch, r.TrainLen, &s, tell, each)
			}
			done = base + len(c.Exs)
			if err != nil {
				fmt.Fprintf(os.Stderr, "\nbench: %s %s at length %d: %v\n", task, label(r), c.Length, err)
				s = tasks.Scores{}
				ds = nil
			}
			rs := metrics(task, r, c, s)
			out = append(out, rs...)
			if ds != nil {
				docScores = append(docScores, *ds)
			}
			if err := resume.put(key, rs, ds); err != nil {
				return nil, nil, err
			}
		}
	}
	return out, docScores, nil
}

// EncodeDocScores renders per-document sums as CSV, one line per (model, variant, length) with
// the documents' bits and byte counts as space-separated lists in the test text's order.
func EncodeDocScores(ds []DocScore) []byte {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.Write([]string{"model", "variant", "length", "bits", "n"})
	for _, d := range ds {
		bits, n := make([]string, len(d.Bits)), make([]string, len(d.N))
		for i := range d.Bits {
			bits[i] = strconv.FormatFloat(d.Bits[i], 'f', 2, 64)
			n[i] = strconv.Itoa(d.N[i])
		}
		w.Write([]string{d.Model, d.Variant, strconv.Itoa(d.Length), strings.Join(bits, " "), strings.Join(n, " ")})
	}
	w.Flush()
	return buf.Bytes()
}

// scoreStreaming scores examples one at a time through StreamingLLM's bounded cache
// (Row.StreamSinks); only the NLL is scored (no accuracy: lm reports none).
func scoreStreaming(e *engine.Engine, exs []tasks.Example, r Row, s *tasks.Scores, done func(int), each func(tasks.Example, []float64)) error {
	for i, ex := range exs {
		toks := make([]int, len(ex.Input)+1)
		for j, t := range ex.Input {
			toks[j] = int(t)
		}
		toks[len(ex.Input)] = int(ex.Target[len(ex.Target)-1])
		lp, err := e.StreamLogProbs(toks, r.StreamSinks, r.TrainLen-r.StreamSinks, 0)
		if err != nil {
			return fmt.Errorf("streaming %d tokens: %w", len(toks), err)
		}
		nll, right := make([]float64, len(ex.Target)), make([]bool, len(ex.Target))
		for j, w := range ex.Weight {
			if w > 0 {
				nll[j] = -lp[j]
			}
		}
		s.AddAt(nll, right, ex.Weight, r.TrainLen, ex.Offset)
		if each != nil {
			each(ex, nll)
		}
		if done != nil {
			done(i + 1)
		}
	}
	return nil
}

func label(r Row) string {
	if r.Variant != "" {
		return r.Model + " + " + r.Variant
	}
	return r.Model
}

// metrics turns a cell's scores into the task's CSV lines.
func metrics(task string, r Row, c Cell, s tasks.Scores) []report.Result {
	mk := func(metric string, v float64, n int) report.Result {
		return report.Result{Task: task, Model: r.Model, Scheme: r.Scheme, Variant: r.Variant, Seed: r.Seed, TrainLen: r.TrainLen,
			Length: c.Length, Depth: c.Depth, Pairs: c.Pairs, Metric: metric, Value: v, N: n}
	}
	ms := tasks.Metrics(task)
	switch task {
	case tasks.LM, tasks.MLM:
		return []report.Result{mk(ms[0], s.BitsPerToken(), s.N), mk(ms[1], s.BitsBeyond(), s.NBeyond)}
	default:
		return []report.Result{mk(ms[0], s.ExactMatch(), s.Seqs), mk(ms[1], s.TokenAccuracy(), s.N)}
	}
}

// Baselines scores what needs no model: the unigram model of the training split's bytes for lm
// and mlm (every byte predicted by its frequency); for the synthetic tasks, chance (uniform
// guessing among the answers, tasks.Chance) and the position-blind bag model (tasks.Bag), run
// through the same scorer as the models.
func Baselines(task string, version int, cells []Cell, train []byte, trainLen int) ([]report.Result, error) {
	var out []report.Result
	switch task {
	case tasks.LM, tasks.MLM:
		var logp, counts [256]float64
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
		r := Row{Model: "unigram", Scheme: "unigram", TrainLen: trainLen}
		for _, c := range cells {
			var s tasks.Scores
			for _, ex := range c.Exs {
				nll, right := make([]float64, len(ex.Target)), make([]bool, len(ex.Target))
				for j, t := range ex.Target {
					if t >= 0 && t < 256 {
						nll[j], right[j] = -logp[t], int(t) == best
					}
				}
				s.Add(nll, right, ex.Weight, trainLen)
			}
			out = append(out, metrics(task, r, c, s)...)
		}
		return out, nil
	}
	bag := Row{Model: "bag", Scheme: "bag", TrainLen: trainLen}
	for _, c := range cells {
		exact, token := tasks.Chance(task, version, c.Length, c.Pairs)
		out = append(out,
			report.Result{Task: task, Model: "chance", Scheme: "chance", TrainLen: trainLen, Length: c.Length, Depth: c.Depth, Pairs: c.Pairs, Metric: "exact_match", Value: exact},
			report.Result{Task: task, Model: "chance", Scheme: "chance", TrainLen: trainLen, Length: c.Length, Depth: c.Depth, Pairs: c.Pairs, Metric: "token_accuracy", Value: token})
		var s tasks.Scores
		if err := tasks.Score(tasks.Bag{Answers: tasks.Alphabet(task), Vocab: 260}, c.Exs, 64, trainLen, &s, nil); err != nil {
			return nil, err
		}
		out = append(out, metrics(task, bag, c, s)...)
	}
	return out, nil
}

// Texts are what the benchmark reads: the training split (the unigram baseline), and the
// held-out validation and test texts (corpus.LoadHeldOut), the test text for lm, mlm and
// passkey's hay.
type Texts struct {
	Train            []byte
	Validation, Test *corpus.HeldOut
	GoVersion        string
}

// ID names the texts in every results line: the Go version and the first 12 hex digits of the
// test text's SHA-256 (RESULTS.md gives both texts' whole SHA-256), so that results from two
// Go installations are never averaged together.
func (t *Texts) ID() string { return t.GoVersion + ":" + t.Test.SHA256()[:12] }

// LoadCorpus reads the texts from the Go installation.
func LoadCorpus(quick bool) (*Texts, error) {
	root, err := corpus.GoRoot()
	if err != nil {
		return nil, err
	}
	maxBytes := 0
	if quick {
		// A unigram estimate a few hundredths of a bit from the full one, in a fraction of the
		// load time.
		maxBytes = 4 << 20
	}
	c, err := corpus.Load(root, maxBytes)
	if err != nil {
		return nil, err
	}
	val, test, err := corpus.LoadHeldOut(root)
	if err != nil {
		return nil, err
	}
	return &Texts{Train: c.Train, Validation: val, Test: test, GoVersion: corpus.GoVersion(root)}, nil
}

// Stamp records the texts' ID in every result.
func Stamp(rs []report.Result, id string) []report.Result {
	for i := range rs {
		rs[i].Text = id
	}
	return rs
}

// Group is rows that share their cells: one training length and task version.
type Group struct {
	TrainLen, Version int
	Rows              []Row
}

// Groups splits a task's rows by (L, version), keeping their order.
func Groups(rows []Row) []Group {
	var out []Group
	for _, r := range rows {
		i := slices.IndexFunc(out, func(g Group) bool { return g.TrainLen == r.TrainLen && g.Version == r.TaskVersion })
		if i < 0 {
			out = append(out, Group{TrainLen: r.TrainLen, Version: r.TaskVersion})
			i = len(out) - 1
		}
		out[i].Rows = append(out[i].Rows, r)
	}
	return out
}

// ZeroShotPasskey scores a language model's rows on the Go passkey (tasks.GoPasskeyExample) at
// the budget's lengths, b.PasskeyN sequences per (length, depth): Chen et al.'s passkey test of
// PI, put to models trained on lm alone (the fine-tunes among them), so that extending the
// context is judged on retrieval too, not only on bits per byte. The results are lm's, with
// metrics "zero_shot_passkey_exact_match" and "zero_shot_passkey_token_accuracy".
func ZeroShotPasskey(backend backends.Backend, rows []Row, trainLen int, b Budget, text []byte) ([]report.Result, error) {
	hay := tasks.Haystack(text)
	var cells []Cell
	for _, f := range b.Factors {
		n := f * trainLen
		if n < tasks.MinGoPasskeyLength {
			continue
		}
		for _, d := range b.Depths {
			r := rand.New(rand.NewPCG(seedOf("go-passkey", 1, n, d), 3))
			c := Cell{Length: n, Depth: d}
			for range b.PasskeyN {
				c.Exs = append(c.Exs, tasks.GoPasskeyExample(r, hay, n, d))
			}
			cells = append(cells, c)
		}
	}
	rs, err := Evaluate(backend, tasks.Passkey, rows, cells, b, nil)
	if err != nil {
		return nil, err
	}
	for i := range rs {
		rs[i].Task, rs[i].Metric = tasks.LM, ZeroShotPrefix+rs[i].Metric
	}
	return rs, nil
}

// ZeroShotPrefix starts the metrics of ZeroShotPasskey's results.
const ZeroShotPrefix = "zero_shot_passkey_"
