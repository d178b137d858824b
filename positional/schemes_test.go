package positional

// Closed-form and algebraic checks of every scheme: each test states the paper's formula
// independently of the code under test and compares numbers.

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
)

// Every scheme implements the hooks its doc comment promises.
var (
	_ Input    = (*Sinusoidal)(nil)
	_ QueryKey = (*RoPE)(nil)
	_ Bias     = (*ALiBi)(nil)
	_ Input    = (*Learned)(nil)
	_ Limited  = (*Learned)(nil)
	_ Scheme   = NoPE{}
)

func iotaPositions(n int) [][]int32 {
	row := make([]int32, n)
	for i := range row {
		row[i] = int32(i)
	}
	return [][]int32{row}
}

// ---------------------------------------------------------------------------------------------
// Sinusoidal

// Frequencies and a few table entries, written out by hand from PE(pos,2i) = sin(pos/10000^(2i/d)).
func TestSinusoidalHandValues(t *testing.T) {
	const d = 16
	// With d = 16, ω_i = 10000^(-2i/16) = 10^(-i/2).
	wantFreq := []float64{1, 0.31622776601683794, 0.1, 0.031622776601683794, 0.01, 0.0031622776601683794, 0.001, 0.00031622776601683794}
	got := Frequencies(d, 10000)
	if len(got) != d/2 {
		t.Fatalf("Frequencies(16, 10000) has %d entries, want 8", len(got))
	}
	for i := range wantFreq {
		if math.Abs(got[i]-wantFreq[i]) > 1e-15 {
			t.Errorf("ω_%d = %.17g, want %.17g", i, got[i], wantFreq[i])
		}
	}
	table := SinusoidalTable(50, d, 10000)
	for _, c := range []struct {
		pos, col int
		want     float64
	}{
		{0, 0, 0},                  // sin(0)
		{0, 1, 1},                  // cos(0)
		{1, 0, 0.8414709848078965}, // sin(1)
		{1, 1, 0.5403023058681398}, // cos(1)
		{10, 2, math.Sin(10 / math.Pow(10000, 2.0/16))},   // i=1: sin(10/10000^(2/16))
		{7, 9, math.Cos(7 / math.Pow(10000, 8.0/16))},     // i=4: cos(7/100) = cos(0.07)
		{7, 9, 0.99755100025327959},                       // cos(0.07) as a literal
		{49, 15, math.Cos(49 / math.Pow(10000, 14.0/16))}, // i=7
	} {
		if g := table[c.pos][c.col]; math.Abs(g-c.want) > 1e-12 {
			t.Errorf("table[%d][%d] = %.17g, want %.17g", c.pos, c.col, g, c.want)
		}
	}
}

// The graph (float32) agrees with the float64 closed-form table.
func TestSinusoidalGraphMatchesTable(t *testing.T) {
	const n, d = 50, 16
	out := MustExecOnce(backend(t), func(g *Graph) *Node {
		return SinusoidalGraph(Const(g, iotaPositions(n)), d, 10000, dtypes.Float32)
	})
	if dims := out.Shape().Dimensions; !slices.Equal(dims, []int{1, n, d}) {
		t.Fatalf("shape %v, want [1 %d %d]", dims, n, d)
	}
	flat := tensors.MustCopyFlatData[float32](out)
	table := SinusoidalTable(n, d, 10000)
	worst := 0.0
	for p := range n {
		for c := range d {
			worst = max(worst, math.Abs(float64(flat[p*d+c])-table[p][c]))
		}
	}
	t.Logf("max |graph - table| = %.3g", worst)
	if worst > 1e-5 {
		t.Errorf("graph differs from the closed form by %g", worst)
	}
}

// Arbitrary (non-iota, batched) positions pick the matching table rows, and the Input hook is
// x·embed_scale + PE with the default embed_scale sqrt(dim).
func TestSinusoidalInputHook(t *testing.T) {
	const d = 8
	for _, c := range []struct {
		opts  map[string]any
		scale float64
	}{
		{nil, math.Sqrt(d)},
		{map[string]any{"embed_scale": 1.0}, 1},
	} {
		s, err := New("sinusoidal", c.opts, Arch{Dim: d})
		if err != nil {
			t.Fatal(err)
		}
		pos := [][]int32{{7, 0, 3}, {41, 41, 2}}
		x := make([]float32, 2*3*d)
		r := rand.New(rand.NewPCG(3, 4))
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		out := MustExecOnce(backend(t), func(g *Graph) *Node {
			return s.(Input).Input(nil, Reshape(Const(g, x), 2, 3, d), Const(g, pos))
		})
		flat := tensors.MustCopyFlatData[float32](out)
		table := SinusoidalTable(42, d, 10000)
		for b := range 2 {
			for i := range 3 {
				for k := range d {
					idx := (b*3+i)*d + k
					want := float64(x[idx])*c.scale + table[pos[b][i]][k]
					if math.Abs(float64(flat[idx])-want) > 1e-5 {
						t.Errorf("%v: out[%d,%d,%d] = %g, want %g", c.opts, b, i, k, flat[idx], want)
					}
				}
			}
		}
	}
}

