package cpu_test

// Why this file exists: the cpu backend reimplements every op a GoMLX graph can lower to (its own
// kernels, fusion of elementwise chains, memory planning), so each op, dtype, shape and broadcast
// pattern is a chance to compute something other than what GoMLX means. This test holds the
// backend to GoMLX's semantics op by op: every case of the table below builds a small graph with
// GoMLX's graph API, runs it on seeded random inputs on the backend under test and on the
// reference, GoMLX's pure-Go backend simplego, and compares the results element by element.
// Where simplego lacks an op (ShiftLeft/ShiftRight*, Bitcast, Pad, Reverse, DynamicSlice,
// DynamicUpdateSlice, float16) or departs from GoMLX's documented semantics (Round: GoMLX
// documents round-half-to-even, simplego rounds halves away from zero; Sign: GoMLX documents NaN
// for NaN, simplego gives 0), the case carries a reference of a few lines of Go ("host
// reference") instead; integer products are checked against the same graph in float64, because
// simplego's integer DotGeneral crashes on some shapes. A final check fails if the backend claims
// an op (Capabilities) that no case exercised, so a newly implemented op needs a case.
//
// The backend under test is POSFORMER_TEST_BACKEND, a backends.NewWithConfig string such as
// "cpu:threads=1"; "go" runs simplego against itself (to check the harness). Unset, the table
// runs on "cpu", "cpu:optimize=false" and "cpu:threads=3", the other tests on "cpu".
//
// Tolerances (got: the backend under test; want: the reference):
//
//   - exact: equal values, NaN must meet NaN, +0 equals -0. For every integer and bool result;
//     comparison, logical, bitwise and shift ops; data movement (Reshape, Transpose, broadcasts,
//     Slice, Concatenate, Pad, Reverse, Gather, DynamicSlice/UpdateSlice, Where, Iota, Identity);
//     ConvertDType and Bitcast; ReduceMax/Min, ArgMax/Min, ScatterMax/Min; and the float ops that
//     IEEE 754 rounds correctly, which therefore have one right answer: Add, Sub, Mul, Div, Rem,
//     Sqrt, Neg, Abs, Sign, Max, Min, Floor, Ceil, Round, Clamp.
//   - elementwise, the other float ops (Exp, Expm1, Log, Log1p, Rsqrt, Tanh, Logistic, Sin, Cos,
//     Erf, Pow): |got-want| <= 2e-6·|want| + 1e-6 in float32 (about 17 ulps, and an absolute floor
//     of about 8 ulps of 1.0, so that results near zero, such as sin near π or log near 1, are
//     judged by the error of the computation rather than by their last bits); 1e-14·|want| + 1e-15
//     in float64. An infinite want must be met exactly.
//   - summed (reductions, dot products, ScatterSum, Softmax, fused chains):
//     |got-want| <= 1e-5·B in float32, 1e-12·B in float64, where B is, per output element, the sum
//     of the magnitudes of the terms: the same graph run by simplego in float64 on the absolute
//     values of the inputs (for a sum or a product of sums that is exactly Σ|terms|), or a bound
//     given by the case (ReduceProduct: |product|; Softmax: 1.5·p; LogSoftmax: 1 + 0.2·|out|;
//     fused chains: the Σ|terms| of their last sum). So the order of summation may differ,
//     nothing else.
//   - gradients (an MLP-like and an attention-like graph): |got-want| <= 1e-5·max|want| over the
//     gradient tensor + 2e-6·|want|: they compose sums, products and transcendentals, whose Σ|terms|
//     cannot be taken from the graph.
//   - RNG: both backends draw from math/rand/v2's PCG seeded with the state's first two words
//     (read in simplego's execRNGBitGenerator and in the cpu backend's lowerRNG) and write the
//     bits little-endian, so the new state's first two words, RandomUniform and RandomIntN must be
//     equal, RandomNormal (through Log, Sqrt, Cos) within 1e-5·(1+|want|); and the statistics
//     (mean and variance, histogram of RandomIntN) must be within 5 standard errors of the
//     distribution's.
//
// Not covered on purpose: float-to-integer conversion of NaN or out-of-range values (Go leaves it
// implementation-defined), integer division by zero and negative integer exponents (simplego
// panics or differs from XLA), out-of-range scatter indices (simplego does not check them).

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/x448/float16"

	"github.com/posformer/posformer/engine/cpu"
	"github.com/posformer/posformer/engine/cpu/kernels"
)

// confEnvBackend selects the backend under test.
const confEnvBackend = "POSFORMER_TEST_BACKEND"

const (
	f32  = dtypes.Float32
	f64  = dtypes.Float64
	bf16 = dtypes.BFloat16
	f16  = dtypes.Float16
	i8   = dtypes.Int8
	i32  = dtypes.Int32
	i64  = dtypes.Int64
	u8   = dtypes.Uint8
	u32  = dtypes.Uint32
	u64  = dtypes.Uint64
	bl   = dtypes.Bool
)

// confConfigs are the configurations of the backend under test TestOpConformance runs:
// POSFORMER_TEST_BACKEND if set; else the cpu backend as configured by default, without fusion of
// elementwise chains (the op-by-op kernels), and on 3 threads (an odd split of parallel loops).
func confConfigs() []string {
	if config := os.Getenv(confEnvBackend); config != "" {
		return []string{config}
	}
	return []string{cpu.BackendName, cpu.BackendName + ":optimize=false", cpu.BackendName + ":threads=3"}
}

// confBackends returns the backend under test (configured by config, or the first of
// confConfigs if "") and the reference (simplego).
func confBackends(t *testing.T, config string) (under, ref backends.Backend) {
	t.Helper()
	if config == "" {
		config = confConfigs()[0]
	}
	under, err := backends.NewWithConfig(config)
	if err != nil {
		t.Fatalf("%s=%q: %v", confEnvBackend, config, err)
	}
	ref, err = simplego.New("ops_sequential") // its parallel op scheduling races (GoMLX v0.26)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { under.Finalize(); ref.Finalize() })
	return under, ref
}

// ---------------------------------------------------------------------------------------------
// Host values: a tensor in a form every comparison and host reference understands.

// confVals holds floats (any width) as float64 and integers and bools as int64 (unsigned values
// by their bits, bool as 0/1).
type confVals struct {
	dt   dtypes.DType
	dims []int
	f    []float64
	i    []int64
}

func confSize(dims []int) int {
	n := 1
	for _, d := range dims {
		n *= d
	}
	return n
}

func newConfVals(dt dtypes.DType, dims []int) confVals {
	v := confVals{dt: dt, dims: slices.Clone(dims)}
	if dt.IsFloat() {
		v.f = make([]float64, confSize(dims))
	} else {
		v.i = make([]int64, confSize(dims))
	}
	return v
}

func (v confVals) size() int { return max(len(v.f), len(v.i)) }

func (v confVals) clone() confVals {
	return confVals{dt: v.dt, dims: slices.Clone(v.dims), f: slices.Clone(v.f), i: slices.Clone(v.i)}
}

// copyElem sets element k of v to element j of src (same kind of dtype).
func (v confVals) copyElem(k int, src confVals, j int) {
	if v.f != nil {
		v.f[k] = src.f[j]
	} else {
		v.i[k] = src.i[j]
	}
}

func (v confVals) shapeString() string {
	s := strings.ReplaceAll(fmt.Sprint(v.dims), " ", ",")
	return strings.ToLower(v.dt.String()) + s
}

// format prints element k as the dtype would.
func (v confVals) format(k int) string {
	switch {
	case v.dt == f32:
		return strconv.FormatFloat(v.f[k], 'g', -1, 32)
	case v.f != nil:
		return strconv.FormatFloat(v.f[k], 'g', -1, 64)
	case v.dt == bl:
		return strconv.FormatBool(v.i[k] != 0)
	case v.dt.IsUnsigned():
		return strconv.FormatUint(uint64(v.i[k]), 10)
	}
	return strconv.FormatInt(v.i[k], 10)
}

// index is the multi-index of flat element k.
func (v confVals) index(k int) []int {
	idx := make([]int, len(v.dims))
	for a := len(v.dims) - 1; a >= 0; a-- {
		idx[a] = k % v.dims[a]
		k /= v.dims[a]
	}
	return idx
}

func confFlat(dims, idx []int) int {
	k := 0
	for a, d := range dims {
		k = k*d + idx[a]
	}
	return k
}

// confForEach calls fn with each multi-index of dims in row-major order and its flat position.
func confForEach(dims []int, fn func(idx []int, k int)) {
	n := confSize(dims)
	idx := make([]int, len(dims))
	for k := range n {
		fn(idx, k)
		for a := len(dims) - 1; a >= 0; a-- {
			idx[a]++
			if idx[a] < dims[a] {
				break
			}
			idx[a] = 0
		}
	}
}

func confFill[T any](n int, fn func(k int) T) []T {
	out := make([]T, n)
	for k := range out {
		out[k] = fn(k)
	}
	return out
}

// tensor makes a new host tensor (a tensor cannot move between backends, so each run gets its own).
func (v confVals) tensor() *tensors.Tensor {
	n := v.size()
	var flat any
	switch v.dt {
	case f32:
		flat = confFill(n, func(k int) float32 { return float32(v.f[k]) })
	case f64:
		flat = slices.Clone(v.f)
	case i8:
		flat = confFill(n, func(k int) int8 { return int8(v.i[k]) })
	case dtypes.Int16:
		flat = confFill(n, func(k int) int16 { return int16(v.i[k]) })
	case i32:
		flat = confFill(n, func(k int) int32 { return int32(v.i[k]) })
	case i64:
		flat = slices.Clone(v.i)
	case u8:
		flat = confFill(n, func(k int) uint8 { return uint8(v.i[k]) })
	case dtypes.Uint16:
		flat = confFill(n, func(k int) uint16 { return uint16(v.i[k]) })
	case u32:
		flat = confFill(n, func(k int) uint32 { return uint32(v.i[k]) })
	case u64:
		flat = confFill(n, func(k int) uint64 { return uint64(v.i[k]) })
	case bl:
		flat = confFill(n, func(k int) bool { return v.i[k] != 0 })
	default:
		panic(fmt.Sprintf("conformance: no host tensor for %s", v.dt))
	}
	t := tensors.FromShape(shapes.Make(v.dt, v.dims...))
	t.MustMutableFlatData(func(dst any) { reflect.Copy(reflect.ValueOf(dst), reflect.ValueOf(flat)) })
	return t
}

// confFromTensor reads a result.
func confFromTensor(t *tensors.Tensor) confVals {
	v := newConfVals(t.DType(), t.Shape().Dimensions)
	t.MustConstFlatData(func(flat any) {
		switch s := flat.(type) {
		case []float32:
			for k, x := range s {
				v.f[k] = float64(x)
			}
		case []float64:
			copy(v.f, s)
		case []int8:
			for k, x := range s {
				v.i[k] = int64(x)
			}
		case []int16:
			for k, x := range s {
				v.i[k] = int64(x)
			}
		case []int32:
			for k, x := range s {
				v.i[k] = int64(x)
			}
		case []int64:
			copy(v.i, s)
		case []uint8:
			for k, x := range s {
				v.i[k] = int64(x)
			}
		case []uint16:
			for k, x := range s {
				v.i[k] = int64(x)
			}
		case []uint32:
			for k, x := range s {
				v.i[k] = int64(x)
			}
		case []uint64:
			for k, x := range s {
				v.i[k] = int64(x)
			}
		case []bool:
			for k, x := range s {
				if x {
					v.i[k] = 1
				}
			}
		default: // bfloat16 and float16 slices: every element has a Float32 method.
			rv := reflect.ValueOf(flat)
			for k := range rv.Len() {
				v.f[k] = float64(rv.Index(k).Interface().(interface{ Float32() float32 }).Float32())
			}
		}
	})
	return v
}

