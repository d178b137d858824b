package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/posformer/posformer/engine/cpu/kernels"
	"github.com/posformer/posformer/layers"
)

// maskedCase is one attention over a mask: b sequences, h query heads sharing kvh key/value
// heads, s queries of hd values over t keys.
type maskedCase struct {
	name               string
	b, h, kvh, s, t    int
	hd                 int
	cacheLayout        bool // keys and values stored [b, kvh, hd, t], as the KV cache keeps small heads
	bias               bool // a bias [1, h, s, t] added before the mask (ALiBi's place)
	mask               func(r *rand.Rand, bi, q, key int) bool
	rewritten          bool         // the chain is expected to be computed as one step
	layers             int          // attentions in a row over the same mask and keys (0: one), each one's output the next one's queries
	half               dtypes.DType // keys and values kept as float16 or bfloat16, as a half-precision cache (0: float32)
	prefix, validQuery int          // causal masks: the keys before the chunk; queries of row 1 that are real
	// sharedMask: the mask is given [b, 1, s, t] and broadcast to the heads in the graph, as
	// layers.MaskBias builds it (the chain then reads it under the broadcast).
	sharedMask bool
}

// causal: query q (at position prefix+q) sees the cached keys before the chunk and the chunk's
// keys up to its own; row 1 of the batch has validQuery real queries, the rest padding, which
// see nothing.
func (c maskedCase) causal(_ *rand.Rand, bi, q, key int) bool {
	if bi == 1 && q >= c.validQuery {
		return false
	}
	return key <= c.prefix+q
}

var maskedCases = []maskedCase{
	{name: "causal prefill", b: 1, h: 2, kvh: 2, s: 100, t: 100, hd: 16, rewritten: true},
	{name: "cache, empty slots", b: 1, h: 2, kvh: 2, s: 70, t: 160, hd: 16, cacheLayout: true, prefix: 30, rewritten: true},
	{name: "grouped queries, bias", b: 1, h: 4, kvh: 2, s: 40, t: 64, hd: 8, cacheLayout: true, prefix: 10, bias: true, rewritten: true},
	{name: "ragged batch, padding queries", b: 2, h: 2, kvh: 1, s: 33, t: 48, hd: 8, prefix: 15, validQuery: 20, cacheLayout: true, rewritten: true},
	{name: "random mask", b: 2, h: 2, kvh: 2, s: 20, t: 90, hd: 12, rewritten: true,
		mask: func(r *rand.Rand, _, q, _ int) bool { return q%7 != 3 && r.Float64() < 0.6 }},
	{name: "threads", b: 1, h: 4, kvh: 4, s: 300, t: 300, hd: 32, cacheLayout: true, rewritten: true},
	{name: "float16 cache", b: 2, h: 4, kvh: 2, s: 40, t: 96, hd: 16, cacheLayout: true, prefix: 20, validQuery: 30, rewritten: true, half: dtypes.Float16},
	{name: "bfloat16 keys by row, sliding window", b: 1, h: 2, kvh: 2, s: 150, t: 150, hd: 8, rewritten: true, half: dtypes.BFloat16,
		mask: func(_ *rand.Rand, _, q, key int) bool { return key <= q && key > q-40 }},
	{name: "three layers, one mask", b: 2, h: 2, kvh: 2, s: 50, t: 80, hd: 8, cacheLayout: true, prefix: 30, validQuery: 41, rewritten: true, layers: 3},
	{name: "few queries", b: 1, h: 2, kvh: 2, s: 8, t: 40, hd: 16, cacheLayout: true, prefix: 32, rewritten: true},
	{name: "decoding, grouped queries", b: 2, h: 4, kvh: 2, s: 1, t: 64, hd: 16, cacheLayout: true, prefix: 37, validQuery: 1, rewritten: true},
	{name: "decoding, float16 cache", b: 1, h: 6, kvh: 6, s: 1, t: 128, hd: 48, cacheLayout: true, prefix: 100, rewritten: true, half: dtypes.Float16},
	{name: "decoding, keys by row", b: 1, h: 2, kvh: 1, s: 1, t: 30, hd: 8, prefix: 20, rewritten: true},
	// The cache of heads of 32 or more keeps a key a row (layers.BlockConfig.CacheSlotAxis).
	{name: "cache by row, empty slots", b: 1, h: 2, kvh: 2, s: 70, t: 160, hd: 32, prefix: 30, rewritten: true},
	{name: "decoding, cache by row, grouped queries", b: 2, h: 4, kvh: 2, s: 1, t: 128, hd: 64, prefix: 90, validQuery: 1, rewritten: true},
	{name: "decoding, float16 cache by row", b: 1, h: 6, kvh: 6, s: 1, t: 128, hd: 48, prefix: 100, rewritten: true, half: dtypes.Float16},
	{name: "three queries, cache by row", b: 1, h: 4, kvh: 2, s: 3, t: 96, hd: 64, prefix: 60, rewritten: true},
	{name: "three queries, grouped", b: 1, h: 4, kvh: 2, s: 3, t: 50, hd: 8, cacheLayout: true, prefix: 40, rewritten: true},
	// One sequence: the chain reads the mask under its broadcast (aliases.go). Two: the batch
	// axis kept on both sides of the heads' makes no leaf, and the broadcast is computed.
	{name: "one mask for every head", b: 1, h: 4, kvh: 2, s: 40, t: 64, hd: 8, cacheLayout: true, prefix: 10, bias: true, rewritten: true, sharedMask: true},
	{name: "one mask for every head and layer", b: 1, h: 3, kvh: 3, s: 50, t: 80, hd: 8, cacheLayout: true, prefix: 30, rewritten: true, layers: 3, sharedMask: true},
	{name: "decoding, one mask for every head", b: 1, h: 4, kvh: 2, s: 1, t: 64, hd: 16, cacheLayout: true, prefix: 37, rewritten: true, sharedMask: true},
	{name: "ragged batch, one mask for every head", b: 2, h: 4, kvh: 2, s: 40, t: 64, hd: 8, cacheLayout: true, prefix: 10, validQuery: 30, rewritten: true, sharedMask: true},
}