// offsetMatrix is M_k built from the frequencies alone: on each (sin, cos) pair,
// sin(a+b) = sin a cos b + cos a sin b and cos(a+b) = cos a cos b − sin a sin b give
// [sin(ω(p+k)), cos(ω(p+k))] = [[cos kω, sin kω], [−sin kω, cos kω]] · [sin ωp, cos ωp].
func offsetMatrix(k, d int, base float64) [][]float64 {
	m := make([][]float64, d)
	for i := range m {
		m[i] = make([]float64, d)
	}
	for i, w := range Frequencies(d, base) {
		c, s := math.Cos(float64(k)*w), math.Sin(float64(k)*w)
		m[2*i][2*i], m[2*i][2*i+1] = c, s
		m[2*i+1][2*i], m[2*i+1][2*i+1] = -s, c
	}
	return m
}

func matVec(m [][]float64, v []float64) []float64 {
	out := make([]float64, len(m))
	for r := range m {
		for c, x := range v {
			out[r] += m[r][c] * x
		}
	}
	return out
}

// gaussSolve solves A·X = B (A square) by Gaussian elimination with partial pivoting.
func gaussSolve(a, b [][]float64) [][]float64 {
	n, m := len(a), len(b[0])
	w := make([][]float64, n)
	for i := range w {
		w[i] = append(append([]float64{}, a[i]...), b[i]...)
	}
	for c := range n {
		p := c
		for r := c + 1; r < n; r++ {
			if math.Abs(w[r][c]) > math.Abs(w[p][c]) {
				p = r
			}
		}
		w[c], w[p] = w[p], w[c]
		for r := range n {
			if r == c {
				continue
			}
			f := w[r][c] / w[c][c]
			for j := c; j < n+m; j++ {
				w[r][j] -= f * w[c][j]
			}
		}
	}
	x := make([][]float64, n)
	for i := range x {
		x[i] = make([]float64, m)
		for j := range x[i] {
			x[i][j] = w[i][n+j] / w[i][i]
		}
	}
	return x
}

// leastSquaresMap returns the M minimising Σ_rows ||Y_row − M·X_row||², from the normal
// equations (XᵀX)·Mᵀ = XᵀY.
func leastSquaresMap(xs, ys [][]float64) [][]float64 {
	d := len(xs[0])
	gram := make([][]float64, d)
	cross := make([][]float64, d)
	for i := range gram {
		gram[i] = make([]float64, d)
		cross[i] = make([]float64, len(ys[0]))
	}
	for row := range xs {
		for i := range d {
			for j := range d {
				gram[i][j] += xs[row][i] * xs[row][j]
			}
			for j := range ys[0] {
				cross[i][j] += xs[row][i] * ys[row][j]
			}
		}
	}
	mt := gaussSolve(gram, cross)
	m := make([][]float64, len(ys[0]))
	for r := range m {
		m[r] = make([]float64, d)
		for c := range d {
			m[r][c] = mt[c][r]
		}
	}
	return m
}

func maxAbsDiff(a, b [][]float64) float64 {
	if len(a) != len(b) {
		return math.Inf(1) // missing rows are no match
	}
	worst := 0.0
	for i := range a {
		if len(a[i]) != len(b[i]) {
			return math.Inf(1)
		}
		for j := range a[i] {
			worst = max(worst, math.Abs(a[i][j]-b[i][j]))
		}
	}
	return worst
}

