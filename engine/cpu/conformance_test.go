package cpu_test

// Conformance: every op family the backend implements, run through GoMLX's graph API on random
// inputs of several shapes and dtypes, on this backend and on GoMLX's pure-Go backend
// (simplego), the independent reference. Tolerances: integer, bool, comparison and
// data-movement results must be equal; float32 elementwise results within 2e-6 relative (plus
// 1e-6 absolute: our exp is a polynomial, simplego's goes through float64); products and
// reductions within 1e-5 relative to the largest magnitude (they sum in another order). NaN
// must meet NaN.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/posformer/posformer/engine/cpu"
	"github.com/posformer/posformer/engine/cpu/kernels"
)

type tolerance int

const (
	exact tolerance = iota
	elementwise
	summed
)

type opCase struct {
	name   string
	tol    tolerance
	inputs [][]int // shapes of the float32 inputs
	fn     func(in []*Node) *Node
}

// simplegoRef is what simplego runs for the cases whose op it lacks: the same function built
// from other ops. Reverse along axis 1 of a [4, 5] matrix is a product with the exchange matrix.
var simplegoRef = map[string]func(in []*Node) *Node{
	// simplego has no shifts: x << 3 is x·8, x >> 2 (arithmetic) is floor(x/4).
	"ShiftLeft": func(in []*Node) *Node {
		return MulScalar(ConvertDType(MulScalar(in[0], 100), dtypes.Int32), 8)
	},
	"ShiftRightArithmetic": func(in []*Node) *Node {
		x := ConvertDType(ConvertDType(MulScalar(in[0], 100), dtypes.Int32), dtypes.Float64)
		return ConvertDType(Floor(DivScalar(x, 4)), dtypes.Int32)
	},
	"Reverse": func(in []*Node) *Node {
		j := make([][]float32, 5)
		for i := range j {
			j[i] = make([]float32, 5)
			j[i][4-i] = 1
		}
		return Einsum("ij,jk->ik", in[0], Const(in[0].Graph(), j))
	},
}