// ---------------------------------------------------------------------------------------------
// Random inputs.

type confGen int

const (
	genDefault     confGen = iota // floats uniform in [-3, 3); signed ints in [-1000, 1000]; unsigned over their range; fair bools
	genSpecial                    // the default plus, a quarter of the time, NaN, ±Inf, ±0, halves, subnormals, huge values; int extremes
	genPositive                   // floats in [0.05, 5); ints in [1, 100]
	genNonZero                    // the default without zeros (integer divisors)
	genSmall                      // integers in [-3, 3] ([0, 3] unsigned), as floats too (ties, exact products)
	genNearOne                    // floats in [0.8, 1.25) (long products)
	genShift                      // shift amounts in [-2, bits+2]
	genIndex                      // integers in [lo, hi)
	genMostlyTrue                 // bools, true 99% of the time
	genMostlyFalse                // bools, true 1% of the time
	genWide                       // floats of magnitude 1e-3 to 2e9, either sign (in int32 range); ints over their full range
	genByte                       // floats in [0, 256) (to uint8)
	genMasked                     // the default with -Inf an eighth of the time (masked logits)
	genExponent                   // integer exponents in [0, 6]
)

var confSpecialFloats = []float64{
	math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), 0.5, -0.5, 1.5, 2.5, -2.5, 1, -1,
	1e-40, -1e-40, 1e-30, 1e-7, 3e38, -3e38, 88.5, -88.5, 100, -104, 20, -20, 1e6,
}

// confArg describes one input of a case.
type confArg struct {
	dt     dtypes.DType
	dims   []int
	gen    confGen
	lo, hi int64 // genIndex
}

func arg(dt dtypes.DType, dims ...int) confArg { return confArg{dt: dt, dims: dims} }

func (a confArg) g(gen confGen) confArg { a.gen = gen; return a }

func (a confArg) idx(lo, hi int64) confArg { a.gen, a.lo, a.hi = genIndex, lo, hi; return a }

func (a confArg) String() string { return confVals{dt: a.dt, dims: a.dims}.shapeString() }

func (a confArg) generate(r *rand.Rand) confVals {
	v := newConfVals(a.dt, a.dims)
	bits := a.dt.Size() * 8
	for k := range v.size() {
		if a.dt.IsFloat() {
			x := r.Float64()*6 - 3
			switch a.gen {
			case genSpecial:
				if r.IntN(4) == 0 {
					x = confSpecialFloats[r.IntN(len(confSpecialFloats))]
				}
			case genPositive:
				x = 0.05 + r.Float64()*4.95
			case genSmall:
				x = float64(r.IntN(7) - 3)
			case genNearOne:
				x = 0.8 + r.Float64()*0.45
			case genWide:
				x = math.Pow(10, -3+r.Float64()*12.3)
				if r.IntN(2) == 0 {
					x = -x
				}
			case genByte:
				x = r.Float64() * 256
			case genMasked:
				if r.IntN(8) == 0 {
					x = math.Inf(-1)
				}
			}
			if a.dt != f64 {
				x = float64(float32(x))
			}
			v.f[k] = x
			continue
		}
		var x int64
		lo, hi := int64(-1000), int64(1000)
		if a.dt.IsUnsigned() {
			lo, hi = 0, int64(1)<<min(bits, 62)-1
		}
		switch a.gen {
		case genPositive:
			lo, hi = 1, 100
		case genSmall:
			lo, hi = max(lo, -3), 3
		case genShift:
			lo, hi = max(lo, -2), int64(bits+2)
		case genIndex:
			lo, hi = a.lo, a.hi-1
		case genExponent:
			lo, hi = 0, 6
		}
		x = lo + r.Int64N(hi-lo+1)
		if a.gen == genWide {
			x = int64(r.Uint64()) // the full range (confWrap narrows it to the dtype)
		}
		switch a.gen {
		case genSpecial:
			if r.IntN(4) == 0 {
				ext := []int64{0, 1, -1, -(int64(1) << (bits - 1)), int64(uint64(1)<<(bits-1) - 1)}
				if a.dt.IsUnsigned() {
					ext = []int64{0, 1, int64(uint64(1)<<(bits-1) - 1), int64(uint64(1) << (bits - 1)), -1}
				}
				x = ext[r.IntN(len(ext))]
			}
		case genNonZero:
			if x == 0 {
				x = 7
			}
		}
		if a.dt == bl {
			p := 0.5
			switch a.gen {
			case genMostlyTrue:
				p = 0.99
			case genMostlyFalse:
				p = 0.01
			}
			x = 0
			if r.Float64() < p {
				x = 1
			}
		}
		v.i[k] = confWrap(x, a.dt)
	}
	return v
}

// confWrap truncates x to the width of dt (sign-extending signed dtypes), as the dtype's
// arithmetic wraps.
func confWrap(x int64, dt dtypes.DType) int64 {
	bits := dt.Size() * 8
	if dt == bl || bits >= 64 {
		return x
	}
	if dt.IsUnsigned() {
		return int64(uint64(x) & (uint64(1)<<bits - 1))
	}
	shift := 64 - bits
	return x << shift >> shift
}

// ---------------------------------------------------------------------------------------------
// Cases.

type confTol int

const (
	tolExact confTol = iota
	tolElem
	tolSum
)

// confCase is one row of the table: an op (the group of t.Run and the name in failure messages),
// its inputs, the graph, and how to judge the result.
type confCase struct {
	op    string
	label string // what distinguishes the case beyond its input shapes
	tol   confTol
	args  []confArg
	fn    func(in []*Node) *Node
	// host, if set, is the reference instead of simplego.
	host func(in []confVals) confVals
	// refFn, if set, is the graph simplego runs instead of fn (the same function from other ops).
	refFn func(in []*Node) *Node
	// bound, for tolSum, builds Σ|terms| per output element from the float inputs converted to
	// float64 (others as they are); nil means fn on the absolute values of those inputs.
	bound func(in []*Node) *Node
	// simplegoCrashes marks cases simplego cannot even run as the backend under test (it panics
	// in a worker goroutine, which ends the process): skipped when simplego is tested against
	// itself.
	simplegoCrashes bool
}

func (c confCase) variant() string {
	parts := make([]string, len(c.args))
	for k, a := range c.args {
		parts[k] = a.String()
	}
	s := strings.Join(parts, ",")
	if c.label != "" {
		s = c.label + " " + s
	}
	return s
}

// reference is the graph simplego runs for the case.
func (c confCase) reference() func(in []*Node) *Node {
	if c.refFn != nil {
		return c.refFn
	}
	return c.fn
}

func (c confCase) withHost(h func(in []confVals) confVals) confCase { c.host = h; return c }
func (c confCase) withBound(b func(in []*Node) *Node) confCase      { c.bound = b; return c }
func (c confCase) labeled(l string) confCase                        { c.label = l; return c }

func cs(op string, tol confTol, fn func(in []*Node) *Node, args ...confArg) confCase {
	return confCase{op: op, tol: tol, fn: fn, args: args}
}

// Common shapes: scalar, size 1, odd, rank 2, one big enough to cross parallel thresholds, rank 4.
var (
	confShapes = [][]int{{}, {1}, {7}, {5, 33}, {3, 70, 130}, {2, 3, 4, 5}}
	// operand shape pairs for binary ops: equal shapes, scalars on either side, implicit
	// broadcasting of size-1 axes on one or both sides.
	confPairs = [][2][]int{
		{{}, {}}, {{1}, {1}}, {{7}, {7}}, {{5, 33}, {5, 33}}, {{5, 33}, {}}, {{}, {5, 33}},
		{{4, 1, 6}, {4, 5, 6}}, {{4, 1, 6}, {1, 5, 1}}, {{3, 70, 130}, {3, 70, 130}},
		{{3, 70, 130}, {1, 70, 1}}, {{2, 3, 4, 5}, {2, 1, 4, 1}},
	}
	confSmallPairs = [][2][]int{{{}, {}}, {{5, 33}, {5, 33}}, {{5, 33}, {}}, {{4, 1, 6}, {1, 5, 1}}, {{3, 70, 130}, {1, 70, 1}}, {{}, {5, 33}}, {{1, 5, 1}, {4, 1, 6}}}
)

func un(f func(*Node) *Node) func(in []*Node) *Node {
	return func(in []*Node) *Node { return f(in[0]) }
}
func bin(f func(a, b *Node) *Node) func(in []*Node) *Node {
	return func(in []*Node) *Node { return f(in[0], in[1]) }
}

// confHostMap is a host reference applying f to each element of a float input; the result has
// dtype dt.
func confHostMap(dt dtypes.DType, f func(float64) float64) func(in []confVals) confVals {
	return func(in []confVals) confVals {
		out := newConfVals(dt, in[0].dims)
		for k, x := range in[0].f {
			out.f[k] = f(x)
			if dt == f32 {
				out.f[k] = float64(float32(out.f[k]))
			}
		}
		return out
	}
}

