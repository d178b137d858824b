package cpu

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/gomlx/gomlx/backends"
)

// The float32 slice functions against float64 math.*: the error in float32 ulps of the exact
// result (math.* in float64 is taken as exact: its error is about 2^-29 of a float32 ulp).
// MATHF32_EXHAUSTIVE=1 checks every float32 of each range (about 5 minutes on two cores);
// otherwise a dense subset (every stride-th bit pattern, the stride odd so that all mantissa
// bits vary).

type mathF32Case struct {
	name string
	fn   func(a, out []float32)
	ref  func(float64) float64
}

var mathF32Cases = map[string]mathF32Case{
	"tanh":  {"tanh", tanh32, math.Tanh},
	"log":   {"log", log32, math.Log},
	"log1p": {"log1p", log1p32, math.Log1p},
	"sin":   {"sin", sin32, math.Sin},
	"cos":   {"cos", cos32, math.Cos},
}

// ulpErr is |got - want| in units of the float32 ulp at want (the spacing of float32 values
// at |want|; subnormal spacing below the normal range). Equal infinities and NaNs give 0.
func ulpErr(got float32, want float64) float64 {
	g := float64(got)
	if math.IsNaN(want) || math.IsNaN(g) {
		if math.IsNaN(want) && math.IsNaN(g) {
			return 0
		}
		return math.Inf(1)
	}
	if math.IsInf(want, 0) || math.IsInf(g, 0) || math.Abs(want) > math.MaxFloat32 {
		if float32(want) == got {
			return 0
		}
		return math.Inf(1)
	}
	// |want| in [2^e, 2^(e+1)): the ulp is 2^(e-23), and 2^-149 below 2^-126.
	e := int(math.Float64bits(want)>>52&0x7ff) - 1023
	ulp := math.Float64frombits(uint64(max(e, -126)-23+1023) << 52)
	return math.Abs(g-want) / ulp
}

// sweepBits checks fn on the float32 bit patterns lo, lo+stride, ... <= hi (both signs if
// signs) and returns the largest error and where it was.
func sweepBits(c mathF32Case, lo, hi, stride uint32, signs bool) (worst float64, at float32) {
	type res struct {
		worst float64
		at    float32
	}
	const chunk = 1 << 16
	starts := make(chan uint32, 64)
	results := make(chan res, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in := make([]float32, 0, chunk*2)
			out := make([]float32, chunk*2)
			var r res
			for s := range starts {
				in = in[:0]
				for b, k := uint64(s), 0; b <= uint64(hi) && k < chunk; b, k = b+uint64(stride), k+1 {
					in = append(in, math.Float32frombits(uint32(b)))
					if signs {
						in = append(in, math.Float32frombits(uint32(b)|1<<31))
					}
				}
				c.fn(in, out[:len(in)])
				for i, x := range in {
					if e := ulpErr(out[i], c.ref(float64(x))); e > r.worst || math.IsNaN(e) {
						r = res{e, x}
					}
				}
			}
			results <- r
		}()
	}
	for s := uint64(lo); s <= uint64(hi); s += uint64(stride) * chunk {
		starts <- uint32(s)
	}
	close(starts)
	wg.Wait()
	close(results)
	for r := range results {
		if r.worst > worst {
			worst, at = r.worst, r.at
		}
	}
	return worst, at
}

func f32bits(x float32) uint32 { return math.Float32bits(x) }

