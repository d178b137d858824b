package cpu

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unsafe"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

func mustBackend(t *testing.T, config string) *Backend {
	t.Helper()
	b, err := New(config)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Finalize)
	return b
}

func must[T any](t *testing.T) func(v T, err error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func randomBuffer(t *testing.T, b *Backend, r *rand.Rand, dims ...int) *Buffer {
	s := shapes.Make(dtypes.Float32, dims...)
	flat := make([]float32, s.Size())
	for i := range flat {
		flat[i] = r.Float32()*4 - 2
	}
	buf, err := b.BufferFromFlatData(0, flat, s)
	if err != nil {
		t.Fatal(err)
	}
	return buf.(*Buffer)
}

// fusedVsOpByOp builds a graph twice, with fusion and without (optimize=false), runs both on the same
// random inputs of the given shapes, fails unless every output agrees to the bit, and returns
// how many steps each executable has (the comparison says something only if they differ).
func fusedVsOpByOp(t *testing.T, build func(bld backends.Builder, op func(backends.Op, error) backends.Op, params []backends.Op) []backends.Op, inputs ...[]int) (fused, opByOp int) {
	t.Helper()
	var results [2][][]float32
	steps := [2]int{}
	for i, config := range []string{"", "optimize=false"} {
		be := mustBackend(t, config)
		op := must[backends.Op](t)
		bld := be.Builder("fused")
		var params []backends.Op
		for k, dims := range inputs {
			params = append(params, op(bld.Parameter(fmt.Sprintf("x%d", k), shapes.Make(dtypes.Float32, dims...), nil)))
		}
		exe := must[backends.Executable](t)(bld.Compile(build(bld, op, params), nil)).(*Executable)
		steps[i] = len(exe.steps)
		r := rand.New(rand.NewPCG(7, 8))
		var ins []backends.Buffer
		for _, dims := range inputs {
			ins = append(ins, randomBuffer(t, be, r, dims...))
		}
		for _, b := range must[[]backends.Buffer](t)(exe.Execute(ins, nil, 0)) {
			results[i] = append(results[i], append([]float32(nil), typed[float32](b.(*Buffer).data)...))
		}
	}
	for k := range results[0] {
		for i := range results[0][k] {
			if results[0][k][i] != results[1][k][i] {
				t.Fatalf("output %d, element %d: fused %g, op by op %g", k, i, results[0][k][i], results[1][k][i])
			}
		}
	}
	return steps[0], steps[1]
}

// silu(a)·b + 0.5 is one fused step, and gives what the unfused ops give, bit for bit.
func TestFusedChainEqualsOpByOp(t *testing.T) {
	fused, opByOp := fusedVsOpByOp(t, func(bld backends.Builder, op func(backends.Op, error) backends.Op, x []backends.Op) []backends.Op {
		a, b := x[0], x[1]
		half := op(bld.Constant([]float32{0.5}))
		y := op(bld.Mul(a, op(bld.Logistic(a))))
		return []backends.Op{op(bld.Add(op(bld.Mul(y, b)), half))}
	}, []int{3, 1000}, []int{3, 1000})
	if fused != 1 || opByOp != 4 {
		t.Errorf("%d steps fused, %d op by op; want 1 and 4", fused, opByOp)
	}
}

// A scalar as a binary op's first operand (0.75 − v, 0.75 / v, max(0.75, v), ... on v =
// σ(a)·b) gives what the unfused ops give, bit for bit, whether the scalar kernels take it (add,
// sub, mul) or a filled block does.
func TestFusedScalarFirst(t *testing.T) {
	for _, name := range []string{"add", "sub", "mul", "div", "max", "min"} {
		t.Run(name, func(t *testing.T) {
			fused, opByOp := fusedVsOpByOp(t, func(bld backends.Builder, op func(backends.Op, error) backends.Op, x []backends.Op) []backends.Op {
				s := op(bld.Constant([]float32{0.75}))
				bin := map[string]func(a, b backends.Op) (backends.Op, error){
					"add": bld.Add, "sub": bld.Sub, "mul": bld.Mul, "div": bld.Div, "max": bld.Max, "min": bld.Min,
				}[name]
				sig := op(bld.Logistic(x[0]))
				return []backends.Op{op(bld.Mul(op(bin(s, op(bld.Mul(sig, x[1])))), x[0]))}
			}, []int{2, 1500}, []int{2, 1500})
			if fused != 1 || opByOp != 4 {
				t.Errorf("%d steps fused, %d op by op; want 1 and 4", fused, opByOp)
			}
		})
	}
}

// SiLU's gradient, g·s + (g·a)·s with g = p·q and s = sigmoid(a), reads g and s twice each: they
// join the tree, one step in all, since every use of theirs is in it. When g is also an output
// or read by an op outside the tree it stays a step of its own. Every case gives what the
// unfused ops give, bit for bit.
func TestFusedSharedMembers(t *testing.T) {
	for _, c := range []struct {
		name  string
		extra string // "", "output" (g is an output too), "reduce" (a sum of g is)
		steps int    // fused
		ops   int    // op by op
	}{
		{"every use in the tree", "", 1, 6},
		{"g an output", "output", 2, 6},
		{"g read outside", "reduce", 3, 7},
	} {
		steps, opByOp := fusedVsOpByOp(t, func(bld backends.Builder, op func(backends.Op, error) backends.Op, x []backends.Op) []backends.Op {
			p, q, a := x[0], x[1], x[2]
			g := op(bld.Mul(p, q))
			sig := op(bld.Logistic(a))
			y := op(bld.Add(op(bld.Mul(g, sig)), op(bld.Mul(op(bld.Mul(g, a)), sig))))
			switch c.extra {
			case "output":
				return []backends.Op{y, g}
			case "reduce":
				return []backends.Op{y, op(bld.ReduceSum(g, 1))}
			}
			return []backends.Op{y}
		}, []int{3, 700}, []int{3, 700}, []int{3, 700})
		if steps != c.steps || opByOp != c.ops {
			t.Errorf("%s: %d steps fused, %d op by op; want %d and %d", c.name, steps, opByOp, c.steps, c.ops)
		}
	}
}

// (x − b₁)·b₂ + b₁ with broadcast operands b₁, b₂ is one fused step when each keeps contiguous
// axes, and gives what the unfused ops give, bit for bit, in every case; the shape 3×700×5 makes
// blocks of 512 start mid-row.
func TestFusedBroadcastLeaves(t *testing.T) {
	for _, c := range []struct {
		name   string
		b1, b2 []int
		fused  bool
	}{
		{"rows (RMSNorm's r)", []int{3, 700, 1}, []int{1, 1, 5}, true},
		{"middle axis", []int{1, 700, 1}, []int{3, 700, 1}, true},
		{"leading block", []int{3, 700, 5}, []int{3, 1, 1}, true},
		{"scalar-shaped", []int{1, 1, 1}, []int{1, 700, 5}, true},
		{"kept axes apart", []int{3, 1, 5}, []int{1, 1, 5}, false},
	} {
		steps, opByOp := fusedVsOpByOp(t, func(bld backends.Builder, op func(backends.Op, error) backends.Op, x []backends.Op) []backends.Op {
			x0, b1, b2 := x[0], x[1], x[2]
			return []backends.Op{op(bld.Add(op(bld.Mul(op(bld.Sub(x0, b1)), b2)), b1))}
		}, []int{3, 700, 5}, c.b1, c.b2)
		if (steps == 1) != c.fused || opByOp < 3 {
			t.Errorf("%s: %d steps fused, %d op by op; fused = %v", c.name, steps, opByOp, c.fused)
		}
	}
}

// Values whose lifetimes do not overlap share arena bytes: a chain of 8 transposes of a 4 KiB
// matrix needs 2 buffers, not 8.
func TestArenaReuse(t *testing.T) {
	be := mustBackend(t, "")
	op := must[backends.Op](t)
	bld := be.Builder("chain")
	x := op(bld.Parameter("x", shapes.Make(dtypes.Float32, 32, 32), nil))
	y := x
	for range 8 {
		y = op(bld.Transpose(y, 1, 0))
	}
	y = op(bld.Neg(y))
	exe := must[backends.Executable](t)(bld.Compile([]backends.Op{y}, nil)).(*Executable)
	if exe.arenaSize > 2*32*32*4 {
		t.Errorf("arena of %d bytes for a chain of 4 KiB values; want at most 2 of them", exe.arenaSize)
	}
	r := rand.New(rand.NewPCG(3, 4))
	in := randomBuffer(t, be, r, 32, 32)
	want := append([]float32(nil), typed[float32](in.data)...)
	outs := must[[]backends.Buffer](t)(exe.Execute([]backends.Buffer{in}, nil, 0))
	got := typed[float32](outs[0].(*Buffer).data)
	for i := range want {
		if got[i] != -want[i] {
			t.Fatalf("element %d: %g, want %g", i, got[i], -want[i])
		}
	}
}

// A scatter into a donated parameter (the KV cache) updates that buffer in place; without
// donation the parameter is left untouched.
func TestScatterUpdatesDonatedBufferInPlace(t *testing.T) {
	be := mustBackend(t, "")
	op := must[backends.Op](t)
	bld := be.Builder("cache")
	cache := op(bld.Parameter("cache", shapes.Make(dtypes.Float32, 8, 4), nil))
	idx := op(bld.Parameter("idx", shapes.Make(dtypes.Int32, 1, 1), nil))
	row := op(bld.Parameter("row", shapes.Make(dtypes.Float32, 1, 4), nil))
	y := op(bld.ScatterSum(cache, idx, row, 1, []int{1}, []int{0}, []int{0}, true, true))
	exe := must[backends.Executable](t)(bld.Compile([]backends.Op{y}, nil)).(*Executable)
	run := func(donate bool) (in, out *Buffer) {
		in = must[backends.Buffer](t)(be.BufferFromFlatData(0, make([]float32, 32), shapes.Make(dtypes.Float32, 8, 4))).(*Buffer)
		i := must[backends.Buffer](t)(be.BufferFromFlatData(0, []int32{5}, shapes.Make(dtypes.Int32, 1, 1)))
		r := must[backends.Buffer](t)(be.BufferFromFlatData(0, []float32{1, 2, 3, 4}, shapes.Make(dtypes.Float32, 1, 4)))
		inData := unsafe.SliceData(in.data)
		outs := must[[]backends.Buffer](t)(exe.Execute([]backends.Buffer{in, i, r}, []bool{donate, false, false}, 0))
		out = outs[0].(*Buffer)
		if same := unsafe.SliceData(out.data) == inData; same != donate {
			t.Errorf("donate=%v: output in the input's bytes: %v", donate, same)
		}
		return in, out
	}
	in, out := run(false)
	if got := typed[float32](out.data)[20:24]; got[0] != 1 || got[3] != 4 {
		t.Errorf("row 5 after the scatter: %v", got)
	}
	for _, v := range typed[float32](in.data) {
		if v != 0 {
			t.Fatalf("the parameter changed although it was not donated")
		}
	}
	_, out = run(true)
	if got := typed[float32](out.data)[20:24]; got[0] != 1 || got[3] != 4 {
		t.Errorf("row 5 after the in-place scatter: %v", got)
	}
}

// An op the backend lacks fails when the graph is built, naming the backend and the op.
func TestNotImplementedNamesTheOp(t *testing.T) {
	be := mustBackend(t, "")
	bld := be.Builder("fft")
	x := must[backends.Op](t)(bld.Parameter("x", shapes.Make(dtypes.Float32, 8), nil))
	_, err := bld.FFT(x, backends.FFTForward, []int{8})
	if err == nil || !strings.Contains(err.Error(), "backend cpu: op FFT not implemented") {
		t.Errorf("FFT: error %v", err)
	}
}

// A bad option is a one-line error that lists the valid ones.
func TestBadConfig(t *testing.T) {
	for _, c := range []string{"threads=0", "threads=x", "speed=11", "optimize=maybe", "fuse=maybe", "bf16dot=maybe", "amx=maybe"} {
		if _, err := New(c); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("config %q: error %v", c, err)
		}
	}
}