func confCases() []confCase {
	var cases []confCase
	add := func(c ...confCase) { cases = append(cases, c...) }

	// Unary float ops.
	type unaryOp struct {
		name string
		tol  confTol
		f    func(*Node) *Node
	}
	unaryFloat := []unaryOp{
		{"Abs", tolExact, Abs}, {"Neg", tolExact, Neg}, {"Sqrt", tolExact, Sqrt},
		{"Floor", tolExact, Floor}, {"Ceil", tolExact, Ceil},
		{"Exp", tolElem, Exp}, {"Expm1", tolElem, Expm1}, {"Log", tolElem, Log}, {"Log1p", tolElem, Log1p},
		{"Rsqrt", tolElem, Rsqrt}, {"Tanh", tolElem, Tanh}, {"Logistic", tolElem, Logistic}, {"Sin", tolElem, Sin},
		{"Cos", tolElem, Cos}, {"Erf", tolElem, Erf},
		{"IsFinite", tolExact, IsFinite}, {"IsNaN", tolExact, IsNaN},
	}
	for _, op := range unaryFloat {
		for _, dims := range confShapes {
			add(cs(op.name, op.tol, un(op.f), arg(f32, dims...).g(genSpecial)))
		}
		for _, dims := range [][]int{{5, 33}, {3, 70, 130}} {
			add(cs(op.name, op.tol, un(op.f), arg(f64, dims...).g(genSpecial)))
		}
	}
	// Round: GoMLX documents round-half-to-even; simplego rounds halves away from zero.
	// Sign: GoMLX documents NaN for NaN; simplego gives 0.
	sign := func(x float64) float64 {
		if x > 0 {
			return 1
		} else if x < 0 {
			return -1
		}
		return x // ±0, NaN
	}
	for _, dims := range confShapes {
		add(cs("Round", tolExact, un(Round), arg(f32, dims...).g(genSpecial)).withHost(confHostMap(f32, math.RoundToEven)),
			cs("Sign", tolExact, un(Sign), arg(f32, dims...).g(genSpecial)).withHost(confHostMap(f32, sign)))
	}
	add(cs("Round", tolExact, un(Round), arg(f64, 5, 33).g(genSpecial)).withHost(confHostMap(f64, math.RoundToEven)),
		cs("Sign", tolExact, un(Sign), arg(f64, 5, 33).g(genSpecial)).withHost(confHostMap(f64, sign)))
	// Unary integer ops.
	for _, dt := range []dtypes.DType{i32, i64, i8} {
		for _, dims := range [][]int{{}, {5, 33}, {3, 70, 130}} {
			add(cs("Abs", tolExact, un(Abs), arg(dt, dims...).g(genSpecial)),
				cs("Neg", tolExact, un(Neg), arg(dt, dims...).g(genSpecial)),
				cs("Sign", tolExact, un(Sign), arg(dt, dims...).g(genSpecial)))
		}
	}
	for _, dt := range []dtypes.DType{i32, i64, u8, u32} {
		for _, dims := range [][]int{{}, {5, 33}, {3, 70, 130}} {
			add(cs("BitwiseNot", tolExact, un(BitwiseNot), arg(dt, dims...).g(genSpecial)))
		}
	}
	add(cs("Abs", tolExact, un(Abs), arg(u8, 5, 33)), cs("Sign", tolExact, un(Sign), arg(u8, 5, 33).g(genSmall)))
	for _, dims := range [][]int{{}, {7}, {3, 70, 130}} {
		add(cs("LogicalNot", tolExact, un(LogicalNot), arg(bl, dims...)))
	}

	// Binary arithmetic.
	type binaryOp struct {
		name string
		tol  confTol
		f    func(a, b *Node) *Node
	}
	arith := []binaryOp{
		{"Add", tolExact, Add}, {"Sub", tolExact, Sub}, {"Mul", tolExact, Mul}, {"Div", tolExact, Div},
		{"Max", tolExact, Max}, {"Min", tolExact, Min}, {"Rem", tolExact, Rem}, {"Pow", tolElem, Pow},
	}
	for _, op := range arith {
		for _, p := range confPairs {
			add(cs(op.name, op.tol, bin(op.f), arg(f32, p[0]...).g(genSpecial), arg(f32, p[1]...).g(genSpecial)))
		}
		for _, p := range [][2][]int{{{5, 33}, {5, 33}}, {{3, 70, 130}, {1, 70, 1}}} {
			add(cs(op.name, op.tol, bin(op.f), arg(f64, p[0]...).g(genSpecial), arg(f64, p[1]...).g(genSpecial)))
		}
		for _, dt := range []dtypes.DType{i32, i64, u8} {
			for _, p := range confSmallPairs {
				lhs, rhs := arg(dt, p[0]...).g(genSpecial), arg(dt, p[1]...).g(genSpecial)
				switch op.name {
				case "Div", "Rem":
					rhs = rhs.g(genNonZero)
				case "Pow":
					lhs, rhs = lhs.g(genSmall), rhs.g(genExponent)
				}
				add(cs(op.name, tolExact, bin(op.f), lhs, rhs))
			}
		}
	}
	// An operand broadcast along leading axes, which the op reads in place (aliases.go): alone,
	// and as a leaf of a fused tree.
	add(cs("Add", tolExact, func(in []*Node) *Node { return Add(in[0], BroadcastToDims(in[1], 4, 3, 70, 13)) },
		arg(f32, 4, 3, 70, 13).g(genSpecial), arg(f32, 1, 1, 70, 13).g(genSpecial)).labeled("leading broadcast"),
		cs("Sub", tolElem, func(in []*Node) *Node { return Exp(Sub(BroadcastToDims(in[1], 4, 3, 70, 13), Mul(in[0], in[0]))) },
			arg(f32, 4, 3, 70, 13), arg(f32, 1, 1, 70, 13)).labeled("leading broadcast in a fused tree"))
	// Comparisons: on specials (NaN compares false, ±0 equal), on integers with ties.
	cmps := []binaryOp{
		{"Equal", tolExact, Equal}, {"NotEqual", tolExact, NotEqual}, {"LessThan", tolExact, LessThan},
		{"LessOrEqual", tolExact, LessOrEqual}, {"GreaterThan", tolExact, GreaterThan},
		{"GreaterOrEqual", tolExact, GreaterOrEqual},
	}
	for _, op := range cmps {
		for _, p := range confSmallPairs {
			add(cs(op.name, tolExact, bin(op.f), arg(f32, p[0]...).g(genSpecial), arg(f32, p[1]...).g(genSpecial)))
		}
		add(cs(op.name, tolExact, bin(op.f), arg(f64, 5, 33).g(genSmall), arg(f64, 5, 33).g(genSmall)))
		for _, dt := range []dtypes.DType{i32, i64, u8} {
			add(cs(op.name, tolExact, bin(op.f), arg(dt, 5, 33).g(genSmall), arg(dt, 5, 33).g(genSmall)),
				cs(op.name, tolExact, bin(op.f), arg(dt, 3, 70, 130).g(genSpecial), arg(dt, 1, 70, 1).g(genSpecial)))
		}
	}
	// Logical and bitwise.
	for _, op := range []binaryOp{{"LogicalAnd", tolExact, LogicalAnd}, {"LogicalOr", tolExact, LogicalOr}, {"LogicalXor", tolExact, LogicalXor}} {
		for _, p := range confSmallPairs {
			add(cs(op.name, tolExact, bin(op.f), arg(bl, p[0]...), arg(bl, p[1]...)))
		}
	}
	for _, op := range []binaryOp{{"BitwiseAnd", tolExact, BitwiseAnd}, {"BitwiseOr", tolExact, BitwiseOr}, {"BitwiseXor", tolExact, BitwiseXor}} {
		for _, dt := range []dtypes.DType{i32, i64, u8, u32} {
			for _, p := range confSmallPairs {
				add(cs(op.name, tolExact, bin(op.f), arg(dt, p[0]...).g(genSpecial), arg(dt, p[1]...).g(genSpecial)))
			}
		}
	}
	// Shifts (simplego lacks them): the amount is read as unsigned, so amounts >= the width,
	// negative ones included, shift everything out (the sign, for the arithmetic right shift).
	shifts := []struct {
		name string
		f    func(a, b *Node) *Node
		host func(x, n int64, dt dtypes.DType) int64
	}{
		{"ShiftLeft", BitwiseShiftLeft, confShiftLeft},
		{"ShiftRightLogical", BitwiseShiftRightLogical, confShiftRightLogical},
		{"ShiftRightArithmetic", BitwiseShiftRightArithmetic, confShiftRightArithmetic},
	}
	for _, op := range shifts {
		for _, dt := range []dtypes.DType{i32, i64, u8, i8, u32} {
			for _, p := range confSmallPairs {
				add(cs(op.name, tolExact, bin(op.f), arg(dt, p[0]...).g(genSpecial), arg(dt, p[1]...).g(genShift)).
					withHost(confHostBinaryInt(op.host)))
			}
		}
	}

	// Where and Clamp.
	add(cs("Where", tolExact, func(in []*Node) *Node { return Where(in[0], in[1], in[2]) }, arg(bl, 5, 33), arg(f32, 5, 33).g(genSpecial), arg(f32, 5, 33)),
		cs("Where", tolExact, func(in []*Node) *Node { return Where(in[0], in[1], in[2]) }, arg(bl, 3, 70, 130), arg(i32, 3, 70, 130), arg(i32)),
		// Two scalars chosen by a full condition (an attention mask's 0 and −1e9), large enough for the threads.
		cs("Where", tolExact, func(in []*Node) *Node { return Where(in[0], in[1], in[2]) }, arg(bl, 3, 170, 230), arg(f32), arg(f32).g(genSpecial)),
		cs("Where", tolExact, func(in []*Node) *Node { return Where(in[0], in[1], in[2]) }, arg(bl, 5, 33), arg(i32), arg(i32)),
		cs("Where", tolExact, func(in []*Node) *Node { return Where(in[0], in[1], in[2]) }, arg(bl), arg(f64, 7), arg(f64, 7)),
		cs("Where", tolExact, func(in []*Node) *Node { return Where(in[0], in[1], in[2]) }, arg(bl, 2, 3, 4, 5), arg(u8, 2, 3, 4, 5), arg(u8, 2, 3, 4, 5)),
		cs("Where", tolExact, func(in []*Node) *Node { return Where(in[0], in[1], in[2]) }, arg(bl, 5, 33), arg(bl, 5, 33), arg(bl, 5, 33)),
		// Outputs large enough for the threads to take ranges: a prefill's mask (scalar branches),
		// and elements of 2 and 8 bytes.
		cs("Where", tolExact, func(in []*Node) *Node { return Where(in[0], in[1], in[2]) }, arg(bl, 4, 130, 130), arg(f32), arg(f32)),
		cs("Where", tolExact, func(in []*Node) *Node { return Where(in[0], in[1], in[2]) }, arg(bl, 4, 130, 130), arg(f32, 4, 130, 130), arg(f32, 4, 130, 130)),
		cs("Where", tolExact, func(in []*Node) *Node { return Where(in[0], in[1], in[2]) }, arg(bl, 2, 200, 200), arg(i64, 2, 200, 200), arg(i64)),
		cs("Where", tolExact, func(in []*Node) *Node { return Where(in[0], in[1], in[2]) }, arg(bl, 2, 200, 200), arg(dtypes.Int16), arg(dtypes.Int16, 2, 200, 200)),
	)
	clamp := func(in []*Node) *Node { return Clamp(in[0], in[1], in[2]) }
	add(cs("Clamp", tolExact, clamp, arg(f32), arg(f32, 3, 70, 130).g(genSpecial), arg(f32).g(genPositive)),
		cs("Clamp", tolExact, clamp, arg(f32, 5, 33), arg(f32, 5, 33).g(genSpecial), arg(f32, 5, 33).g(genPositive)),
		cs("Clamp", tolExact, clamp, arg(f64), arg(f64, 7).g(genSpecial), arg(f64).g(genPositive)),
		cs("Clamp", tolExact, clamp, arg(i32), arg(i32, 5, 33).g(genSpecial), arg(i32).g(genPositive)),
		cs("Clamp", tolExact, clamp, arg(u8).g(genPositive), arg(u8, 5, 33), arg(u8).g(genSpecial)),
	)

	// ConvertDType.
	conv := func(dt dtypes.DType) func(in []*Node) *Node {
		return func(in []*Node) *Node { return ConvertDType(in[0], dt) }
	}
	for _, pair := range []struct {
		from confArg
		to   dtypes.DType
	}{
		{arg(f32, 3, 70, 130).g(genSpecial), f64},
		{arg(f64, 5, 33).g(genSpecial), f32},
		{arg(f64, 5, 33).g(genWide), f32},
		{arg(i32, 3, 70, 130).g(genWide), f32}, // large ints round to the nearest float32
		{arg(i32, 5, 33).g(genSpecial), f32},
		{arg(f32, 3, 70, 130).g(genWide), i32}, // truncation toward zero, negative and large values
		{arg(f32, 5, 33), i32},
		{arg(i32, 5, 33).g(genWide), f64},
		{arg(f64, 5, 33).g(genWide), i32},
		{arg(i64, 5, 33).g(genWide), f32},
		{arg(i64, 5, 33).g(genWide), f64},
		{arg(f32, 5, 33).g(genWide), i64},
		{arg(i32, 5, 33).g(genWide), i64},
		{arg(i64, 5, 33).g(genSpecial), i32},
		{arg(i32, 5, 33).g(genSpecial), u8},
		{arg(u8, 5, 33), i32},
		{arg(u8, 5, 33), f32},
		{arg(i8, 5, 33).g(genWide), f32}, // quantized values, negative ones too
		{arg(f32, 5, 33).g(genByte), u8},
		{arg(bl, 3, 70, 130), f32},
		{arg(bl, 5, 33), i32},
		{arg(i32, 5, 33).g(genWide), f32},
		{arg(bl, 5, 33), f64},
		{arg(f32, 5, 33).g(genSmall), bl},
		{arg(i32, 5, 33).g(genSmall), bl},
		{arg(f32, 3, 70, 130).g(genSpecial), bf16},
	} {
		add(cs("ConvertDType", tolExact, conv(pair.to), pair.from).labeled("to " + strings.ToLower(pair.to.String())))
	}
	viaBF16 := func(in []*Node) *Node { return ConvertDType(ConvertDType(in[0], bf16), f32) }
	add(cs("ConvertDType", tolExact, viaBF16, arg(f32, 3, 70, 130).g(genSpecial)).labeled("to bfloat16 and back"))
	// float16: simplego lacks it, so the reference rounds with github.com/x448/float16 (what GoMLX uses).
	toF16 := func(dt dtypes.DType) func(in []confVals) confVals {
		return confHostMap(dt, func(x float64) float64 { return float64(float16.Fromfloat32(float32(x)).Float32()) })
	}
	for _, c := range []confCase{
		cs("ConvertDType", tolExact, conv(f16), arg(f32, 3, 70, 130).g(genSpecial)).labeled("to float16").withHost(toF16(f16)),
		cs("ConvertDType", tolExact, conv(f16), arg(f32, 5, 33).g(genWide)).labeled("to float16").withHost(toF16(f16)),
		cs("ConvertDType", tolExact, func(in []*Node) *Node { return ConvertDType(ConvertDType(in[0], f16), f32) },
			arg(f32, 5, 33).g(genSpecial)).labeled("to float16 and back").withHost(toF16(f32)),
		cs("ConvertDType", tolExact, func(in []*Node) *Node { return ConvertDType(ConvertDType(in[0], f16), f64) },
			arg(f32, 5, 33).g(genSpecial)).labeled("to float16 to float64").withHost(toF16(f64)),
	} {
		c.simplegoCrashes = true
		add(c)
	}

	// Bitcast (simplego lacks it).
	add(cs("Bitcast", tolExact, func(in []*Node) *Node { return Bitcast(in[0], u32) }, arg(f32, 3, 70, 130).g(genSpecial)).labeled("to uint32").withHost(confHostBitcast(u32)),
		cs("Bitcast", tolExact, func(in []*Node) *Node { return Bitcast(in[0], i32) }, arg(f32, 5, 33).g(genSpecial)).labeled("to int32").withHost(confHostBitcast(i32)),
		cs("Bitcast", tolExact, func(in []*Node) *Node { return Bitcast(in[0], f32) }, arg(u32, 5, 33)).labeled("to float32").withHost(confHostBitcast(f32)),
		cs("Bitcast", tolExact, func(in []*Node) *Node { return Bitcast(in[0], f32) }, arg(i32, 5, 33).g(genWide)).labeled("to float32").withHost(confHostBitcast(f32)),
		cs("Bitcast", tolExact, func(in []*Node) *Node { return Bitcast(in[0], i64) }, arg(f64, 7).g(genSpecial)).labeled("to int64").withHost(confHostBitcast(i64)),
	)

	// Data movement.
	for _, dt := range []dtypes.DType{f32, i64, u8, bl} {
		add(cs("Reshape", tolExact, un(func(x *Node) *Node { return Reshape(x, 70, 3, 13, 10) }), arg(dt, 3, 70, 130)),
			cs("Reshape", tolExact, un(func(x *Node) *Node { return Reshape(x) }), arg(dt, 1, 1)),
			cs("Reshape", tolExact, un(func(x *Node) *Node { return Reshape(x, 1, 7, 1) }), arg(dt, 7)))
	}
	add(cs("Identity", tolExact, un(Identity), arg(f32, 5, 33)), cs("Identity", tolExact, un(Identity), arg(i32, 7)))
	for _, perm := range [][]int{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}} {
		tr := un(func(x *Node) *Node { return TransposeAllAxes(x, perm...) })
		add(cs("Transpose", tolExact, tr, arg(f32, 3, 70, 130)).labeled(fmt.Sprint(perm)),
			cs("Transpose", tolExact, tr, arg(u8, 3, 5, 7)).labeled(fmt.Sprint(perm)),
			cs("Transpose", tolExact, tr, arg(f64, 1, 9, 1)).labeled(fmt.Sprint(perm)))
	}
	for _, perm := range [][]int{{0, 2, 1, 3}, {3, 2, 1, 0}, {1, 3, 0, 2}, {0, 1, 3, 2}, {2, 0, 3, 1}} {
		tr := un(func(x *Node) *Node { return TransposeAllAxes(x, perm...) })
		add(cs("Transpose", tolExact, tr, arg(f32, 2, 9, 4, 16)).labeled(fmt.Sprint(perm)),
			cs("Transpose", tolExact, tr, arg(i64, 2, 3, 4, 5)).labeled(fmt.Sprint(perm)),
			cs("Transpose", tolExact, tr, arg(bl, 2, 3, 4, 5)).labeled(fmt.Sprint(perm)))
	}
	add(cs("Transpose", tolExact, un(func(x *Node) *Node {
		return ConvertDType(TransposeAllAxes(ConvertDType(x, bf16), 1, 0), f32)
	}), arg(f32, 33, 70).g(genSpecial)).labeled("bfloat16"))
	for _, dt := range []dtypes.DType{f32, i32, bl} {
		add(cs("BroadcastInDim", tolExact, un(func(x *Node) *Node { return BroadcastToDims(x, 3, 70, 130) }), arg(dt, 1, 70, 1)).labeled("BroadcastToDims"),
			cs("BroadcastInDim", tolExact, un(func(x *Node) *Node { return BroadcastToDims(x, 4, 5, 6) }), arg(dt)).labeled("BroadcastToDims scalar"),
			cs("BroadcastInDim", tolExact, un(func(x *Node) *Node { return BroadcastPrefix(x, 2, 3) }), arg(dt, 4, 5)).labeled("BroadcastPrefix"),
			cs("BroadcastInDim", tolExact, un(func(x *Node) *Node { return ExpandAndBroadcast(x, []int{4, 5, 3, 2}, []int{0, 2}) }), arg(dt, 5, 2)).labeled("ExpandAndBroadcast"))
	}
	add(cs("BroadcastInDim", tolExact, bin(func(a, b *Node) *Node { return Add(a, b) }), arg(f32, 4, 1, 6, 1), arg(f32, 1, 5, 1, 3)).labeled("implicit"),
		cs("BroadcastInDim", tolExact, bin(func(a, b *Node) *Node { return Mul(a, b) }), arg(i32, 1, 70, 1), arg(i32, 3, 1, 130)).labeled("implicit"))
	add(cs("Slice", tolExact, un(func(x *Node) *Node { return Slice(x, AxisRange(1, 5), AxisRange(2, 33).Stride(3)) }), arg(f32, 6, 33)),
		cs("Slice", tolExact, un(func(x *Node) *Node {
			return Slice(x, AxisRange(0, 3).Stride(2), AxisRange(1, 70).Stride(7), AxisRange(129, 130))
		}), arg(f32, 3, 70, 130)),
		cs("Slice", tolExact, un(func(x *Node) *Node { return Slice(x, AxisElem(2)) }), arg(i64, 5, 33)),
		cs("Slice", tolExact, un(func(x *Node) *Node {
			return Slice(x, AxisRange(), AxisRange(1, 3), AxisRange().Stride(2), AxisRange(4, 5))
		}), arg(u8, 2, 3, 4, 5)),
		cs("Slice", tolExact, un(func(x *Node) *Node { return Slice(x, AxisRange(3, 7).Stride(4)) }), arg(bl, 7)))
	concat := func(axis int) func(in []*Node) *Node {
		return func(in []*Node) *Node { return Concatenate(in, axis) }
	}
	add(cs("Concatenate", tolExact, concat(1), arg(f32, 2, 3), arg(f32, 2, 5)),
		cs("Concatenate", tolExact, concat(0), arg(f32, 1), arg(f32, 7), arg(f32, 1)),
		cs("Concatenate", tolExact, concat(2), arg(f32, 3, 70, 130), arg(f32, 3, 70, 1), arg(f32, 3, 70, 7)),
		cs("Concatenate", tolExact, concat(0), arg(i32, 3, 70, 130), arg(i32, 1, 70, 130)),
		cs("Concatenate", tolExact, concat(3), arg(bl, 2, 3, 4, 5), arg(bl, 2, 3, 4, 1)),
		cs("Concatenate", tolExact, func(in []*Node) *Node {
			return ConvertDType(Concatenate([]*Node{ConvertDType(in[0], bf16), ConvertDType(in[1], bf16)}, 1), f32)
		}, arg(f32, 4, 3), arg(f32, 4, 9)).labeled("bfloat16"))
	// Pad, Reverse, DynamicSlice, DynamicUpdateSlice: simplego lacks them.
	pad := func(axes ...backends.PadAxis) func(in []*Node) *Node {
		return func(in []*Node) *Node { return Pad(in[0], in[1], axes...) }
	}
	add(cs("Pad", tolExact, pad(backends.PadAxis{Start: 1, End: 2}, backends.PadAxis{Start: 0, End: 3, Interior: 1}),
		arg(f32, 5, 33), arg(f32)).withHost(confHostPad([]backends.PadAxis{{Start: 1, End: 2}, {End: 3, Interior: 1}})),
		cs("Pad", tolExact, pad(backends.PadAxis{}, backends.PadAxis{Start: 2, End: 0, Interior: 2}, backends.PadAxis{Start: 3, End: 1}),
			arg(i32, 3, 70, 130), arg(i32)).withHost(confHostPad([]backends.PadAxis{{}, {Start: 2, Interior: 2}, {Start: 3, End: 1}})),
		cs("Pad", tolExact, pad(backends.PadAxis{Start: 1, End: 1}), arg(u8, 1), arg(u8)).withHost(confHostPad([]backends.PadAxis{{Start: 1, End: 1}})))
	for _, c := range []struct {
		a    confArg
		axes []int
	}{{arg(f32, 5, 33), []int{1}}, {arg(f32, 3, 70, 130), []int{0, 2}}, {arg(i64, 2, 3, 4, 5), []int{1, 3}}, {arg(bl, 7), []int{0}}, {arg(f32, 4, 5), nil}} {
		add(cs("Reverse", tolExact, un(func(x *Node) *Node { return Reverse(x, c.axes...) }), c.a).
			labeled(fmt.Sprint("axes", c.axes)).withHost(confHostReverse(c.axes)))
	}
	dynSlice := func(sizes ...int) func(in []*Node) *Node {
		return func(in []*Node) *Node { return DynamicSlice(in[0], in[1:], sizes) }
	}
	dynUpdate := func(in []*Node) *Node { return DynamicUpdateSlice(in[0], in[1], in[2:]) }
	for _, start := range [][2]int64{{0, 0}, {2, 5}, {9, -4}, {-1, 40}} { // starts out of range are clamped
		add(cs("DynamicSlice", tolExact, dynSlice(3, 11), arg(f32, 5, 33), arg(i32).idx(start[0], start[0]+1), arg(i32).idx(start[1], start[1]+1)).
			labeled(fmt.Sprint("start", start)).withHost(confHostDynamicSlice([]int{3, 11})))
		add(cs("DynamicUpdateSlice", tolExact, dynUpdate, arg(f32, 5, 33), arg(f32, 3, 11), arg(i32).idx(start[0], start[0]+1), arg(i64).idx(start[1], start[1]+1)).
			labeled(fmt.Sprint("start", start)).withHost(confHostDynamicUpdateSlice))
	}
	add(cs("DynamicSlice", tolExact, dynSlice(1, 70, 1), arg(i32, 3, 70, 130), arg(i32).idx(0, 3), arg(i32).idx(0, 1), arg(i32).idx(0, 130)).
		withHost(confHostDynamicSlice([]int{1, 70, 1})),
		cs("DynamicUpdateSlice", tolExact, dynUpdate, arg(f32, 2, 64, 4, 16), arg(f32, 2, 1, 4, 16), arg(i32).idx(0, 1), arg(i32).idx(0, 64), arg(i32).idx(0, 1), arg(i32).idx(0, 1)).
			labeled("KV cache row").withHost(confHostDynamicUpdateSlice))
	iota := func(dt dtypes.DType, axis int, dims ...int) func(in []*Node) *Node {
		return func(in []*Node) *Node { return Iota(in[0].Graph(), shapes.Make(dt, dims...), axis) }
	}
	add(cs("Iota", tolExact, iota(f32, 1, 4, 6), arg(f32)),
		cs("Iota", tolExact, iota(i32, 0, 300), arg(f32)),
		cs("Iota", tolExact, iota(i64, 2, 3, 70, 130), arg(f32)),
		cs("Iota", tolExact, iota(f64, 0, 3, 70, 130), arg(f32)),
		cs("Iota", tolExact, iota(u8, 3, 2, 3, 4, 5), arg(f32)))

	// Reductions over every subset of the axes of a rank-3 input (no axes: all of them).
	subsets := [][]int{{0}, {1}, {2}, {0, 1}, {0, 2}, {1, 2}, {0, 1, 2}, {}}
	for _, axes := range subsets {
		l := fmt.Sprint("axes", axes)
		sum := un(func(x *Node) *Node { return ReduceSum(x, axes...) })
		mx := un(func(x *Node) *Node { return ReduceMax(x, axes...) })
		mn := un(func(x *Node) *Node { return ReduceMin(x, axes...) })
		prod := un(func(x *Node) *Node { return ReduceMultiply(x, axes...) })
		add(cs("ReduceSum", tolSum, sum, arg(f32, 3, 70, 130)).labeled(l),
			cs("ReduceSum", tolSum, sum, arg(f64, 3, 70, 130)).labeled(l),
			cs("ReduceSum", tolSum, sum, arg(i32, 3, 5, 7).g(genSpecial)).labeled(l),
			cs("ReduceSum", tolSum, sum, arg(u8, 3, 5, 7)).labeled(l),
			cs("ReduceMax", tolExact, mx, arg(f32, 3, 70, 130)).labeled(l),
			cs("ReduceMax", tolExact, mx, arg(f32, 3, 5, 7).g(genSpecial)).labeled(l),
			cs("ReduceMax", tolExact, mx, arg(i64, 3, 5, 7).g(genSpecial)).labeled(l),
			cs("ReduceMin", tolExact, mn, arg(f32, 3, 70, 130)).labeled(l),
			cs("ReduceMin", tolExact, mn, arg(f64, 3, 5, 7).g(genSpecial)).labeled(l),
			cs("ReduceMin", tolExact, mn, arg(u8, 3, 5, 7)).labeled(l),
			cs("ReduceProduct", tolSum, prod, arg(f32, 5, 7, 13).g(genNearOne)).labeled(l).withBound(func(in []*Node) *Node { return Abs(prod(in)) }),
			cs("ReduceProduct", tolSum, prod, arg(i32, 5, 7, 13).g(genSmall)).labeled(l),
			cs("ReduceLogicalAnd", tolExact, un(func(x *Node) *Node { return ReduceLogicalAnd(x, axes...) }), arg(bl, 3, 70, 130).g(genMostlyTrue)).labeled(l),
			cs("ReduceLogicalOr", tolExact, un(func(x *Node) *Node { return ReduceLogicalOr(x, axes...) }), arg(bl, 3, 70, 130).g(genMostlyFalse)).labeled(l))
	}
	add(cs("ReduceSum", tolSum, un(func(x *Node) *Node { return ReduceSum(x, 1, 3) }), arg(f32, 2, 3, 4, 5)).labeled("axes[1 3]"),
		cs("ReduceSum", tolSum, un(func(x *Node) *Node { return ReduceSum(x) }), arg(f32)).labeled("scalar"),
		cs("ReduceMax", tolExact, un(func(x *Node) *Node { return ReduceMax(x, 0) }), arg(f32, 1)).labeled("axes[0]"))
	for _, axis := range []int{0, 1, 2} {
		l := fmt.Sprint("axis ", axis)
		amax := un(func(x *Node) *Node { return ArgMax(x, axis, i32) })
		amin := un(func(x *Node) *Node { return ArgMin(x, axis, i64) })
		add(cs("ArgMinMax", tolExact, amax, arg(f32, 3, 70, 130)).labeled("ArgMax "+l),
			cs("ArgMinMax", tolExact, amin, arg(f32, 3, 70, 130)).labeled("ArgMin "+l),
			cs("ArgMinMax", tolExact, amax, arg(i32, 3, 5, 7).g(genSmall)).labeled("ArgMax ties "+l),
			cs("ArgMinMax", tolExact, amin, arg(u8, 3, 5, 7).g(genSmall)).labeled("ArgMin ties "+l),
			cs("ArgMinMax", tolExact, amin, arg(f64, 3, 5, 7).g(genSmall)).labeled("ArgMin ties "+l))
	}

	// Gather: embedding rows (int32 and int64 indices, repeated), out of range (clamped to the
	// last valid start), two index axes, slices.
	gather := bin(func(p, i *Node) *Node { return Gather(p, i) })
	add(cs("Gather", tolExact, gather, arg(f32, 50, 130), arg(i32, 3, 7, 1).idx(0, 50)).labeled("rows"),
		cs("Gather", tolExact, gather, arg(f32, 50, 130), arg(i64, 9, 1).idx(0, 50)).labeled("rows"),
		cs("Gather", tolExact, gather, arg(i32, 10, 6), arg(i32, 1).idx(3, 4)).labeled("one row"),
		cs("Gather", tolExact, gather, arg(f32, 10, 6), arg(i32, 4, 1).idx(-5, 15)).labeled("out of range"),
		cs("Gather", tolExact, gather, arg(f32, 540, 1), arg(i32, 300, 1).idx(-5, 545)).labeled("single elements"),
		cs("Gather", tolExact, gather, arg(i32, 54, 1), arg(i32, 7, 9, 1).idx(-5, 60)).labeled("single elements"),
		cs("Gather", tolExact, gather, arg(f32, 4, 5, 6), arg(i32, 3, 2, 2).idx(0, 4)).labeled("two axes"),
		cs("Gather", tolExact, gather, arg(bl, 4, 5, 6), arg(i64, 7, 3).idx(0, 4)).labeled("three axes"),
		cs("Gather", tolExact, bin(func(p, i *Node) *Node { return GatherSlices(p, []int{1, 2}, i, []int{2, 3}, false) }),
			arg(f32, 3, 10, 12), arg(i32, 4, 2).idx(0, 10)).labeled("GatherSlices"))
	// Scatter: repeated indices, two index axes.
	scatter := func(f func(o, i, u *Node, sorted, unique bool) *Node) func(in []*Node) *Node {
		return func(in []*Node) *Node { return f(in[0], in[1], in[2], false, false) }
	}
	for _, s := range []struct {
		name string
		tol  confTol
		f    func(o, i, u *Node, sorted, unique bool) *Node
	}{{"ScatterSum", tolSum, ScatterSum}, {"ScatterMax", tolExact, ScatterMax}, {"ScatterMin", tolExact, ScatterMin}} {
		add(cs(s.name, s.tol, scatter(s.f), arg(f32, 10, 6), arg(i32, 40, 1).idx(0, 10), arg(f32, 40, 6)).labeled("repeated rows"),
			cs(s.name, s.tol, scatter(s.f), arg(f32, 50, 130), arg(i64, 3, 7, 1).idx(0, 50), arg(f32, 3, 7, 130)).labeled("rows"),
			cs(s.name, s.tol, scatter(s.f), arg(f64, 4, 5, 6), arg(i32, 9, 2).idx(0, 4), arg(f64, 9, 6)).labeled("two axes"),
			cs(s.name, tolExact, scatter(s.f), arg(i32, 10, 6), arg(i32, 12, 1).idx(0, 10), arg(i32, 12, 6)).labeled("repeated rows"),
			cs(s.name, s.tol, scatter(s.f), arg(f32, 50, 1), arg(i32, 300, 1).idx(0, 50), arg(f32, 300, 1)).labeled("single elements"),
			cs(s.name, s.tol, scatter(s.f), arg(f32, 50, 1), arg(i64, 300, 1).idx(0, 50), arg(f32, 300, 1)).labeled("single elements"),
			cs(s.name, tolExact, scatter(s.f), arg(i32, 50, 1), arg(i32, 6, 50, 1).idx(0, 50), arg(i32, 6, 50, 1)).labeled("single elements"))
	}

	// Products: DotGeneral (directly, through Einsum, MatMul) and Dot.
	dot := bin(Dot)
	add(cs("Dot", tolSum, dot, arg(f32, 129), arg(f32, 129)).labeled("vector·vector"),
		cs("Dot", tolSum, dot, arg(f32, 257, 129), arg(f32, 129)).labeled("matrix·vector"),
		cs("Dot", tolSum, dot, arg(f32, 1, 1), arg(f32, 1, 1)).labeled("matrix·matrix"),
		cs("Dot", tolSum, dot, arg(f32, 33, 20), arg(f32, 20, 70)).labeled("matrix·matrix"),
		cs("Dot", tolSum, dot, arg(f32, 257, 129), arg(f32, 129, 300)).labeled("matrix·matrix"),
		cs("Dot", tolSum, dot, arg(f64, 33, 20), arg(f64, 20, 70)).labeled("matrix·matrix"),
		confIntProduct(cs("Dot", tolExact, dot, arg(i32, 33, 20).g(genSmall), arg(i32, 20, 70).g(genSmall)).labeled("matrix·matrix")),
		confIntProduct(cs("Dot", tolExact, dot, arg(i64, 5, 7).g(genSmall), arg(i64, 7).g(genSmall)).labeled("matrix·vector")))
	for _, e := range []struct {
		eq   string
		a, b confArg
	}{
		{"k,k->", arg(f32, 1), arg(f32, 1)},
		{"mk,k->m", arg(f32, 7, 5), arg(f32, 5)},
		{"k,nk->n", arg(f32, 288), arg(f32, 768, 288)}, // decoding: x·Wᵀ
		{"mk,kn->mn", arg(f32, 257, 129), arg(f32, 129, 300)},
		{"km,kn->mn", arg(f32, 33, 20), arg(f32, 33, 70)},
		{"mk,nk->mn", arg(f32, 33, 20), arg(f32, 70, 20)},
		{"km,nk->mn", arg(f32, 129, 65), arg(f32, 31, 129)},
		{"bmk,bkn->bmn", arg(f32, 3, 17, 33), arg(f32, 3, 33, 9)},
		{"bmk,bkn->bmn", arg(f32, 1, 1, 1), arg(f32, 1, 1, 1)},
		{"mbk,kbn->bmn", arg(f32, 5, 3, 7), arg(f32, 7, 3, 4)}, // batch axis in the middle
		{"kmb,bkn->bmn", arg(f32, 6, 4, 3), arg(f32, 3, 6, 5)}, // batch axis last on one side
		{"mkl,lkn->mn", arg(f32, 4, 5, 6), arg(f32, 6, 5, 3)},  // two contracting axes
		{"bsd,od->bso", arg(f32, 2, 17, 64), arg(f32, 96, 64)}, // [b,s,d]·[o,d]ᵀ
		{"bsd,od->bso", arg(f32, 1, 1, 288), arg(f32, 768, 288)},
		{"bsd,od->bso", arg(f32, 2, 64, 96), arg(f32, 130, 96)},
		{"bhqd,bhkd->bhqk", arg(f32, 2, 4, 9, 16), arg(f32, 2, 4, 11, 16)}, // attention scores
		{"bhqd,bhkd->bhqk", arg(f32, 1, 4, 1, 16), arg(f32, 1, 4, 20, 16)}, // one decoding step
		{"bhqk,bhkd->bhqd", arg(f32, 2, 4, 9, 11), arg(f32, 2, 4, 11, 16)}, // probabilities·values
		{"bqhd,bkhd->bhqk", arg(f32, 2, 9, 4, 16), arg(f32, 2, 11, 4, 16)}, // heads not in front
		{"hbqd,bhkd->bhqk", arg(f32, 4, 2, 3, 8), arg(f32, 2, 4, 5, 8)},    // batch axes out of order
		{"km,k->m", arg(f32, 130, 300), arg(f32, 130)},                     // matrix (transposed) times vector
		{"bsk,k->bs", arg(f32, 2, 70, 130), arg(f32, 130)},                 // a row sum as a product with ones
		{"mk,kn->mn", arg(f32, 300, 1), arg(f32, 1, 130)},                  // outer product (k = 1)
		{"bsk,nk->bsn", arg(f32, 2, 70, 1), arg(f32, 130, 1)},              // outer product, B stored [n, 1]
		{"km,kn->mn", arg(f32, 1, 300), arg(f32, 1, 130)},                  // outer product, A stored [1, m]
		{"mk,kn->mn", arg(f64, 65, 33), arg(f64, 33, 70)},
		{"bmk,bkn->bmn", arg(i32, 3, 17, 33).g(genSmall), arg(i32, 3, 33, 9).g(genSmall)},
	} {
		c := cs("DotGeneral", tolSum, bin(func(a, b *Node) *Node { return Einsum(e.eq, a, b) }), e.a, e.b).labeled("Einsum " + e.eq)
		if !e.a.dt.IsFloat() {
			c = confIntProduct(c)
		}
		add(c)
	}
	add(cs("DotGeneral", tolSum, bin(func(a, b *Node) *Node { return DotGeneral(a, []int{2}, []int{1}, b, []int{0}, []int{1}) }),
		arg(f32, 5, 3, 7), arg(f32, 7, 3, 4)).labeled("batch axis 1"),
		cs("DotGeneral", tolSum, bin(func(a, b *Node) *Node { return DotGeneral(a, []int{1, 2}, nil, b, []int{1, 0}, nil) }),
			arg(f32, 4, 5, 6), arg(f32, 6, 5, 3)).labeled("two contracting axes"),
		cs("DotGeneral", tolSum, bin(func(a, b *Node) *Node { return DotGeneral(a, []int{0}, []int{1, 2}, b, []int{2}, []int{0, 1}) }),
			arg(f32, 33, 2, 3), arg(f32, 2, 3, 33)).labeled("batch axes last, contracting first"),
		cs("DotGeneral", tolSum, bin(MatMul), arg(f32, 2, 1, 5, 6), arg(f32, 3, 6, 4)).labeled("MatMul broadcast"),
		cs("DotGeneral", tolSum, bin(MatMul), arg(f32, 2, 17, 64), arg(f32, 64, 96)).labeled("MatMul"),
		cs("DotGeneral", tolSum, bin(MatMul), arg(f32, 64), arg(f32, 3, 64, 5)).labeled("MatMul vector"),
		cs("DotGeneral", tolSum, bin(MatMul), arg(f32, 3, 70, 130), arg(f32, 130)).labeled("MatMul vector"))

	// Softmax and LogSoftmax, also over masked (-Inf) logits.
	softBound := func(axes ...int) func(in []*Node) *Node {
		return func(in []*Node) *Node { return MulScalar(Softmax(in[0], axes...), 1.5) }
	}
	logSoftBound := func(axes ...int) func(in []*Node) *Node {
		return func(in []*Node) *Node { return AddScalar(MulScalar(Abs(LogSoftmax(in[0], axes...)), 0.2), 1) }
	}
	for _, s := range []struct {
		a    confArg
		axes []int
	}{
		{arg(f32, 3, 70, 130), []int{-1}}, {arg(f32, 2, 4, 9, 11).g(genMasked), []int{-1}}, {arg(f32, 5, 33), []int{0}},
		{arg(f32, 1), []int{0}}, {arg(f32, 2, 3, 4, 5), []int{1, 3}}, {arg(f64, 5, 33).g(genMasked), []int{1}},
	} {
		l := fmt.Sprint("axes", s.axes)
		add(cs("Softmax", tolSum, un(func(x *Node) *Node { return Softmax(x, s.axes...) }), s.a).labeled(l).withBound(softBound(s.axes...)),
			cs("LogSoftmax", tolSum, un(func(x *Node) *Node { return LogSoftmax(x, s.axes...) }), s.a).labeled(l).withBound(logSoftBound(s.axes...)))
	}

	// RNGBitGenerator: both backends use the same generator (see the file comment), so the values
	// drawn from a random state are equal; TestOpConformanceRNG checks their statistics.
	for _, s := range []shapes.Shape{shapes.Make(f32, 3, 70, 130), shapes.Make(f64, 7), shapes.Make(f32)} {
		add(cs("RNGBitGenerator", tolExact, func(in []*Node) *Node {
			_, v := RandomUniform(in[0], s)
			return v
		}, arg(u64, 3)).labeled("RandomUniform " + s.String()))
	}
	add(cs("RNGBitGenerator", tolExact, func(in []*Node) *Node {
		s, _ := RandomUniform(in[0], shapes.Make(f32, 5, 7))
		return Slice(s, AxisRange(0, 2)) // the third word is unused by PCG
	}, arg(u64, 3)).labeled("new state").withHost(func(in []confVals) confVals {
		// The new state of PCG after 18 draws of 8 bytes (140 bytes, a partial last word).
		st := newConfVals(u64, []int{2})
		pcg := rand.NewPCG(uint64(in[0].i[0]), uint64(in[0].i[1]))
		for range (5*7*4 + 7) / 8 {
			pcg.Uint64()
		}
		b, _ := pcg.MarshalBinary()
		st.i[0], st.i[1] = int64(binary.LittleEndian.Uint64(b[4:12])), int64(binary.LittleEndian.Uint64(b[12:20]))
		return st
	}))

	// Fused elementwise chains, judged by the Σ|terms| of their last sum.
	add(cs("Fused", tolSum, func(in []*Node) *Node { return Add(Mul(Mul(in[0], Logistic(in[0])), in[1]), in[2]) },
		arg(f32, 3, 70, 130), arg(f32, 3, 70, 130), arg(f32, 3, 70, 130)).labeled("silu(a)·b+c").
		withBound(func(in []*Node) *Node {
			return Add(Abs(Mul(Mul(in[0], Logistic(in[0])), in[1])), Abs(in[2]))
		}),
		cs("Fused", tolSum, func(in []*Node) *Node {
			x, w := in[0], Reshape(in[1], 1, 1, -1)
			ms := ReduceAndKeep(Mul(x, x), ReduceMean, -1)
			return Mul(Mul(x, Rsqrt(AddScalar(ms, 1e-5))), w)
		}, arg(f32, 2, 17, 130), arg(f32, 130)).labeled("rmsnorm").
			withBound(func(in []*Node) *Node {
				x, w := in[0], Reshape(in[1], 1, 1, -1)
				ms := ReduceAndKeep(Mul(x, x), ReduceMean, -1)
				return Abs(Mul(Mul(x, Rsqrt(AddScalar(ms, 1e-5))), w))
			}),
		cs("Fused", tolSum, func(in []*Node) *Node {
			x := in[0]
			return Mul(MulScalar(x, 0.5), OnePlus(Erf(MulScalar(x, 1/math.Sqrt2))))
		}, arg(f32, 3, 70, 130)).labeled("gelu").
			withBound(func(in []*Node) *Node {
				x := in[0]
				return Abs(Mul(MulScalar(x, 0.5), OnePlus(Abs(Erf(MulScalar(x, 1/math.Sqrt2))))))
			}),
		cs("Fused", tolSum, func(in []*Node) *Node {
			m, v := in[0], in[1]
			return Sub(in[2], MulScalar(Div(MulScalar(m, 0.9), AddScalar(Sqrt(Abs(v)), 1e-8)), 1e-3))
		}, arg(f32, 1000), arg(f32, 1000), arg(f32, 1000)).labeled("adam step").
			withBound(func(in []*Node) *Node {
				m, v := Abs(in[0]), Abs(in[1])
				return Add(Abs(in[2]), MulScalar(Div(MulScalar(m, 0.9), AddScalar(Sqrt(v), 1e-8)), 1e-3))
			}),
		cs("Fused", tolSum, func(in []*Node) *Node {
			// RoPE: x·cos + rotate(x)·sin on pairs.
			x, th := in[0], InsertAxes(in[1], 0)
			x0, x1 := Slice(x, AxisRange(), AxisRange(), AxisRange().Stride(2)), Slice(x, AxisRange(), AxisRange(), AxisRange(1).Stride(2))
			c, s := Cos(th), Sin(th)
			return Concatenate([]*Node{Sub(Mul(x0, c), Mul(x1, s)), Add(Mul(x0, s), Mul(x1, c))}, -1)
		}, arg(f32, 2, 17, 64), arg(f32, 17, 32)).labeled("rope").
			withBound(func(in []*Node) *Node {
				x, th := Abs(in[0]), InsertAxes(in[1], 0)
				x0, x1 := Slice(x, AxisRange(), AxisRange(), AxisRange().Stride(2)), Slice(x, AxisRange(), AxisRange(), AxisRange(1).Stride(2))
				c, s := Abs(Cos(th)), Abs(Sin(th))
				t := Add(Mul(x0, c), Mul(x1, s))
				return Concatenate([]*Node{t, Add(Mul(x0, s), Mul(x1, c))}, -1)
			}),
	)
	return cases
}