// maskedInputs are a case's q [b, h, s, hd], keys and values (see cacheLayout), bias and mask
// [b, h, s, t] (0 or layers' −1e9); visible[b][q][key] says which keys the mask shows.
func (c maskedCase) inputs(r *rand.Rand) (q, k, v, bias, mask []float32, visible [][][]bool) {
	normal := func(n int, scale float64) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(r.NormFloat64() * scale)
		}
		return x
	}
	q, k, v = normal(c.b*c.h*c.s*c.hd, 2), normal(c.b*c.kvh*c.t*c.hd, 1), normal(c.b*c.kvh*c.t*c.hd, 1)
	bias = normal(c.h*c.s*c.t, 1)
	see := c.mask
	if see == nil {
		see = c.causal
	}
	visible = make([][][]bool, c.b)
	mask = make([]float32, c.b*c.h*c.s*c.t)
	for bi := range c.b {
		visible[bi] = make([][]bool, c.s)
		for qi := range c.s {
			visible[bi][qi] = make([]bool, c.t)
			for key := range c.t {
				visible[bi][qi][key] = see(r, bi, qi, key)
			}
		}
		for hi := range c.h {
			for qi := range c.s {
				for key := range c.t {
					if !visible[bi][qi][key] {
						mask[((bi*c.h+hi)*c.s+qi)*c.t+key] = -1e9
					}
				}
			}
		}
	}
	return q, k, v, bias, mask, visible
}

// run computes the case's attention on be as layers.Attention writes it: q·k, scaled, plus the
// bias and the mask, then layers.SoftmaxValues.
func (c maskedCase) run(t *testing.T, be *Backend, q, k, v, bias, mask []float32) []float32 {
	t.Helper()
	kvDims := []int{c.b, c.kvh, c.t, c.hd}
	kAxis := 2
	if c.cacheLayout {
		kvDims, kAxis = []int{c.b, c.kvh, c.hd, c.t}, 3
	}
	exe := MustNewExec(be, func(q, k, v, bias, mask *Node) *Node {
		g := c.h / c.kvh
		if c.half != dtypes.InvalidDType {
			// Stored as halves, widened where read, as layers.Attention reads a half cache.
			k = ConvertDType(ConvertDType(k, c.half), dtypes.Float32)
			v = ConvertDType(ConvertDType(v, c.half), dtypes.Float32)
		}
		for range max(1, c.layers) {
			qg := Reshape(q, c.b, c.kvh, g*c.s, c.hd)
			logits := Reshape(DotGeneral(qg, []int{3}, []int{0, 1}, k, []int{5 - kAxis}, []int{0, 1}), c.b, c.h, c.s, c.t)
			logits = MulScalar(logits, 1/math.Sqrt(float64(c.hd)))
			if c.bias {
				logits = Add(logits, bias)
			}
			m := mask
			if c.sharedMask {
				m = BroadcastToDims(mask, c.b, c.h, c.s, c.t)
			}
			q = layers.SoftmaxValues(Add(logits, m), v, kAxis, c.kvh)
		}
		return q
	})
	maskT := tensors.FromFlatDataAndDimensions(mask, c.b, c.h, c.s, c.t)
	if c.sharedMask {
		// Every head's mask is the same (inputs): each row's first head's.
		one := make([]float32, 0, c.b*c.s*c.t)
		for bi := range c.b {
			one = append(one, mask[bi*c.h*c.s*c.t:(bi*c.h+1)*c.s*c.t]...)
		}
		maskT = tensors.FromFlatDataAndDimensions(one, c.b, 1, c.s, c.t)
	}
	out := exe.MustExec(tensors.FromFlatDataAndDimensions(q, c.b, c.h, c.s, c.hd),
		tensors.FromFlatDataAndDimensions(k, kvDims...), tensors.FromFlatDataAndDimensions(v, kvDims...),
		tensors.FromFlatDataAndDimensions(bias, 1, c.h, c.s, c.t), maskT)
	return tensors.MustCopyFlatData[float32](out[0])
}

