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

var _ Relative = (*XL)(nil)

func xlNew(t *testing.T, opts map[string]any, arch Arch) *XL {
	t.Helper()
	s, err := New("xl", opts, arch)
	if err != nil {
		t.Fatal(err)
	}
	return s.(*XL)
}

func xlRandom(r *rand.Rand, dims ...int) []float64 {
	n := 1
	for _, d := range dims {
		n *= d
	}
	out := make([]float64, n)
	for i := range out {
		out[i] = r.NormFloat64()
	}
	return out
}

// xlParams are W_{k,R} [h][hd][d], u and v [h][hd], in float64 and as the float32 values the
// context holds.
type xlParams struct {
	h, hd, d int
	w, u, v  []float64
}

func xlNewParams(r *rand.Rand, h, hd, d int) xlParams {
	return xlParams{h, hd, d, xlRandom(r, h, hd, d), xlRandom(r, h, hd), xlRandom(r, h, hd)}
}

// install puts the parameters where the scheme looks for them for one layer.
func (p xlParams) install(ctx *context.Context, x *XL, layer int) {
	biases := ctx
	if x.UntieR {
		biases = LayerScope(ctx, layer)
	}
	LayerScope(ctx, layer).VariableWithValue("w_kr", tensors.FromFlatDataAndDimensions(toFloat32(p.w), p.h, p.hd, p.d))
	biases.VariableWithValue("u", tensors.FromFlatDataAndDimensions(toFloat32(p.u), p.h, p.hd))
	biases.VariableWithValue("v", tensors.FromFlatDataAndDimensions(toFloat32(p.v), p.h, p.hd))
}

// xlReference is the paper's formula term by term, materializing R_{i-j} and W_{k,R}R_{i-j}:
// q_i·W R_{i-j} + u·k_j + v·W R_{i-j} for one head, q and k of width hd, δ = i - j.
func xlReference(p xlParams, base float64, head int, q, k []float64, delta int) float64 {
	r := make([]float64, p.d)
	for m := range p.d / 2 {
		omega := 1 / math.Pow(base, float64(2*m)/float64(p.d))
		r[m] = math.Sin(omega * float64(delta))
		r[p.d/2+m] = math.Cos(omega * float64(delta))
	}
	wr := make([]float64, p.hd)
	for e := range p.hd {
		for m := range p.d {
			wr[e] += p.w[(head*p.hd+e)*p.d+m] * r[m]
		}
	}
	var b, c, d float64
	for e := range p.hd {
		b += q[e] * wr[e]
		c += p.u[head*p.hd+e] * k[e]
		d += p.v[head*p.hd+e] * wr[e]
	}
	return b + c + d
}