// confIntProduct makes the reference of an integer product the same graph in float64 (exact for
// small integers): simplego's integer DotGeneral indexes out of range (and ends the process) on
// shapes such as [33,20]·[20,70].
func confIntProduct(c confCase) confCase {
	fn := c.fn
	c.refFn = func(in []*Node) *Node {
		dt := in[0].DType()
		in64 := make([]*Node, len(in))
		for k, n := range in {
			in64[k] = ConvertDType(n, f64)
		}
		return ConvertDType(fn(in64), dt)
	}
	c.simplegoCrashes = true
	return c
}

// ---------------------------------------------------------------------------------------------
// Host references.

func confHostBinaryInt(f func(x, n int64, dt dtypes.DType) int64) func(in []confVals) confVals {
	return func(in []confVals) confVals {
		a, b := in[0], in[1]
		dims := a.dims
		if len(b.dims) > len(dims) || confSize(b.dims) > confSize(dims) {
			dims = b.dims
		}
		out := newConfVals(a.dt, dims)
		if len(a.dims) == len(b.dims) { // implicit broadcasting of size-1 axes
			dims = make([]int, len(a.dims))
			for k := range dims {
				dims[k] = max(a.dims[k], b.dims[k])
			}
			out = newConfVals(a.dt, dims)
		}
		at := func(v confVals, idx []int) int64 {
			if len(v.dims) == 0 {
				return v.i[0]
			}
			j := 0
			for k, d := range v.dims {
				j = j*d + min(idx[k], d-1)
			}
			return v.i[j]
		}
		confForEach(out.dims, func(idx []int, k int) {
			out.i[k] = confWrap(f(at(a, idx), at(b, idx), a.dt), a.dt)
		})
		return out
	}
}

