// The speed benchmark: go run ./cmd/bench -speed.
//
// For each model it measures what a user of an inference engine feels: load time, graph
// compilation, time to the first token, prefill rate at several prompt lengths, decode rate and
// the cost of one token as the context fills, batched decode, graphs compiled after warm-up
// (must be zero) and peak resident memory. Each model runs in its own child process (this
// binary re-executed with -speed-child), so that peak memory and the cold start belong to that
// model alone.
//
//	go run ./cmd/bench -speed                        # random weights, stories260K and 15M shapes
//	go run ./cmd/bench -speed -m ../shared/fixtures/stories260K.bin -o benchmarks
//
// Random models are written as llama2.c files (-make-llama2c, N(0, 0.02²) weights) into a
// temporary directory and loaded like any checkpoint.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/posformer/posformer/benchmarks/plot"
	"github.com/posformer/posformer/cmd/internal/memlimit"
	"github.com/posformer/posformer/engine"
	"github.com/posformer/posformer/layers"
	"github.com/posformer/posformer/models"
)

// shapes are the standard random models: llama2.c's stories260K and stories15M architectures.
var shapes = map[string]models.Config{
	"260K": llamaConfig(64, 172, 5, 8, 4, 512, 512),
	"15M":  llamaConfig(288, 768, 6, 6, 6, 32000, 256),
}

// llamaConfig is a llama2.c model in our terms.
func llamaConfig(dim, hidden, layers, heads, kvHeads, vocab, seq int) models.Config {
	cfg := models.Config{
		Kind: models.Decoder, VocabSize: vocab, Dim: dim, NumLayers: layers, NumHeads: heads,
		NumKVHeads: kvHeads, HiddenDim: hidden, FFN: "swiglu", Norm: "rmsnorm", NormEps: 1e-5,
		TieEmbeddings: true, MaxSeqLen: seq,
		Positional: map[string]any{"name": "rope", "layout": "interleaved", "base": 10000.0},
	}
	cfg.Defaults()
	return cfg
}

type speedOptions struct {
	models, shapes, prompts, batches string
	backend, out, cpuprofile, child  string
	weights                          string // --weights: the matrices' type in memory
	n, ctxSize, reps                 int
}

func speedFlags(o *speedOptions) *flag.FlagSet {
	fs := flag.NewFlagSet("bench -speed", flag.ContinueOnError)
	fs.StringVar(&o.models, "m", "", "comma-separated models to measure: llama2.c .bin files or checkpoint directories")
	fs.StringVar(&o.shapes, "shape", "260K,15M", "comma-separated random models to measure when -m is not given: "+strings.Join(shapeNames(), ", "))
	fs.IntVar(&o.n, "n", 256, "tokens generated for the decode rate (greedy, from BOS)")
	fs.StringVar(&o.prompts, "prompts", "16,32,64,128,256,512", "prompt lengths for the prefill rate (those that fit the context)")
	fs.StringVar(&o.batches, "batches", "1,2,4,8", "batch sizes for batched decode")
	fs.IntVar(&o.ctxSize, "c", 0, "context size, the KV-cache capacity (0: the model's max_seq_len)")
	fs.IntVar(&o.reps, "reps", 3, "repetitions of each prefill measurement (the fastest is kept)")
	fs.StringVar(&o.backend, "backend", "", "cpu (default, or $GOMLX_BACKEND; cpu:threads=N), go (GoMLX pure Go), xla:cpu or xla:cuda")
	fs.StringVar(&o.weights, "weights", "", "type of the weight matrices in memory: "+layers.WeightTypes+" (default: as the checkpoint stores them)")
	fs.StringVar(&o.out, "o", "", "directory for speed.csv, speed-positions.csv and speed.png (default: none written)")
	fs.StringVar(&o.cpuprofile, "cpuprofile", "", "write a CPU profile of the measurements to FILE (with several models: FILE.<model>)")
	fs.StringVar(&o.child, "speed-child", "", "internal: measure this one model and print the result as JSON")
	return fs
}

