package positional

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

func newKerple(t *testing.T, opts map[string]any, heads int) *Kerple {
	t.Helper()
	s, err := New("kerple", opts, Arch{Dim: 8 * heads, NumHeads: heads, NumKVHeads: heads, HeadDim: 8, NumLayers: 2, Causal: true})
	if err != nil {
		t.Fatal(err)
	}
	return s.(*Kerple)
}

// kerpleReference is the paper's kernel for one head at distance d, with r1, r2 as stored and
// clamped as the paper's code clamps them.
func kerpleReference(variant string, r1, r2 float32, d float64) float64 {
	a, p := max(float64(r1), 0.01), max(float64(r2), 0.01)
	if variant == "log" {
		return -a * math.Log(1+p*d)
	}
	return -a * math.Pow(d, min(p, 2))
}

// kerpleBias runs the Bias hook of layer `layer` with the given per-layer parameters (nil: the
// initializer's) and returns the flat bias and its shape.
func kerpleBias(t *testing.T, k *Kerple, layer int, r1, r2 []float32, qPos, kPos [][]int32, heads int) ([]float32, []int) {
	t.Helper()
	ctx := context.New().Checked(false)
	if r1 != nil {
		LayerScope(ctx, layer).VariableWithValue("r1", r1)
		LayerScope(ctx, layer).VariableWithValue("r2", r2)
	}
	out := context.MustExecOnce(backend(t), ctx, func(ctx *context.Context, qp, kp *Node) *Node {
		return k.Bias(ctx, layer, qp, kp, heads)
	}, qPos, kPos)
	return tensors.MustCopyFlatData[float32](out), out.Shape().Dimensions
}

// The bias equals the closed form at arbitrary positions, parameters outside their range are
// clamped as in the paper's code, and the bias depends on positions only through i − j.
func TestKerpleClosedFormAndRelative(t *testing.T) {
	const H = 3
	qPos := [][]int32{{4, 9, 30}, {0, 2, 1000}}
	kPos := [][]int32{{0, 4, 9, 6, 15, 30}, {2, 1, 0, 7, 3, 999}}
	shifted := func(p [][]int32) [][]int32 {
		out := make([][]int32, len(p))
		for b := range p {
			for _, v := range p[b] {
				out[b] = append(out[b], v+5000)
			}
		}
		return out
	}
	for _, c := range []struct {
		variant string
		r1, r2  []float32
	}{
		{"log", []float32{0.5, 1.7, 0.001}, []float32{0.3, 0.005, 2.5}}, // 0.001, 0.005: below the 0.01 floor
		{"power", []float32{0.2, 0.001, 0.9}, []float32{0.5, 1.5, 3}},   // r2 = 3: above the bound 2
	} {
		k := newKerple(t, map[string]any{"variant": c.variant}, H)
		got, dims := kerpleBias(t, k, 1, c.r1, c.r2, qPos, kPos, H)
		if !slices.Equal(dims, []int{2, H, 3, 6}) {
			t.Fatalf("%s: bias shape %v, want [2 %d 3 6]", c.variant, dims, H)
		}
		moved, _ := kerpleBias(t, k, 1, c.r1, c.r2, shifted(qPos), shifted(kPos), H)
		byDiff := map[[2]int]float32{}
		for b := range 2 {
			for h := range H {
				for i := range 3 {
					for j := range 6 {
						idx := ((b*H+h)*3+i)*6 + j
						diff := int(qPos[b][i] - kPos[b][j])
						want := kerpleReference(c.variant, c.r1[h], c.r2[h], math.Abs(float64(diff)))
						if !(math.Abs(float64(got[idx])-want) <= 1e-5*max(1, math.Abs(want))) {
							t.Errorf("%s: bias[%d,%d,%d,%d] (i-j = %d) = %g, want %g", c.variant, b, h, i, j, diff, got[idx], want)
						}
						if moved[idx] != got[idx] {
							t.Errorf("%s: bias[%d,%d,%d,%d] changes from %g to %g when positions shift by 5000", c.variant, b, h, i, j, got[idx], moved[idx])
						}
						if v, ok := byDiff[[2]int{h, diff}]; ok && v != got[idx] {
							t.Errorf("%s: head %d, i-j = %d: bias %g here, %g elsewhere", c.variant, h, diff, got[idx], v)
						}
						byDiff[[2]int{h, diff}] = got[idx]
					}
				}
			}
		}
	}
}