func TestMathF32Sweep(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skips the 1-ulp sweep of the float32 math functions over their ranges (about 12 s); run it with go test ./engine/cpu -run TestMathF32Sweep")
	}
	// MATHF32_EXHAUSTIVE=1, or a comma-separated list of the functions to check exhaustively
	// (the others are skipped).
	env := os.Getenv("MATHF32_EXHAUSTIVE")
	exhaustive := env != ""
	only := map[string]bool{}
	if env != "" && env != "1" {
		for _, f := range strings.Split(env, ",") {
			only[f] = true
		}
	}
	stride := uint32(97)
	if exhaustive {
		stride = 1
	}
	// Each range: a bit-pattern interval of non-negative floats (with their negatives if signs),
	// and the bound asserted: below 1 ulp, i.e. got is one of the two float32 values around the
	// exact result (0.5 would be correct rounding).
	ranges := []struct {
		fn     string
		lo, hi float32
		signs  bool
	}{
		{"tanh", 0, 20, true},
		{"tanh", 20, math.MaxFloat32, true},
		{"log", 0, math.MaxFloat32, false}, // from +0: subnormals included
		{"log1p", 0, math.MaxFloat32, false},
		{"log1p", 0, 1, true}, // and (-1, 0]: its negatives
		{"sin", 0, 1e4, true},
		{"sin", 1e4, 1 << 20, true}, // past the fast path's end (trigFast) too
		{"cos", 0, 1e4, true},
		{"cos", 1e4, 1 << 20, true},
	}
	for _, rg := range ranges {
		if len(only) > 0 && !only[rg.fn] {
			continue
		}
		c := mathF32Cases[rg.fn]
		name := fmt.Sprintf("%s[%g,%g]", rg.fn, rg.lo, rg.hi)
		worst, at := sweepBits(c, f32bits(rg.lo), f32bits(rg.hi), stride, rg.signs)
		t.Logf("%s: max error %.6f ulp at %g (%#x)", name, worst, at, f32bits(at))
		if !(worst < 1) {
			t.Errorf("%s: error %g ulp at %g (%#x): got %g, want %g", name, worst, at, f32bits(at),
				one(c.fn, at), c.ref(float64(at)))
		}
	}
}

func one(fn func(a, out []float32), x float32) float32 {
	out := []float32{0}
	fn([]float32{x}, out)
	return out[0]
}

// TestMathF32Huge: sin and cos of large arguments (math.Sin/Cos per element) and a log-spaced
// sweep of all magnitudes.
func TestMathF32Huge(t *testing.T) {
	var xs []float32
	for x := float32(1); x < math.MaxFloat32/1.001; x *= 1.001 {
		xs = append(xs, x, -x)
	}
	xs = append(xs, math.MaxFloat32, -math.MaxFloat32, trigFast, -trigFast, 1e7, 3e9, 1e30)
	// Around 2^53, where 1+x in float64 rounds and so may (1+x)-1 (log1p).
	for b := f32bits(1 << 50); b < f32bits(1<<56); b += 1021 {
		xs = append(xs, math.Float32frombits(b))
	}
	xs = append(xs, 1<<53, math.Nextafter32(1<<53, 0), math.Nextafter32(1<<53, 1<<60), 1<<54)
	out := make([]float32, len(xs))
	for _, fn := range []string{"sin", "cos", "tanh", "log", "log1p"} {
		c := mathF32Cases[fn]
		c.fn(xs, out)
		for i, x := range xs {
			if e := ulpErr(out[i], c.ref(float64(x))); !(e < 1) {
				t.Errorf("%s(%g) = %g, want %g (%g ulp)", fn, x, out[i], c.ref(float64(x)), e)
			}
		}
	}
}