func shapeNames() []string {
	var names []string
	for n := range shapes {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// runSpeed is the -speed mode of cmd/bench.
func runSpeed(args []string) error {
	var o speedOptions
	fs := speedFlags(&o)
	if help, err := parseMode(fs, "speed", args); help || err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("-speed: unexpected argument %q", fs.Arg(0))
	}
	if _, err := parseInts("-prompts", o.prompts); err != nil {
		return err
	}
	if _, err := parseInts("-batches", o.batches); err != nil {
		return err
	}
	switch {
	case o.n < 1:
		return fmt.Errorf("-n must be >= 1, got %d", o.n)
	case o.reps < 1:
		return fmt.Errorf("-reps must be >= 1, got %d", o.reps)
	case o.ctxSize < 0:
		return fmt.Errorf("-c must be >= 0, got %d", o.ctxSize)
	}
	if o.weights != "" {
		if _, err := layers.ParseWeightType(o.weights); err != nil {
			return fmt.Errorf("--weights %w", err)
		}
	}
	if o.child != "" {
		r, err := measure(o.child, o)
		if err != nil {
			return err
		}
		return json.NewEncoder(os.Stdout).Encode(r)
	}

	var targets []string
	if o.models != "" {
		for _, m := range strings.Split(o.models, ",") {
			if _, err := os.Stat(m); err != nil {
				return fmt.Errorf("-m %s: %w", m, err)
			}
			targets = append(targets, m)
		}
	} else {
		tmp, err := os.MkdirTemp("", "posformer-bench-")
		if err != nil {
			return fmt.Errorf("-speed: %w", err)
		}
		defer os.RemoveAll(tmp)
		for _, s := range strings.Split(o.shapes, ",") {
			cfg, ok := shapes[s]
			if !ok {
				return fmt.Errorf("-shape %q: unknown (valid: %s)", s, strings.Join(shapeNames(), ", "))
			}
			path := filepath.Join(tmp, "random-"+s+".bin")
			if err := writeRandomLlama2c(path, cfg, 1, 0.02, 0); err != nil {
				return err
			}
			targets = append(targets, path)
		}
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("-speed: finding this program to run each model in its own process: %w", err)
	}
	var results []speedResult
	for _, t := range targets {
		childArgs := append([]string{"-speed"}, args...)
		childArgs = append(childArgs, "-speed-child", t)
		if o.cpuprofile != "" && len(targets) > 1 {
			childArgs = append(childArgs, "-cpuprofile", o.cpuprofile+"."+modelLabel(t))
		}
		fmt.Fprintf(os.Stderr, "bench: measuring %s ...\n", modelLabel(t))
		cmd := exec.Command(self, childArgs...)
		cmd.Stderr = os.Stderr
		outb, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("measuring %s: %w", t, err)
		}
		// The result is the child's last line (a backend may print before it).
		lines := strings.Split(strings.TrimSpace(string(outb)), "\n")
		var r speedResult
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil {
			return fmt.Errorf("measuring %s: reading the child's result: %w", t, err)
		}
		results = append(results, r)
	}
	printTable(os.Stdout, results)
	if o.out != "" {
		return writeOutputs(o.out, results)
	}
	return nil
}

func parseInts(flagName, s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 1 {
			return nil, fmt.Errorf("%s: want comma-separated positive integers, got %q", flagName, s)
		}
		out = append(out, v)
	}
	return out, nil
}

func modelLabel(target string) string {
	return strings.TrimSuffix(filepath.Base(target), ".bin")
}

// speedResult is one model's figures.
type speedResult struct {
	Model                          string
	Params, WeightBytes, KVBytes   int64
	Capacity                       int
	LoadSec, FirstTokenSec         float64 // load; load + first prefill (compiling its graph) + first token
	WarmupSec                      float64 // compiling every graph generation can need
	CompiledAtWarmup, CompiledLate int     // graphs built by warm-up, and after it (must be 0)
	Prefill                        []prefillPoint
	DecodeTokPerSec                float64   // greedy from BOS, over Generated tokens
	DecodeCPUMsPerToken            float64   // CPU time (all threads) per decoded token: a figure the machine's load disturbs less
	Generated                      int       //
	MsPerToken                     []float64 // ms of decode step i (position i+1), until the context is full
	Batched                        []batchPoint
	PeakRSS                        int64 // bytes (VmHWM)
}

type prefillPoint struct {
	Tokens    int
	TokPerSec float64
	Ms        float64
}

type batchPoint struct {
	Batch         int
	TokPerSec     float64 // all rows together, the best of -reps runs
	CPUMsPerToken float64 // CPU time per token (all threads) in that run
}