// confUnsigned is x as an unsigned number of the dtype's width.
func confUnsigned(x int64, dt dtypes.DType) uint64 {
	bits := dt.Size() * 8
	if bits >= 64 {
		return uint64(x)
	}
	return uint64(x) & (uint64(1)<<bits - 1)
}

func confShiftLeft(x, n int64, dt dtypes.DType) int64 {
	if confUnsigned(n, dt) >= uint64(dt.Size()*8) {
		return 0
	}
	return x << confUnsigned(n, dt)
}

func confShiftRightLogical(x, n int64, dt dtypes.DType) int64 {
	if confUnsigned(n, dt) >= uint64(dt.Size()*8) {
		return 0
	}
	return int64(confUnsigned(x, dt) >> confUnsigned(n, dt))
}

func confShiftRightArithmetic(x, n int64, dt dtypes.DType) int64 {
	s := confUnsigned(n, dt)
	if s >= uint64(dt.Size()*8) {
		s = 63
	}
	return x >> s // x is sign-extended for signed dtypes, non-negative for unsigned ones
}

func confHostBitcast(to dtypes.DType) func(in []confVals) confVals {
	return func(in []confVals) confVals {
		x := in[0]
		out := newConfVals(to, x.dims)
		for k := range x.size() {
			switch {
			case x.dt == f32:
				out.i[k] = confWrap(int64(math.Float32bits(float32(x.f[k]))), to)
			case x.dt == f64:
				out.i[k] = int64(math.Float64bits(x.f[k]))
			case to == f32:
				out.f[k] = float64(math.Float32frombits(uint32(x.i[k])))
			case to == f64:
				out.f[k] = math.Float64frombits(uint64(x.i[k]))
			}
		}
		return out
	}
}