// The paper's claim: for each offset k one matrix M_k, built once from the frequencies and so
// independent of pos, satisfies PE(pos+k) = M_k·PE(pos) for every pos.
func TestSinusoidalOffsetIsOneLinearMap(t *testing.T) {
	const d, base = 16, 10000.0
	table := SinusoidalTable(200+10, d, base)
	for _, k := range []int{1, 3, 10} {
		m := offsetMatrix(k, d, base) // constructed once, used for every pos below
		worst := 0.0
		for pos := range 200 {
			got := matVec(m, table[pos])
			for c := range d {
				worst = max(worst, math.Abs(got[c]-table[pos+k][c]))
			}
		}
		t.Logf("k=%d: max over pos<200 of |PE(pos+k) − M_k·PE(pos)| = %.3g", k, worst)
		if worst > 1e-9 {
			t.Errorf("k=%d: PE(pos+k) − M_k·PE(pos) reaches %g", k, worst)
		}
		// M_k is orthogonal (a rotation): it preserves the norm of the code, which is sqrt(d/2).
		for pos := range 5 {
			n := 0.0
			for _, v := range matVec(m, table[pos]) {
				n += v * v
			}
			if math.Abs(n-d/2) > 1e-12 {
				t.Errorf("k=%d: |M_k·PE(%d)|² = %g, want %d", k, pos, n, d/2)
			}
		}
	}
}

// The same statement measured: fit one matrix to the pairs (PE(pos), PE(pos+k)), pos 0..99, by
// least squares and compare it with the analytic M_k.
//
// The fit is identifiable only when the 100 rows span all d directions well. With d = 16 and
// base 10000 they do not: the lowest frequencies (10^-3, 10^-3.5) turn by at most 0.1 rad over
// 100 positions, so their sin columns are nearly proportional to pos and their cos columns to 1;
// cond(X) ≈ 1e14 and the normal equations return a matrix far from M_k that still fits the rows
// to ~1e-7. So the full fit is checked at d = 8 (base 10000) and d = 16 (base 100), and at the
// paper's d = 16, base 10000 each 2×2 block is fitted from its own pair of columns and the full
// fit is checked by its residual only.
func TestSinusoidalOffsetLeastSquares(t *testing.T) {
	const n = 100
	for _, k := range []int{1, 3, 10} {
		for _, c := range []struct {
			d    int
			base float64
		}{{8, 10000}, {16, 100}} {
			table := SinusoidalTable(n+k, c.d, c.base)
			fit := leastSquaresMap(table[:n], table[k:k+n])
			diff := maxAbsDiff(fit, offsetMatrix(k, c.d, c.base))
			t.Logf("k=%d d=%d base=%g: max |M̂ − M_k| = %.3g", k, c.d, c.base, diff)
			if diff > 1e-6 {
				t.Errorf("k=%d d=%d base=%g: least-squares matrix differs from M_k by %g", k, c.d, c.base, diff)
			}
		}

		// d = 16, base 10000: per-pair fits.
		const d, base = 16, 10000.0
		table := SinusoidalTable(n+k, d, base)
		analytic := offsetMatrix(k, d, base)
		for i := range d / 2 {
			xs, ys := make([][]float64, n), make([][]float64, n)
			for p := range n {
				xs[p] = table[p][2*i : 2*i+2]
				ys[p] = table[p+k][2*i : 2*i+2]
			}
			fit := leastSquaresMap(xs, ys)
			block := [][]float64{analytic[2*i][2*i : 2*i+2], analytic[2*i+1][2*i : 2*i+2]}
			if diff := maxAbsDiff(fit, block); diff > 1e-6 {
				t.Errorf("k=%d pair %d: fitted block %v, analytic %v (diff %g)", k, i, fit, block, diff)
			}
		}
		// The full 16×16 fit: one matrix explains all 100 rows.
		fit := leastSquaresMap(table[:n], table[k:k+n])
		res := 0.0
		for p := range n {
			got := matVec(fit, table[p])
			for c := range d {
				res = max(res, math.Abs(got[c]-table[p+k][c]))
			}
		}
		t.Logf("k=%d d=16 base=10000: full fit residual %.3g, |M̂ − M_k| = %.3g (unidentifiable)",
			k, res, maxAbsDiff(fit, analytic))
		if res > 1e-5 {
			t.Errorf("k=%d: no single matrix fits PE(pos) → PE(pos+k): residual %g", k, res)
		}
	}
}

// ---------------------------------------------------------------------------------------------
// RoPE

func newRoPE(t *testing.T, opts map[string]any) *RoPE {
	t.Helper()
	s, err := New("rope", opts, Arch{Dim: 32, NumHeads: 2, NumKVHeads: 2, HeadDim: 16})
	if err != nil {
		t.Fatal(err)
	}
	r, ok := s.(*RoPE)
	if !ok {
		t.Fatalf("rope scheme is %T", s)
	}
	return r
}

var ropeVariants = []map[string]any{
	{"layout": "half", "rotary_fraction": 1.0},
	{"layout": "half", "rotary_fraction": 0.5},
	{"layout": "interleaved", "rotary_fraction": 1.0},
	{"layout": "interleaved", "rotary_fraction": 0.5},
}