// measure runs in the child process: one model, every figure.
func measure(target string, o speedOptions) (r speedResult, err error) {
	r.Model = modelLabel(target)
	prompts, _ := parseInts("-prompts", o.prompts)
	batches, _ := parseInts("-batches", o.batches)

	memlimit.ForLoading(engine.CheckpointBytes(target))
	start := time.Now()
	e, err := openModel(target, o)
	if err != nil {
		return r, err
	}
	r.LoadSec = time.Since(start).Seconds()
	heap := memlimit.Base()
	memlimit.Set(heap, e.KVBytes(1))
	cfg := e.Model.Config
	r.Capacity = e.Capacity
	r.Params, err = countParams(e)
	if err != nil {
		return r, err
	}
	r.WeightBytes = 0
	for v := range e.Ctx.In(models.Scope).IterVariablesInScope() {
		r.WeightBytes += int64(v.Shape().Memory()) // as held: 4, 2, 1.125 or 0.5625 bytes a weight
	}
	r.KVBytes = e.KVBytes(1)

	// Time to first token: a 16-token prompt (or what fits), on the cold engine.
	firstLen := min(16, e.Capacity-1)
	s := e.NewSession(1)
	if _, err := s.AppendLast([][]int{promptTokens(firstLen, cfg.VocabSize)}, [][]int{iota(0, firstLen)}); err != nil {
		return r, err
	}
	r.FirstTokenSec = time.Since(start).Seconds()

	start = time.Now()
	if err := e.Warmup(1, 0); err != nil {
		return r, err
	}
	r.WarmupSec = time.Since(start).Seconds()
	r.CompiledAtWarmup = e.Compilations()
	// The compiled graphs are part of the model's footprint now: limit from here.
	runtime.GC()
	heap = memlimit.Base()
	memlimit.Set(heap, e.KVBytes(1))
	before := e.Compilations()

	if o.cpuprofile != "" {
		f, err := os.Create(o.cpuprofile)
		if err != nil {
			return r, fmt.Errorf("-cpuprofile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return r, fmt.Errorf("-cpuprofile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}

	for _, n := range prompts {
		if n >= e.Capacity {
			continue
		}
		toks := promptTokens(n, cfg.VocabSize)
		best := math.Inf(1)
		for range o.reps {
			s := e.NewSession(1)
			t := time.Now()
			if _, err := s.AppendLast([][]int{toks}, [][]int{iota(0, n)}); err != nil {
				return r, err
			}
			best = min(best, time.Since(t).Seconds())
		}
		r.Prefill = append(r.Prefill, prefillPoint{Tokens: n, TokPerSec: float64(n) / best, Ms: 1000 * best})
	}

	// Decode: greedy from BOS until the context is full, timing every step.
	s = e.NewSession(1)
	out, err := s.Append([][]int{{bos}}, [][]int{{0}})
	if err != nil {
		return r, err
	}
	logits := out[0][0]
	var total time.Duration
	cpu0 := cpuTime()
	for pos := 1; pos < e.Capacity; pos++ {
		tok := argmax(logits)
		t := time.Now()
		out, err := s.Append([][]int{{tok}}, [][]int{{pos}})
		d := time.Since(t)
		if err != nil {
			return r, err
		}
		logits = out[0][0]
		r.MsPerToken = append(r.MsPerToken, 1000*d.Seconds())
		if pos <= o.n {
			total += d
			r.Generated = pos
			if pos == o.n || pos == e.Capacity-1 {
				r.DecodeCPUMsPerToken = 1000 * (cpuTime() - cpu0).Seconds() / float64(pos)
			}
		}
	}
	r.DecodeTokPerSec = float64(r.Generated) / total.Seconds()

	// Peak memory of generating one sequence, before the batches enlarge the cache.
	r.PeakRSS = peakRSS()
	r.CompiledLate = e.Compilations() - before

	memlimit.Off()
	start = time.Now()
	if err := warmup(e, batches); err != nil {
		return r, err
	}
	r.WarmupSec += time.Since(start).Seconds()
	r.CompiledAtWarmup += e.Compilations() - before
	runtime.GC()
	memlimit.Set(memlimit.Base(), e.KVBytes(slices.Max(batches)))
	before = e.Compilations()
	for _, b := range batches {
		p := batchPoint{Batch: b}
		for range o.reps {
			tps, cpu, err := batchedDecode(e, b, min(64, e.Capacity/2))
			if err != nil {
				return r, err
			}
			if tps > p.TokPerSec {
				p.TokPerSec, p.CPUMsPerToken = tps, cpu
			}
		}
		r.Batched = append(r.Batched, p)
	}
	r.CompiledLate += e.Compilations() - before
	return r, nil
}

// bos is llama2.c's beginning-of-sequence token.
const bos = 1

func openModel(target string, o speedOptions) (*engine.Engine, error) {
	weights := engine.StoredWeightType(target)
	if o.weights != "" {
		var err error
		if weights, err = layers.ParseWeightType(o.weights); err != nil {
			return nil, err
		}
	}
	return engine.LoadAs(target, o.backend, o.ctxSize, weights)
}

// countParams counts the checkpoint's parameters, whatever type its matrices are held in.
func countParams(e *engine.Engine) (int64, error) {
	var n int64
	for v := range e.Ctx.In(models.Scope).IterVariablesInScope() {
		name, shape := models.CheckpointTensor(v)
		if name == "" {
			continue // a quantized matrix's scales
		}
		size := int64(1)
		for _, d := range shape {
			size *= int64(d)
		}
		n += size
	}
	return n, nil
}

// warmup compiles the graphs of batched decoding: 16-token prompts and decode steps at every
// window size, for each batch size above 1.
func warmup(e *engine.Engine, batches []int) error {
	for _, b := range batches {
		if b > 1 {
			if err := e.Warmup(b, 16); err != nil {
				return err
			}
		}
	}
	return nil
}

// batchedDecode decodes steps tokens in each of b rows after a 16-token prompt and returns the
// rate in tokens per second, all rows together.
func batchedDecode(e *engine.Engine, b, steps int) (tokPerSec, cpuMsPerToken float64, err error) {
	n := min(16, e.Capacity-steps-1)
	s := e.NewSession(b)
	toks, pos := make([][]int, b), make([][]int, b)
	for i := range b {
		toks[i], pos[i] = promptTokens(n, e.Model.Config.VocabSize), iota(0, n)
	}
	last, err := s.AppendLast(toks, pos)
	if err != nil {
		return 0, 0, err
	}
	next := make([][]int, b)
	for i := range b {
		next[i] = []int{argmax(last[i])}
	}
	start, cpu := time.Now(), cpuTime()
	for step := range steps {
		for i := range b {
			pos[i] = []int{n + step}
		}
		out, err := s.Append(next, pos)
		if err != nil {
			return 0, 0, err
		}
		for i := range b {
			next[i] = []int{argmax(out[i][0])}
		}
	}
	tokens := float64(b * steps)
	return tokens / time.Since(start).Seconds(), 1000 * (cpuTime() - cpu).Seconds() / tokens, nil
}

// promptTokens is a deterministic prompt: BOS, then ids spread over the vocabulary.
func promptTokens(n, vocab int) []int {
	toks := make([]int, n)
	toks[0] = bos
	for i := 1; i < n; i++ {
		toks[i] = (i*7919 + 3) % vocab
	}
	return toks
}

func iota(from, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = from + i
	}
	return out
}

func argmax(xs []float32) int {
	best := 0
	for i, x := range xs {
		if x > xs[best] {
			best = i
		}
	}
	return best
}

// cpuTime is the CPU time this process has used, all threads.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// peakRSS is the process's peak resident set size (VmHWM), or 0 where /proc is absent.
func peakRSS() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

func mb(b int64) float64 { return float64(b) / (1 << 20) }

// printTable writes the results as Markdown tables.
func printTable(w io.Writer, rs []speedResult) {
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
			i := slices.IndexFunc(r.Prefill, func(p prefillPoint) bool { return p.Tokens == n })
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

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// writeOutputs writes speed.csv (one row per model and figure), speed-positions.csv (ms per
// decode step by position) and speed.png (ms/token against position).
func writeOutputs(dir string, rs []speedResult) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("-o: %w", err)
	}
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
	if err := writeFileAtomic(filepath.Join(dir, "speed.csv"), []byte(sb.String())); err != nil {
		return err
	}
	sb.Reset()
	sb.WriteString("model,position,ms\n")
	var series []plot.Series
	for _, r := range rs {
		s := plot.Series{Label: r.Model}
		for i, ms := range r.MsPerToken {
			fmt.Fprintf(&sb, "%s,%d,%.4f\n", r.Model, i+1, ms)
			s.X, s.Y = append(s.X, float64(i+1)), append(s.Y, ms)
		}
		series = append(series, s)
	}
	if err := writeFileAtomic(filepath.Join(dir, "speed-positions.csv"), []byte(sb.String())); err != nil {
		return err
	}
	var panels []plot.Panel
	for _, s := range series {
		panels = append(panels, plot.Lines{Title: s.Label, XLabel: "position", YLabel: "ms per decoded token", Series: []plot.Series{s}})
	}
	png, err := plot.Figure{Title: "decode cost as the context fills (greedy, batch 1)", Rows: [][]plot.Panel{panels}, CellWidth: 520}.PNG()
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(dir, "speed.png"), png)
}

func writeFileAtomic(path string, data []byte) error {
	return models.WriteFileAtomic(path, data)
}
