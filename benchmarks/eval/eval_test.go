package eval

import (
	"encoding/json"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/posformer/posformer/benchmarks/recipe"
	"github.com/posformer/posformer/benchmarks/report"
	"github.com/posformer/posformer/engine"
	"github.com/posformer/posformer/engine/train/corpus"
	"github.com/posformer/posformer/engine/train/tasks"
	"github.com/posformer/posformer/models"
)

var text = []byte(strings.Repeat("func f(x int) int {\n\treturn x*2 + 1 // 42\n}\n", 200))

// checkpoint writes a tiny random-weight decoder with the train.json cmd/train would write.
func checkpoint(t *testing.T, dir, task, scheme string, L int) *recipe.TrainInfo {
	t.Helper()
	return checkpointPE(t, dir, task, map[string]any{"name": scheme}, L)
}

// tinyLM is a tiny RoPE language model at L = 16 in a temporary folder, with its train.json, a
// quick budget scoring 512 bytes, and the cells of its evaluation (at lengths, nil: the budget's).
func tinyLM(t *testing.T, lengths []int) (string, *recipe.TrainInfo, Budget, []Cell) {
	dir := filepath.Join(t.TempDir(), "rope")
	ti := checkpoint(t, dir, tasks.LM, "rope", 16)
	b := Quick
	b.CorpusBytes = 512
	cells, err := Plan(tasks.LM, 1, 16, b, lengths, text)
	if err != nil {
		t.Fatal(err)
	}
	return dir, ti, b, cells
}