func TestRoPEPairsAndFrequencies(t *testing.T) {
	for _, opts := range ropeVariants {
		r := newRoPE(t, opts)
		wantR := 16
		if opts["rotary_fraction"] == 0.5 {
			wantR = 8
		}
		if r.RotaryDims() != wantR {
			t.Errorf("%v: RotaryDims = %d, want %d", opts, r.RotaryDims(), wantR)
		}
		inv := r.InvFreq()
		if len(inv) != wantR/2 {
			t.Fatalf("%v: %d frequencies, want %d", opts, len(inv), wantR/2)
		}
		for i, f := range inv {
			if want := math.Pow(10000, -float64(2*i)/float64(wantR)); math.Abs(f-want) > 1e-15 {
				t.Errorf("%v: θ_%d = %g, want %g", opts, i, f, want)
			}
		}
		seen := map[int]bool{}
		for i := range wantR / 2 {
			a, b := r.Pair(i)
			wa, wb := i, i+wantR/2
			if opts["layout"] == "interleaved" {
				wa, wb = 2*i, 2*i+1
			}
			if a != wa || b != wb {
				t.Errorf("%v: Pair(%d) = (%d, %d), want (%d, %d)", opts, i, a, b, wa, wb)
			}
			if seen[a] || seen[b] || a >= wantR || b >= wantR {
				t.Errorf("%v: Pair(%d) = (%d, %d) reuses a dim or leaves the rotary dims", opts, i, a, b)
			}
			seen[a], seen[b] = true, true
		}
	}
	if r := newRoPE(t, map[string]any{"base": 500.0, "rotary_fraction": 0.25}); r.RotaryDims() != 4 ||
		math.Abs(r.InvFreq()[1]-math.Pow(500, -0.5)) > 1e-15 {
		t.Errorf("base 500, fraction 0.25: r = %d, θ = %v", r.RotaryDims(), r.InvFreq())
	}
}

// ropeReference rotates one head vector x at position m from the formula, in float64.
func ropeReference(r *RoPE, x []float32, m int) []float64 {
	out := make([]float64, len(x))
	for i := range x {
		out[i] = float64(x[i]) // dims past r pass through
	}
	for i, th := range r.InvFreq() {
		a, b := r.Pair(i)
		c, s := math.Cos(float64(m)*th), math.Sin(float64(m)*th)
		out[a] = float64(x[a])*c - float64(x[b])*s
		out[b] = float64(x[a])*s + float64(x[b])*c
	}
	return out
}

// Rotate matches the formula element by element for [batch, heads, seq, headDim] inputs with
// arbitrary per-batch positions, is the identity at position 0, and QueryKey rotates q and k.
func TestRoPERotateFormula(t *testing.T) {
	be := backend(t)
	rng := rand.New(rand.NewPCG(5, 6))
	const B, H, S, D = 2, 2, 3, 16
	pos := [][]int32{{0, 1, 17}, {0, 250, 4}}
	x := make([]float32, B*H*S*D)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	for _, opts := range ropeVariants {
		r := newRoPE(t, opts)
		outs := MustExecOnceN(be, func(g *Graph) []*Node {
			xn := Reshape(Const(g, x), B, H, S, D)
			p := Const(g, pos)
			q, k := r.QueryKey(nil, 0, xn, xn, p, p)
			return []*Node{r.Rotate(xn, p), q, k}
		})
		for o, out := range outs {
			flat := tensors.MustCopyFlatData[float32](out)
			for b := range B {
				for h := range H {
					for s := range S {
						off := ((b*H+h)*S + s) * D
						want := ropeReference(r, x[off:off+D], int(pos[b][s]))
						for d := range D {
							if math.Abs(float64(flat[off+d])-want[d]) > 1e-4 {
								t.Errorf("%v output %d: [%d,%d,%d,%d] at pos %d = %g, want %g",
									opts, o, b, h, s, d, pos[b][s], flat[off+d], want[d])
							}
							if pos[b][s] == 0 && flat[off+d] != x[off+d] {
								t.Errorf("%v: position 0 is not the identity: %g → %g", opts, x[off+d], flat[off+d])
							}
							if d >= r.RotaryDims() && flat[off+d] != x[off+d] {
								t.Errorf("%v: pass-through dim %d changed: %g → %g", opts, d, x[off+d], flat[off+d])
							}
						}
					}
				}
			}
		}
	}
}