func backendsUnderTest(t *testing.T) (backends.Backend, backends.Backend) {
	t.Helper()
	own, err := cpu.New("")
	if err != nil {
		t.Fatal(err)
	}
	ref, err := simplego.New("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { own.Finalize(); ref.Finalize() })
	return own, ref
}

func randomInput(r *rand.Rand, dims []int) *tensors.Tensor {
	n := 1
	for _, d := range dims {
		n *= d
	}
	flat := make([]float32, n)
	for i := range flat {
		flat[i] = r.Float32()*6 - 3
	}
	return tensors.FromFlatDataAndDimensions(flat, dims...)
}

func flatFloat64(t *tensors.Tensor) []float64 {
	var out []float64
	t.MustConstFlatData(func(flat any) {
		switch f := flat.(type) {
		case []float32:
			for _, v := range f {
				out = append(out, float64(v))
			}
		case []float64:
			out = append(out, f...)
		case []int32:
			for _, v := range f {
				out = append(out, float64(v))
			}
		case []int64:
			for _, v := range f {
				out = append(out, float64(v))
			}
		case []uint32:
			for _, v := range f {
				out = append(out, float64(v))
			}
		case []uint8:
			for _, v := range f {
				out = append(out, float64(v))
			}
		case []bool:
			for _, v := range f {
				out = append(out, map[bool]float64{false: 0, true: 1}[v])
			}
		default:
			panic(fmt.Sprintf("flat type %T", flat))
		}
	})
	return out
}

func run(t *testing.T, b backends.Backend, c opCase, in []*tensors.Tensor) *tensors.Tensor {
	t.Helper()
	fn := c.fn
	if ref := simplegoRef[c.name]; ref != nil && b.Name() != cpu.BackendName {
		fn = ref
	}
	exec, err := NewExec(b, func(nodes []*Node) *Node { return fn(nodes) })
	if err != nil {
		t.Fatalf("%s: %v", c.name, err)
	}
	args := make([]any, len(in))
	for i, x := range in {
		clone, err := x.LocalClone() // a tensor cannot move between backends
		if err != nil {
			t.Fatal(err)
		}
		args[i] = clone
	}
	out, err := exec.Exec1(args...)
	if err != nil {
		t.Fatalf("%s on %s: %v", c.name, b.Name(), err)
	}
	return out
}

func compare(t *testing.T, c opCase, got, want *tensors.Tensor) {
	t.Helper()
	if !got.Shape().Equal(want.Shape()) {
		t.Fatalf("%s: shape %s, want %s", c.name, got.Shape(), want.Shape())
	}
	g, w := flatFloat64(got), flatFloat64(want)
	scale := 0.0
	for _, v := range w {
		if !math.IsInf(v, 0) && !math.IsNaN(v) {
			scale = max(scale, math.Abs(v))
		}
	}
	for i := range w {
		if math.IsNaN(w[i]) || math.IsNaN(g[i]) {
			if math.IsNaN(w[i]) != math.IsNaN(g[i]) {
				t.Fatalf("%s %s: element %d is %g, simplego gives %g", c.name, want.Shape(), i, g[i], w[i])
			}
			continue
		}
		var bound float64
		switch c.tol {
		case elementwise:
			bound = 2e-6*math.Abs(w[i]) + 1e-6
		case summed:
			bound = 1e-5*scale + 1e-6
		}
		if g[i] != w[i] && !(math.Abs(g[i]-w[i]) <= bound) {
			t.Fatalf("%s %s: element %d is %g, simplego gives %g", c.name, want.Shape(), i, g[i], w[i])
		}
	}
}

func conformanceCases() []opCase {
	s3 := [][]int{{3, 70, 130}}
	var cases []opCase
	unary := map[string]func(*Node) *Node{
		"Abs": Abs, "Neg": Neg, "Sign": Sign, "Exp": Exp, "Expm1": Expm1, "Log": func(x *Node) *Node { return Log(Abs(x)) },
		"Log1p": func(x *Node) *Node { return Log1p(Abs(x)) }, "Sqrt": func(x *Node) *Node { return Sqrt(Abs(x)) },
		"Rsqrt": func(x *Node) *Node { return Rsqrt(Abs(x)) }, "Tanh": Tanh, "Logistic": Logistic, "Sin": Sin, "Cos": Cos,
		"Erf": Erf, "Floor": Floor, "Ceil": Ceil, "Round": Round,
	}
	for name, f := range unary {
		for _, dims := range [][]int{{}, {1}, {7}, {5, 33}, {3, 70, 130}} {
			cases = append(cases, opCase{name, elementwise, [][]int{dims}, func(in []*Node) *Node { return f(in[0]) }})
		}
	}
	binary := map[string]func(a, b *Node) *Node{
		"Add": Add, "Sub": Sub, "Mul": Mul, "Div": Div, "Max": Max, "Min": Min,
		"Pow": func(a, b *Node) *Node { return Pow(Abs(a), b) },
		"Rem": func(a, b *Node) *Node { return Mod(a, b) },
	}
	for name, f := range binary {
		for _, dims := range [][][]int{{{7}, {7}}, {{5, 33}, {5, 33}}, {{5, 33}, {}}, {{}, {5, 33}}, {{4, 1, 6}, {4, 5, 6}}, {{3, 70, 130}, {3, 70, 130}}, {{3, 70, 130}, {1, 70, 1}}} {
			cases = append(cases, opCase{name, elementwise, dims, func(in []*Node) *Node { return f(in[0], in[1]) }})
		}
	}
	// Fused chains (silu(a)·b + c, Adam-like updates) must agree with the reference too.
	cases = append(cases,
		opCase{"SiLU·b+c", elementwise, [][]int{{3, 70, 130}, {3, 70, 130}, {3, 70, 130}}, func(in []*Node) *Node {
			return Add(Mul(Mul(in[0], Logistic(in[0])), in[1]), in[2])
		}},
		opCase{"m/(sqrt(v)+eps)", elementwise, [][]int{{1000}, {1000}}, func(in []*Node) *Node {
			return Div(MulScalar(in[0], 0.9), AddScalar(Sqrt(Abs(in[1])), 1e-8))
		}})
	cmp := map[string]func(a, b *Node) *Node{
		"Equal": Equal, "NotEqual": NotEqual, "LessThan": LessThan, "LessOrEqual": LessOrEqual,
		"GreaterThan": GreaterThan, "GreaterOrEqual": GreaterOrEqual,
	}
	for name, f := range cmp {
		cases = append(cases, opCase{name, exact, [][]int{{5, 33}, {5, 33}}, func(in []*Node) *Node {
			return f(Round(in[0]), Round(in[1]))
		}})
	}
	cases = append(cases,
		opCase{"Where", exact, [][]int{{5, 33}, {5, 33}}, func(in []*Node) *Node {
			return Where(GreaterThan(in[0], in[1]), in[0], in[1])
		}},
		opCase{"Clamp", exact, [][]int{{5, 33}}, func(in []*Node) *Node {
			return Clamp(Const(in[0].Graph(), float32(-1)), in[0], Const(in[0].Graph(), float32(1.5)))
		}},
		opCase{"ConvertDType f32->i32->f32", exact, [][]int{{5, 33}}, func(in []*Node) *Node {
			return ConvertDType(ConvertDType(MulScalar(in[0], 1e3), dtypes.Int32), dtypes.Float32)
		}},
		opCase{"ConvertDType f32->f64", exact, [][]int{{5, 33}}, func(in []*Node) *Node { return ConvertDType(in[0], dtypes.Float64) }},
		opCase{"ConvertDType bool->f32", exact, [][]int{{5, 33}}, func(in []*Node) *Node {
			return ConvertDType(GreaterThan(in[0], ScalarZero(in[0].Graph(), dtypes.Float32)), dtypes.Float32)
		}},
		opCase{"IsNaN", exact, [][]int{{5, 33}}, func(in []*Node) *Node { return IsNaN(Log(in[0])) }},
		opCase{"IsFinite", exact, [][]int{{5, 33}}, func(in []*Node) *Node {
			return IsFinite(Div(OnePlus(ScalarZero(in[0].Graph(), dtypes.Float32)), Round(in[0])))
		}},
		opCase{"ShiftLeft", exact, [][]int{{5, 33}}, func(in []*Node) *Node {
			return BitwiseShiftLeft(ConvertDType(MulScalar(in[0], 100), dtypes.Int32), Const(in[0].Graph(), int32(3)))
		}},
		opCase{"ShiftRightArithmetic", exact, [][]int{{5, 33}}, func(in []*Node) *Node {
			return BitwiseShiftRightArithmetic(ConvertDType(MulScalar(in[0], 100), dtypes.Int32), Const(in[0].Graph(), int32(2)))
		}},
		opCase{"Iota", exact, [][]int{{4, 6}}, func(in []*Node) *Node {
			return Add(in[0], ConvertDType(Iota(in[0].Graph(), in[0].Shape(), 1), dtypes.Float32))
		}},
		opCase{"ArgMax", exact, [][]int{{5, 33}}, func(in []*Node) *Node { return ArgMax(in[0], 1, dtypes.Int32) }},
		opCase{"ArgMin", exact, [][]int{{5, 33}}, func(in []*Node) *Node { return ArgMin(in[0], 0, dtypes.Int32) }},
	)
	for _, perm := range [][]int{{0, 2, 1}, {1, 0, 2}, {2, 1, 0}, {1, 2, 0}, {2, 0, 1}} {
		cases = append(cases, opCase{fmt.Sprint("Transpose", perm), exact, [][]int{{3, 5, 7}}, func(in []*Node) *Node {
			return TransposeAllDims(in[0], perm...)
		}})
	}
	cases = append(cases,
		opCase{"Transpose[b,s,h,d]->[b,h,s,d]", exact, [][]int{{2, 9, 4, 16}}, func(in []*Node) *Node { return TransposeAllDims(in[0], 0, 2, 1, 3) }},
		opCase{"BroadcastToDims", exact, [][]int{{1, 5, 1}}, func(in []*Node) *Node { return BroadcastToDims(in[0], 3, 5, 4) }},
		opCase{"Slice", exact, [][]int{{6, 9}}, func(in []*Node) *Node { return Slice(in[0], AxisRange(1, 5), AxisRange(2, 9).Stride(3)) }},
		opCase{"Concatenate", exact, [][]int{{2, 3}, {2, 5}}, func(in []*Node) *Node { return Concatenate([]*Node{in[0], in[1]}, 1) }},
		opCase{"Reverse", exact, [][]int{{4, 5}}, func(in []*Node) *Node { return Reverse(in[0], 1) }},
		opCase{"Gather rows", exact, [][]int{{10, 6}}, func(in []*Node) *Node {
			return Gather(in[0], Const(in[0].Graph(), [][]int32{{3}, {0}, {9}, {3}}))
		}},
		opCase{"Gather out of range", exact, [][]int{{10, 6}}, func(in []*Node) *Node {
			return Gather(in[0], Const(in[0].Graph(), [][]int32{{12}, {-2}}))
		}},
		opCase{"ScatterSum repeated", summed, [][]int{{10, 6}, {4, 6}}, func(in []*Node) *Node {
			return ScatterSum(in[0], Const(in[0].Graph(), [][]int32{{3}, {0}, {9}, {3}}), in[1], false, false)
		}},
		opCase{"ScatterMax", exact, [][]int{{10, 6}, {3, 6}}, func(in []*Node) *Node {
			return ScatterMax(in[0], Const(in[0].Graph(), [][]int32{{1}, {7}, {1}}), in[1], false, false)
		}},
	)
	for _, axes := range [][]int{{0}, {1}, {2}, {0, 1}, {1, 2}, {0, 2}, {0, 1, 2}} {
		cases = append(cases,
			opCase{fmt.Sprint("ReduceSum", axes), summed, s3, func(in []*Node) *Node { return ReduceSum(in[0], axes...) }},
			opCase{fmt.Sprint("ReduceMax", axes), exact, s3, func(in []*Node) *Node { return ReduceMax(in[0], axes...) }},
			opCase{fmt.Sprint("ReduceMin", axes), exact, s3, func(in []*Node) *Node { return ReduceMin(in[0], axes...) }},
		)
	}
	cases = append(cases, opCase{"ReduceMultiply", summed, [][]int{{4, 5}}, func(in []*Node) *Node {
		return ReduceMultiply(AddScalar(MulScalar(in[0], 0.1), 1), 1)
	}})
	for _, e := range []struct {
		eq   string
		a, b []int
	}{
		{"d,od->o", []int{288}, []int{768, 288}}, // decoding: x·Wᵀ
		{"bsd,od->bso", []int{2, 5, 64}, []int{172, 64}},
		{"bsd,od->bso", []int{2, 64, 96}, []int{130, 96}},
		{"mk,kn->mn", []int{257, 129}, []int{129, 300}},
		{"km,kn->mn", []int{33, 20}, []int{33, 70}},
		{"bhqd,bhkd->bhqk", []int{2, 4, 9, 16}, []int{2, 4, 11, 16}}, // attention scores
		{"bhqk,bhkd->bhqd", []int{2, 4, 9, 11}, []int{2, 4, 11, 16}}, // probabilities·values
		{"hbqd,bhkd->bhqk", []int{4, 2, 3, 8}, []int{2, 4, 5, 8}},    // batch axes out of order
	} {
		cases = append(cases, opCase{"Einsum " + e.eq, summed, [][]int{e.a, e.b}, func(in []*Node) *Node { return Einsum(e.eq, in[0], in[1]) }})
	}
	cases = append(cases,
		opCase{"Softmax", summed, [][]int{{3, 70, 130}}, func(in []*Node) *Node { return Softmax(in[0], -1) }},
		opCase{"LogSoftmax", summed, [][]int{{5, 33}}, func(in []*Node) *Node { return LogSoftmax(in[0], -1) }},
	)
	return cases
}

func TestConformance(t *testing.T) {
	own, ref := backendsUnderTest(t)
	r := rand.New(rand.NewPCG(7, 11))
	for _, c := range conformanceCases() {
		t.Run(fmt.Sprintf("%s%v", c.name, c.inputs), func(t *testing.T) {
			in := make([]*tensors.Tensor, len(c.inputs))
			for i, dims := range c.inputs {
				in[i] = randomInput(r, dims)
			}
			compare(t, c, run(t, own, c, in), run(t, ref, c, in))
		})
	}
}

// Gradients of an MLP-like and an attention-like graph agree with the reference.
func TestConformanceGradients(t *testing.T) {
	own, ref := backendsUnderTest(t)
	r := rand.New(rand.NewPCG(3, 5))
	cases := []opCase{
		{"mlp", summed, [][]int{{8, 16}, {32, 16}, {32}}, func(in []*Node) *Node {
			h := Tanh(Add(Einsum("bi,oi->bo", in[0], in[1]), Reshape(in[2], 1, 32)))
			loss := ReduceAllSum(Mul(h, h))
			g := Gradient(loss, in[1], in[2])
			return Concatenate([]*Node{Reshape(g[0], -1), g[1]}, 0)
		}},
		{"attention", summed, [][]int{{2, 6, 8}, {2, 6, 8}, {2, 6, 8}}, func(in []*Node) *Node {
			p := Softmax(Einsum("bqd,bkd->bqk", in[0], in[1]), -1)
			loss := ReduceAllSum(Mul(Einsum("bqk,bkd->bqd", p, in[2]), in[0]))
			g := Gradient(loss, in[1], in[2])
			return Concatenate([]*Node{Reshape(g[0], -1), Reshape(g[1], -1)}, 0)
		}},
	}
	for _, c := range cases {
		in := make([]*tensors.Tensor, len(c.inputs))
		for i, dims := range c.inputs {
			in[i] = randomInput(r, dims)
		}
		compare(t, c, run(t, own, c, in), run(t, ref, c, in))
	}
}

// The portable kernels run the same graphs on amd64 too (forced), so every CPU gets a tested path.
func TestConformanceGenericKernels(t *testing.T) {
	saved := kernels.Path()
	if err := kernels.SetPath(kernels.Generic); err != nil {
		t.Fatal(err)
	}
	defer kernels.SetPath(saved)
	TestConformance(t)
}

// Bitcast (which simplego lacks) against math.Float32bits.
func TestBitcast(t *testing.T) {
	own, _ := backendsUnderTest(t)
	x := []float32{0, -0.0, 1, -2.5, float32(math.Inf(1)), 3.4e38, 1e-45}
	exec, err := NewExec(own, func(n *Node) *Node { return Bitcast(n, dtypes.Uint32) })
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Exec1(tensors.FromValue(x))
	if err != nil {
		t.Fatal(err)
	}
	got := tensors.MustCopyFlatData[uint32](out)
	for i, v := range x {
		if got[i] != math.Float32bits(v) {
			t.Errorf("Bitcast(%g) = %#x, want %#x", v, got[i], math.Float32bits(v))
		}
	}
}