// checkpointPE is checkpoint with the scheme's options (pe["name"] the scheme).
func checkpointPE(t *testing.T, dir, task string, pe map[string]any, L int) *recipe.TrainInfo {
	t.Helper()
	scheme := pe["name"].(string)
	cfg := models.Config{Kind: models.Decoder, VocabSize: 260, Dim: 16, NumLayers: 1, NumHeads: 2, NumKVHeads: 1, HiddenDim: 16,
		TieEmbeddings: true, MaxSeqLen: 512, TrainSeqLen: L, Tokenizer: "byte", Positional: pe}
	backend, err := engine.NewBackend("")
	if err != nil {
		t.Fatal(err)
	}
	m, err := models.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.New()
	ctx.SetParam(context.ParamInitialSeed, int64(1)) // the same weights every run
	e, err := engine.New(backend, m, ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Forward([][]int{{1, 2}}, [][]int{{0, 1}}); err != nil { // creates the variables
		t.Fatal(err)
	}
	if err := models.Save(dir, cfg, e.Ctx); err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(map[string]any{"task": task, "task_version": tasks.Version(task), "scheme": scheme, "kind": "decoder", "seq_len": L, "seed": 1})
	if err := os.WriteFile(filepath.Join(dir, "train.json"), js, 0o644); err != nil {
		t.Fatal(err)
	}
	ti, err := recipe.ReadTrainInfo(dir)
	if err != nil {
		t.Fatal(err)
	}
	return ti
}

// Cells: the budget's factors of L (and 32L on lm), passkey's version decides its examples,
// mqar leaves out pair counts a length cannot hold; the examples are the same on every call.
func TestPlan(t *testing.T) {
	lm, err := Plan(tasks.LM, 1, 16, Full, nil, text)
	if err != nil || len(lm) != 6 || lm[5].Length != 32*16 {
		t.Fatalf("lm cells: %d (err %v), want 6 up to 512", len(lm), err)
	}
	v1, _ := Plan(tasks.Passkey, 1, 64, Quick, []int{64}, text)
	v2, _ := Plan(tasks.Passkey, 2, 64, Quick, []int{64}, text)
	if len(v1) != len(Quick.Depths) || v1[0].Exs[0].Input[0] != '=' || !strings.Contains(string(toBytes(v2[0].Exs[0].Input)), "$") {
		t.Errorf("passkey v1 %q / v2 %q", toBytes(v1[0].Exs[0].Input), toBytes(v2[0].Exs[0].Input))
	}
	mq, _ := Plan(tasks.MQAR, 1, 32, Full, []int{32, 64}, nil)
	var pairs []int
	for _, c := range mq {
		pairs = append(pairs, c.Pairs)
	}
	if len(mq) != 5 || mq[0].Pairs != 4 || mq[1].Pairs != 8 || mq[2].Length != 64 { // 16 pairs need 63 tokens
		t.Errorf("mqar cells: %v", pairs)
	}
	again, _ := Plan(tasks.MQAR, 1, 32, Full, []int{32, 64}, nil)
	if string(toBytes(again[3].Exs[7].Input)) != string(toBytes(mq[3].Exs[7].Input)) {
		t.Error("examples differ between calls")
	}
	if _, err := Plan(tasks.Passkey, 2, 64, Quick, []int{tasks.MinPasskeyLength - 1}, text); err == nil || !strings.Contains(err.Error(), ">= 18") {
		t.Errorf("short passkey: %v", err)
	}
}

func toBytes(xs []int32) []byte {
	var b []byte
	for _, x := range xs {
		b = append(b, byte(x))
	}
	return b
}

// Rows: lm adds a sliding-window row; a RoPE decoder on lm adds five scaling types at each fixed
// factor and YaRN with LLaMA's ramp beside v3's; only bias schemes go past the largest factor; a
// fine-tune, with or without interpolation, is tabled at its base's L; a sweep's model gets a
// plain model's rows.
func TestRowsFor(t *testing.T) {
	rope := &recipe.TrainInfo{Task: tasks.LM, Scheme: "rope", SeqLen: 128, Seed: 2, TaskVersion: 1}
	rows := RowsFor(tasks.LM, rope, "w/lm/rope-seed2", Full)
	if len(rows) != 2+6*len(Full.RopeFactors)+2 || rows[1].Variant != recipe.SlidingVariant || !rows[1].Sliding || rows[0].MaxLength != 16*128 {
		t.Fatalf("%d rows: %+v", len(rows), rows[:2])
	}
	alibi := &recipe.TrainInfo{Task: tasks.LM, Scheme: "alibi", SeqLen: 128}
	if r := RowsFor(tasks.LM, alibi, "w", Full); len(r) != 3 || r[0].MaxLength != 0 || r[1].SlidingStride != 0 || r[2].StreamSinks != 4 || r[2].MinLength != 16*128 {
		t.Errorf("alibi rows %+v", r)
	}
	fine := Full
	fine.SlidingStride = 16
	if r := RowsFor(tasks.LM, alibi, "w", fine); len(r) != 3 || r[1].Variant != "sliding L by 16" || r[1].SlidingStride != 16 || !r[1].Sliding {
		t.Errorf("alibi rows with a stride of 16: %+v", r)
	}
	fire := &recipe.TrainInfo{Task: tasks.LM, Scheme: "fire", SeqLen: 128}
	if r := RowsFor(tasks.LM, fire, "w", Full); len(r) != 3 || r[2].Variant != recipe.FIRECapVariant || r[2].Override == nil {
		t.Errorf("fire rows %+v, want plain, sliding and %q", r, recipe.FIRECapVariant)
	} else {
		cfg := models.Config{Positional: map[string]any{"name": "fire"}}
		if err := r[2].Override(2048, &cfg); err != nil || cfg.Positional["norm_max"] != 128.0 {
			t.Errorf("capped row's edit: %v, err %v; want norm_max 128", cfg.Positional, err)
		}
	}
	if r := RowsFor(tasks.Copy, &recipe.TrainInfo{Task: tasks.Copy, Scheme: "fire", SeqLen: 64}, "w", Full); len(r) != 1 {
		t.Errorf("copy fire: %d rows, want 1 (the capped normaliser is an lm row)", len(r))
	}
	if r := RowsFor(tasks.Copy, &recipe.TrainInfo{Task: tasks.Copy, Scheme: "rope", SeqLen: 64}, "w", Full); len(r) != 1 {
		t.Errorf("copy rope: %d rows, want 1 (no scaling rows off lm and passkey)", len(r))
	}
	pi := &recipe.TrainInfo{Task: tasks.LM, Scheme: "rope", SeqLen: 512, Init: "w/lm/rope",
		Positional: map[string]any{"name": "rope", "rope_scaling": map[string]any{"rope_type": "linear", "factor": 4.0}}}
	if r := RowsFor(tasks.LM, pi, "w/lm/rope-pi4", Full); len(r) != 1 || r[0].TrainLen != 128 || r[0].Variant != "PI s=4 ft" {
		t.Errorf("PI rows %+v", r)
	}
	ft := &recipe.TrainInfo{Task: tasks.LM, Scheme: "rope", SeqLen: 512, Init: "w/lm/rope", Positional: map[string]any{"name": "rope"}}
	if r := RowsForModel(tasks.LM, ft, "w/lm/rope-ft4", Full, "4L ft"); len(r) != 1 || r[0].TrainLen != 128 || r[0].Variant != "4L ft" {
		t.Errorf("fine-tune without interpolation: rows %+v", r)
	}
	if r := RowsForModel(tasks.LM, rope, "w/lm/rope-lr0.002", Full, recipe.SweepVariant(0.002)); len(r) != len(rows) || r[0].Variant != "lr=0.002" || r[1].Variant != recipe.SlidingVariant {
		t.Errorf("sweep model: %d rows (want %d), first %q", len(r), len(rows), r[0].Variant)
	}
	for _, r := range rows {
		if r.Variant == recipe.SelfExtendVariant {
			// W = 64; at 16L = 2048, G = ceil((2048 − 64) / (128 − 64)) = 31 keeps every position
			// under L: 64 + (2048 − 64)/31 = 128; at L, G = 1 is plain attention.
			for length, g := range map[int]float64{2048: 31, 128: 1, 256: 3} {
				cfg := models.Config{Positional: map[string]any{"name": "rope"}}
				if err := r.Override(length, &cfg); err != nil {
					t.Fatal(err)
				}
				if b := cfg.Positional["self_extend"].(map[string]any); b["group"] != g || b["window"] != 64.0 {
					t.Errorf("self-extend at %d: %v, want group %g, window 64", length, b, g)
				}
			}
		}
		if r.Variant == recipe.ScalingVariant("yarn", 4) {
			cfg := models.Config{Positional: map[string]any{"name": "rope"}}
			if err := r.Override(512, &cfg); err != nil {
				t.Fatal(err)
			}
			if b := cfg.Positional["rope_scaling"].(map[string]any); b["beta_fast"] != recipe.YaRNBetaFast || b["beta_slow"] != recipe.YaRNBetaSlow {
				t.Errorf("yarn row's ramp %v, want v3's", b)
			}
		}
	}
}

// A tiny random model through the whole evaluation path: finite bits per byte, the sliding
// window equal to the plain row at L (one window covers it) and lower-or-equal context past it,
// a RoPE-scaling row that changes the numbers, and a beyond-L metric only past L.
func TestEvaluateTinyModel(t *testing.T) {
	dir, ti, b, cells := tinyLM(t, nil)
	rows := RowsFor(tasks.LM, ti, dir, b)
	backend, _ := engine.NewBackend("")
	last := 0
	rs, err := Evaluate(backend, tasks.LM, rows, cells, b, func(n int, _ string) { last = n })
	if err != nil {
		t.Fatal(err)
	}
	if last != Units(rows, cells) {
		t.Errorf("progress ended at %d of %d", last, Units(rows, cells))
	}
	get := func(variant, metric string, length int) float64 {
		for _, r := range rs {
			if r.Variant == variant && r.Metric == metric && r.Length == length {
				return r.Value
			}
		}
		t.Fatalf("no %q %s at %d", variant, metric, length)
		return 0
	}
	plain, slid := get("", "bits_per_byte", 16), get(recipe.SlidingVariant, "bits_per_byte", 16)
	if math.IsNaN(plain) || plain < 1 || math.Abs(plain-slid) > 1e-9 {
		t.Errorf("at L: plain %v, sliding %v; want equal and finite", plain, slid)
	}
	if !math.IsNaN(get("", "bits_per_byte_beyond_L", 16)) || math.IsNaN(get("", "bits_per_byte_beyond_L", 64)) {
		t.Error("beyond-L metric at L should be NaN, past L a number")
	}
	if y := get(recipe.ScalingVariant("yarn", 4), "bits_per_byte", 16); y == plain || math.IsNaN(y) {
		t.Errorf("yarn s=4 at L: %v, plain %v; want a different number", y, plain)
	}
	// A stride of L is windows that do not overlap: past L, every window is the row at L run
	// again, so the row at 4L equals the plain row at L (to the last digit here; a stride of L/2
	// is 3e-5 off); a stride of 1 gives every byte L − 1 of context and another number. A
	// stride past L is an error.
	b.SlidingStride = 16
	rs16, err := Evaluate(backend, tasks.LM, RowsFor(tasks.LM, ti, dir, b)[1:2], cells, b, func(int, string) {})
	if err != nil || len(rs16) == 0 {
		t.Fatalf("stride 16: %v", err)
	}
	b.SlidingStride = 1
	rs1, err := Evaluate(backend, tasks.LM, RowsFor(tasks.LM, ti, dir, b)[1:2], cells, b, func(int, string) {})
	if err != nil {
		t.Fatal(err)
	}
	at := func(rs []report.Result, length int) float64 {
		for _, r := range rs {
			if r.Metric == "bits_per_byte" && r.Length == length {
				return r.Value
			}
		}
		return math.NaN()
	}
	if v := at(rs16, 64); math.Abs(v-plain) > 1e-9 {
		t.Errorf("stride L at 4L: %v, plain at L %v; want equal", v, plain)
	}
	if v := at(rs1, 64); math.IsNaN(v) || math.Abs(v-plain) < 1e-5 {
		t.Errorf("stride 1 at 4L: %v, plain at L %v; want another finite number", v, plain)
	}
	b.SlidingStride = 17
	if _, err := Evaluate(backend, tasks.LM, RowsFor(tasks.LM, ti, dir, b)[1:2], cells, b, func(int, string) {}); err == nil || !strings.Contains(err.Error(), "from 1 to 16") {
		t.Errorf("stride 17 past L = 16: %v", err)
	}
}

// FIRE's capped-normaliser row is the plain model up to L (to the bit: the same inputs) and
// another past it, where the cap changes the normaliser of every query beyond L.
func TestEvaluateFIRECap(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fire")
	// init_l 2: the threshold (2) is under L, as the trained models' thresholds are.
	ti := checkpointPE(t, dir, tasks.LM, map[string]any{"name": "fire", "init_l": 2.0}, 16)
	b := Quick
	b.CorpusBytes = 512
	cells, err := Plan(tasks.LM, 1, 16, b, nil, text)
	if err != nil {
		t.Fatal(err)
	}
	backend, _ := engine.NewBackend("")
	rs, err := Evaluate(backend, tasks.LM, RowsFor(tasks.LM, ti, dir, b), cells, b, func(int, string) {})
	if err != nil {
		t.Fatal(err)
	}
	get := func(variant string, length int) float64 {
		for _, r := range rs {
			if r.Variant == variant && r.Metric == "bits_per_byte" && r.Length == length {
				return r.Value
			}
		}
		t.Fatalf("no %q bits_per_byte at %d", variant, length)
		return 0
	}
	if p, c := get("", 16), get(recipe.FIRECapVariant, 16); math.IsNaN(p) || p != c {
		t.Errorf("at L: plain %v, capped %v; want equal", p, c)
	}
	if p, c := get("", 64), get(recipe.FIRECapVariant, 64); math.IsNaN(c) || p == c {
		t.Errorf("at 4L: plain %v, capped %v; want two numbers", p, c)
	}
}

// Baselines by hand: chance rows from tasks.Chance and the bag row for a synthetic task; the
// unigram model of "aab" predicts a with (2+1)/(3+256), b with (1+1)/(3+256).
func TestBaselines(t *testing.T) {
	cells, _ := Plan(tasks.Copy, 1, 8, Quick, []int{8}, nil)
	rs, err := Baselines(tasks.Copy, 1, cells, nil, 8)
	if err != nil || len(rs) != 4 {
		t.Fatalf("%d rows, %v", len(rs), err)
	}
	if rs[0].Label() != "chance" || math.Abs(rs[0].Value-math.Pow(26, -4)) > 1e-18 || rs[1].Value != 1.0/26 || rs[2].Label() != "bag" {
		t.Errorf("%+v", rs[:3])
	}
	lmCells := []Cell{{Length: 2, Depth: math.NaN(), Exs: []tasks.Example{{Input: []int32{'a', 'a'}, Target: []int32{'a', 'b'}, Weight: []float32{1, 1}}}}}
	rs, _ = Baselines(tasks.LM, 1, lmCells, []byte("aab"), 1)
	want := -(math.Log2(3.0/259) + math.Log2(2.0/259)) / 2
	if rs[0].Metric != "bits_per_byte" || math.Abs(rs[0].Value-want) > 1e-12 || math.Abs(rs[1].Value+math.Log2(2.0/259)) > 1e-12 {
		t.Errorf("unigram %v / %v, want %v / %v", rs[0].Value, rs[1].Value, want, -math.Log2(2.0/259))
	}
}

// Per-document sums: over the documents they add up to the row's bits per byte (every scored
// byte counted once, the sliding row's too), a byte goes to the document it lies in, and a
// document the windows never reach counts nothing.
func TestEvaluateDocs(t *testing.T) {
	dir, ti, b, cells := tinyLM(t, nil)
	docs := []corpus.Doc{{Path: "a", Start: 0, End: 100}, {Path: "b", Start: 102, End: 300}, {Path: "c", Start: 302, End: 600}, {Path: "d", Start: 5000, End: 6000}}
	for i := range cells {
		cells[i].Docs = docs
	}
	backend, _ := engine.NewBackend("")
	rows := RowsFor(tasks.LM, ti, dir, b)[:2] // plain and sliding
	rs, ds, err := EvaluateDocs(backend, tasks.LM, rows, cells, b, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != len(rows)*len(cells) {
		t.Fatalf("%d per-document scores, want one per row and length (%d)", len(ds), len(rows)*len(cells))
	}
	for _, d := range ds {
		bits, n := 0.0, 0
		for i := range d.Bits {
			bits, n = bits+d.Bits[i], n+d.N[i]
		}
		for _, r := range rs {
			if r.Variant == d.Variant && r.Length == d.Length && r.Metric == "bits_per_byte" {
				if n != r.N || math.Abs(bits/float64(n)-r.Value) > 1e-4 {
					t.Errorf("%q at %d: documents sum to %d bytes, %.5f bits/byte; the row says %d, %.5f", d.Variant, d.Length, n, bits/float64(n), r.N, r.Value)
				}
			}
		}
		// 512 scored bytes from byte 1: a has bytes 1-101 (the separator counts to a), b
		// 102-301, c 302-512; d is never reached.
		if d.N[0] != 101 || d.N[1] != 200 || d.N[3] != 0 {
			t.Errorf("%q at %d: bytes per document %v", d.Variant, d.Length, d.N)
		}
	}
	csv := string(EncodeDocScores(ds[:1]))
	if !strings.HasPrefix(csv, "model,variant,length,bits,n\nrope,,16,") || strings.Count(csv, "\n") != 2 {
		t.Errorf("encoded: %q", csv)
	}
}

// StreamingLLM's row: with a cache that holds the whole example it is the plain row (nothing is
// ever dropped); past it, the cache shifts and the row is another finite number.
func TestEvaluateStreaming(t *testing.T) {
	dir, ti, b, cells := tinyLM(t, []int{16, 64})
	rows := RowsFor(tasks.LM, ti, dir, b)
	var plain, stream Row
	for _, r := range rows {
		switch r.Variant {
		case "":
			plain = r
		case recipe.StreamVariant:
			stream = r
		}
	}
	if stream.StreamSinks == 0 {
		t.Fatalf("no StreamingLLM row among %d", len(rows))
	}
	stream.MinLength = 0
	backend, _ := engine.NewBackend("")
	rs, err := Evaluate(backend, tasks.LM, []Row{plain, stream}, cells, b, nil)
	if err != nil {
		t.Fatal(err)
	}
	get := func(variant string, length int) float64 {
		for _, r := range rs {
			if r.Variant == variant && r.Length == length && r.Metric == "bits_per_byte" {
				return r.Value
			}
		}
		t.Fatalf("no %q at %d", variant, length)
		return 0
	}
	if p, s := get("", 16), get(recipe.StreamVariant, 16); math.IsNaN(p) || math.Abs(p-s) > 1e-4 {
		t.Errorf("at L the cache holds everything: plain %v, streaming %v; want equal", p, s)
	}
	if p, s := get("", 64), get(recipe.StreamVariant, 64); math.IsNaN(s) || math.Abs(p-s) < 1e-6 {
		t.Errorf("at 4L: plain %v, streaming %v; want two finite numbers", p, s)
	}
}

// The zero-shot passkey scores lm rows on the Go passkey: lm results with its own metrics, one
// per (length, depth), exact match within [0, 1].
func TestZeroShotPasskey(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "rope")
	ti := checkpoint(t, dir, tasks.LM, "rope", 64)
	b := Quick
	rows := RowsFor(tasks.LM, ti, dir, b)[:1]
	backend, _ := engine.NewBackend("")
	rs, err := ZeroShotPasskey(backend, rows, 64, b, text)
	if err != nil {
		t.Fatal(err)
	}
	// Quick: lengths 64 and 256 (1L and 4L), depths 0 and 1, two metrics each.
	if len(rs) != 2*2*2 {
		t.Fatalf("%d results, want 8", len(rs))
	}
	for _, r := range rs {
		if r.Task != tasks.LM || !strings.HasPrefix(r.Metric, ZeroShotPrefix) || r.Value < 0 || r.Value > 1 || math.IsNaN(r.Depth) {
			t.Errorf("result %+v", r)
		}
	}
}

// An evaluation stopped midway takes up where it stopped: after the first row's pairs are kept,
// a second evaluation takes those from the file (and only those: every other pair is scored)
// and gives what one uninterrupted evaluation gives; a model whose weights change starts over,
// and Remove leaves no file.
func TestEvaluateResumes(t *testing.T) {
	dir, ti, b, cells := tinyLM(t, nil)
	for i := range cells {
		cells[i].Docs = []corpus.Doc{{Path: "a", Start: 0, End: 300}, {Path: "b", Start: 301, End: 700}}
	}
	rows := RowsFor(tasks.LM, ti, dir, b)[:3]
	backend, _ := engine.NewBackend("")
	want, wantDocs, err := EvaluateDocs(backend, tasks.LM, rows, cells, b, nil)
	if err != nil {
		t.Fatal(err)
	}
	first, err := OpenResume(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := EvaluateResuming(backend, tasks.LM, rows[:1], cells, b, nil, first); err != nil {
		t.Fatal(err)
	}
	again, err := OpenResume(dir)
	if err != nil {
		t.Fatal(err)
	}
	if again.Pairs() != len(cells) {
		t.Fatalf("%d pairs kept, want the first row's %d", again.Pairs(), len(cells))
	}
	resumed := 0
	got, gotDocs, err := EvaluateResuming(backend, tasks.LM, rows, cells, b, func(_ int, status string) {
		if strings.HasSuffix(status, "(resumed)") {
			resumed++
		}
	}, again)
	if err != nil {
		t.Fatal(err)
	}
	if resumed != len(cells) {
		t.Errorf("%d pairs taken from the file, want %d", resumed, len(cells))
	}
	if len(got) != len(want) || len(gotDocs) != len(wantDocs) {
		t.Fatalf("%d results and %d document scores, want %d and %d", len(got), len(gotDocs), len(want), len(wantDocs))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Variant != w.Variant || g.Metric != w.Metric || g.Length != w.Length || g.N != w.N ||
			math.Float64bits(g.Value) != math.Float64bits(w.Value) && !(math.IsNaN(g.Value) && math.IsNaN(w.Value)) {
			t.Fatalf("result %d resumed: %+v, uninterrupted: %+v", i, g, w)
		}
	}
	for i := range wantDocs {
		if !slices.Equal(gotDocs[i].Bits, wantDocs[i].Bits) || !slices.Equal(gotDocs[i].N, wantDocs[i].N) {
			t.Fatalf("document scores %d resumed differ from the uninterrupted run's", i)
		}
	}
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(dir, models.WeightsFile), later, later); err != nil {
		t.Fatal(err)
	}
	if r, err := OpenResume(dir); err != nil || r.Pairs() != 0 {
		t.Fatalf("after the weights changed: %d pairs kept (%v), want none", r.Pairs(), err)
	}
	if err := again.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, ResumeFile)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the file is still there after Remove: %v", err)
	}
}