// reference is the attention in float64 over the visible keys, NaN for a query that sees none
// (a padding query, whose output nothing reads: float32 logits of about −1e9 are multiples of
// 64, and what they average is rounding's choice).
func (c maskedCase) reference(q, k, v, bias []float32, visible [][][]bool) []float64 {
	var out []float64
	for range max(1, c.layers) {
		out = c.attend(q, k, v, bias, visible)
		for i, x := range out {
			q[i] = float32(x)
		}
	}
	return out
}

// attend is one attention of reference.
func (c maskedCase) attend(q, k, v, bias []float32, visible [][][]bool) []float64 {
	g := c.h / c.kvh
	kv := func(x []float32, bi, head, key, d int) float64 {
		if c.cacheLayout {
			return float64(x[((bi*c.kvh+head)*c.hd+d)*c.t+key])
		}
		return float64(x[((bi*c.kvh+head)*c.t+key)*c.hd+d])
	}
	out := make([]float64, c.b*c.h*c.s*c.hd)
	for bi := range c.b {
		for hi := range c.h {
			for qi := range c.s {
				row := visible[bi][qi]
				none := true
				for _, vis := range row {
					none = none && !vis
				}
				o := out[((bi*c.h+hi)*c.s+qi)*c.hd:][:c.hd]
				if none {
					for d := range o {
						o[d] = math.NaN()
					}
					continue
				}
				logit := make([]float64, c.t)
				top := math.Inf(-1)
				for key := range c.t {
					if !row[key] {
						continue
					}
					var dot float64
					for d := range c.hd {
						dot += float64(q[((bi*c.h+hi)*c.s+qi)*c.hd+d]) * kv(k, bi, hi/g, key, d)
					}
					logit[key] = dot / math.Sqrt(float64(c.hd))
					if c.bias {
						logit[key] += float64(bias[(hi*c.s+qi)*c.t+key])
					}
					top = max(top, logit[key])
				}
				var sum float64
				for key := range c.t {
					if !row[key] {
						continue
					}
					p := math.Exp(logit[key] - top)
					sum += p
					for d := range c.hd {
						o[d] += p * kv(v, bi, hi/g, key, d)
					}
				}
				for d := range o {
					o[d] /= sum
				}
			}
		}
	}
	return out
}

// roundTo is x rounded to half (float16 or bfloat16) and back, by the backend's conversion.
func roundTo(t *testing.T, be *Backend, half dtypes.DType, x []float32) []float32 {
	t.Helper()
	exe := MustNewExec(be, func(x *Node) *Node { return ConvertDType(ConvertDType(x, half), dtypes.Float32) })
	return tensors.MustCopyFlatData[float32](exe.MustExec(tensors.FromFlatDataAndDimensions(x, len(x)))[0])
}

