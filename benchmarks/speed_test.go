// Speed benchmarks: prefill and decode of the shipped decoder and of random models with
// llama2.c's stories260K and stories15M shapes, and a training step of the toy models. The
// full report (load, first token, rates by prompt length and position, batches, memory) is
// go run ./cmd/bench -speed; see SPEED.md.
//
//	go test -run '^$' -bench . -benchtime 3s ./benchmarks/
package benchmarks

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/posformer/posformer/benchmarks/speed"
	"github.com/posformer/posformer/engine"
	"github.com/posformer/posformer/layers/quant"
	"github.com/posformer/posformer/models"
	"github.com/posformer/posformer/models/llama2c"
	"github.com/posformer/posformer/positional"
)

const shippedDecoder = "../weights/rope-decoder"

func loadShipped(b *testing.B) *engine.Engine {
	if _, err := os.Stat(shippedDecoder); err != nil {
		b.Skip("no shipped decoder at " + shippedDecoder)
	}
	e, err := engine.Load(shippedDecoder, "", 512)
	if err != nil {
		b.Fatal(err)
	}
	return e
}

func prompt(n int) ([]int, []int) {
	const text = "func main() { fmt.Println(\"hello\") }\n"
	toks, pos := make([]int, n), make([]int, n)
	for i := range toks {
		toks[i] = int(text[i%len(text)])
		pos[i] = i
	}
	return toks, pos
}

// BenchmarkPrefill128 measures a 128-byte prompt through the KV-cache graph.
func BenchmarkPrefill128(b *testing.B) { benchPrefill(b, loadShipped(b), 128) }

// BenchmarkDecode measures one generated token at a time after a 32-byte prompt, the cache
// restarting when it reaches 256 tokens.
func BenchmarkDecode(b *testing.B) { benchDecode(b, loadShipped(b), 32) }

