package positional

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

func newXPos(t *testing.T, opts map[string]any, headDim int) *XPos {
	t.Helper()
	s, err := New("xpos", opts, Arch{Dim: 2 * headDim, NumHeads: 2, NumKVHeads: 1, HeadDim: headDim, Causal: true})
	if err != nil {
		t.Fatal(err)
	}
	return s.(*XPos)
}

// xposReference is the paper's formula in float64 for one head vector v at position pos;
// sign is +1 for a query (ζ^(m/B)) and -1 for a key (ζ^(-n/B)).
func xposReference(v []float32, pos int, sign, base, scaleBase float64, layout string) []float64 {
	d := len(v)
	out := make([]float64, d)
	for i := range d / 2 {
		a, b := i, i+d/2
		if layout == "interleaved" {
			a, b = 2*i, 2*i+1
		}
		theta := math.Pow(base, -2*float64(i)/float64(d))
		zeta := (2*float64(i)/float64(d) + 0.4) / 1.4
		s := math.Pow(zeta, sign*float64(pos)/scaleBase)
		c, sn := math.Cos(float64(pos)*theta), math.Sin(float64(pos)*theta)
		out[a] = s * (float64(v[a])*c - float64(v[b])*sn)
		out[b] = s * (float64(v[a])*sn + float64(v[b])*c)
	}
	return out
}

func xposRandom(r *rand.Rand, n int) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(r.NormFloat64())
	}
	return out
}

// The QueryKey hook equals the closed form for queries and keys (grouped: 2 query heads, 1
// key head) at arbitrary positions, for both layouts and several bases.
func TestXPosClosedForm(t *testing.T) {
	const hd, seq = 8, 4
	r := rand.New(rand.NewPCG(21, 22))
	qPos := []int32{5, 0, 77, 300}
	kPos := []int32{300, 2, 1, 9}
	for _, c := range []struct {
		layout          string
		base, scaleBase float64
	}{{"half", 10000, 512}, {"interleaved", 10000, 512}, {"half", 500, 16}, {"interleaved", 100, 64}} {
		x := newXPos(t, map[string]any{"layout": c.layout, "base": c.base, "scale_base": c.scaleBase}, hd)
		q, k := xposRandom(r, 2*seq*hd), xposRandom(r, seq*hd)
		outs := MustExecOnceN(backend(t), func(g *Graph) []*Node {
			q2, k2 := x.QueryKey(nil, 0, Reshape(Const(g, q), 1, 2, seq, hd), Reshape(Const(g, k), 1, 1, seq, hd),
				Const(g, [][]int32{qPos}), Const(g, [][]int32{kPos}))
			return []*Node{q2, k2}
		})
		check := func(what string, got, in []float32, heads int, pos []int32, sign float64) {
			for h := range heads {
				for s := range seq {
					off := (h*seq + s) * hd
					want := xposReference(in[off:off+hd], int(pos[s]), sign, c.base, c.scaleBase, c.layout)
					for d := range hd {
						if e := math.Abs(float64(got[off+d]) - want[d]); !(e <= 1e-4*max(1, math.Abs(want[d]))) {
							t.Errorf("%+v: %s head %d pos %d dim %d = %g, want %g", c, what, h, pos[s], d, got[off+d], want[d])
						}
					}
				}
			}
		}
		check("query", tensors.MustCopyFlatData[float32](outs[0]), q, 2, qPos, 1)
		check("key", tensors.MustCopyFlatData[float32](outs[1]), k, 1, kPos, -1)
	}
}

// xposScores returns q'_m·k'_n for each (m, n) pair, with q and k one head vector each; with
// rope true, the plain RoPE score of the same vectors (xPos's rotation without the scale).
func xposScores(t *testing.T, x *XPos, q, k []float32, pairs [][2]int, rope bool) []float64 {
	t.Helper()
	hd := len(q)
	qp, kp := make([]int32, len(pairs)), make([]int32, len(pairs))
	for i, p := range pairs {
		qp[i], kp[i] = int32(p[0]), int32(p[1])
	}
	n := len(pairs)
	out := MustExecOnce(backend(t), func(g *Graph) *Node {
		qs := BroadcastToDims(Reshape(Const(g, q), 1, 1, 1, hd), 1, 1, n, hd)
		ks := BroadcastToDims(Reshape(Const(g, k), 1, 1, 1, hd), 1, 1, n, hd)
		qpn, kpn := Const(g, [][]int32{qp}), Const(g, [][]int32{kp})
		var q2, k2 *Node
		if rope {
			q2, k2 = x.RoPE.Rotate(qs, qpn), x.RoPE.Rotate(ks, kpn)
		} else {
			q2, k2 = x.QueryKey(nil, 0, qs, ks, qpn, kpn)
		}
		return ReduceSum(Mul(q2, k2), -1) // [1, 1, n]
	})
	flat := tensors.MustCopyFlatData[float32](out)
	scores := make([]float64, n)
	for i := range scores {
		scores[i] = float64(flat[i])
	}
	return scores
}