// A product with many rows split over weight columns (x packed once, runSharedA, where Sgemm
// packs A) gives what a
// float64 product gives, with the weight stored [n, k] (x·Wᵀ) or [k, n].
func TestMatmulSharedA(t *testing.T) {
	be := mustBackend(t, "threads=2")
	const m, n, k = 40, 700, 300
	for _, transW := range []bool{true, false} {
		op := must[backends.Op](t)
		bld := be.Builder("shared")
		x := op(bld.Parameter("x", shapes.Make(dtypes.Float32, m, k), nil))
		wDims := []int{k, n}
		contract := 0
		if transW {
			wDims, contract = []int{n, k}, 1
		}
		w := op(bld.Parameter("w", shapes.Make(dtypes.Float32, wDims...), nil))
		y := op(bld.DotGeneral(x, []int{1}, nil, w, []int{contract}, nil))
		exe := must[backends.Executable](t)(bld.Compile([]backends.Op{y}, nil)).(*Executable)
		r := rand.New(rand.NewPCG(9, 10))
		xb, wb := randomBuffer(t, be, r, m, k), randomBuffer(t, be, r, wDims...)
		xs, ws := append([]float32(nil), typed[float32](xb.data)...), append([]float32(nil), typed[float32](wb.data)...)
		outs := must[[]backends.Buffer](t)(exe.Execute([]backends.Buffer{xb, wb}, nil, 0))
		got := typed[float32](outs[0].(*Buffer).data)
		for i := range m {
			for j := range n {
				var want float64
				for p := range k {
					wv := ws[p*n+j]
					if transW {
						wv = ws[j*k+p]
					}
					want += float64(xs[i*k+p]) * float64(wv)
				}
				if d := want - float64(got[i*n+j]); d > 1e-3 || d < -1e-3 {
					t.Fatalf("transW %v: y[%d][%d] = %g, want %g", transW, i, j, got[i*n+j], want)
				}
			}
		}
	}
}

