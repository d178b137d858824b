package positional

// FIRE is a relative scheme that is not shift-invariant by design (it normalizes by the query
// position), so these tests check its closed form and its normalization instead.

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
)

func newFIRE(t *testing.T, opts map[string]any, heads int) *FIRE {
	t.Helper()
	s, err := New("fire", opts, Arch{Dim: 8 * heads, NumHeads: heads, NumKVHeads: heads, HeadDim: 8, NumLayers: 2, Causal: true})
	if err != nil {
		t.Fatal(err)
	}
	return s.(*FIRE)
}

// fireParams are FIRE's learned values for one layer.
type fireParams struct {
	c, l   float32     // c and the multiplier ℓ of L = |ℓ·init_l|
	w1, b1 []float32   // [width]
	w2     [][]float32 // [width][heads]
	b2     []float32   // [heads]
}

func fireRandomParams(r *rand.Rand, width, heads int) fireParams {
	p := fireParams{c: float32(r.NormFloat64()), l: float32(r.NormFloat64())}
	for range width {
		p.w1 = append(p.w1, float32(r.NormFloat64()))
		p.b1 = append(p.b1, float32(r.NormFloat64()))
		row := make([]float32, heads)
		for h := range row {
			row[h] = float32(r.NormFloat64())
		}
		p.w2 = append(p.w2, row)
	}
	for range heads {
		p.b2 = append(p.b2, float32(r.NormFloat64()))
	}
	return p
}

// set stores p as the variables of scope ctx.
func (p fireParams) set(ctx *context.Context) {
	ctx.VariableWithValue("c", p.c)
	ctx.VariableWithValue("l_multiplier", p.l)
	mlp := ctx.In("mlp")
	mlp.VariableWithValue("w1", p.w1)
	mlp.VariableWithValue("b1", p.b1)
	mlp.VariableWithValue("w2", p.w2)
	mlp.VariableWithValue("b2", p.b2)
}

// fireReference is the paper's formula in float64: the MLP's input and its output per head.
func fireReference(p fireParams, initL float64, i, j int) (float64, []float64) {
	psi := func(x float64) float64 { return math.Log(math.Abs(float64(p.c))*x + 1) }
	L := math.Abs(float64(p.l) * initL)
	x := psi(math.Abs(float64(i-j))) / (psi(math.Max(L, float64(i))) + 1e-6)
	out := make([]float64, len(p.b2))
	for h := range out {
		out[h] = float64(p.b2[h])
		for k := range p.w1 {
			out[h] += float64(p.w2[k][h]) * math.Max(0, float64(p.w1[k])*x+float64(p.b1[k]))
		}
	}
	return x, out
}

// The bias equals the closed form at arbitrary positions, below and above the threshold L,
// with keys before and after the query (the encoder's |i-j|), and negative raw c and ℓ.
func TestFIREClosedForm(t *testing.T) {
	const H, W, initL = 3, 5, 8.0
	r := rand.New(rand.NewPCG(41, 42))
	f := newFIRE(t, map[string]any{"mlp_width": float64(W), "init_l": initL}, H)
	p := fireRandomParams(r, W, H)
	p.c, p.l = -0.3, -1.5 // L = 12
	qPos := [][]int32{{3, 12, 40}, {0, 100, 7}}
	kPos := [][]int32{{0, 3, 12, 40, 39}, {0, 100, 50, 7, 8}}
	ctx := context.New().Checked(false)
	p.set(LayerScope(ctx, 1))
	outs := context.MustExecOnceN(backend(t), ctx, func(ctx *context.Context, qp, kp *Node) []*Node {
		return []*Node{f.Bias(ctx, 1, qp, kp, H), f.Normalized(ctx, 1, qp, kp)}
	}, qPos, kPos)
	if dims := outs[0].Shape().Dimensions; !slices.Equal(dims, []int{2, H, 3, 5}) {
		t.Fatalf("bias shape %v, want [2 %d 3 5]", dims, H)
	}
	bias, norm := tensors.MustCopyFlatData[float32](outs[0]), tensors.MustCopyFlatData[float32](outs[1])
	for b := range 2 {
		for i := range 3 {
			for j := range 5 {
				x, want := fireReference(p, initL, int(qPos[b][i]), int(kPos[b][j]))
				if got := float64(norm[(b*3+i)*5+j]); !(math.Abs(got-x) <= 1e-5) {
					t.Errorf("input(%d, %d) = %g, want %g", qPos[b][i], kPos[b][j], got, x)
				}
				for h := range H {
					if got := float64(bias[((b*H+h)*3+i)*5+j]); !(math.Abs(got-want[h]) <= 1e-4*max(1, math.Abs(want[h]))) {
						t.Errorf("bias[%d,%d] at (%d, %d) = %g, want %g", b, h, qPos[b][i], kPos[b][j], got, want[h])
					}
				}
			}
		}
	}
}