func TestMathF32Special(t *testing.T) {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	negZero := float32(math.Copysign(0, -1))
	tiny := math.Float32frombits(1) // smallest subnormal
	cases := []struct {
		fn   string
		x    float32
		want float32
	}{
		{"tanh", 0, 0}, {"tanh", negZero, negZero}, {"tanh", inf, 1}, {"tanh", -inf, -1},
		{"tanh", nan, nan}, {"tanh", tiny, tiny}, {"tanh", -tiny, -tiny}, {"tanh", 1e-20, 1e-20},
		{"tanh", 9.5, 1}, {"tanh", -100, -1}, {"tanh", math.MaxFloat32, 1},
		{"log", 0, -inf}, {"log", negZero, -inf}, {"log", -1, nan}, {"log", -inf, nan},
		{"log", inf, inf}, {"log", nan, nan}, {"log", 1, 0}, {"log", tiny, float32(math.Log(float64(tiny)))},
		{"log1p", 0, 0}, {"log1p", negZero, negZero}, {"log1p", -1, -inf}, {"log1p", -2, nan},
		{"log1p", -inf, nan}, {"log1p", inf, inf}, {"log1p", nan, nan}, {"log1p", tiny, tiny},
		{"log1p", -tiny, -tiny}, {"log1p", 1e-30, 1e-30}, {"log1p", math.MaxFloat32, float32(math.Log1p(math.MaxFloat32))},
		{"sin", 0, 0}, {"sin", negZero, negZero}, {"sin", inf, nan}, {"sin", -inf, nan}, {"sin", nan, nan},
		{"sin", tiny, tiny}, {"sin", -tiny, -tiny}, {"sin", 1e-20, 1e-20},
		{"cos", 0, 1}, {"cos", negZero, 1}, {"cos", inf, nan}, {"cos", -inf, nan}, {"cos", nan, nan},
		{"cos", tiny, 1},
	}
	for _, c := range cases {
		got := one(mathF32Cases[c.fn].fn, c.x)
		same := got == c.want && math.Signbit(float64(got)) == math.Signbit(float64(c.want)) ||
			got != got && c.want != c.want
		if !same {
			t.Errorf("%s(%g) = %g, want %g", c.fn, c.x, got, c.want)
		}
	}
	// Lengths: out shorter than a is fine, the rest of out untouched beyond len(out).
	a := []float32{1, 2, 3}
	out := make([]float32, 2)
	for _, c := range mathF32Cases {
		c.fn(a, out)
		c.fn(a[:0], out[:0])
	}
}

// BenchmarkMathF32: ns per element on 65536 elements of the slice functions against the float64
// path they replace (a closure per element, as floatUnary's).
func BenchmarkMathF32(b *testing.B) {
	const n = 65536
	in := map[string][]float32{}
	mk := func(f func(i int) float32) []float32 {
		s := make([]float32, n)
		for i := range s {
			s[i] = f(i)
		}
		return s
	}
	// Pseudo-random arguments in each function's typical range.
	rnd := func(i int) float64 { return float64(uint32(i)*2654435761) / (1 << 32) } // [0, 1)
	in["tanh"] = mk(func(i int) float32 { return float32(6*rnd(i) - 3) })
	in["log"] = mk(func(i int) float32 { return float32(math.Exp(20*rnd(i) - 10)) })
	in["log1p"] = mk(func(i int) float32 { return float32(10 * rnd(i)) })
	in["sin"] = mk(func(i int) float32 { return float32(200*rnd(i) - 100) })
	in["cos"] = in["sin"]
	out := make([]float32, n)
	for _, fn := range []string{"tanh", "log", "log1p", "sin", "cos"} {
		c := mathF32Cases[fn]
		a := in[fn]
		b.Run(fn+"/f32", func(b *testing.B) {
			for b.Loop() {
				c.fn(a, out)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/elem")
		})
		b.Run(fn+"/f64closure", func(b *testing.B) {
			f := c.ref
			g := func(x float32) float32 { return float32(f(float64(x))) }
			for b.Loop() {
				mapRange(a, out, g)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/elem")
		})
	}
}

// Every fusable unary op has a slice function for evalFused (or a case of its own there).
func TestFusableUnaryHaveSliceFunctions(t *testing.T) {
	own := map[backends.OpType]bool{backends.OpTypeNeg: true, backends.OpTypeAbs: true, backends.OpTypeSqrt: true, backends.OpTypeRsqrt: true}
	binary := map[backends.OpType]bool{backends.OpTypeAdd: true, backends.OpTypeSub: true, backends.OpTypeMul: true,
		backends.OpTypeDiv: true, backends.OpTypeMax: true, backends.OpTypeMin: true}
	for op := range fusableOps {
		if !own[op] && !binary[op] && vecUnary32[op] == nil {
			t.Errorf("fusable %s has no vecUnary32 function", op)
		}
	}
}
