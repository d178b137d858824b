package kernels

// Tests of every kernel on every kernel set this CPU has, against float64 references: many
// lengths (0, 1, odd, around every vector and unroll edge), unaligned starts, NaN sentinels
// past the end of inputs (a read out of bounds shows up in the result) and canaries past the
// end of outputs (a write out of bounds is caught).

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
)

// forEachPath runs f under every kernel set this CPU has, restoring the previous one after.
func forEachPath(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	saved := Path()
	defer SetPath(saved)
	for _, p := range []string{AVX512, AVX2, Generic} {
		t.Run(p, func(t *testing.T) {
			if err := SetPath(p); err != nil {
				t.Skipf("kernel set %s: %v", p, err)
			}
			f(t)
		})
	}
}

var nan32 = float32(math.NaN())

const canary = float32(-12345.678)

// guarded returns n random values in [-1, 1) starting off floats into a larger array whose
// other elements are NaN (so that reading past either end poisons a result). The capacity ends
// with the slice: s[:cap(s)] cannot reach the poison.
func guarded(r *rand.Rand, n, off int) []float32 {
	back := make([]float32, off+n+40)
	for i := range back {
		back[i] = nan32
	}
	s := back[off : off+n : off+n]
	for i := range s {
		s[i] = r.Float32()*2 - 1
	}
	return s
}

// output returns n canary values at offset off in a larger canary-filled array, and a check
// that nothing outside the slice changed.
func output(n, off int) ([]float32, func(t *testing.T)) {
	back := make([]float32, off+n+40)
	for i := range back {
		back[i] = canary
	}
	return back[off : off+n : off+n], func(t *testing.T) {
		t.Helper()
		for i, v := range back {
			if (i < off || i >= off+n) && v != canary {
				t.Fatalf("write out of bounds at %d (slice [%d:%d])", i, off, off+n)
			}
		}
	}
}

// near reports whether got is within float32 rounding of want for a sum of terms whose
// absolute values add up to mag.
func near(got float32, want, mag float64) bool {
	return math.Abs(float64(got)-want) <= 1e-5*mag+1e-30
}

// lengths: every length up to 70 (all vector, unroll and tail edges of both vector widths),
// then a few large ones.
func lengths() []int {
	var ns []int
	for n := 0; n <= 70; n++ {
		ns = append(ns, n)
	}
	return append(ns, 127, 128, 129, 255, 256, 257, 1000, 4099)
}

func TestSetPath(t *testing.T) {
	saved := Path()
	defer SetPath(saved)
	if err := SetPath("sse9"); err == nil || !strings.Contains(err.Error(), "unknown") {
		t.Errorf("SetPath(sse9) = %v, want an unknown-set error", err)
	}
	if Path() != saved {
		t.Errorf("failed SetPath changed the path to %s", Path())
	}
	ps := Paths()
	if len(ps) == 0 || ps[len(ps)-1] != Generic || ps[0] != bestLevelName() {
		t.Errorf("Paths() = %v", ps)
	}
	for _, p := range []string{AVX512, AVX2, Generic} {
		err := SetPath(p)
		has := false
		for _, q := range ps {
			has = has || q == p
		}
		if has != (err == nil) {
			t.Errorf("SetPath(%s) = %v, but Paths() = %v", p, err, ps)
		}
		if err == nil && Path() != p {
			t.Errorf("after SetPath(%s), Path() = %s", p, Path())
		}
	}
}

func bestLevelName() string { return names[bestLevel()] }

func TestSum(t *testing.T) {
	forEachPath(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(5, 6))
		for _, n := range lengths() {
			a := guarded(r, n, n%4)
			var want, mag float64
			for _, v := range a {
				want += float64(v)
				mag += math.Abs(float64(v))
			}
			if got := Sum(a); !near(got, want, mag) {
				t.Fatalf("Sum n=%d: %g, want %g", n, got, want)
			}
		}
		inf := float32(math.Inf(1))
		if got := Sum([]float32{1, inf, 2}); !math.IsInf(float64(got), 1) {
			t.Errorf("Sum with +Inf = %g", got)
		}
		if got := Sum([]float32{1, nan32, 2}); got == got {
			t.Errorf("Sum with NaN = %g", got)
		}
	})
}