// fireNormalized runs Normalized for each (i, j) pair, as a batch of one query and one key.
func fireNormalized(t *testing.T, f *FIRE, p fireParams, pairs [][2]int32) []float32 {
	t.Helper()
	n := len(pairs)
	qPos, kPos := make([]int32, n), make([]int32, n)
	for i, pr := range pairs {
		qPos[i], kPos[i] = pr[0], pr[1]
	}
	ctx := context.New().Checked(false)
	p.set(LayerScope(ctx, 0))
	out := context.MustExecOnce(backend(t), ctx, func(ctx *context.Context, qp, kp *Node) *Node {
		// One query per batch row against its own key: [n, 1, 1].
		return f.Normalized(ctx, 0, Reshape(qp, n, 1), Reshape(kp, n, 1))
	}, [][]int32{qPos}, [][]int32{kPos})
	return tensors.MustCopyFlatData[float32](out)
}

// Progressive interpolation: for every key j <= i the MLP's input lies in [0, 1], 0 at j = i and
// close to 1 at j = 0 once i is past L, so any length maps into the range seen in training.
func TestFIRENormalizedInUnitInterval(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 44))
	f := newFIRE(t, nil, 2) // init_l = 512
	for trial := range 20 {
		p := fireRandomParams(r, 32, 2)
		p.c = float32(math.Copysign(math.Exp(4*r.Float64()-3), r.NormFloat64())) // |c| in (0.05, 2.7)
		p.l = float32(math.Copysign(math.Exp(3*r.Float64()-2), r.NormFloat64())) // L in (70, 1400)
		var pairs [][2]int32
		for range 200 {
			i := int32(math.Exp(r.Float64() * math.Log(200000)))
			pairs = append(pairs, [2]int32{i, r.Int32N(i + 1)}, [2]int32{i, i}, [2]int32{i, 0})
		}
		x := fireNormalized(t, f, p, pairs)
		L := math.Abs(float64(p.l) * 512)
		for k, pr := range pairs {
			switch v := float64(x[k]); {
			case v < 0 || v > 1:
				t.Errorf("trial %d (c %g, L %g): input(%d, %d) = %g, outside [0, 1]", trial, p.c, L, pr[0], pr[1], v)
			case pr[0] == pr[1] && v != 0:
				t.Errorf("trial %d: input(%d, %d) = %g, want 0", trial, pr[0], pr[1], v)
			case pr[1] == 0 && float64(pr[0]) >= L && v < 1-1e-5:
				t.Errorf("trial %d (c %g, L %g): input(%d, 0) = %g, want 1 past the threshold", trial, p.c, L, pr[0], v)
			}
		}
	}
}

// FIRE is relative below the threshold and not beyond it: shifting a (query, key) pair changes
// nothing while the query stays under L, and squeezes the input once the query is past L.
func TestFIREShiftInvariantOnlyBelowThreshold(t *testing.T) {
	r := rand.New(rand.NewPCG(45, 46))
	f := newFIRE(t, nil, 2)
	p := fireRandomParams(r, 32, 2)
	p.c, p.l = 0.1, 1 // the initial values: L = 512
	x := fireNormalized(t, f, p, [][2]int32{{10, 3}, {110, 103}, {500, 493}, {1010, 1003}, {2010, 2003}, {100010, 100003}})
	if x[0] != x[1] || x[0] != x[2] {
		t.Errorf("below L = 512, distance 7 gives inputs %g, %g, %g; want equal", x[0], x[1], x[2])
	}
	if !(x[2] > x[3] && x[3] > x[4] && x[4] > x[5]) {
		t.Errorf("past L, distance 7 gives inputs %v for queries 500, 1010, 2010, 100010; want strictly decreasing", x[2:])
	}
}