// Attention over a mask computed as one step over each query's visible keys gives what the
// op-by-op chain gives (within float32 rounding: sums of fewer terms in another order) and what
// float64 attention over the visible keys gives, for causal prefills with and without cached
// keys and empty slots, grouped queries, a bias, padding queries that see nothing, a random
// mask, a prefill large enough for the threads, keys and values kept as float16 or bfloat16,
// layers sharing one mask, and decoding's shapes (one query a head, read row by row), on every
// kernel path.
func TestMaskedAttention(t *testing.T) {
	be := mustBackend(t, "")
	for _, p := range kernels.Paths() {
		t.Run(p, func(t *testing.T) {
			withKernels(t, p)
			for _, c := range maskedCases {
				t.Run(c.name, func(t *testing.T) {
					r := rand.New(rand.NewPCG(uint64(c.s), uint64(c.t)))
					q, k, v, bias, mask, visible := c.inputs(r)
					before := maskedAttentionsCompiled.Load()
					got := c.run(t, be, q, k, v, bias, mask)
					if n := maskedAttentionsCompiled.Load() - before; (n == int64(max(1, c.layers))) != c.rewritten {
						t.Fatalf("%d chains rewritten, want rewritten=%v", n, c.rewritten)
					}
					maskedAttentionOn = false
					opByOp := c.run(t, be, q, k, v, bias, mask)
					maskedAttentionOn = true
					if c.half != dtypes.InvalidDType {
						k, v = roundTo(t, be, c.half, k), roundTo(t, be, c.half, v)
					}
					want := c.reference(q, k, v, bias, visible)
					for i := range want {
						if d := math.Abs(float64(got[i] - opByOp[i])); !(d <= 2e-5) {
							t.Fatalf("element %d: %g, op by op %g", i, got[i], opByOp[i])
						}
						if d := math.Abs(float64(got[i]) - want[i]); !math.IsNaN(want[i]) && !(d <= 1e-4) {
							t.Fatalf("element %d: %g, float64 reference %g", i, got[i], want[i])
						}
					}
				})
			}
		})
	}
}

// visibleSpan finds what a plain scan finds: the first and one past the last visible key, or
// the whole row, on rows with hidden runs shorter and longer than its strides.
func TestVisibleSpan(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for n := range 2000 {
		row := make([]float32, 1+r.IntN(700))
		for i := range row {
			if r.IntN(40) == 0 {
				row[i] = -1e9
			}
		}
		a, b := r.IntN(len(row)+1), r.IntN(len(row)+1)
		for i := range row {
			if i < min(a, b) || i >= max(a, b) || n%5 == 0 {
				row[i] = -1e9 // hidden runs at both ends; every fifth row hidden whole
			}
		}
		lo, hi := 0, len(row)
		for lo < len(row) && row[lo] <= maskHides {
			lo++
		}
		if lo == len(row) {
			lo = 0
		} else {
			for row[hi-1] <= maskHides {
				hi--
			}
		}
		if l, h := visibleSpan(row); l != lo || h != hi {
			t.Fatalf("row of %d, visible within [%d, %d): visibleSpan gives [%d, %d), want [%d, %d)", len(row), min(a, b), max(a, b), l, h, lo, hi)
		}
	}
}

// BenchmarkMaskedAttention is one layer's attention in a 512-token prefill of the 15M shape
// (6 heads of 48 over a cache of 512 slots), computed over the visible keys and op by op, its
// mask one for every head as layers.MaskBias builds it.
func BenchmarkMaskedAttention(b *testing.B) {
	c := maskedCase{b: 1, h: 6, kvh: 6, s: 512, t: 512, hd: 48, cacheLayout: true, sharedMask: true}
	be, err := New("")
	if err != nil {
		b.Fatal(err)
	}
	defer be.Finalize()
	q, k, v, _, mask, _ := c.inputs(rand.New(rand.NewPCG(1, 2)))
	for _, on := range []bool{true, false} {
		b.Run(fmt.Sprintf("masked=%v", on), func(b *testing.B) {
			maskedAttentionOn = on
			defer func() { maskedAttentionOn = true }()
			kvDims := []int{c.b, c.kvh, c.hd, c.t}
			exe := MustNewExec(be, func(q, k, v, mask *Node) *Node {
				logits := DotGeneral(q, []int{3}, []int{0, 1}, k, []int{2}, []int{0, 1})
				return layers.SoftmaxValues(Add(MulScalar(logits, 0.125), BroadcastToDims(mask, c.b, c.h, c.s, c.t)), v, 3, c.kvh)
			})
			ins := []any{tensors.FromFlatDataAndDimensions(q, c.b, c.h, c.s, c.hd),
				tensors.FromFlatDataAndDimensions(k, kvDims...), tensors.FromFlatDataAndDimensions(v, kvDims...),
				tensors.FromFlatDataAndDimensions(mask[:c.s*c.t], c.b, 1, c.s, c.t)}
			exe.MustExec(ins...)
			b.ResetTimer()
			for range b.N {
				exe.MustExec(ins...)
			}
		})
	}
}