func TestMax(t *testing.T) {
	forEachPath(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(7, 8))
		if got := Max(nil); !math.IsInf(float64(got), -1) {
			t.Errorf("Max(nil) = %g, want -Inf", got)
		}
		for _, n := range lengths() {
			if n == 0 {
				continue
			}
			a := guarded(r, n, n%5)
			want := float32(math.Inf(-1))
			for _, v := range a {
				want = max(want, v)
			}
			if got := Max(a); got != want {
				t.Fatalf("Max n=%d: %g, want %g", n, got, want)
			}
			// The maximum at every position (first, last, in the tail).
			for _, pos := range []int{0, n - 1, n / 2, n - n%16} {
				if pos >= n {
					continue
				}
				saved := a[pos]
				a[pos] = 7
				if got := Max(a); got != 7 {
					t.Fatalf("Max n=%d with 7 at %d: %g", n, pos, got)
				}
				a[pos] = nan32
				if got := Max(a); got == got {
					t.Fatalf("Max n=%d with NaN at %d: %g, want NaN", n, pos, got)
				}
				a[pos] = saved
			}
		}
		neg := []float32{-3, float32(math.Inf(-1)), -2.5, -7}
		if got := Max(neg); got != -2.5 {
			t.Errorf("Max(%v) = %g", neg, got)
		}
		allInf := []float32{float32(math.Inf(-1)), float32(math.Inf(-1))}
		if got := Max(allInf); !math.IsInf(float64(got), -1) {
			t.Errorf("Max(-Inf, -Inf) = %g", got)
		}
	})
}

func TestElementwise(t *testing.T) {
	type binop struct {
		name string
		f    func(a, b, out []float32)
		ref  func(a, b float32) float32
	}
	ops := []binop{
		{"Add", Add, func(a, b float32) float32 { return a + b }},
		{"Sub", Sub, func(a, b float32) float32 { return a - b }},
		{"Mul", Mul, func(a, b float32) float32 { return a * b }},
		{"Div", Div, func(a, b float32) float32 { return a / b }},
		{"AddScalar", func(a, _, out []float32) { AddScalar(a, 0.375, out) }, func(a, _ float32) float32 { return a + 0.375 }},
		{"MulScalar", func(a, _, out []float32) { MulScalar(a, -1.5, out) }, func(a, _ float32) float32 { return a * -1.5 }},
		{"Maximum", Maximum, func(a, b float32) float32 { return max(a, b) }},
		{"Minimum", Minimum, func(a, b float32) float32 { return min(a, b) }},
		{"MaximumScalar", func(a, _, out []float32) { MaximumScalar(a, 0, out) }, func(a, _ float32) float32 { return max(a, 0) }},
		{"MinimumScalar", func(a, _, out []float32) { MinimumScalar(a, 0.25, out) }, func(a, _ float32) float32 { return min(a, 0.25) }},
		{"RDivScalar", func(a, _, out []float32) { RDivScalar(a, 1, out) }, func(a, _ float32) float32 { return 1 / a }},
		{"Sign", func(a, _, out []float32) { Sign(a, out) }, func(a, _ float32) float32 { return signGo1(a) }},
	}
	forEachPath(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(9, 10))
		for _, o := range ops {
			for _, n := range lengths() {
				a, b := guarded(r, n, n%3), guarded(r, n, (n+1)%3)
				for i := range b {
					b[i] += 2 // away from zero for Div
				}
				if strings.HasPrefix(o.name, "Maxi") || strings.HasPrefix(o.name, "Mini") {
					for i := range b {
						b[i] -= 2.5 // back across a's range, so that both sides win
					}
				}
				want := make([]float32, n)
				for i := range n {
					want[i] = o.ref(a[i], b[i])
				}
				out, ok := output(n, (n+2)%3)
				o.f(a, b, out)
				ok(t)
				for i := range n {
					// Single IEEE operations: the vector result must be bit-identical.
					if math.Float32bits(out[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s n=%d: out[%d] = %g, want %g", o.name, n, i, out[i], want[i])
					}
				}
				// In place: out is a, then out is b.
				a2 := append([]float32(nil), a...)
				o.f(a2, b, a2)
				b2 := append([]float32(nil), b...)
				o.f(a, b2, b2)
				for i := range n {
					if a2[i] != want[i] || b2[i] != want[i] {
						t.Fatalf("%s n=%d in place: [%d] = %g / %g, want %g", o.name, n, i, a2[i], b2[i], want[i])
					}
				}
			}
		}
	})
}