func confHostPad(axes []backends.PadAxis) func(in []confVals) confVals {
	return func(in []confVals) confVals {
		x, fill := in[0], in[1]
		dims := slices.Clone(x.dims)
		cfg := make([]backends.PadAxis, len(dims))
		copy(cfg, axes)
		for a, d := range dims {
			dims[a] = cfg[a].Start + cfg[a].End + d + max(d-1, 0)*cfg[a].Interior
		}
		out := newConfVals(x.dt, dims)
		for k := range out.size() {
			out.copyElem(k, fill, 0)
		}
		oidx := make([]int, len(dims))
		confForEach(x.dims, func(idx []int, k int) {
			for a := range idx {
				oidx[a] = cfg[a].Start + idx[a]*(cfg[a].Interior+1)
			}
			out.copyElem(confFlat(dims, oidx), x, k)
		})
		return out
	}
}

func confHostReverse(axes []int) func(in []confVals) confVals {
	return func(in []confVals) confVals {
		x := in[0]
		out := newConfVals(x.dt, x.dims)
		src := make([]int, len(x.dims))
		confForEach(x.dims, func(idx []int, k int) {
			copy(src, idx)
			for _, a := range axes {
				src[a] = x.dims[a] - 1 - idx[a]
			}
			out.copyElem(k, x, confFlat(x.dims, src))
		})
		return out
	}
}