// A training step reads the chain's exponentials again (Eᵀ·dO for the values' gradient, dE⊙E for
// the logits'): the chain is still one step, which then writes E whole, zeros where the mask
// hides. The output and the gradients of Σ out⊙w with respect to q, k, v and the bias are op by
// op's, for a causal batch, grouped queries with a bias, a ragged batch with padding queries, a
// batch large enough for the threads and a sliding window, on every kernel path.
func TestMaskedAttentionGradients(t *testing.T) {
	be := mustBackend(t, "")
	cases := []maskedCase{
		{name: "causal batch", b: 2, h: 2, kvh: 2, s: 70, t: 70, hd: 16},
		{name: "grouped queries, bias", b: 2, h: 4, kvh: 2, s: 40, t: 40, hd: 8, bias: true},
		{name: "ragged batch, padding queries", b: 2, h: 2, kvh: 1, s: 33, t: 33, hd: 8, validQuery: 20},
		{name: "threads", b: 2, h: 4, kvh: 4, s: 160, t: 160, hd: 32},
		{name: "sliding window", b: 1, h: 2, kvh: 2, s: 150, t: 150, hd: 8,
			mask: func(_ *rand.Rand, _, q, key int) bool { return key <= q && key > q-40 }},
	}
	for _, p := range kernels.Paths() {
		t.Run(p, func(t *testing.T) {
			withKernels(t, p)
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					r := rand.New(rand.NewPCG(uint64(c.s), 7))
					q, k, v, bias, mask, _ := c.inputs(r)
					w := make([]float32, c.b*c.h*c.s*c.hd)
					for i := range w {
						w[i] = float32(r.NormFloat64())
					}
					before := maskedAttentionsCompiled.Load()
					got := c.gradients(be, q, k, v, bias, mask, w)
					if n := maskedAttentionsCompiled.Load() - before; n != 1 {
						t.Fatalf("%d chains rewritten, want 1", n)
					}
					maskedAttentionOn = false
					want := c.gradients(be, q, k, v, bias, mask, w)
					maskedAttentionOn = true
					for j, name := range []string{"output", "dq", "dk", "dv", "dbias"} {
						scale := 0.0
						for _, x := range want[j] {
							scale = max(scale, math.Abs(float64(x)))
						}
						for i := range want[j] {
							if d := math.Abs(float64(got[j][i] - want[j][i])); !(d <= 1e-5*max(1, scale)) {
								t.Fatalf("%s element %d: %g, op by op %g", name, i, got[j][i], want[j][i])
							}
						}
					}
				})
			}
		})
	}
}

// gradients computes the case's attention (keys and values [b, kvh, t, hd], as a training step
// holds them) and the gradients of Σ out⊙w with respect to q, k, v and the bias.
func (c maskedCase) gradients(be *Backend, q, k, v, bias, mask, w []float32) [][]float32 {
	exe := MustNewExec(be, func(q, k, v, bias, mask, w *Node) []*Node {
		g := c.h / c.kvh
		qg := Reshape(q, c.b, c.kvh, g*c.s, c.hd)
		logits := Reshape(DotGeneral(qg, []int{3}, []int{0, 1}, k, []int{3}, []int{0, 1}), c.b, c.h, c.s, c.t)
		logits = MulScalar(logits, 1/math.Sqrt(float64(c.hd)))
		if c.bias {
			logits = Add(logits, bias)
		}
		out := layers.SoftmaxValues(Add(logits, mask), v, 2, c.kvh)
		grads := Gradient(ReduceAllSum(Mul(out, w)), q, k, v, bias)
		return append([]*Node{out}, grads...)
	})
	kvDims := []int{c.b, c.kvh, c.t, c.hd}
	outs := exe.MustExec(tensors.FromFlatDataAndDimensions(q, c.b, c.h, c.s, c.hd),
		tensors.FromFlatDataAndDimensions(k, kvDims...), tensors.FromFlatDataAndDimensions(v, kvDims...),
		tensors.FromFlatDataAndDimensions(bias, 1, c.h, c.s, c.t), tensors.FromFlatDataAndDimensions(mask, c.b, c.h, c.s, c.t),
		tensors.FromFlatDataAndDimensions(w, c.b, c.h, c.s, c.hd))
	res := make([][]float32, len(outs))
	for i, o := range outs {
		res[i] = tensors.MustCopyFlatData[float32](o)
	}
	return res
}