// norm_max caps the normaliser's query position: the input is unchanged for queries up to the
// cap, equals the closed form with ψ(max(L, cap)) beyond it, and passes 1 for keys farther than
// the cap (where progressive interpolation would have kept it in [0, 1]).
func TestFIRENormMax(t *testing.T) {
	r := rand.New(rand.NewPCG(47, 48))
	const capPos = 128.0
	plain, capped := newFIRE(t, nil, 2), newFIRE(t, map[string]any{"norm_max": capPos}, 2)
	p := fireRandomParams(r, 32, 2)
	p.c, p.l = 0.05, 0.2 // L = 102.4, under the cap
	pairs := [][2]int32{{5, 0}, {100, 3}, {128, 0}, {128, 127}, {129, 0}, {500, 490}, {2047, 0}, {2047, 1900}}
	x, y := fireNormalized(t, plain, p, pairs), fireNormalized(t, capped, p, pairs)
	psi := func(v float64) float64 { return math.Log1p(0.05 * v) }
	for k, pr := range pairs {
		i, j := float64(pr[0]), float64(pr[1])
		want := psi(i-j) / (psi(math.Max(102.4, math.Min(i, capPos))) + 1e-6)
		if !(math.Abs(float64(y[k])-want) <= 1e-5*max(1, want)) {
			t.Errorf("norm_max %g: input(%g, %g) = %g, want %g", capPos, i, j, y[k], want)
		}
		if i <= capPos && x[k] != y[k] {
			t.Errorf("input(%g, %g): %g with norm_max, %g without; want equal up to the cap", i, j, y[k], x[k])
		}
	}
	if last := y[len(y)-2]; !(last > 1.5) || !(x[len(x)-2] <= 1) {
		t.Errorf("input(2047, 0) = %g capped, %g plain; want above 1.5 capped and at most 1 plain", last, x[len(x)-2])
	}
}

// Each layer learns its own FIRE unless shared; initial values follow the paper's code.
func TestFIREScopesAndInit(t *testing.T) {
	const H, W = 4, 32
	for _, shared := range []bool{false, true} {
		f := newFIRE(t, map[string]any{"shared": shared}, H)
		ctx := context.New().Checked(false)
		ctx.SetParam(context.ParamInitialSeed, int64(47))
		outs := context.MustExecOnceN(backend(t), ctx, func(ctx *context.Context, qp, kp *Node) []*Node {
			return []*Node{f.Bias(ctx, 0, qp, kp, H), f.Bias(ctx, 1, qp, kp, H)}
		}, [][]int32{{7}}, [][]int32{{0, 3, 7}})
		same := slices.Equal(tensors.MustCopyFlatData[float32](outs[0]), tensors.MustCopyFlatData[float32](outs[1]))
		if same != shared {
			t.Errorf("shared=%v: layers 0 and 1 give equal biases: %v", shared, same)
		}
		scopes := []string{"/layer_0", "/layer_1"}
		if shared {
			scopes = []string{"/"}
		}
		for _, scope := range scopes {
			for _, c := range []struct {
				scope, name string
				lo, hi      float64 // initial values lie in [lo, hi]
			}{
				{scope, "c", 0.1, 0.1}, {scope, "l_multiplier", 1, 1},
				{scope + "/mlp", "w1", -1, 1}, {scope + "/mlp", "b1", -1, 1},
				{scope + "/mlp", "w2", -1 / math.Sqrt(W), 1 / math.Sqrt(W)}, {scope + "/mlp", "b2", -1 / math.Sqrt(W), 1 / math.Sqrt(W)},
			} {
				c.scope = strings.Replace(c.scope, "//", "/", 1)
				v := ctx.InspectVariable(c.scope, c.name)
				if v == nil {
					t.Errorf("shared=%v: no variable %s/%s", shared, c.scope, c.name)
					continue
				}
				vals := tensors.MustCopyFlatData[float32](v.MustValue())
				// Spread is checked only where there are enough draws (not b2's 4).
				spread := c.lo < c.hi && len(vals) >= W
				if lo, hi := float64(slices.Min(vals)), float64(slices.Max(vals)); lo < c.lo-1e-7 || hi > c.hi+1e-7 || (spread && hi-lo < (c.hi-c.lo)/2) {
					t.Errorf("%s/%s initialised in [%g, %g], want spread over [%g, %g]", c.scope, c.name, lo, hi, c.lo, c.hi)
				}
			}
		}
	}
}

func TestFIREErrors(t *testing.T) {
	arch := Arch{Dim: 32, NumHeads: 4, NumKVHeads: 4, HeadDim: 8}
	for _, c := range []struct {
		opts map[string]any
		want string
	}{
		{map[string]any{"mlp_width": 0.0}, "mlp_width"},
		{map[string]any{"mlp_width": 2.5}, `"mlp_width" must be an integer`},
		{map[string]any{"init_c": 0.0}, "init_c"},
		{map[string]any{"init_c": -0.1}, "init_c"},
		{map[string]any{"init_l": -512.0}, "init_l"},
		{map[string]any{"L": 512.0}, "unknown option L"},
		{map[string]any{"norm_max": -1.0}, "norm_max"},
	} {
		_, err := New("fire", c.opts, arch)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("fire %v: error %v, want one mentioning %q", c.opts, err, c.want)
		}
	}
	for _, causal := range []bool{true, false} {
		if _, err := New("fire", nil, Arch{Dim: 32, NumHeads: 4, NumKVHeads: 4, HeadDim: 8, Causal: causal}); err != nil {
			t.Errorf("fire with defaults (causal %v): %v", causal, err)
		}
	}
}