// <Rotate(q, m), Rotate(k, n)> depends on m and n only through m − n.
func TestRoPEScoreDependsOnOffsetOnly(t *testing.T) {
	be := backend(t)
	rng := rand.New(rand.NewPCG(7, 8))
	for _, opts := range ropeVariants {
		r := newRoPE(t, opts)
		q, k := make([]float32, 16), make([]float32, 16)
		for i := range q {
			q[i], k[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
		}
		score := func(m, n int) float64 {
			out := MustExecOnce(be, func(g *Graph) *Node {
				qr := r.Rotate(Reshape(Const(g, q), 1, 1, 1, 16), Const(g, [][]int32{{int32(m)}}))
				kr := r.Rotate(Reshape(Const(g, k), 1, 1, 1, 16), Const(g, [][]int32{{int32(n)}}))
				return ReduceAllSum(Mul(qr, kr))
			})
			return float64(tensors.ToScalar[float32](out))
		}
		// The float64 formula's score, as an independent reference.
		refScore := func(m, n int) float64 {
			a, b := ropeReference(r, q, m), ropeReference(r, k, n)
			s := 0.0
			for i := range a {
				s += a[i] * b[i]
			}
			return s
		}
		for _, c := range [][3]int{{5, 2, 7}, {0, 9, 100}, {30, 30, 13}, {2, 5, 7}} {
			m, n, s := c[0], c[1], c[2]
			a, b := score(m, n), score(m+s, n+s)
			if math.Abs(a-b) > 1e-4 {
				t.Errorf("%v: score(%d,%d) = %.7g, score(%d,%d) = %.7g", opts, m, n, a, m+s, n+s, b)
			}
			if ref := refScore(m, n); math.Abs(a-ref) > 1e-4 {
				t.Errorf("%v: score(%d,%d) = %.7g, formula gives %.7g", opts, m, n, a, ref)
			}
		}
		if a, b := score(5, 2), score(5, 3); math.Abs(a-b) < 1e-3 {
			t.Errorf("%v: score(5,2) = %g equals score(5,3) = %g: position has no effect", opts, a, b)
		}
	}
}

// ---------------------------------------------------------------------------------------------
// ALiBi

func TestALiBiPaperSlopes(t *testing.T) {
	want := map[int][]float64{
		1: {0.00390625}, // 2^-8
		4: {0.25, 0.0625, 0.015625, 0.00390625},
		// 2^-1 ... 2^-8
		8: {0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625, 0.0078125, 0.00390625},
		// the 8-head slopes, then 2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5 (h = 1, 3, 5, 7 of 2^(-h/2))
		12: {0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625, 0.0078125, 0.00390625,
			0.70710678118654752, 0.35355339059327376, 0.17677669529663688, 0.088388347648318441},
		// the 4-head slopes 2^-2, 2^-4, 2^-6, 2^-8, then 2^-1, 2^-3 (h = 1, 3 of 2^-h)
		6: {0.25, 0.0625, 0.015625, 0.00390625, 0.5, 0.125},
		// 2^(-h/2), h = 1..16
		16: {0.70710678118654752, 0.5, 0.35355339059327376, 0.25, 0.17677669529663688, 0.125,
			0.088388347648318441, 0.0625, 0.044194173824159221, 0.03125, 0.022097086912079610,
			0.015625, 0.011048543456039805, 0.0078125, 0.0055242717280199025, 0.00390625},
	}
	for n, w := range want {
		s, err := New("alibi", nil, Arch{NumHeads: n})
		if err != nil {
			t.Fatal(err)
		}
		for _, got := range [][]float64{ALiBiSlopes(n), s.(*ALiBi).Slopes()} {
			if len(got) != len(w) {
				t.Errorf("%d heads: %d slopes %v, want %v", n, len(got), got, w)
				continue
			}
			for h := range w {
				if math.Abs(got[h]-w[h]) > 1e-15 {
					t.Errorf("%d heads: slope %d = %.17g, want %.17g", n, h, got[h], w[h])
				}
			}
		}
	}
}

// bias[b,h,i,j] = −m_h·|qPos_i − kPos_j| at arbitrary positions, and it depends on positions only
// through their difference (shifting both by a constant changes nothing).
func TestALiBiBiasRelative(t *testing.T) {
	const H = 3
	s, err := New("alibi", nil, Arch{NumHeads: H})
	if err != nil {
		t.Fatal(err)
	}
	slopes := ALiBiSlopes(H)
	qPos := [][]int32{{4, 9}, {0, 2}}
	kPos := [][]int32{{0, 4, 9, 6, 15}, {2, 1, 0, 7, 3}}
	shift := func(p [][]int32, by int32) [][]int32 {
		out := make([][]int32, len(p))
		for i := range p {
			for _, v := range p[i] {
				out[i] = append(out[i], v+by)
			}
		}
		return out
	}
	outs := MustExecOnceN(backend(t), func(g *Graph) []*Node {
		return []*Node{
			s.(Bias).Bias(nil, 0, Const(g, qPos), Const(g, kPos), H),
			s.(Bias).Bias(nil, 3, Const(g, shift(qPos, 1000)), Const(g, shift(kPos, 1000)), H),
		}
	})
	if dims := outs[0].Shape().Dimensions; !slices.Equal(dims, []int{2, H, 2, 5}) {
		t.Fatalf("bias shape %v, want [2 %d 2 5]", dims, H)
	}
	base := tensors.MustCopyFlatData[float32](outs[0])
	shifted := tensors.MustCopyFlatData[float32](outs[1])
	byDiff := map[[2]int]float32{} // (head, i−j) → bias
	for b := range 2 {
		for h := range H {
			for i := range 2 {
				for j := range 5 {
					idx := ((b*H+h)*2+i)*5 + j
					diff := int(qPos[b][i] - kPos[b][j])
					want := -slopes[h] * math.Abs(float64(diff))
					if math.Abs(float64(base[idx])-want) > 1e-6 {
						t.Errorf("bias[%d,%d,%d,%d] = %g, want %g", b, h, i, j, base[idx], want)
					}
					if shifted[idx] != base[idx] {
						t.Errorf("bias[%d,%d,%d,%d] changes from %g to %g when all positions shift by 1000", b, h, i, j, base[idx], shifted[idx])
					}
					if v, ok := byDiff[[2]int{h, diff}]; ok && v != base[idx] {
						t.Errorf("head %d, i−j = %d: bias %g here but %g elsewhere", h, diff, base[idx], v)
					}
					byDiff[[2]int{h, diff}] = base[idx]
				}
			}
		}
	}
}

// ---------------------------------------------------------------------------------------------
// Learned

func newLearned(t *testing.T, opts map[string]any) *Learned {
	t.Helper()
	s, err := New("learned", opts, Arch{Dim: 4})
	if err != nil {
		t.Fatal(err)
	}
	return s.(*Learned)
}

func TestLearnedLimit(t *testing.T) {
	for _, c := range []struct {
		opts map[string]any
		want int
	}{
		{map[string]any{"max_positions": 8.0}, 8},
		{map[string]any{"max_positions": 8.0, "beyond": "error"}, 8},
		{map[string]any{"max_positions": 8.0, "beyond": "clamp"}, 0},
		{map[string]any{"max_positions": 8.0, "beyond": "interpolate", "interpolate_to": 20.0}, 20},
	} {
		if got := newLearned(t, c.opts).Limit(); got != c.want {
			t.Errorf("%v: Limit() = %d, want %d", c.opts, got, c.want)
		}
	}
}

// runLearned runs the Input hook with zero embeddings against a known table, returning the
// rows added at each position, as [len(pos)][dim] float32.
func runLearned(t *testing.T, l *Learned, table [][]float32, pos []int32) [][]float32 {
	t.Helper()
	dim := len(table[0])
	ctx := context.New().Checked(false)
	ctx.VariableWithValue("table", table)
	x := make([]float32, len(pos)*dim)
	out := context.MustExecOnce(backend(t), ctx, func(ctx *context.Context, xn, pn *Node) *Node {
		return l.Input(ctx, xn, pn)
	}, tensors.FromFlatDataAndDimensions(x, 1, len(pos), dim), [][]int32{pos})
	flat := tensors.MustCopyFlatData[float32](out)
	rows := make([][]float32, len(pos))
	for i := range rows {
		rows[i] = flat[i*dim : (i+1)*dim]
	}
	return rows
}

func learnedTable(n, dim int) [][]float32 {
	rng := rand.New(rand.NewPCG(9, 10))
	table := make([][]float32, n)
	for i := range table {
		table[i] = make([]float32, dim)
		for j := range table[i] {
			table[i][j] = float32(rng.NormFloat64())
		}
	}
	return table
}

// Within the table every policy reads P[pos]; clamp reads the last row past it.
func TestLearnedLookup(t *testing.T) {
	table := learnedTable(8, 4)
	for _, beyond := range []string{"error", "clamp"} {
		l := newLearned(t, map[string]any{"max_positions": 8.0, "beyond": beyond})
		pos := []int32{3, 0, 7, 5}
		if beyond == "clamp" {
			pos = append(pos, 8, 100)
		}
		got := runLearned(t, l, table, pos)
		for i, p := range pos {
			want := table[min(int(p), 7)]
			if !slices.Equal(got[i], want) {
				t.Errorf("%s: position %d added %v, want row %d %v", beyond, p, got[i], min(int(p), 7), want)
			}
		}
	}
}

// Interpolation squeezes 0..interpolate_to-1 onto the table: p = pos·(max−1)/(to−1) and
// the row is lerp(P[⌊p⌋], P[⌈p⌉]). Its ends are the table's first and last rows.
func TestLearnedInterpolate(t *testing.T) {
	for _, c := range []struct{ max, to int }{{8, 15}, {8, 16}, {5, 7}, {10, 1000}} {
		table := learnedTable(c.max, 4)
		l := newLearned(t, map[string]any{"max_positions": float64(c.max), "beyond": "interpolate", "interpolate_to": float64(c.to)})
		var pos []int32
		for p := range c.to {
			pos = append(pos, int32(p))
		}
		got := runLearned(t, l, table, pos)
		last := c.max - 1
		if !slices.Equal(got[0], table[0]) {
			t.Errorf("max=%d to=%d: position 0 added %v, want row 0 %v", c.max, c.to, got[0], table[0])
		}
		if end := got[c.to-1]; !slices.Equal(end, table[last]) {
			t.Errorf("max=%d to=%d: position %d added %v, want exactly row %d %v", c.max, c.to, c.to-1, end, last, table[last])
		}
		for i, p := range pos {
			x := float64(p) * float64(last) / float64(c.to-1)
			lo := int(math.Floor(x))
			hi := min(lo+1, last)
			w := x - float64(lo)
			for j := range 4 {
				want := (1-w)*float64(table[lo][j]) + w*float64(table[hi][j])
				if math.Abs(float64(got[i][j])-want) > 1e-5 {
					t.Errorf("max=%d to=%d: position %d dim %d = %g, want lerp %g", c.max, c.to, p, j, got[i][j], want)
				}
			}
		}
	}
}

// ---------------------------------------------------------------------------------------------
// NoPE

func TestNoPEHasNoHooks(t *testing.T) {
	s, err := New("none", nil, Arch{Dim: 8})
	if err != nil {
		t.Fatal(err)
	}
	if s.Name() != "none" {
		t.Errorf("Name() = %q", s.Name())
	}
	if _, ok := s.(Input); ok {
		t.Error("NoPE implements Input")
	}
	if _, ok := s.(QueryKey); ok {
		t.Error("NoPE implements QueryKey")
	}
	if _, ok := s.(Bias); ok {
		t.Error("NoPE implements Bias")
	}
	if _, ok := s.(Relative); ok {
		t.Error("NoPE implements Relative")
	}
	if _, ok := s.(Limited); ok {
		t.Error("NoPE implements Limited")
	}
}

// ---------------------------------------------------------------------------------------------
// Registry and options

func TestRegistryNamesAndErrors(t *testing.T) {
	names := Names()
	if !slices.IsSorted(names) {
		t.Errorf("Names() not sorted: %v", names)
	}
	for _, n := range []string{"alibi", "learned", "none", "rope", "sinusoidal"} {
		if !slices.Contains(names, n) {
			t.Errorf("Names() = %v lacks %q", names, n)
		}
		var opts map[string]any
		if n == "learned" {
			opts = map[string]any{"max_positions": 4.0}
		}
		s, err := New(n, opts, Arch{Dim: 8, NumHeads: 2, NumKVHeads: 2, HeadDim: 4})
		if err != nil {
			t.Errorf("New(%q) with default options: %v", n, err)
		} else if s.Name() != n {
			t.Errorf("New(%q).Name() = %q", n, s.Name())
		}
	}

	arch := Arch{Dim: 32, NumHeads: 2, NumKVHeads: 2, HeadDim: 16}
	for _, c := range []struct {
		name string
		opts map[string]any
		want []string
	}{
		{"nope", nil, []string{"unknown positional scheme", `"nope"`, "rope", "alibi", "sinusoidal", "learned", "none"}},
		{"rope", map[string]any{"bas": 1.0}, []string{"unknown option bas", "base", "layout", "rotary_fraction"}},
		{"rope", map[string]any{"base": "x"}, []string{`"base"`, "number"}},
		{"rope", map[string]any{"base": 1.0}, []string{"base must be > 1"}},
		{"rope", map[string]any{"rotary_fraction": 0.0}, []string{"rotary_fraction"}},
		{"rope", map[string]any{"rotary_fraction": 0.05}, []string{"no pair"}},
		{"rope", map[string]any{"layout": 2.0}, []string{`"layout"`, "string"}},
		{"sinusoidal", map[string]any{"base": 0.5}, []string{"base"}},
		{"learned", nil, []string{"max_positions"}},
		{"learned", map[string]any{"max_positions": 0.0}, []string{"max_positions"}},
		{"learned", map[string]any{"max_positions": 2.5}, []string{"max_positions"}},
		{"learned", map[string]any{"max_positions": 16.0, "beyond": "clamp", "interpolate_to": 20.5}, []string{`"interpolate_to"`, "integer"}},
		{"learned", map[string]any{"max_positions": 8.0, "beyond": "wrap"}, []string{"error", "clamp", "interpolate"}},
		{"learned", map[string]any{"max_positions": 8.0, "beyond": "interpolate", "interpolate_to": 8.0}, []string{"interpolate_to"}},
		{"alibi", map[string]any{"slope": 1.0}, []string{"unknown option slope", "valid: slopes"}},
		{"none", map[string]any{"x": 1.0, "a": 2.0}, []string{"unknown option a, x"}},
	} {
		_, err := New(c.name, c.opts, arch)
		if err == nil {
			t.Errorf("New(%q, %v): no error", c.name, c.opts)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("New(%q, %v): error %q does not mention %q", c.name, c.opts, err, w)
			}
		}
	}
	if _, err := New("sinusoidal", nil, Arch{Dim: 7}); err == nil {
		t.Error("sinusoidal with an odd dim: no error")
	}
}