func signGo1(x float32) float32 {
	out := []float32{0}
	signGo([]float32{x}, out)
	return out[0]
}

// TestExtremaAndSignSpecials: NaN on either side wins in Maximum and Minimum (with a scalar
// too), and Sign keeps ±0 and NaN, at every position of vectors and tails.
func TestExtremaAndSignSpecials(t *testing.T) {
	inf := float32(math.Inf(1))
	negZero := float32(math.Copysign(0, -1))
	specials := []float32{nan32, 0, negZero, inf, -inf, 1e-40, -1e-40, 3, -3}
	same := func(got, want float32) bool {
		return got == want || (got != got && want != want)
	}
	forEachPath(t, func(t *testing.T) {
		for _, n := range []int{1, 7, 8, 9, 16, 17, 40, 67} {
			for p := range n {
				for _, x := range specials {
					for _, y := range specials {
						a, b := make([]float32, n), make([]float32, n)
						for i := range a {
							a[i], b[i] = float32(i)-5, 2-float32(i)
						}
						a[p], b[p] = x, y
						out := make([]float32, n)
						for _, c := range []struct {
							name string
							f    func()
							want float32
						}{
							{"Maximum", func() { Maximum(a, b, out) }, max(x, y)},
							{"Minimum", func() { Minimum(a, b, out) }, min(x, y)},
							{"MaximumScalar", func() { MaximumScalar(a, y, out) }, max(x, y)},
							{"MinimumScalar", func() { MinimumScalar(a, y, out) }, min(x, y)},
							{"Sign", func() { Sign(a, out) }, signGo1(x)},
						} {
							c.f()
							if !same(out[p], c.want) {
								t.Fatalf("%s n=%d at %d of (%g, %g) = %g, want %g", c.name, n, p, x, y, out[p], c.want)
							}
							if c.name == "Sign" && math.Signbit(float64(out[p])) != math.Signbit(float64(c.want)) {
								t.Fatalf("Sign(%g) = %g, want %g", x, out[p], c.want)
							}
						}
					}
				}
			}
		}
	})
}

// TestElementwiseLonger: operands longer than out; only len(out) elements are touched.
func TestElementwiseLonger(t *testing.T) {
	forEachPath(t, func(t *testing.T) {
		a, b := []float32{1, 2, 3, 4}, []float32{10, 20, 30, 40}
		out := make([]float32, 2)
		Add(a, b, out)
		if out[0] != 11 || out[1] != 22 {
			t.Errorf("Add = %v", out)
		}
		Exp(a, out)
		if math.Abs(float64(out[1])-math.Exp(2)) > 1e-6 {
			t.Errorf("Exp = %v", out)
		}
	})
}

// expWant checks e^x: relative error 2e-7 for normal results, absolute 1e-45 (a subnormal
// step) below, +Inf above the range, NaN for NaN.
func expCheck(t *testing.T, x, got float32) {
	t.Helper()
	want := math.Exp(float64(x))
	g := float64(got)
	switch {
	case math.IsNaN(want):
		if !math.IsNaN(g) {
			t.Fatalf("exp(%g) = %g, want NaN", x, g)
		}
	case want > math.MaxFloat32:
		if !math.IsInf(g, 1) {
			t.Fatalf("exp(%g) = %g, want +Inf", x, g)
		}
	case want < 0x1p-126:
		if math.Abs(g-want) > 1.5e-45 {
			t.Fatalf("exp(%g) = %g, want %g", x, g, want)
		}
	default:
		if math.Abs(g-want) > 2e-7*want {
			t.Fatalf("exp(%g) = %g, want %g (relative error %.3g)", x, g, want, math.Abs(g-want)/want)
		}
	}
}