// confStarts clamps start indices as XLA does: into [0, dim-size].
func confStarts(dims, sizes []int, starts []confVals) []int {
	s := make([]int, len(dims))
	for a := range dims {
		s[a] = int(min(max(starts[a].i[0], 0), int64(dims[a]-sizes[a])))
	}
	return s
}

func confHostDynamicSlice(sizes []int) func(in []confVals) confVals {
	return func(in []confVals) confVals {
		x := in[0]
		start := confStarts(x.dims, sizes, in[1:])
		out := newConfVals(x.dt, sizes)
		src := make([]int, len(sizes))
		confForEach(sizes, func(idx []int, k int) {
			for a := range idx {
				src[a] = start[a] + idx[a]
			}
			out.copyElem(k, x, confFlat(x.dims, src))
		})
		return out
	}
}

func confHostDynamicUpdateSlice(in []confVals) confVals {
	x, upd := in[0], in[1]
	start := confStarts(x.dims, upd.dims, in[2:])
	out := x.clone()
	dst := make([]int, len(x.dims))
	confForEach(upd.dims, func(idx []int, k int) {
		for a := range idx {
			dst[a] = start[a] + idx[a]
		}
		out.copyElem(confFlat(x.dims, dst), upd, k)
	})
	return out
}

// ---------------------------------------------------------------------------------------------
// Running and comparing.

// confRun builds fn on b, runs it on in and returns the outputs and the graph's node types.
// Errors and panics (the graph package turns builder errors into panics) come back as err.
func confRun(b backends.Backend, fn func(in []*Node) []*Node, in []confVals) (outs []confVals, ops []string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	exec, err := NewExec(b, func(nodes []*Node) []*Node { return fn(nodes) })
	if err != nil {
		return nil, nil, err
	}
	defer exec.Finalize()
	args := make([]any, len(in))
	for k, v := range in {
		args[k] = v.tensor()
	}
	results, g, err := exec.ExecWithGraph(args...)
	if err != nil {
		return nil, nil, err
	}
	for _, n := range g.Nodes() {
		ops = append(ops, n.Type().String())
	}
	for _, t := range results {
		outs = append(outs, confFromTensor(t))
		t.FinalizeAll()
	}
	return outs, ops, nil
}

func confRun1(b backends.Backend, fn func(in []*Node) *Node, in []confVals) (confVals, []string, error) {
	outs, ops, err := confRun(b, func(in []*Node) []*Node { return []*Node{fn(in)} }, in)
	if err != nil {
		return confVals{}, nil, err
	}
	return outs[0], ops, nil
}

// confAllowed is how far got may be from want at element k.
func confAllowed(tol confTol, dt dtypes.DType, want float64, bound float64) float64 {
	if !dt.IsFloat() {
		return 0
	}
	switch tol {
	case tolElem:
		if dt == f64 {
			return 1e-14*math.Abs(want) + 1e-15
		}
		return 2e-6*math.Abs(want) + 1e-6
	case tolSum:
		if math.IsInf(bound, 0) || math.IsNaN(bound) {
			return 0
		}
		if dt == f64 {
			return 1e-12 * bound
		}
		return 1e-5 * bound
	}
	return 0
}

// confCompare describes the first element where got and want differ beyond what tol allows
// ("" if none). bound is the per-element Σ|terms| for tolSum (else ignored).
func confCompare(what string, tol confTol, got, want, bound confVals, gotName, wantName string, in ...confVals) string {
	if got.dt != want.dt || !slices.Equal(got.dims, want.dims) {
		return fmt.Sprintf("%s: %s gives %s, %s gives %s", what, gotName, got.shapeString(), wantName, want.shapeString())
	}
	first, bad := -1, 0
	var firstAllowed float64
	for k := range want.size() {
		var ok bool
		var allowed float64
		if want.f != nil {
			g, w := got.f[k], want.f[k]
			b := 0.0
			if bound.f != nil {
				b = bound.f[k]
			}
			allowed = confAllowed(tol, want.dt, w, b)
			ok = g == w || (math.IsNaN(g) && math.IsNaN(w)) || math.Abs(g-w) <= allowed
		} else {
			ok = got.i[k] == want.i[k]
		}
		if !ok {
			if first < 0 {
				first, firstAllowed = k, allowed
			}
			bad++
		}
	}
	if first < 0 {
		return ""
	}
	msg := fmt.Sprintf("%s: first difference at %v (flat %d): %s gives %s, %s gives %s",
		what, want.index(first), first, gotName, got.format(first), wantName, want.format(first))
	if want.f != nil && (math.IsNaN(got.f[first]) || math.IsNaN(want.f[first])) {
		msg += " (NaN must meet NaN)"
	} else if want.f != nil && tol != tolExact {
		msg += fmt.Sprintf(" (|diff| %.3g > allowed %.3g)", math.Abs(got.f[first]-want.f[first]), firstAllowed)
	}
	msg += fmt.Sprintf("; %d of %d elements differ", bad, want.size())
	var inputs []string // the inputs at the same index, for elementwise ops
	for k, v := range in {
		if v.size() == 1 || slices.Equal(v.dims, want.dims) {
			inputs = append(inputs, fmt.Sprintf("in%d=%s", k, v.format(min(first, v.size()-1))))
		}
	}
	if len(inputs) > 0 {
		msg += " (inputs there: " + strings.Join(inputs, ", ") + ")"
	}
	return msg
}

// confBound computes Σ|terms| for a tolSum case on the reference, in float64.
func confBound(ref backends.Backend, c confCase, in []confVals) (confVals, error) {
	in64 := make([]confVals, len(in))
	for k, v := range in {
		if v.f != nil {
			v = v.clone()
			v.dt = f64
		}
		in64[k] = v
	}
	fn := c.bound
	if fn == nil {
		fn = func(nodes []*Node) *Node {
			abs := make([]*Node, len(nodes))
			for k, n := range nodes {
				abs[k] = n
				if n.DType().IsFloat() {
					abs[k] = Abs(n)
				}
			}
			return c.fn(abs)
		}
	}
	b, _, err := confRun1(ref, fn, in64)
	return b, err
}

func confSeed(s string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(s))
	return rand.New(rand.NewPCG(h.Sum64(), 0x9e3779b97f4a7c15))
}

// TestOpConformance runs the table: per configuration of the backend, per op, per variant (t.Run).
func TestOpConformance(t *testing.T) {
	cases := confCases()
	for _, config := range confConfigs() {
		t.Run(config, func(t *testing.T) { confRunTable(t, config, cases) })
	}
}