// The graph's (factorized) logits equal the four-term formula computed directly, at arbitrary
// batched positions with keys on both sides of the query.
func TestXLClosedForm(t *testing.T) {
	const B, H, S, T, HD = 2, 2, 3, 5, 4
	qPos := [][]int32{{4, 9, 30}, {0, 2, 7}}
	kPos := [][]int32{{0, 4, 9, 12, 31}, {7, 1, 0, 20, 2}}
	arch := Arch{Dim: H * HD, NumHeads: H, NumKVHeads: H, HeadDim: HD, NumLayers: 3}
	r := rand.New(rand.NewPCG(21, 22))
	for _, opts := range []map[string]any{nil, {"rel_dim": 4, "base": 500}, {"untie_r": true}, {"rel_dim": 12}} {
		x := xlNew(t, opts, arch)
		p := xlNewParams(r, H, HD, x.RelDim)
		q, k := xlRandom(r, B, H, S, HD), xlRandom(r, B, H, T, HD)
		ctx := context.New().Checked(false)
		const layer = 2
		p.install(ctx, x, layer)
		out := context.MustExecOnce(backend(t), ctx, func(ctx *context.Context, q, k, qp, kp *Node) *Node {
			return x.RelativeLogits(ctx, layer, q, k, qp, kp)
		}, tensors.FromFlatDataAndDimensions(toFloat32(q), B, H, S, HD),
			tensors.FromFlatDataAndDimensions(toFloat32(k), B, H, T, HD), qPos, kPos)
		if dims := out.Shape().Dimensions; !slices.Equal(dims, []int{B, H, S, T}) {
			t.Fatalf("%v: shape %v, want [%d %d %d %d]", opts, dims, B, H, S, T)
		}
		got := tensors.MustCopyFlatData[float32](out)
		worst := 0.0
		for b := range B {
			for h := range H {
				for i := range S {
					qi := q[((b*H+h)*S+i)*HD:][:HD]
					for j := range T {
						kj := k[((b*H+h)*T+j)*HD:][:HD]
						want := xlReference(p, x.Base, h, qi, kj, int(qPos[b][i]-kPos[b][j]))
						worst = max(worst, math.Abs(float64(got[((b*H+h)*S+i)*T+j])-want))
					}
				}
			}
		}
		t.Logf("%v: max |graph - formula| = %.3g", opts, worst)
		if worst > 1e-4 {
			t.Errorf("%v: graph differs from the four-term formula by %g", opts, worst)
		}
	}
}

// With the same query at every query position and the same key at every key position, the
// logits are a function of i - j alone: equal for equal offsets, unchanged when every position
// shifts by the same amount (even far), and different for different offsets.
func TestXLDependsOnOffsetOnly(t *testing.T) {
	const H, HD, S, T = 2, 4, 4, 6
	arch := Arch{Dim: H * HD, NumHeads: H, NumKVHeads: H, HeadDim: HD, NumLayers: 1, Causal: true}
	x := xlNew(t, nil, arch)
	r := rand.New(rand.NewPCG(23, 24))
	p := xlNewParams(r, H, HD, x.RelDim)
	qh, kh := xlRandom(r, H, HD), xlRandom(r, H, HD)
	q, k := make([]float32, 0, H*S*HD), make([]float32, 0, H*T*HD)
	for h := range H {
		for range S {
			q = append(q, toFloat32(qh[h*HD:(h+1)*HD])...)
		}
		for range T {
			k = append(k, toFloat32(kh[h*HD:(h+1)*HD])...)
		}
	}
	qPos := []int32{3, 5, 10, 11}
	kPos := []int32{0, 2, 3, 5, 8, 13}
	shifts := []int32{0, 1, 1000, 123457}
	ctx := context.New().Checked(false)
	p.install(ctx, x, 0)
	outs := context.MustExecOnceN(backend(t), ctx, func(ctx *context.Context, q, k *Node) []*Node {
		var out []*Node
		for _, sh := range shifts {
			qp, kp := slices.Clone(qPos), slices.Clone(kPos)
			for i := range qp {
				qp[i] += sh
			}
			for i := range kp {
				kp[i] += sh
			}
			out = append(out, x.RelativeLogits(ctx, 0, q, k, Const(q.Graph(), [][]int32{qp}), Const(q.Graph(), [][]int32{kp})))
		}
		return out
	}, tensors.FromFlatDataAndDimensions(q, 1, H, S, HD), tensors.FromFlatDataAndDimensions(k, 1, H, T, HD))
	base := tensors.MustCopyFlatData[float32](outs[0])
	for n, out := range outs[1:] {
		for i, v := range tensors.MustCopyFlatData[float32](out) {
			if math.Abs(float64(v-base[i])) > 1e-4*max(1, math.Abs(float64(base[i]))) {
				t.Errorf("shift %d: logit %d changes from %g to %g", shifts[n+1], i, base[i], v)
			}
		}
	}
	byDiff := map[[2]int]float32{}
	for h := range H {
		for i := range S {
			for j := range T {
				v := base[(h*S+i)*T+j]
				key := [2]int{h, int(qPos[i] - kPos[j])}
				if w, ok := byDiff[key]; ok && math.Abs(float64(v-w)) > 1e-5 {
					t.Errorf("head %d, i-j = %d: logit %g here but %g elsewhere", h, key[1], v, w)
				}
				byDiff[key] = v
			}
		}
	}
	if a, b := byDiff[[2]int{0, 2}], byDiff[[2]int{0, 3}]; math.Abs(float64(a-b)) < 1e-4 {
		t.Errorf("offsets 2 and 3 give the same logit %g: position has no effect", a)
	}
	if a, b := byDiff[[2]int{0, 2}], byDiff[[2]int{0, -2}]; math.Abs(float64(a-b)) < 1e-4 {
		t.Errorf("offsets 2 and -2 give the same logit %g: direction has no effect", a)
	}
}