func TestExp(t *testing.T) {
	forEachPath(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(11, 12))
		var xs []float32
		for x := float32(-110); x < 95; x += 0.00731 {
			xs = append(xs, x)
		}
		for range 20000 {
			xs = append(xs, r.Float32()*175-87)
		}
		inf := float32(math.Inf(1))
		xs = append(xs, 0, float32(math.Copysign(0, -1)), 1, -1, inf, -inf, nan32, 88.72, 88.7228, 88.73,
			-87.33, -87.34, -103.27, -103.28, -103.97, -104, -200, 200, 1e-8, -1e-8, 0.34657359, -0.34657359)
		out := make([]float32, len(xs))
		Exp(xs, out)
		for i, x := range xs {
			expCheck(t, x, out[i])
		}
		one := []float32{5}
		if Exp([]float32{-inf}, one); one[0] != 0 {
			t.Errorf("exp(-Inf) = %g", one[0])
		}
		checkTails(t, r, "Exp", Exp, xs, out, 1000)
	})
}

// checkTails runs f on short and unaligned runs of xs from offset off on (the kernels' tails),
// into a guarded output and in place, and wants want's values there bit for bit: what the long
// run gave.
func checkTails(t *testing.T, r *rand.Rand, name string, f func(a, out []float32), xs, want []float32, off int) {
	t.Helper()
	for _, n := range lengths() {
		if n > 300 {
			continue
		}
		at := off + 37*n
		in := guarded(r, n, n%3)
		copy(in, xs[at:at+n])
		o, ok := output(n, 2)
		f(in, o)
		ok(t)
		f(in, in)
		for i := range n {
			if math.Float32bits(o[i]) != math.Float32bits(want[at+i]) || math.Float32bits(in[i]) != math.Float32bits(want[at+i]) {
				t.Fatalf("%s n=%d: [%d] = %g / %g in place, want %g", name, n, i, o[i], in[i], want[at+i])
			}
		}
	}
}

// Logistic gives, bit for bit, the four passes it fuses (under each kernel set), over the
// exponential's range and its edges, in every tail length and in place; and its closed form
// within float32 rounding.
func TestLogistic(t *testing.T) {
	forEachPath(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(19, 20))
		var xs []float32
		for x := float32(-110); x < 110; x += 0.0133 {
			xs = append(xs, x)
		}
		for range 20000 {
			xs = append(xs, r.Float32()*40-20)
		}
		inf := float32(math.Inf(1))
		xs = append(xs, 0, float32(math.Copysign(0, -1)), inf, -inf, 88.72, -88.73, 103.97, 104, -104, 200, -200, 1e-8, -1e-8, 1e-40)
		want := make([]float32, len(xs))
		MulScalar(xs, -1, want)
		Exp(want, want)
		AddScalar(want, 1, want)
		RDivScalar(want, 1, want)
		got := make([]float32, len(xs))
		Logistic(xs, got)
		for i, x := range xs {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("Logistic(%g) = %g, the four passes give %g", x, got[i], want[i])
			}
			if c := 1 / (1 + math.Exp(-float64(x))); math.Abs(float64(got[i])-c) > 2e-7*c+1e-38 {
				t.Fatalf("Logistic(%g) = %g, 1/(1+e^-x) = %g", x, got[i], c)
			}
		}
		nan := []float32{nan32}
		if Logistic(nan, nan); !math.IsNaN(float64(nan[0])) {
			t.Errorf("Logistic(NaN) = %g", nan[0])
		}
		checkTails(t, r, "Logistic", Logistic, xs, want, 500)
	})
}

// TestExpPathsAgree: the vector sets agree with the portable one within an ulp or two.
func TestExpPathsAgree(t *testing.T) {
	saved := Path()
	defer SetPath(saved)
	xs := make([]float32, 0, 40000)
	for x := float32(-90); x < 90; x += 0.0045 {
		xs = append(xs, x)
	}
	ref := make([]float32, len(xs))
	SetPath(Generic)
	Exp(xs, ref)
	for _, p := range Paths() {
		SetPath(p)
		out := make([]float32, len(xs))
		Exp(xs, out)
		for i := range xs {
			if d := math.Abs(float64(out[i]) - float64(ref[i])); d > 2.4e-7*float64(ref[i])+1.5e-45 {
				t.Fatalf("%s: exp(%g) = %g, generic %g", p, xs[i], out[i], ref[i])
			}
		}
	}
}

