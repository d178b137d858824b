// Package speed is the speed benchmark (go run ./cmd/bench -speed): what a user of an inference
// engine feels, measured for one model at a time.
//
// For each model it measures load time, graph compilation, time to the first token, prefill
// rate at several prompt lengths, decode rate and the cost of one token as the context fills,
// batched decode, graphs compiled after warm-up (must be zero) and peak resident memory. Peak
// memory and the cold start belong to the process, so each model is measured in a process of
// its own: cmd/bench re-executes itself once per model, calls Measure in that child and reads
// its Result back; the parent writes the Markdown tables (WriteTable) and speed.csv,
// speed-positions.csv and speed.png (WriteFiles).
//
// Random models have llama2.c's stories260K and stories15M architectures (Shapes); cmd/bench
// writes them as llama2.c files and they are loaded like any checkpoint.
package speed

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/posformer/posformer/engine"
	"github.com/posformer/posformer/layers"
	"github.com/posformer/posformer/models"
)

// Shapes are the standard random models, by name: llama2.c's stories260K and stories15M
// architectures.
var Shapes = map[string]models.Config{
	"260K": LlamaConfig(64, 172, 5, 8, 4, 512, 512),
	"15M":  LlamaConfig(288, 768, 6, 6, 6, 32000, 256),
}