func confRunTable(t *testing.T, config string, cases []confCase) {
	under, ref := confBackends(t, config)
	var order []string
	byOp := map[string][]confCase{}
	for _, c := range cases {
		if byOp[c.op] == nil {
			order = append(order, c.op)
		}
		byOp[c.op] = append(byOp[c.op], c)
	}
	exercised := map[string]bool{}
	for _, op := range order {
		t.Run(op, func(t *testing.T) {
			for _, c := range byOp[op] {
				t.Run(c.variant(), func(t *testing.T) {
					what := c.op + " " + c.variant()
					if _, isSimplego := under.(*simplego.Backend); c.simplegoCrashes && isSimplego {
						t.Skipf("%s: simplego would crash", what)
					}
					r := confSeed(what)
					in := make([]confVals, len(c.args))
					for k, a := range c.args {
						in[k] = a.generate(r)
					}
					got, ops, err := confRun1(under, c.fn, in)
					for _, o := range ops {
						exercised[o] = true
					}
					if err != nil {
						t.Fatalf("%s on %s: %v", what, under.Name(), err)
					}
					var want confVals
					wantName := ref.Name()
					if c.host != nil {
						want, wantName = c.host(in), "host reference"
					} else if want, _, err = confRun1(ref, c.reference(), in); err != nil {
						t.Fatalf("%s on %s (the reference): %v", what, ref.Name(), err)
					}
					var bound confVals
					if c.tol == tolSum && want.dt.IsFloat() {
						if bound, err = confBound(ref, c, in); err != nil {
							t.Fatalf("%s: computing Σ|terms|: %v", what, err)
						}
					}
					if msg := confCompare(what, c.tol, got, want, bound, under.Name(), wantName, in...); msg != "" {
						t.Error(msg)
					}
				})
			}
		})
	}
	// Every op the backend claims must have been exercised by some case.
	var missing []string
	for op, ok := range under.Capabilities().Operations {
		switch op {
		case backends.OpTypeParameter, backends.OpTypeConstant:
			continue
		}
		if ok && !exercised[op.String()] {
			missing = append(missing, op.String())
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		if under.Name() == ref.Name() {
			t.Logf("%s claims ops no case exercises: %v", under.Name(), missing)
		} else {
			t.Errorf("%s claims ops no case exercises (add cases): %v", under.Name(), missing)
		}
	}
}

// ---------------------------------------------------------------------------------------------
// Gradients.

// TestOpConformanceGradients compares graph.Gradient of an MLP-like and an attention-like graph.
func TestOpConformanceGradients(t *testing.T) {
	under, ref := confBackends(t, "")
	cases := []struct {
		name  string
		args  []confArg
		grads []string
		fn    func(in []*Node) []*Node
	}{
		{"mlp", []confArg{arg(f32, 8, 16), arg(f32, 32, 16), arg(f32, 32), arg(f32, 4, 32)},
			[]string{"x", "w1", "b1", "w2"}, func(in []*Node) []*Node {
				x, w1, b1, w2 := in[0], in[1], in[2], in[3]
				h := Tanh(Add(MatMul(x, Transpose(w1, 0, 1)), InsertAxes(b1, 0)))
				y := Einsum("bh,oh->bo", h, w2)
				loss := ReduceAllSum(Mul(y, y))
				return Gradient(loss, x, w1, b1, w2)
			}},
		{"attention", []confArg{arg(f32, 2, 3, 6, 8), arg(f32, 2, 3, 7, 8), arg(f32, 2, 3, 7, 8), arg(f32, 2, 3, 6, 8)},
			[]string{"q", "k", "v"}, func(in []*Node) []*Node {
				q, k, v, target := in[0], in[1], in[2], in[3]
				p := Softmax(MulScalar(Einsum("bhqd,bhkd->bhqk", q, k), 1/math.Sqrt(8)), -1)
				o := Einsum("bhqk,bhkd->bhqd", p, v)
				loss := ReduceAllSum(Mul(o, target))
				return Gradient(loss, q, k, v)
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := confSeed("gradient " + c.name)
			in := make([]confVals, len(c.args))
			for k, a := range c.args {
				in[k] = a.generate(r)
			}
			got, _, err := confRun(under, c.fn, in)
			if err != nil {
				t.Fatalf("gradient %s on %s: %v", c.name, under.Name(), err)
			}
			want, _, err := confRun(ref, c.fn, in)
			if err != nil {
				t.Fatalf("gradient %s on %s: %v", c.name, ref.Name(), err)
			}
			for k := range want {
				scale := 0.0
				for _, w := range want[k].f {
					scale = max(scale, math.Abs(w))
				}
				bound := newConfVals(f64, want[k].dims)
				for j, w := range want[k].f {
					bound.f[j] = scale + 0.2*math.Abs(w) // 1e-5·bound: 1e-5·max|want| + 2e-6·|want|
				}
				what := fmt.Sprintf("gradient %s d/d%s %s", c.name, c.grads[k], want[k].shapeString())
				if msg := confCompare(what, tolSum, got[k], want[k], bound, under.Name(), ref.Name()); msg != "" {
					t.Error(msg)
				}
			}
		})
	}
}

// ---------------------------------------------------------------------------------------------
// RNG.

// TestOpConformanceRNG: same seed, same bits (both backends use math/rand/v2's PCG, see the
// file comment), and sane statistics.
func TestOpConformanceRNG(t *testing.T) {
	under, ref := confBackends(t, "")
	state, err := RNGStateFromSeed(42)
	if err != nil {
		t.Fatal(err)
	}
	stateVals := confFromTensor(state)
	const rows, cols, nInt = 300, 337, 20000
	fn := func(in []*Node) []*Node {
		s, u := RandomUniform(in[0], shapes.Make(f32, rows, cols))
		s, n := RandomNormal(s, shapes.Make(f32, rows, cols))
		s, u64 := RandomUniform(s, shapes.Make(f64, 1001))
		s, k := RandomIntN(s, 10, shapes.Make(i32, nInt))
		s, b := RandomIntN(s, 256, shapes.Make(u8, 3, 5)) // 15 bytes: a partial 8-byte word
		return []*Node{s, u, n, u64, k, b}
	}
	names := []string{"new state", "RandomUniform float32", "RandomNormal float32", "RandomUniform float64", "RandomIntN(10) int32", "RandomIntN(256) uint8"}
	got, _, err := confRun(under, fn, []confVals{stateVals})
	if err != nil {
		t.Fatalf("RNG on %s: %v", under.Name(), err)
	}
	want, _, err := confRun(ref, fn, []confVals{stateVals})
	if err != nil {
		t.Fatalf("RNG on %s: %v", ref.Name(), err)
	}
	again, _, err := confRun(under, fn, []confVals{stateVals})
	if err != nil {
		t.Fatalf("RNG on %s, again: %v", under.Name(), err)
	}
	// The state's third word is not used by PCG; the cpu backend passes it through, simplego
	// leaves whatever its output buffer held: compare the first two words.
	gs, ws := got[0].clone(), want[0].clone()
	if gs.i[2] != ws.i[2] {
		t.Logf("RNG state word 2: %s gives %#x, %s %#x (unused by PCG, not compared)", under.Name(), uint64(gs.i[2]), ref.Name(), uint64(ws.i[2]))
	}
	gs.i[2], ws.i[2] = 0, 0
	if gs.i[0] == stateVals.i[0] && gs.i[1] == stateVals.i[1] {
		t.Errorf("RNG: the state did not advance")
	}
	got[0], want[0] = gs, ws
	for k := range want {
		tol, bound := tolExact, confVals{}
		if k == 2 {
			tol, bound = tolSum, newConfVals(f64, want[k].dims)
			for j, w := range want[k].f {
				bound.f[j] = 1 + math.Abs(w)
			}
		}
		if msg := confCompare("RNG "+names[k], tol, got[k], want[k], bound, under.Name(), ref.Name()); msg != "" {
			t.Error(msg)
		}
		if msg := confCompare("RNG "+names[k]+" run twice", tolExact, again[k], got[k], confVals{}, under.Name()+" (2nd run)", under.Name()); k > 0 && msg != "" {
			t.Error(msg)
		}
	}
	// Statistics: mean and variance within 5 standard errors.
	stats := func(name string, x []float64, mean, variance, m4 float64) {
		n := float64(len(x))
		var s, s2 float64
		for _, v := range x {
			s += v
		}
		m := s / n
		for _, v := range x {
			s2 += (v - m) * (v - m)
		}
		vr := s2 / (n - 1)
		if se := math.Sqrt(variance / n); math.Abs(m-mean) > 5*se {
			t.Errorf("RNG %s on %s: mean %.5f, want %.5f ± %.5f", name, under.Name(), m, mean, 5*se)
		}
		if se := math.Sqrt((m4 - variance*variance) / n); math.Abs(vr-variance) > 5*se {
			t.Errorf("RNG %s on %s: variance %.5f, want %.5f ± %.5f", name, under.Name(), vr, variance, 5*se)
		}
	}
	stats("RandomUniform float32", got[1].f, 0.5, 1.0/12, 1.0/80)
	stats("RandomNormal float32", got[2].f, 0, 1, 3)
	stats("RandomUniform float64", got[3].f, 0.5, 1.0/12, 1.0/80)
	for _, v := range append(slices.Clone(got[1].f), got[3].f...) {
		if v < 0 || v >= 1 {
			t.Errorf("RNG RandomUniform on %s: %g outside [0, 1)", under.Name(), v)
			break
		}
	}
	counts := make([]float64, 10)
	for _, v := range got[4].i {
		if v < 0 || v >= 10 {
			t.Fatalf("RNG RandomIntN(10) on %s: %d", under.Name(), v)
		}
		counts[v]++
	}
	for d, c := range counts { // binomial: n·p ± 5·sqrt(n·p·(1-p))
		if math.Abs(c-nInt/10) > 5*math.Sqrt(nInt*0.1*0.9) {
			t.Errorf("RNG RandomIntN(10) on %s: %v of %d are %d", under.Name(), c, nInt, d)
		}
	}
}

// ---------------------------------------------------------------------------------------------
// Ops the backend does not implement.

// TestOpConformanceNotImplemented: building a graph with an op the backend lacks must fail with an
// error naming the op and saying "not implemented" — never crash. Ops the backend claims
// (Capabilities) are skipped with a log line: then TestOpConformance wants a case for them.
func TestOpConformanceNotImplemented(t *testing.T) {
	under, _ := confBackends(t, "")
	for _, c := range []struct {
		op  backends.OpType
		arg confArg
		fn  func(in []*Node) *Node
	}{
		{backends.OpTypeConvGeneral, arg(f32, 1, 8, 8, 3), func(in []*Node) *Node {
			return Convolve(in[0], Ones(in[0].Graph(), shapes.Make(f32, 3, 3, 3, 4))).NoPadding().Done()
		}},
		{backends.OpTypeReduceWindow, arg(f32, 1, 8, 8, 3), func(in []*Node) *Node { return MaxPool(in[0]).Window(2).Done() }},
		{backends.OpTypeBitCount, arg(i32, 7), un(BitCount)},
		{backends.OpTypeClz, arg(u32, 7), un(Clz)},
		{backends.OpTypeReduceBitwiseAnd, arg(i32, 5, 7), un(func(x *Node) *Node { return ReduceBitwiseAnd(x, 1) })},
		{backends.OpTypeReduceLogicalXor, arg(bl, 5, 7), un(func(x *Node) *Node { return ReduceLogicalXor(x, 1) })},
		{backends.OpTypeEqualTotalOrder, arg(f32, 7), un(func(x *Node) *Node { return EqualTotalOrder(x, x) })},
		{backends.OpTypeComplex, arg(f32, 8), un(func(x *Node) *Node { return Real(FFT(Complex(x, x))) })},
	} {
		t.Run(c.op.String(), func(t *testing.T) {
			if under.Capabilities().Operations[c.op] {
				t.Skipf("%s claims %s: it needs a conformance case instead", under.Name(), c.op)
			}
			in := []confVals{c.arg.generate(confSeed(c.op.String()))}
			_, _, err := confRun1(under, c.fn, in)
			if err == nil {
				t.Fatalf("%s on %s: built and ran, want a \"not implemented\" error", c.op, under.Name())
			}
			msg := err.Error()
			t.Logf("%s: %s", c.op, firstLine(msg))
			if !strings.Contains(msg, "not implemented") || !strings.Contains(msg, c.op.String()) || strings.HasPrefix(msg, "panic: runtime error") {
				t.Errorf("%s on %s: error %q, want one that names the op and says \"not implemented\"", c.op, under.Name(), firstLine(msg))
			}
		})
	}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// TestOpConformanceGenericKernels runs the table with the portable Go kernels forced, so the path
// every CPU without AVX2 takes is tested on this one too.
func TestOpConformanceGenericKernels(t *testing.T) {
	saved := kernels.Path()
	if err := kernels.SetPath(kernels.Generic); err != nil {
		t.Fatal(err)
	}
	defer kernels.SetPath(saved)
	confRunTable(t, cpu.BackendName, confCases())
}