func TestDotRows(t *testing.T) {
	forEachPath(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(13, 14))
		ks := []int{0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 47, 48, 63, 64, 65, 70, 100, 256, 257, 270, 288, 768}
		for _, k := range ks {
			for _, rows := range []int{0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 33} {
				ldw := k + r.IntN(3)
				w := guarded(r, max(0, (rows-1)*ldw+k), r.IntN(4))
				x := guarded(r, k, r.IntN(4))
				y, ok := output(rows, 1)
				DotRows(w, ldw, x, y)
				ok(t)
				for i := range rows {
					var want, mag float64
					for j := range k {
						p := float64(w[i*ldw+j]) * float64(x[j])
						want += p
						mag += math.Abs(p)
					}
					if !near(y[i], want, mag) {
						t.Fatalf("DotRows k=%d rows=%d ldw=%d: y[%d] = %g, want %g", k, rows, ldw, i, y[i], want)
					}
				}
			}
		}
	})
}

func TestVecMat(t *testing.T) {
	forEachPath(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(17, 18))
		ns := []int{0, 1, 3, 7, 8, 9, 15, 16, 17, 31, 33, 64, 127, 128, 129, 200, 256, 300}
		for _, k := range []int{0, 1, 2, 5, 8, 16, 48, 64, 65} {
			for _, n := range ns {
				ldb := n + r.IntN(3)
				b := guarded(r, max(0, (k-1)*ldb+n), r.IntN(4))
				x := guarded(r, k, r.IntN(4))
				y, ok := output(n, r.IntN(4))
				VecMat(x, b, ldb, y)
				ok(t)
				for j := range n {
					var want, mag float64
					for p := range k {
						v := float64(x[p]) * float64(b[p*ldb+j])
						want += v
						mag += math.Abs(v)
					}
					if !near(y[j], want, mag) {
						t.Fatalf("VecMat k=%d n=%d ldb=%d: y[%d] = %g, want %g", k, n, ldb, j, y[j], want)
					}
				}
			}
		}
	})
}

func TestMatMulNT(t *testing.T) {
	forEachPath(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(15, 16))
		type dims struct{ m, n, k int }
		var cases []dims
		for m := 1; m <= 20; m++ {
			for range 6 {
				cases = append(cases, dims{m, r.IntN(41), r.IntN(71)})
			}
		}
		for _, m := range []int{1, 4, 8} {
			cases = append(cases, dims{m, 768, 288}, dims{m, 33, 768})
		}
		cases = append(cases, dims{0, 5, 5}, dims{3, 0, 5}, dims{3, 5, 0})
		for _, d := range cases {
			ldx, ldw, ldy := d.k+r.IntN(3), d.k+r.IntN(3), d.n+r.IntN(3)
			x := guarded(r, max(0, (d.m-1)*ldx+d.k), r.IntN(4))
			w := guarded(r, max(0, (d.n-1)*ldw+d.k), r.IntN(4))
			if d.m == 0 || d.n == 0 {
				MatMulNT(d.m, d.n, d.k, x, ldx, w, ldw, nil, ldy)
				continue
			}
			y, ok := output((d.m-1)*ldy+d.n, r.IntN(4))
			MatMulNT(d.m, d.n, d.k, x, ldx, w, ldw, y, ldy)
			ok(t)
			for i := range d.m {
				for j := range d.n {
					var want, mag float64
					for p := range d.k {
						v := float64(x[i*ldx+p]) * float64(w[j*ldw+p])
						want += v
						mag += math.Abs(v)
					}
					if !near(y[i*ldy+j], want, mag) {
						t.Fatalf("MatMulNT %v ld %d,%d,%d: y[%d,%d] = %g, want %g", d, ldx, ldw, ldy, i, j, y[i*ldy+j], want)
					}
				}
				for j := d.n; j < ldy && i < d.m-1; j++ {
					if y[i*ldy+j] != canary {
						t.Fatalf("MatMulNT %v: wrote y[%d,%d] past n", d, i, j)
					}
				}
			}
		}
	})
}