// ShapeNames are the names of Shapes, sorted.
func ShapeNames() []string {
	var names []string
	for n := range Shapes {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// LlamaConfig is a llama2.c model in our terms: RMSNorm, SwiGLU, interleaved RoPE with base
// 10000, tied embeddings.
func LlamaConfig(dim, hidden, layers, heads, kvHeads, vocab, seq int) models.Config {
	cfg := models.Config{
		Kind: models.Decoder, VocabSize: vocab, Dim: dim, NumLayers: layers, NumHeads: heads,
		NumKVHeads: kvHeads, HiddenDim: hidden, FFN: "swiglu", Norm: "rmsnorm", NormEps: 1e-5,
		TieEmbeddings: true, MaxSeqLen: seq,
		Positional: map[string]any{"name": "rope", "layout": "interleaved", "base": 10000.0},
	}
	cfg.Defaults()
	return cfg
}

// Label names a model in the results: its file or directory name, without ".bin".
func Label(target string) string {
	return strings.TrimSuffix(filepath.Base(target), ".bin")
}

// Options are what Measure does, as cmd/bench's -speed flags set them.
type Options struct {
	Backend string // engine backend ("": the default); see engine.NewBackend
	Context int    // KV-cache capacity (0: the model's max_seq_len)
	Weights string // type of the weight matrices in memory, one of layers.WeightTypes ("": as stored)
	// CacheK and CacheV are the KV cache's element types (engine.SetCacheTypes; unset: float32).
	CacheK, CacheV dtypes.DType
	Decode         int   // tokens generated for the decode rate (greedy, from BOS)
	Prompts        []int // prompt lengths for the prefill rate; those that do not fit the context are skipped
	Batches        []int // batch sizes for batched decode
	Reps           int   // repetitions of each prefill and batch measurement (the fastest is kept)

	// CPUProfile, if not nil, receives a CPU profile of the measurements after warm-up.
	CPUProfile io.Writer
	// Memory limits the process's memory as the measurement goes.
	Memory Memory
}

// Memory limits the process's memory during Measure, so that the garbage collector paces
// itself as in a process that serves the model (cmd/bench passes cmd/internal/memlimit's
// limits). A nil field does nothing.
type Memory struct {
	// Limit caps the process at the memory the Go runtime holds now plus extra bytes (and
	// some slack).
	Limit func(extra int64)
	// Off removes the cap.
	Off func()
}

func (m Memory) limit(extra int64) {
	if m.Limit != nil {
		m.Limit(extra)
	}
}

func (m Memory) off() {
	if m.Off != nil {
		m.Off()
	}
}

// Result is one model's figures. It travels as JSON from the child process that measured it.
type Result struct {
	Model                          string
	Params, WeightBytes, KVBytes   int64
	Capacity                       int
	LoadSec, FirstTokenSec         float64 // load; load + first prefill (compiling its graph) + first token
	WarmupSec                      float64 // compiling every graph generation can need
	CompiledAtWarmup, CompiledLate int     // graphs built by warm-up, and after it (must be 0)
	Prefill                        []PrefillPoint
	DecodeTokPerSec                float64   // greedy from BOS, over Generated tokens
	DecodeCPUMsPerToken            float64   // CPU time (all threads) per decoded token: a figure the machine's load disturbs less
	Generated                      int       //
	MsPerToken                     []float64 // ms of decode step i (position i+1), until the context is full
	Batched                        []BatchPoint
	PeakRSS                        int64 // bytes (VmHWM)
}

// PrefillPoint is the prefill rate of one prompt length, the best of Options.Reps runs.
type PrefillPoint struct {
	Tokens    int
	TokPerSec float64
	Ms        float64
}

// BatchPoint is the decode rate of one batch size.
type BatchPoint struct {
	Batch         int
	TokPerSec     float64 // all rows together, the best of Options.Reps runs
	CPUMsPerToken float64 // CPU time per token (all threads) in that run
}

// Measure loads the model at target (a llama2.c .bin file or a checkpoint directory) and
// measures every figure of its Result. Run it in a fresh process: the load time, the first
// token and the peak memory are the process's.
func Measure(target string, o Options) (r Result, err error) {
	r.Model = Label(target)

	o.Memory.limit(engine.CheckpointBytes(target))
	start := time.Now()
	e, err := openModel(target, o)
	if err != nil {
		return r, err
	}
	r.LoadSec = time.Since(start).Seconds()
	o.Memory.limit(e.SessionBytes(1))
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
	o.Memory.limit(e.SessionBytes(1))
	before := e.Compilations()

	if o.CPUProfile != nil {
		if err := pprof.StartCPUProfile(o.CPUProfile); err != nil {
			return r, fmt.Errorf("-cpuprofile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}

	for _, n := range o.Prompts {
		if n >= e.Capacity {
			continue
		}
		toks := promptTokens(n, cfg.VocabSize)
		best := math.Inf(1)
		for range o.Reps {
			s := e.NewSession(1)
			t := time.Now()
			if _, err := s.AppendLast([][]int{toks}, [][]int{iota(0, n)}); err != nil {
				return r, err
			}
			best = min(best, time.Since(t).Seconds())
		}
		r.Prefill = append(r.Prefill, PrefillPoint{Tokens: n, TokPerSec: float64(n) / best, Ms: 1000 * best})
	}

	// Decode: greedy from BOS until the context is full, timing every step.
	s = e.NewSession(1)
	out, err := s.Append([][]int{{bos}}, [][]int{{0}})
	if err != nil {
		return r, err
	}
	logits := out[0][0]
	var total time.Duration
	cpu0 := CPUTime()
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
		if pos <= o.Decode {
			total += d
			r.Generated = pos
			if pos == o.Decode || pos == e.Capacity-1 {
				r.DecodeCPUMsPerToken = 1000 * (CPUTime() - cpu0).Seconds() / float64(pos)
			}
		}
	}
	r.DecodeTokPerSec = float64(r.Generated) / total.Seconds()

	// Peak memory of generating one sequence, before the batches enlarge the cache.
	r.PeakRSS = peakRSS()
	r.CompiledLate = e.Compilations() - before

	o.Memory.off()
	start = time.Now()
	if err := warmup(e, o.Batches); err != nil {
		return r, err
	}
	r.WarmupSec += time.Since(start).Seconds()
	r.CompiledAtWarmup += e.Compilations() - before
	runtime.GC()
	o.Memory.limit(e.SessionBytes(slices.Max(o.Batches)))
	before = e.Compilations()
	for _, b := range o.Batches {
		p := BatchPoint{Batch: b}
		for range o.Reps {
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

func openModel(target string, o Options) (*engine.Engine, error) {
	weights := engine.StoredWeightType(target)
	if o.Weights != "" {
		var err error
		if weights, err = layers.ParseWeightType(o.Weights); err != nil {
			return nil, err
		}
	}
	e, err := engine.LoadAs(target, o.Backend, o.Context, weights)
	if err != nil || (o.CacheK == dtypes.InvalidDType && o.CacheV == dtypes.InvalidDType) {
		return e, err
	}
	k, v := e.CacheTypes()
	if o.CacheK != dtypes.InvalidDType {
		k = o.CacheK
	}
	if o.CacheV != dtypes.InvalidDType {
		v = o.CacheV
	}
	return e, e.SetCacheTypes(k, v)
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
	start, cpu := time.Now(), CPUTime()
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
	return tokens / time.Since(start).Seconds(), 1000 * (CPUTime() - cpu).Seconds() / tokens, nil
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

// iota is from, from+1, ..., from+n-1: the positions of n tokens.
func iota(from, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = from + i
	}
	return out
}

// argmax is the index of the first largest logit: greedy decoding.
func argmax(xs []float32) int {
	best := 0
	for i, x := range xs {
		if x > xs[best] {
			best = i
		}
	}
	return best
}