// The bias is 0 at distance 0 and never increases with |i − j| (distances 0..3000, keys on
// both sides of the query), for parameters across and beyond their range.
func TestKerpleMonotone(t *testing.T) {
	const H, n = 8, 3001
	r := rand.New(rand.NewPCG(31, 32))
	keys := make([]int32, n)
	for j := range keys {
		keys[j] = int32(j)
	}
	for _, variant := range []string{"log", "power"} {
		k := newKerple(t, map[string]any{"variant": variant}, H)
		r1, r2 := make([]float32, H), make([]float32, H)
		for h := range H {
			r1[h], r2[h] = float32(3*r.Float64()), float32(2.5*r.Float64())
		}
		r1[0], r2[1] = 0, 0 // clamped up to 0.01
		got, _ := kerpleBias(t, k, 0, r1, r2, [][]int32{{n / 2}}, [][]int32{keys}, H)
		for h := range H {
			row := got[h*n : (h+1)*n]
			if row[n/2] != 0 {
				t.Errorf("%s head %d: bias at distance 0 = %g", variant, h, row[n/2])
			}
			for j := n / 2; j+1 < n; j++ { // moving away to the right, and mirrored to the left
				if row[j+1] > row[j] || row[n-2-j] > row[n-1-j] {
					t.Errorf("%s head %d (r1 %g, r2 %g): bias rises from distance %d to %d", variant, h, r1[h], r2[h], j-n/2, j+1-n/2)
					break
				}
			}
			if !(row[0] < 0) {
				t.Errorf("%s head %d: bias at distance %d = %g, want < 0", variant, h, n/2, row[0])
			}
		}
	}
}

// Gradients reach r1 and r2 as the derivative of the clamped kernel (a straight-through clamp),
// finite at distance 0, where d/dr2 of |i-j|^r2 would be 0·log 0 if computed with Pow.
func TestKerpleGradients(t *testing.T) {
	const H = 2
	keys := [][]int32{{0, 1, 2, 5, 9, 9}} // distances 9, 8, 7, 4, 0, 0 from query 9
	for _, c := range []struct {
		variant string
		r1, r2  []float32
	}{
		{"log", []float32{0.7, 1.2}, []float32{0.4, 0.001}},
		{"power", []float32{0.3, 0.8}, []float32{1.3, 0.001}},
	} {
		k := newKerple(t, map[string]any{"variant": c.variant}, H)
		ctx := context.New().Checked(false)
		ctx.In("layer_0").VariableWithValue("r1", c.r1)
		ctx.In("layer_0").VariableWithValue("r2", c.r2)
		outs := context.MustExecOnceN(backend(t), ctx, func(ctx *context.Context, qp, kp *Node) []*Node {
			loss := ReduceAllSum(k.Bias(ctx, 0, qp, kp, H))
			g := qp.Graph()
			return Gradient(loss, ctx.In("layer_0").GetVariable("r1").ValueGraph(g), ctx.In("layer_0").GetVariable("r2").ValueGraph(g))
		}, [][]int32{{9}}, keys)
		g1, g2 := tensors.MustCopyFlatData[float32](outs[0]), tensors.MustCopyFlatData[float32](outs[1])
		for h := range H {
			a, p := max(float64(c.r1[h]), 0.01), max(float64(c.r2[h]), 0.01)
			want1, want2 := 0.0, 0.0
			for _, kp := range keys[0] {
				d := float64(9 - kp)
				if c.variant == "log" {
					want1 -= math.Log(1 + p*d)
					want2 -= a * d / (1 + p*d)
				} else if d > 0 {
					want1 -= math.Pow(d, p)
					want2 -= a * math.Pow(d, p) * math.Log(d)
				}
			}
			for _, g := range []struct {
				name      string
				got, want float64
			}{{"r1", float64(g1[h]), want1}, {"r2", float64(g2[h]), want2}} {
				if !(math.Abs(g.got-g.want) <= 1e-4*max(1, math.Abs(g.want))) {
					t.Errorf("%s head %d: d loss/d %s = %g, want %g", c.variant, h, g.name, g.got, g.want)
				}
			}
		}
	}
}