// W_{k,R} is per layer; u and v are shared by all layers unless untie_r. No value term.
func TestXLVariables(t *testing.T) {
	const H, HD = 2, 4
	arch := Arch{Dim: H * HD, NumHeads: H, NumKVHeads: H, HeadDim: HD, NumLayers: 2}
	for _, c := range []struct {
		opts map[string]any
		want []string
	}{
		{nil, []string{"/layer_0/w_kr", "/layer_1/w_kr", "/u", "/v"}},
		{map[string]any{"untie_r": true}, []string{"/layer_0/u", "/layer_0/v", "/layer_0/w_kr", "/layer_1/u", "/layer_1/v", "/layer_1/w_kr"}},
	} {
		x := xlNew(t, c.opts, arch)
		ctx := context.New().Checked(false)
		r := rand.New(rand.NewPCG(25, 26))
		q := tensors.FromFlatDataAndDimensions(toFloat32(xlRandom(r, 1, H, 3, HD)), 1, H, 3, HD)
		context.MustExecOnceN(backend(t), ctx, func(ctx *context.Context, q, p *Node) []*Node {
			if x.RelativeValues(ctx, 0, nil, p, p) != nil {
				t.Error("RelativeValues is not nil")
			}
			return []*Node{x.RelativeLogits(ctx, 0, q, q, p, p), x.RelativeLogits(ctx, 1, q, q, p, p)}
		}, q, [][]int32{{0, 1, 2}})
		var got []string
		for v := range ctx.IterVariables() {
			if strings.HasPrefix(v.Name(), "#") { // the context's own random-number state
				continue
			}
			got = append(got, strings.TrimSuffix(v.Scope(), "/")+"/"+v.Name())
		}
		slices.Sort(got)
		if !slices.Equal(got, c.want) {
			t.Errorf("%v: variables %v, want %v", c.opts, got, c.want)
		}
	}
}

func TestXLOptions(t *testing.T) {
	dec := Arch{Dim: 32, NumHeads: 4, NumKVHeads: 2, HeadDim: 8, NumLayers: 2, Causal: true}
	enc := dec
	enc.Causal = false
	for _, arch := range []Arch{dec, enc} {
		x := xlNew(t, nil, arch)
		if x.Base != 10000 || x.RelDim != 32 || x.UntieR {
			t.Errorf("defaults: %+v, want base 10000, rel_dim 32 (model dim), untie_r false", *x)
		}
	}
	for _, c := range []struct {
		opts map[string]any
		want string
	}{
		{map[string]any{"base": 1.0}, "base must be > 1"},
		{map[string]any{"rel_dim": 7}, "rel_dim must be even"},
		{map[string]any{"rel_dim": 0}, "rel_dim must be even"},
		{map[string]any{"rel_dim": -4}, "rel_dim must be even"},
		{map[string]any{"untie_r": "yes"}, `"untie_r" must be true or false`},
		{map[string]any{"untie": true}, "unknown option untie"},
	} {
		_, err := New("xl", c.opts, dec)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: error %v, want one line mentioning %q", c.opts, err, c.want)
		}
	}
}