// q'_m · k'_n depends on m and n only through m − n.
func TestXPosScoreDependsOnOffsetOnly(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	for _, opts := range []map[string]any{{}, {"layout": "interleaved", "scale_base": 64.0}} {
		x := newXPos(t, opts, 16)
		q, k := xposRandom(r, 16), xposRandom(r, 16)
		var pairs [][2]int
		for _, c := range [][3]int{{5, 2, 7}, {9, 0, 100}, {30, 30, 13}, {400, 3, 1000}, {64, 63, 3000}} { // within float32 range at B = 64 (n < 70·B)
			pairs = append(pairs, [2]int{c[0], c[1]}, [2]int{c[0] + c[2], c[1] + c[2]})
		}
		s := xposScores(t, x, q, k, pairs, false)
		for i := 0; i < len(s); i += 2 {
			if !(math.Abs(s[i]-s[i+1]) <= 1e-4*max(1, math.Abs(s[i]))) {
				t.Errorf("%v: score%v = %.7g but score%v = %.7g", opts, pairs[i], s[i], pairs[i+1], s[i+1])
			}
		}
		if math.Abs(s[0]-xposScores(t, x, q, k, [][2]int{{5, 3}}, false)[0]) < 1e-3 {
			t.Errorf("%v: score does not depend on the distance", opts)
		}
	}
}

// Queries and keys are scaled separately, ζ^(m/B) and ζ^(-n/B), so float32 bounds the range:
// about 70·B positions. At the default B = 512 a 30,000-token offset still scores as at 0.
func TestXPosFloat32Range(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 26))
	x := newXPos(t, nil, 16)
	q, k := xposRandom(r, 16), xposRandom(r, 16)
	s := xposScores(t, x, q, k, [][2]int{{20, 10}, {30020, 30010}}, false)
	if !(math.Abs(s[0]-s[1]) <= 1e-3*max(1, math.Abs(s[0]))) {
		t.Errorf("score(20, 10) = %g but score(30020, 30010) = %g", s[0], s[1])
	}
}

// With identical content in one rotary pair i, xPos's score is RoPE's times ζ_i^((m-n)/B):
// it decays with distance, at the rate ζ predicts, fastest for the high-frequency pairs.
func TestXPosScoreDecaysAsZetaPredicts(t *testing.T) {
	const hd, scaleBase = 8, 32.0
	checked := 0
	for _, layout := range []string{"half", "interleaved"} {
		x := newXPos(t, map[string]any{"layout": layout, "scale_base": scaleBase}, hd)
		zeta := x.Zeta()
		var pairs [][2]int
		deltas := []int{0, 1, 3, 10, 40, 100}
		for _, d := range deltas {
			pairs = append(pairs, [2]int{200 + d, 200})
		}
		prevRatio := make([]float64, hd/2) // ratio at the previous distance, per pair
		for i := range hd / 2 {
			a, b := x.RoPE.Pair(i)
			v := make([]float32, hd)
			v[a], v[b] = 0.6, -0.8 // |v|² = 1
			xs := xposScores(t, x, v, v, pairs, false)
			rs := xposScores(t, x, v, v, pairs, true) // RoPE's score, cos(Δθ_i)
			for j, d := range deltas {
				if math.Abs(rs[j]) < 0.1 {
					continue // the ratio is ill-conditioned where RoPE's score crosses zero
				}
				ratio := xs[j] / rs[j]
				checked++
				want := math.Pow(zeta[i], float64(d)/scaleBase)
				if !(math.Abs(ratio-want) <= 1e-4) {
					t.Errorf("%s pair %d, m-n = %d: xpos/rope = %.6g, want ζ^(Δ/B) = %.6g", layout, i, d, ratio, want)
				}
				if j > 0 && prevRatio[i] > 0 && ratio >= prevRatio[i] {
					t.Errorf("%s pair %d: no decay from distance %d to %d (%g, %g)", layout, i, deltas[j-1], d, prevRatio[i], ratio)
				}
				prevRatio[i] = ratio
				if d == 0 && !(math.Abs(xs[j]-1) <= 1e-5) {
					t.Errorf("%s pair %d: score at distance 0 = %g, want |v|² = 1", layout, i, xs[j])
				}
			}
		}
		for i := 1; i < hd/2; i++ {
			if !(zeta[i-1] < zeta[i] && zeta[i] < 1) {
				t.Errorf("ζ = %v: want increasing and below 1 (high-frequency pairs decay fastest)", zeta)
			}
		}
	}
	if checked < 30 { // of 2 layouts × 4 pairs × 6 distances
		t.Errorf("only %d ratios checked", checked)
	}
}

func TestXPosErrors(t *testing.T) {
	dec := Arch{Dim: 32, NumHeads: 2, NumKVHeads: 2, HeadDim: 16, Causal: true}
	enc := dec
	enc.Causal = false
	odd := Arch{Dim: 14, NumHeads: 2, NumKVHeads: 2, HeadDim: 7, Causal: true}
	for _, c := range []struct {
		opts map[string]any
		arch Arch
		want string
	}{
		{nil, enc, "needs a decoder"},
		{map[string]any{"scale_base": 0.0}, dec, "scale_base"},
		{map[string]any{"scale_base": -512.0}, dec, "scale_base"},
		{map[string]any{"base": 1.0}, dec, "base must be > 1"},
		{map[string]any{"layout": "diagonal"}, dec, "interleaved"},
		{map[string]any{"rotary_fraction": 0.5}, dec, "unknown option rotary_fraction"},
		{nil, odd, "even head dim"},
	} {
		_, err := New("xpos", c.opts, c.arch)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("xpos %v (causal %v): error %v, want one line mentioning %q", c.opts, c.arch.Causal, err, c.want)
		}
	}
	if _, err := New("xpos", nil, dec); err != nil {
		t.Errorf("xpos with defaults in a decoder: %v", err)
	}
}