// A weight's gradient in shape (a long contraction, a small result) is cut over K between the
// threads (splitK) and gives what a float64 product gives, whichever side is stored transposed,
// with K not a multiple of the slices.
func TestMatmulSplitK(t *testing.T) {
	be := mustBackend(t, "threads=2")
	const m, n, k = 33, 20, 1100
	if !splitK(m, n, k) {
		t.Fatal("the test's shape is not cut over K")
	}
	for _, c := range []struct{ lhsK, rhsK int }{{0, 0}, {1, 0}, {0, 1}, {1, 1}} {
		op := must[backends.Op](t)
		bld := be.Builder("splitk")
		xDims, wDims := []int{k, m}, []int{k, n}
		if c.lhsK == 1 {
			xDims = []int{m, k}
		}
		if c.rhsK == 1 {
			wDims = []int{n, k}
		}
		x := op(bld.Parameter("x", shapes.Make(dtypes.Float32, xDims...), nil))
		w := op(bld.Parameter("w", shapes.Make(dtypes.Float32, wDims...), nil))
		y := op(bld.DotGeneral(x, []int{c.lhsK}, nil, w, []int{c.rhsK}, nil))
		exe := must[backends.Executable](t)(bld.Compile([]backends.Op{y}, nil)).(*Executable)
		r := rand.New(rand.NewPCG(11, 12))
		xb, wb := randomBuffer(t, be, r, xDims...), randomBuffer(t, be, r, wDims...)
		xs, ws := append([]float32(nil), typed[float32](xb.data)...), append([]float32(nil), typed[float32](wb.data)...)
		outs := must[[]backends.Buffer](t)(exe.Execute([]backends.Buffer{xb, wb}, nil, 0))
		got := typed[float32](outs[0].(*Buffer).data)
		for i := range m {
			for j := range n {
				var want float64
				for p := range k {
					xv, wv := xs[p*m+i], ws[p*n+j]
					if c.lhsK == 1 {
						xv = xs[i*k+p]
					}
					if c.rhsK == 1 {
						wv = ws[j*k+p]
					}
					want += float64(xv) * float64(wv)
				}
				if d := want - float64(got[i*n+j]); d > 1e-3 || d < -1e-3 {
					t.Fatalf("contracting %d, %d: y[%d][%d] = %g, want %g", c.lhsK, c.rhsK, i, j, got[i*n+j], want)
				}
			}
		}
	}
}

