package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/posformer/posformer/engine/cpu/kernels"
	"github.com/posformer/posformer/layers"
	"github.com/posformer/posformer/layers/quant"
)

// sibWeight is one stored matrix of a sibling-products case.
type sibWeight struct {
	typ  quant.Type
	N, K int
}

// sibCase is a graph of quantized products: build gets x and the weights and returns the
// products (in the order of ins: products[i] reads ins[i], -1 for x, j for products[j]) and
// a consumer of them; members is how many products should be grouped with few rows of x.
type sibCase struct {
	name    string
	ws      []sibWeight
	ins     []int
	build   func(x *Node, w []layers.Weight) (products []*Node, consumer *Node)
	members int
}

var sibCases = []sibCase{
	{
		// Q, K and V: three products of x, mixed types, then one value from all three.
		name: "qkv",
		ws:   []sibWeight{{quant.Q8_0, 512, 256}, {quant.Q4_0, 512, 256}, {quant.Q8_0, 512, 256}},
		ins:  []int{-1, -1, -1},
		build: func(x *Node, w []layers.Weight) ([]*Node, *Node) {
			a, b, c := w[0].MulT(x), w[1].MulT(x), w[2].MulT(x)
			return []*Node{a, b, c}, Add(Mul(a, b), c)
		},
		members: 3,
	},
	{
		// The second product reads the first's output: it may not join. The third, made after
		// it, reads x: it joins the first, and runs before the second.
		name: "chain",
		ws:   []sibWeight{{quant.Q8_0, 256, 256}, {quant.Q4_0, 256, 256}, {quant.Q4_0, 256, 256}},
		ins:  []int{-1, 0, -1},
		build: func(x *Node, w []layers.Weight) ([]*Node, *Node) {
			a := w[0].MulT(x)
			b := w[1].MulT(a)
			c := w[2].MulT(x)
			return []*Node{a, b, c}, Sub(b, c)
		},
		members: 2,
	},
	{
		// The second product's scales are computed from the first's output (adding zero): it
		// reads x, but its weights are not ready at the first's step, so it may not join.
		name: "late-scales",
		ws:   []sibWeight{{quant.Q8_0, 256, 256}, {quant.Q8_0, 256, 256}},
		ins:  []int{-1, -1},
		build: func(x *Node, w []layers.Weight) ([]*Node, *Node) {
			a := w[0].MulT(x)
			return []*Node{a}, nil // replaced in TestSiblingDots, which needs the parts
		},
		members: 0,
	},
}

// Sibling quantized products run as one step give the same bits as run one by one (grouping
// off), on one thread and on two, with int8 activations and without, under every kernel set;
// each product equals its float64 reference (ggml's int8 product with actq8, the product with
// the dequantized matrix without); and products that read another's output, or whose weights
// are computed after the first product, are not grouped. Prefill-sized x (seven rows) is grouped
// on the integer GEMM (actq8), which quantizes it once, and not on the float32 GEMM.
func TestSiblingDots(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for _, config := range []string{"threads=1,actq8=true", "threads=2,actq8=true", "threads=2,actq8=false"} {
		be := mustBackend(t, config)
		for _, p := range kernels.Paths() {
			for _, c := range sibCases {
				for _, M := range []int{1, 3, 7} {
					t.Run(fmt.Sprintf("%s/%s/%s/m=%d", config, p, c.name, M), func(t *testing.T) {
						withKernels(t, p)
						testSiblingDots(t, be, r, c, M)
					})
				}
			}
		}
	}
}

func testSiblingDots(t *testing.T, be *Backend, r *rand.Rand, c sibCase, M int) {
	K := c.ws[0].K
	var parts [][]*tensors.Tensor
	var deqs [][]float32
	args := []any{}
	xf := make([]float32, M*K)
	for i := range xf {
		xf[i] = float32(r.NormFloat64())
	}
	args = append(args, tensors.FromFlatDataAndDimensions(xf, M, K))
	for _, w := range c.ws {
		wf := make([]float32, w.N*w.K)
		for i := range wf {
			wf[i] = float32(r.NormFloat64())
		}
		ps, deq := quantParts(t, w.typ, wf, w.N, w.K)
		parts, deqs = append(parts, ps), append(deqs, deq)
		args = append(args, anySlice(ps)...)
	}
	graph := func(in []*Node) []*Node {
		// x computed in the arena (as a normed hidden state is), read last by the products: a
		// product's output that were given its bytes too early would overwrite it.
		x := MulScalar(in[0], 1)
		ws := make([]layers.Weight, len(c.ws))
		for i, w := range c.ws {
			ws[i] = layers.QuantizedWeight(w.typ, w.N, w.K, in[1+2*i:3+2*i]...)
		}
		products, consumer := c.build(x, ws)
		if c.name == "late-scales" {
			zero := MulScalar(ReduceAllMax(products[0]), 0)
			d := Add(in[4], zero)
			b := layers.QuantizedWeight(c.ws[1].typ, c.ws[1].N, c.ws[1].K, in[3], d).MulT(x)
			products = append(products, b)
			consumer = Add(products[0], b)
		}
		// The products leave through copies, so that they live in the arena too.
		outs := []*Node{}
		for _, p := range products {
			outs = append(outs, MulScalar(p, 1))
		}
		return append(outs, consumer)
	}
	run := func(on bool) []*tensors.Tensor {
		saved := siblingDotsOn
		siblingDotsOn = on
		defer func() { siblingDotsOn = saved }()
		return MustNewExec(be, graph).MustExec(args...)
	}
	before := siblingDotMembers.Load()
	grouped := run(true)
	members := siblingDotMembers.Load() - before
	want := int64(c.members)
	if M > 4 && !be.actq8 {
		want = 0 // the float32 GEMM packs x per product
	}
	if members != want {
		t.Errorf("%d products grouped, want %d", members, want)
	}
	alone := run(false)
	if n := siblingDotMembers.Load() - before - members; n != 0 {
		t.Errorf("%d products grouped with grouping off", n)
	}
	for i := range grouped {
		g, a := tensors.MustCopyFlatData[float32](grouped[i]), tensors.MustCopyFlatData[float32](alone[i])
		for j := range g {
			if math.Float32bits(g[j]) != math.Float32bits(a[j]) {
				t.Fatalf("output %d [%d] = %g grouped, %g alone", i, j, g[j], a[j])
			}
		}
	}
	// Each product against its reference, from the values it read (x or an earlier product).
	for i, w := range c.ws {
		var xin []float32
		if c.ins[i] < 0 {
			xin = xf
		} else {
			xin = tensors.MustCopyFlatData[float32](grouped[c.ins[i]])
		}
		got := tensors.MustCopyFlatData[float32](grouped[i])
		q, d := splitParts(t, parts[i])
		for m := range M {
			x := xin[m*w.K : (m+1)*w.K]
			var ref, mag []float64
			if be.actq8 {
				ref, mag = actCase{typ: w.typ, k: w.K, q: q, d: d, rows: w.N, x: x}.reference()
			} else {
				ref, mag = make([]float64, w.N), make([]float64, w.N)
				for n := range w.N {
					for k := range w.K {
						v := float64(x[k]) * float64(deqs[i][n*w.K+k])
						ref[n] += v
						mag[n] += math.Abs(v)
					}
				}
			}
			for n := range w.N {
				if e := math.Abs(float64(got[m*w.N+n]) - ref[n]); e > 1e-5*mag[n] || math.IsNaN(float64(got[m*w.N+n])) {
					t.Fatalf("product %d: y[%d][%d] = %g, want %g", i, m, n, got[m*w.N+n], ref[n])
				}
			}
		}
	}
}