func benchPrefill(b *testing.B, e *engine.Engine, n int) {
	toks, pos := prompt(n)
	if _, err := e.NewSession(1).AppendLast([][]int{toks}, [][]int{pos}); err != nil { // warm-up: compile
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if _, err := e.NewSession(1).AppendLast([][]int{toks}, [][]int{pos}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "tok/s")
}

func benchDecode(b *testing.B, e *engine.Engine, promptLen int) {
	toks, pos := prompt(promptLen)
	var s *engine.Session
	next := 0
	restart := func() {
		s = e.NewSession(1)
		if _, err := s.Append([][]int{toks}, [][]int{pos}); err != nil {
			b.Fatal(err)
		}
		next = promptLen
	}
	restart()
	if _, err := s.Append([][]int{{65}}, [][]int{{next}}); err != nil { // warm-up: compile
		b.Fatal(err)
	}
	next++
	b.ResetTimer()
	cpu := speed.CPUTime()
	for range b.N {
		if next == 256 {
			b.StopTimer()
			restart()
			b.StartTimer()
		}
		if _, err := s.Append([][]int{{65}}, [][]int{{next}}); err != nil {
			b.Fatal(err)
		}
		next++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tok/s")
	b.ReportMetric((speed.CPUTime()-cpu).Seconds()*1000/float64(b.N), "cpu-ms/tok")
}

// The random models of cmd/bench -speed: llama2.c's stories260K and stories15M shapes.
var (
	shape260K = speed.Shapes["260K"]
	shape15M  = speed.Shapes["15M"]
)

// randomEngine loads a model of cfg with random weights, written as a llama2.c file (as
// cmd/bench -make-llama2c writes it) and loaded as any checkpoint, with the default backend
// (or $GOMLX_BACKEND).
func randomEngine(b *testing.B, cfg models.Config) *engine.Engine {
	return randomEngineAs(b, cfg, "", quant.F32)
}

// randomEngineAs is randomEngine on the given backend, with the weight matrices held as weights.
func randomEngineAs(b *testing.B, cfg models.Config, backend string, weights quant.Type) *engine.Engine {
	e, err := engine.LoadAs(randomCheckpoint(b, cfg), backend, 0, weights)
	if err != nil {
		b.Fatal(err)
	}
	return e
}

// randomCheckpoint writes a llama2.c file of cfg with random weights and returns its path.
func randomCheckpoint(b *testing.B, cfg models.Config) string {
	w, err := llama2c.RandomWeights(cfg, 1, 0.02)
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "random.bin")
	if err := llama2c.Write(path, cfg, w, 0); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkDecode260K and BenchmarkDecode15M decode after a 32-token prompt; the cache
// restarts when it reaches 256 tokens, so the figure is the mean over positions 33..255.
func BenchmarkDecode260K(b *testing.B) { benchDecode(b, randomEngine(b, shape260K), 32) }
func BenchmarkDecode15M(b *testing.B)  { benchDecode(b, randomEngine(b, shape15M), 32) }

// BenchmarkDecodeModel is BenchmarkDecode15M's loop on the model file named by
// $POSFORMER_BENCH_MODEL (any format engine.Load reads, weights as stored), for shapes the
// repository does not ship, such as the peers' 110M GGUF files:
//
//	POSFORMER_BENCH_MODEL=r110M-q8_0.gguf go test ./benchmarks -run '^$' -bench DecodeModel
func BenchmarkDecodeModel(b *testing.B) {
	benchDecode(b, modelEngine(b), 32)
}

// BenchmarkPrefillModel is a prompt of $POSFORMER_BENCH_PROMPT tokens (512 where unset) through
// the model file named by $POSFORMER_BENCH_MODEL, as BenchmarkDecodeModel reads it.
func BenchmarkPrefillModel(b *testing.B) {
	n := 512
	if v := os.Getenv("POSFORMER_BENCH_PROMPT"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			b.Fatalf("POSFORMER_BENCH_PROMPT=%q: want a number of tokens", v)
		}
	}
	benchPrefill(b, modelEngine(b), n)
}

// modelEngine loads $POSFORMER_BENCH_MODEL, or skips the benchmark where it is not set.
func modelEngine(b *testing.B) *engine.Engine {
	path := os.Getenv("POSFORMER_BENCH_MODEL")
	if path == "" {
		b.Skip("set POSFORMER_BENCH_MODEL to a model file")
	}
	// The weights as stored (a Q8_0 file stays Q8_0), and room for the prompt past a small
	// model's own context.
	e, err := engine.LoadAs(path, "", 1024, engine.StoredWeightType(path))
	if err != nil {
		b.Fatal(err)
	}
	return e
}

// BenchmarkDecodeQuantized15M is BenchmarkDecode15M with the weights held as Q8_0 or Q4_0, on
// the exact path (cpu:actq8=false) and with int8 activations (cpu:actq8=true, the default
// where the CPU has AVX-512 VNNI).
func BenchmarkDecodeQuantized15M(b *testing.B) {
	for _, typ := range []quant.Type{quant.Q8_0, quant.Q4_0} {
		for _, backend := range []string{"cpu:actq8=false", "cpu:actq8=true"} {
			b.Run(fmt.Sprintf("%v/%s", typ, backend), func(b *testing.B) {
				benchDecode(b, randomEngineAs(b, shape15M, backend, typ), 32)
			})
		}
	}
}

// BenchmarkPrefill128x15M is a 128-token prompt through the 15M shape (last token's logits).
func BenchmarkPrefill128x15M(b *testing.B) { benchPrefill(b, randomEngine(b, shape15M), 128) }

// BenchmarkTrainStep measures one AdamW step of cmd/train's toy models on random bytes:
// dim 64, 2 layers, seq 64, batch 8 (small) and dim 96, 3 layers, seq 128, batch 8 (large); and
// the benchmark v2 recipe's models (dim 128, 4 layers, batch 32): seq 64 for the synthetic
// tasks, 128 for lm and mlm (which the grid trains with GOMLX_BACKEND=cpu:bf16dot=true).
func BenchmarkTrainStep(b *testing.B) {
	for _, c := range []trainShape{{"small", 64, 2, 64, 8, 2, 128, 0}, {"large", 96, 3, 128, 8, 2, 192, 0}, v2Shape, v2LMShape} {
		b.Run(c.name, func(b *testing.B) { benchTrainStep(b, c, "rope") })
	}
}

// BenchmarkTrainStepSchemes is the v2 step for every scheme: the grid's time is the sum of
// these, and the slow schemes dominate it.
func BenchmarkTrainStepSchemes(b *testing.B) {
	for _, s := range positional.Names() {
		b.Run(s, func(b *testing.B) { benchTrainStep(b, v2Shape, s) })
	}
}

// BenchmarkTrainStepSchemesLM is the same at lm's and mlm's length (128), where the work on
// every (query, key) pair is four times that at 64 and the two tasks are 60% of the grid.
func BenchmarkTrainStepSchemesLM(b *testing.B) {
	for _, s := range positional.Names() {
		b.Run(s, func(b *testing.B) { benchTrainStep(b, v2LMShape, s) })
	}
}

// BenchmarkTrainStepSchemesPasses is the lm-length step of every scheme in passes as cmd/train
// runs the grid's lm and mlm cells: 4 sequences (512 tokens) a pass,
// one pass for a scheme whose shared work would run once per pass (positional.SharedWork: FIRE).
func BenchmarkTrainStepSchemesPasses(b *testing.B) {
	for _, s := range positional.Names() {
		c := v2LMShape
		c.micro = passesAsTrain
		b.Run(s, func(b *testing.B) { benchTrainStep(b, c, s) })
	}
}

// passesAsTrain as a trainShape's micro asks for cmd/train's default pass
// (engine.DefaultMicroBatch).
const passesAsTrain = -1

type trainShape struct {
	name                    string
	dim, layers, seq, batch int
	kv, hidden              int
	micro                   int // sequences per forward/backward pass (0: the whole batch; passesAsTrain)
}

// BenchmarkTrainStepMicro is the v2 steps with their gradients summed over passes of fewer
// sequences (engine.Trainer.MicroBatch), as cmd/train runs them by default (512 tokens a pass),
// beside one pass over the batch; and a PI fine-tune's shape (8 sequences of 512).
func BenchmarkTrainStepMicro(b *testing.B) {
	pi := trainShape{"pi-lm", 128, 4, 512, 8, 4, 512, 0}
	for _, c := range []trainShape{v2Shape, v2LMShape, pi} {
		for _, micro := range []int{0, 512 / c.seq / 2, 512 / c.seq, 1024 / c.seq} {
			if micro < 1 || micro >= c.batch {
				continue
			}
			c := c
			c.micro, c.name = micro, fmt.Sprintf("%s/passes-of-%d", c.name, micro)
			b.Run(c.name, func(b *testing.B) { benchTrainStep(b, c, "rope") })
		}
		b.Run(c.name+"/one-pass", func(b *testing.B) { benchTrainStep(b, c, "rope") })
	}
}

var (
	v2Shape   = trainShape{"v2", 128, 4, 64, 32, 4, 512, 0}
	v2LMShape = trainShape{"v2-lm", 128, 4, 128, 32, 4, 512, 0}
)

func benchTrainStep(b *testing.B, c trainShape, scheme string) {
	pe := map[string]any{"name": scheme}
	if scheme == "learned" {
		pe["max_positions"] = 16 * c.seq // as the recipe sizes it: the longest evaluated length
	}
	cfg := models.Config{
		Kind: models.Decoder, VocabSize: 260, Dim: c.dim, NumLayers: c.layers, NumHeads: 4,
		NumKVHeads: c.kv, HiddenDim: c.hidden, MaxSeqLen: benchCtx, Positional: pe,
	}
	backend, err := engine.NewBackend("") // $GOMLX_BACKEND, else the default
	if err != nil {
		b.Fatal(err)
	}
	m, err := models.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	tr, err := engine.NewTrainer(backend, m, context.New(), 0.1)
	if err != nil {
		b.Fatal(err)
	}
	tr.MicroBatch = c.micro
	if c.micro == passesAsTrain {
		sw, ok := m.Scheme.(positional.SharedWork)
		tr.MicroBatch = engine.DefaultMicroBatch(c.batch, c.seq, ok && sw.SharedWork())
	}
	r := rand.New(rand.NewPCG(1, 2))
	batch := engine.Batch{}
	for range c.batch {
		in, tgt, pos, w := make([]int32, c.seq), make([]int32, c.seq), make([]int32, c.seq), make([]float32, c.seq)
		for i := range in {
			in[i], tgt[i], pos[i], w[i] = int32(r.IntN(256)), int32(r.IntN(256)), int32(i), 1
		}
		batch.Inputs, batch.Targets = append(batch.Inputs, in), append(batch.Targets, tgt)
		batch.Positions, batch.Weights = append(batch.Positions, pos), append(batch.Weights, w)
	}
	if _, err := tr.Step(batch, 1e-3); err != nil { // compiles
		b.Fatal(err)
	}
	b.ResetTimer()
	cpu, faults := speed.CPUTime(), speed.MinorFaults()
	for range b.N {
		if _, err := tr.Step(batch, 1e-3); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "steps/s")
	b.ReportMetric((speed.CPUTime()-cpu).Seconds()*1000/float64(b.N), "cpu-ms/step")
	b.ReportMetric(float64(speed.MinorFaults()-faults)/float64(b.N), "faults/step")
}

// BenchmarkGenerate260K is what cmd/infer times: Generate from one token to 512 (the cache
// grows through its window sizes on the way), greedy, reported per generated token. Its
// allocations per op (-benchmem) are the engine's garbage per 511 tokens.
func BenchmarkGenerate260K(b *testing.B) { benchGenerate(b, randomEngine(b, shape260K), 511) }

// BenchmarkGenerate15MQ8 is side_by_side.sh's Q8_0 row as cmd/infer runs it (255 tokens after
// BOS, int8 activations) on random weights of the 15M shape.
func BenchmarkGenerate15MQ8(b *testing.B) {
	benchGenerate(b, randomEngineAs(b, shape15M, "cpu:actq8=true", quant.Q8_0), 255)
}

func benchGenerate(b *testing.B, e *engine.Engine, n int) {
	sm, err := engine.NewSampler(engine.Sampling{})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := e.Generate([]int{1}, n, sm, nil, func(int) {}); err != nil { // compiles every window
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if _, err := e.Generate([]int{1}, n, sm, nil, func(int) {}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "tok/s")
}

// benchCtx is the models' context (the v2 recipe trains with -ctx 4096).
var benchCtx = 4096

// BenchmarkPrefillCacheTypes is a 512-token prompt through the 15M shape with Q4_0 weights into
// a fresh session's cache of each type (engine.SetCacheTypes): what a half cache costs or saves
// when it is written whole and read once.
func BenchmarkPrefillCacheTypes(b *testing.B) {
	path := randomCheckpoint(b, shape15M)
	for _, name := range []string{"f32", "f16"} {
		b.Run(name, func(b *testing.B) {
			e, err := engine.LoadAs(path, "", 1024, quant.Q4_0)
			if err != nil {
				b.Fatal(err)
			}
			dt, err := engine.ParseCacheType(name)
			if err != nil {
				b.Fatal(err)
			}
			if err := e.SetCacheTypes(dt, dt); err != nil {
				b.Fatal(err)
			}
			benchPrefill(b, e, 512)
		})
	}
}