// Identical subexpressions (the same Erf of the same input, four times over, with constants
// made separately but equal) are computed once; different constants are not merged; the
// results equal those of the unmerged graph (optimize=false keeps every node). Erf, because it is not
// fusable (a fusable op read once would join the sum's fused tree and have no step to count).
func TestCommonSubexpressionsMerged(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	x := randomBuffer(t, mustBackend(t, ""), r, 4, 300)
	flat := append([]float32(nil), typed[float32](x.data)...)
	var results [2][]float32
	for i, config := range []string{"", "optimize=false"} {
		be := mustBackend(t, config)
		op := must[backends.Op](t)
		bld := be.Builder("cse")
		s := shapes.Make(dtypes.Float32, 4, 300)
		p := op(bld.Parameter("x", s, nil))
		var sum backends.Op
		for layer := range 4 {
			scale := float32(2)
			if layer == 3 {
				scale = 3 // a different constant: its Mul and Erf stay separate
			}
			c := op(bld.Erf(op(bld.Mul(p, op(bld.Constant([]float32{scale}))))))
			if sum == nil {
				sum = c
			} else {
				sum = op(bld.Add(sum, c))
			}
		}
		exe := must[backends.Executable](t)(bld.Compile([]backends.Op{sum}, nil)).(*Executable)
		erf := 0
		for _, o := range exe.stepOps {
			if o == backends.OpTypeErf {
				erf++
			}
		}
		if want := map[string]int{"": 2, "optimize=false": 4}[config]; erf != want {
			t.Errorf("%q: %d Erf steps, want %d", config, erf, want)
		}
		in := must[backends.Buffer](t)(be.BufferFromFlatData(0, flat, s))
		outs := must[[]backends.Buffer](t)(exe.Execute([]backends.Buffer{in}, nil, 0))
		results[i] = append([]float32(nil), typed[float32](outs[0].(*Buffer).data)...)
	}
	for i := range results[0] {
		if results[0][i] != results[1][i] {
			t.Fatalf("element %d: merged %g, unmerged %g", i, results[0][i], results[1][i])
		}
	}
}