// When a constructor rejects its options, the option reader's own findings (mistyped values,
// misspelt keys) must still reach the user: they are usually the cause.

func TestRegistryKeepsOptionErrorsWhenConstructorFails(t *testing.T) {
	arch := Arch{Dim: 32, NumHeads: 2, NumKVHeads: 2, HeadDim: 16}
	for _, c := range []struct {
		name string
		opts map[string]any
		want []string
	}{
		{"learned", map[string]any{"max_positions": 2.5}, []string{`"max_positions" must be an integer`}},
		{"learned", map[string]any{"max_positions": "8"}, []string{`"max_positions" must be a number`}},
		{"learned", map[string]any{"max_position": 8.0}, []string{"unknown option max_position", "max_positions"}},
		{"rope", map[string]any{"base": "x", "rotary_fraction": 2.0}, []string{`"base" must be a number`, "rotary_fraction"}},
	} {
		_, err := New(c.name, c.opts, arch)
		if err == nil {
			t.Errorf("New(%q, %v): no error", c.name, c.opts)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("New(%q, %v): error %q does not mention %q", c.name, c.opts, err, w)
			}
		}
	}
}

// Accepted option spellings: "name" is ignored, JSON numbers and ints are numbers.
func TestRegistryAcceptedOptions(t *testing.T) {
	arch := Arch{Dim: 32, NumHeads: 2, NumKVHeads: 2, HeadDim: 16}
	for _, opts := range []map[string]any{
		{"name": "rope", "base": 500.0},
		{"base": json.Number("500")},
		{"base": 500},
		{"base": float32(500)},
	} {
		s, err := New("rope", opts, arch)
		if err != nil {
			t.Errorf("%v: %v", opts, err)
			continue
		}
		if b := s.(*RoPE).Base; b != 500 {
			t.Errorf("%v: base = %g, want 500", opts, b)
		}
	}
	s, err := New("learned", map[string]any{"max_positions": json.Number("64")}, arch)
	if err != nil || s.(*Learned).MaxPositions != 64 {
		t.Errorf("max_positions from json.Number: %v, %v", s, err)
	}
}

func TestOptionsBool(t *testing.T) {
	o := NewOptions(map[string]any{"on": true, "bad": "yes"})
	if !o.Bool("on", false) || o.Bool("off", false) || !o.Bool("missing", true) {
		t.Error("Bool returned the wrong values")
	}
	if o.Bool("bad", false) {
		t.Error(`Bool("bad") with a string value returned true`)
	}
	if err := o.Err(); err == nil || !strings.Contains(err.Error(), `"bad" must be true or false`) {
		t.Errorf("Err() = %v", err)
	}
}

func TestRegisterTwicePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("registering \"rope\" twice did not panic")
		}
	}()
	Register("rope", func(*Options, Arch) (Scheme, error) { return NoPE{}, nil })
}