// TestBoundsPanic: calls whose slices are too short panic with a message, before any access.
func TestBoundsPanic(t *testing.T) {
	calls := map[string]func(){
		"DotRows":      func() { DotRows(make([]float32, 10), 4, make([]float32, 4), make([]float32, 3)) },
		"DotRows ldw":  func() { DotRows(make([]float32, 100), 3, make([]float32, 4), make([]float32, 3)) },
		"MatMulNT x":   func() { MatMulNT(2, 2, 4, make([]float32, 7), 4, make([]float32, 8), 4, make([]float32, 4), 2) },
		"MatMulNT y":   func() { MatMulNT(2, 2, 4, make([]float32, 8), 4, make([]float32, 8), 4, make([]float32, 3), 2) },
		"MatMulNT neg": func() { MatMulNT(-1, 2, 4, nil, 4, nil, 4, nil, 2) },
		"Add":          func() { Add(make([]float32, 3), make([]float32, 2), make([]float32, 3)) },
		"AddScalar":    func() { AddScalar(make([]float32, 2), 1, make([]float32, 3)) },
		"Exp":          func() { Exp(make([]float32, 2), make([]float32, 3)) },
		"Sgemm A": func() {
			Sgemm(false, false, 4, 4, 4, 1, make([]float32, 15), 4, make([]float32, 16), 4, 0, make([]float32, 16), 4)
		},
		"Sgemm B^T": func() {
			Sgemm(false, true, 4, 4, 4, 1, make([]float32, 16), 4, make([]float32, 15), 4, 0, make([]float32, 16), 4)
		},
		"Sgemm C ldc": func() {
			Sgemm(false, false, 4, 4, 4, 1, make([]float32, 16), 4, make([]float32, 16), 4, 0, make([]float32, 16), 3)
		},
		"Sgemm overflow": func() {
			Sgemm(false, false, 3, 4, 4, 1, make([]float32, 16), math.MaxInt/2, make([]float32, 16), 4, 0, make([]float32, 16), 4)
		},
	}
	for name, f := range calls {
		func() {
			defer func() {
				msg, _ := recover().(string)
				if !strings.HasPrefix(msg, "kernels: ") {
					t.Errorf("%s: recovered %q, want a kernels: panic", name, msg)
				}
			}()
			f()
		}()
	}
}

// TestNoAllocs: the vector kernels do not make their arguments escape or allocate.
func TestNoAllocs(t *testing.T) {
	forEachPath(t, func(t *testing.T) {
		var a, b, out [100]float32
		var w [100 * 40]float32
		n := testing.AllocsPerRun(10, func() {
			Add(a[:], b[:], out[:])
			MulScalar(a[:], 3, out[:])
			Exp(a[:], out[:])
			Sum(a[:])
			Max(a[:])
			DotRows(w[:], 100, a[:], out[:40])
			MatMulNT(2, 40, 50, a[:], 50, w[:], 100, out[:], 40)
		})
		if n != 0 {
			t.Errorf("%v allocations per run", n)
		}
	})
}

func ExampleDotRows() {
	w := []float32{1, 2, 3, 4, 5, 6} // 2 rows of 3
	y := make([]float32, 2)
	DotRows(w, 3, []float32{1, 0, -1}, y)
	fmt.Println(y)
	// Output: [-2 -2]
}

// TestExpExhaustive checks every float32 in [-87, 88] (2.2e9 values, about 20 s per kernel
// set); it runs only with POSFORMER_EXHAUSTIVE=1.
func TestExpExhaustive(t *testing.T) {
	if os.Getenv("POSFORMER_EXHAUSTIVE") != "1" {
		t.Skip("set POSFORMER_EXHAUSTIVE=1")
	}
	forEachPath(t, func(t *testing.T) {
		const chunk = 1 << 16
		in, out := make([]float32, chunk), make([]float32, chunk)
		worst, worstX := 0.0, float32(0)
		// Bit patterns: [0, 88] then [-87, -0].
		for _, r := range [][2]uint32{{0, math.Float32bits(88)}, {0x80000000, math.Float32bits(-87)}} {
			for lo := uint64(r[0]); lo <= uint64(r[1]); lo += chunk {
				n := int(min(chunk, uint64(r[1])-lo+1))
				for i := range n {
					in[i] = math.Float32frombits(uint32(lo) + uint32(i))
				}
				Exp(in[:n], out[:n])
				for i := range n {
					want := math.Exp(float64(in[i]))
					if e := math.Abs(float64(out[i])-want) / want; e > worst {
						worst, worstX = e, in[i]
					}
				}
			}
		}
		t.Logf("max relative error %.3g at x = %g", worst, worstX)
		if worst > 2e-7 {
			t.Errorf("max relative error %.3g at x = %g", worst, worstX)
		}
	})
}