// A transpose that keeps the elements in memory order (the identity, or moving only axes of
// size 1) is a view: no step, the same values; one that reorders them is a step.
func TestOrderKeepingTransposeIsFree(t *testing.T) {
	be := mustBackend(t, "")
	op := must[backends.Op](t)
	r := rand.New(rand.NewPCG(5, 6))
	for _, c := range []struct {
		dims, perm []int
		free       bool
	}{
		{[]int{2, 3, 4}, []int{0, 1, 2}, true},
		{[]int{2, 1, 4}, []int{1, 0, 2}, true},
		{[]int{2, 1, 4, 1}, []int{3, 0, 2, 1}, true},
		{[]int{2, 3, 4}, []int{0, 2, 1}, false},
		{[]int{2, 1, 3}, []int{2, 1, 0}, false},
	} {
		bld := be.Builder("transpose")
		s := shapes.Make(dtypes.Float32, c.dims...)
		x := op(bld.Parameter("x", s, nil))
		// Add makes a step that reads the transposed values, whatever the transpose is.
		y := op(bld.Transpose(x, c.perm...))
		y = op(bld.Add(y, y))
		exe := must[backends.Executable](t)(bld.Compile([]backends.Op{y}, nil)).(*Executable)
		transposes := 0
		for _, o := range exe.stepOps {
			if o == backends.OpTypeTranspose {
				transposes++
			}
		}
		if (transposes == 0) != c.free {
			t.Errorf("%v by %v: %d transpose steps, want free = %v", c.dims, c.perm, transposes, c.free)
		}
		in := randomBuffer(t, be, r, c.dims...)
		xs := append([]float32(nil), typed[float32](in.data)...)
		outs := must[[]backends.Buffer](t)(exe.Execute([]backends.Buffer{in}, nil, 0))
		got := typed[float32](outs[0].(*Buffer).data)
		// The reference: output index → input index by the permutation's definition.
		out := make([]int, len(c.perm))
		for i, p := range c.perm {
			out[i] = c.dims[p]
		}
		idx := make([]int, len(out))
		for k := range got {
			src := 0
			for a := range c.dims {
				// out axis i is input axis perm[i]
				var v int
				for i, p := range c.perm {
					if p == a {
						v = idx[i]
					}
				}
				src = src*c.dims[a] + v
			}
			if want := 2 * xs[src]; got[k] != want {
				t.Fatalf("%v by %v: element %d = %g, want %g", c.dims, c.perm, k, got[k], want)
			}
			for i := len(idx) - 1; i >= 0; i-- {
				if idx[i]++; idx[i] < out[i] {
					break
				}
				idx[i] = 0
			}
		}
	}
}

// optimize turns the rewriting passes on (the default) or off; the option's former name, fuse, is
// an unknown option like any other.
func TestOptimizeOption(t *testing.T) {
	for config, want := range map[string]bool{"": true, "optimize=false": false, "optimize=true": true} {
		be, err := New(config)
		if err != nil {
			t.Fatalf("New(%q): %v", config, err)
		}
		if be.optimize != want {
			t.Errorf("New(%q): optimize = %v, want %v", config, be.optimize, want)
		}
		be.Finalize()
	}
	if _, err := New("fuse=false"); err == nil {
		t.Error("New(\"fuse=false\"): the option's former name is accepted")
	}
}