// Each layer learns its own (r1, r2), started uniform in the paper's ranges; shared=true makes
// one pair per head for all layers.
func TestKerpleScopesAndInit(t *testing.T) {
	const H = 16
	for _, c := range []struct {
		variant    string
		shared     bool
		r1Hi, r2Hi float64
	}{{"log", false, 2, 1}, {"power", false, 1, 2}, {"log", true, 2, 1}} {
		k := newKerple(t, map[string]any{"variant": c.variant, "shared": c.shared}, H)
		ctx := context.New().Checked(false)
		ctx.SetParam(context.ParamInitialSeed, int64(37))
		outs := context.MustExecOnceN(backend(t), ctx, func(ctx *context.Context, qp, kp *Node) []*Node {
			return []*Node{k.Bias(ctx, 0, qp, kp, H), k.Bias(ctx, 1, qp, kp, H)}
		}, [][]int32{{7}}, [][]int32{{0, 3, 7}})
		same := slices.Equal(tensors.MustCopyFlatData[float32](outs[0]), tensors.MustCopyFlatData[float32](outs[1]))
		if same != c.shared {
			t.Errorf("%s shared=%v: layers 0 and 1 give equal biases: %v", c.variant, c.shared, same)
		}
		scopes := []string{"/layer_0", "/layer_1"}
		if c.shared {
			scopes = []string{"/"}
		}
		for _, scope := range scopes {
			for _, p := range []struct {
				name string
				hi   float64
			}{{"r1", c.r1Hi}, {"r2", c.r2Hi}} {
				v := ctx.InspectVariable(scope, p.name)
				if v == nil {
					t.Errorf("%s shared=%v: no variable %s/%s", c.variant, c.shared, scope, p.name)
					continue
				}
				vals := tensors.MustCopyFlatData[float32](v.MustValue())
				if lo, hi := slices.Min(vals), slices.Max(vals); lo < 0 || float64(hi) >= p.hi || float64(hi) < p.hi/2 {
					t.Errorf("%s %s/%s initialised in [%g, %g], want spread over [0, %g)", c.variant, scope, p.name, lo, hi, p.hi)
				}
			}
		}
	}
}

func TestKerpleErrors(t *testing.T) {
	arch := Arch{Dim: 32, NumHeads: 4, NumKVHeads: 4, HeadDim: 8}
	for _, c := range []struct {
		opts map[string]any
		want string
	}{
		{map[string]any{"variant": "cubic"}, "log, power"},
		{map[string]any{"shared": "yes"}, `"shared" must be true or false`},
		{map[string]any{"r1": 1.0}, "unknown option r1"},
	} {
		_, err := New("kerple", c.opts, arch)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("kerple %v: error %v, want one mentioning %q", c.opts, err, c.want)
		}
	}
	for _, causal := range []bool{true, false} {
		if _, err := New("kerple", nil, Arch{Dim: 32, NumHeads: 4, NumKVHeads: 4, HeadDim: 8, Causal: causal}); err != nil {
			t.Errorf("kerple with defaults (causal %v): %v", causal, err)
		}
	}
}
