package positional

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

func newScaledRoPE(t *testing.T, hd, trainLen int, opts map[string]any) Scheme {
	t.Helper()
	s, err := New("rope", opts, Arch{Dim: 2 * hd, NumHeads: 2, NumKVHeads: 2, HeadDim: hd, TrainLen: trainLen})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func block(kv ...any) map[string]any {
	m := map[string]any{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

func closeRel(a, b float64) bool { return math.Abs(a-b) <= 1e-12*max(math.Abs(a), math.Abs(b)) }

// Each method's frequencies, written from its paper or post (r rotary dims, base b, factor s).
func TestRoPEScalingFrequencies(t *testing.T) {
	const hd, b, s, L = 64, 10000.0, 4.0, 128
	theta := func(i int, base float64) float64 { return 1 / math.Pow(base, float64(2*i)/hd) }
	freqs := func(opts map[string]any, n int) []float64 {
		sc := newScaledRoPE(t, hd, L, map[string]any{"rope_scaling": opts})
		return sc.(interface{ InvFreqAt(int) []float64 }).InvFreqAt(n)
	}

	// Linear (Chen et al.): position m becomes m/s, i.e. every θ_i is divided by s.
	for i, f := range freqs(block("rope_type", "linear", "factor", s), 0) {
		if !closeRel(f, theta(i, b)/s) {
			t.Errorf("linear θ_%d = %g, want %g", i, f, theta(i, b)/s)
		}
	}
	// NTK-aware (bloc97): b' = b·s^(r/(r-2)); θ_0 stays 1 and the slowest pair is divided by s.
	ntk := freqs(block("rope_type", "ntk", "factor", s), 0)
	for i, f := range ntk {
		if want := theta(i, b*math.Pow(s, hd/(hd-2.0))); !closeRel(f, want) {
			t.Errorf("ntk θ_%d = %g, want %g", i, f, want)
		}
	}
	if last := len(ntk) - 1; ntk[0] != 1 || !closeRel(ntk[last], theta(last, b)/s) {
		t.Errorf("ntk: θ_0 = %g (want 1), slowest = %g (want %g)", ntk[0], ntk[last], theta(last, b)/s)
	}
	// Dynamic NTK: unchanged up to L; at length n > L the base is b·(s·n/L - (s-1))^(r/(r-2)).
	dyn := block("rope_type", "dynamic", "factor", s)
	for _, n := range []int{1, L / 2, L} {
		for i, f := range freqs(dyn, n) {
			if f != theta(i, b) && !closeRel(f, theta(i, b)) {
				t.Fatalf("dynamic at n=%d: θ_%d = %g, want the unscaled %g", n, i, f, theta(i, b))
			}
		}
	}
	for _, n := range []int{L + 1, 2 * L, 4 * L, 9 * L} {
		base := b * math.Pow(s*float64(n)/L-(s-1), hd/(hd-2.0))
		for i, f := range freqs(dyn, n) {
			if !closeRel(f, theta(i, base)) {
				t.Fatalf("dynamic at n=%d: θ_%d = %g, want %g", n, i, f, theta(i, base))
			}
		}
	}

	// YaRN (Peng et al.): pairs turning more than β_fast = 32 times over L keep θ, pairs turning
	// fewer than β_slow = 1 times get θ/s, and in between the mix (1-γ)θ/s + γθ with γ falling
	// linearly over the pair index between the (floored, ceiled) pair indices of those turn
	// counts, as the reference code computes them.
	for _, c := range []struct {
		L        int
		s        float64
		truncate bool
	}{{128, 4, true}, {4096, 8, true}, {4096, 8, false}, {2048, 16, true}} {
		opts := block("rope_type", "yarn", "factor", c.s, "original_max_position_embeddings", c.L, "truncate", c.truncate)
		got := freqs(opts, 0)
		turnsAt := func(turns float64) float64 { // pair index i where L·θ_i/2π = turns
			return hd / 2.0 * math.Log(float64(c.L)/(2*math.Pi*turns)) / math.Log(b)
		}
		lo, hi := turnsAt(32), turnsAt(1)
		if c.truncate {
			lo, hi = math.Floor(lo), math.Ceil(hi)
		}
		lo, hi = math.Max(lo, 0), math.Min(hi, hd-1)
		mixed := 0
		for i, f := range got {
			th := theta(i, b)
			turns := float64(c.L) * th / (2 * math.Pi)
			var want float64
			switch {
			case float64(i) <= lo:
				want = th
				if turns < 32 && c.truncate && float64(i) < turnsAt(32) {
					t.Errorf("yarn L=%d: pair %d turns %g < 32 times but is before the ramp", c.L, i, turns)
				}
			case float64(i) >= hi:
				want = th / c.s
			default:
				gamma := 1 - (float64(i)-lo)/(hi-lo)
				want = (1-gamma)*th/c.s + gamma*th
				mixed++
			}
			if !closeRel(f, want) {
				t.Errorf("yarn L=%d s=%g truncate=%v: θ_%d = %g, want %g", c.L, c.s, c.truncate, i, f, want)
			}
			if turns > 32 && f != th && !closeRel(f, th) {
				t.Errorf("yarn: pair %d turns %g > β_fast times but was changed", i, turns)
			}
			if turns < 1 && !closeRel(f, th/c.s) {
				t.Errorf("yarn: pair %d turns %g < β_slow times but was not interpolated", i, turns)
			}
		}
		if mixed == 0 {
			t.Errorf("yarn L=%d: no pair on the ramp; the test would not see a wrong ramp", c.L)
		}
		sc := newScaledRoPE(t, hd, L, map[string]any{"rope_scaling": opts})
		if f, want := sc.(*RoPE).AttentionFactor(), 0.1*math.Log(c.s)+1; !closeRel(f, want) {
			t.Errorf("yarn s=%g: attention factor %g, want 0.1·ln s + 1 = %g", c.s, f, want)
		}
	}
	over := newScaledRoPE(t, hd, L, map[string]any{"rope_scaling": block("rope_type", "yarn", "factor", 4.0, "attention_factor", 1.5)})
	if f := over.(*RoPE).AttentionFactor(); f != 1.5 {
		t.Errorf("yarn attention_factor 1.5 gave %g", f)
	}
}

// rope_type none leaves RoPE bit for bit as it was, frequencies and rotations alike.
func TestRoPEScalingNoneIsIdentity(t *testing.T) {
	const hd = 16
	be := backend(t)
	plain := newScaledRoPE(t, hd, 0, nil).(*RoPE)
	for _, typ := range []string{"none", "default"} {
		none := newScaledRoPE(t, hd, 0, map[string]any{"rope_scaling": block("rope_type", typ, "factor", 4.0)}).(*RoPE)
		for i, f := range none.InvFreq() {
			if f != plain.InvFreq()[i] {
				t.Fatalf("%s: θ_%d = %v, unscaled %v", typ, i, f, plain.InvFreq()[i])
			}
		}
		r := rand.New(rand.NewPCG(5, 6))
		x := randomTensor(r, 2, 3, 7, hd)
		pos := [][]int32{{0, 1, 2, 3, 500, 1000, 4095}, {9, 8, 7, 6, 5, 4, 3}}
		rot := func(s *RoPE) []float32 {
			return tensors.MustCopyFlatData[float32](MustExecOnce(be, func(xn, pn *Node) *Node { return s.Rotate(xn, pn) }, x, pos))
		}
		a, b := rot(plain), rot(none)
		for i := range a {
			if a[i] != b[i] {
				t.Fatalf("%s: rotation differs at %d: %v vs %v", typ, i, a[i], b[i])
			}
		}
	}
}

// YaRN's attention factor multiplies the logits by its square (it scales q and k alike);
// linear scaling equals plain RoPE at positions divided by s.
func TestRoPEScalingRotations(t *testing.T) {
	const hd = 16
	r := rand.New(rand.NewPCG(7, 8))
	q, k := randomTensor(r, 1, 1, 1, hd), randomTensor(r, 1, 1, 1, hd)
	be := backend(t)
	score := func(s *RoPE, m, n float32) float64 {
		out := MustExecOnce(be, func(g *Graph) *Node {
			qn, kn := Const(g, q.Value()), Const(g, k.Value())
			qr := s.Rotate(qn, Const(g, [][]int32{{int32(m)}}))
			kr := s.Rotate(kn, Const(g, [][]int32{{int32(n)}}))
			return ReduceAllSum(Mul(qr, kr))
		})
		return float64(tensors.ToScalar[float32](out))
	}
	plain := newScaledRoPE(t, hd, 64, nil).(*RoPE)
	yarn := newScaledRoPE(t, hd, 64, map[string]any{"rope_scaling": block("rope_type", "yarn", "factor", 4.0)}).(*RoPE)
	yarn1 := newScaledRoPE(t, hd, 64, map[string]any{"rope_scaling": block("rope_type", "yarn", "factor", 4.0, "attention_factor", 1.0)}).(*RoPE)
	linear := newScaledRoPE(t, hd, 64, map[string]any{"rope_scaling": block("rope_type", "linear", "factor", 4.0)}).(*RoPE)
	m := 0.1*math.Log(4) + 1
	for _, c := range [][2]float32{{40, 12}, {400, 8}, {7, 7}} {
		lin, pl := score(linear, c[0], c[1]), score(plain, c[0]/4, c[1]/4)
		ya, ya1 := score(yarn, c[0], c[1]), score(yarn1, c[0], c[1])
		if math.Abs(lin-pl) > 1e-4*max(1, math.Abs(pl)) {
			t.Errorf("linear at (%v): %g, plain RoPE at positions/4: %g", c, lin, pl)
		}
		if math.Abs(ya-m*m*ya1) > 1e-4*max(1, math.Abs(ya1)) {
			t.Errorf("yarn at (%v): %g, want m² times the score with attention_factor 1 = %g", c, ya, m*m*ya1)
		}
	}
}

// Dynamic NTK's Scores: query m and key n rotated with the base of length m+1. Checked
// against plain RoPE (rotation matrices, a different computation) with that base.
func TestDynamicNTKScores(t *testing.T) {
	const hd, L = 16, 8
	r := rand.New(rand.NewPCG(9, 10))
	be := backend(t)
	for _, opts := range []map[string]any{{}, {"layout": "interleaved", "rotary_fraction": 0.5}} {
		opts["rope_scaling"] = block("rope_type", "dynamic", "factor", 2.0, "original_max_position_embeddings", L)
		d := newScaledRoPE(t, hd, 0, opts).(*DynamicNTK)
		if _, isQK := Scheme(d).(QueryKey); isQK {
			t.Fatal("dynamic NTK must not rotate keys before they are cached")
		}
		q, k := randomTensor(r, 1, 2, 1, hd), randomTensor(r, 1, 2, 1, hd)
		for _, c := range [][2]int32{{3, 1}, {7, 7}, {8, 2}, {20, 19}, {50, 3}} {
			got := MustExecOnce(be, func(qn, kn, qp, kp *Node) *Node {
				return d.Scores(nil, 0, qn, kn, qp, kp)
			}, q, k, [][]int32{{c[0]}}, [][]int32{{c[1]}})
			want := func() []float32 {
				base := d.RoPE.Scaling.DynamicBase(d.RoPE.Base, d.RoPE.RotaryDims(), int(c[0])+1)
				ref := &RoPE{Base: base, Layout: d.RoPE.Layout, RotaryFraction: d.RoPE.RotaryFraction, HeadDim: hd}
				out := MustExecOnce(be, func(qn, kn, qp, kp *Node) *Node {
					return ReduceSum(Mul(ref.Rotate(qn, qp), ref.Rotate(kn, kp)), -1)
				}, q, k, [][]int32{{c[0]}}, [][]int32{{c[1]}})
				return tensors.MustCopyFlatData[float32](out)
			}()
			g := tensors.MustCopyFlatData[float32](got)
			for h := range want {
				if math.Abs(float64(g[h]-want[h])) > 1e-4*max(1, math.Abs(float64(want[h]))) {
					t.Errorf("%v (m, n) = %v head %d: score %g, want %g", opts["layout"], c, h, g[h], want[h])
				}
			}
		}
	}
}

func TestRoPEScalingErrors(t *testing.T) {
	arch := Arch{Dim: 32, NumHeads: 2, NumKVHeads: 2, HeadDim: 16}
	for _, c := range []struct {
		block map[string]any
		want  string
	}{
		{block("rope_type", "linear", "factor", 0.5), "factor must be >= 1"},
		{block("rope_type", "su", "factor", 2.0), "valid: none, default, linear, ntk, dynamic, yarn, llama3, longrope"},
		{block("rope_type", "longrope", "factor", 2.0, "original_max_position_embeddings", 64), "short_factor with one factor per rotary pair (8), got 0"},
		{block("rope_type", "linear", "factor", 1e308), "float32 cannot hold"},
		{block("rope_type", "ntk", "factor", 1e300), "float32 cannot hold"},
		{block("factor", 2.0), "needs rope_type"},
		{block("rope_type", "yarn", "factor", 4.0), "original_max_position_embeddings"},
		{block("rope_type", "dynamic", "factor", 4.0), "--yarn-orig-ctx"},
		{block("rope_type", "yarn", "factor", 4.0, "original_max_position_embeddings", 64, "beta_fast", 1.0, "beta_slow", 2.0), "beta_fast > beta_slow"},
		{block("rope_type", "linear", "factor", 2.0, "fator", 3.0), "rope_scaling: unknown option fator"},
	} {
		_, err := New("rope", map[string]any{"rope_scaling": c.block}, arch)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: got %v, want a one-line error containing %q", c.block, err, c.want)
		}
	}
	if _, err := New("rope", map[string]any{"rope_scaling": "yarn"}, arch); err == nil || !strings.Contains(err.Error(), "must be an object") {
		t.Errorf("rope_scaling as a string: got %v", err)
	}
	// The original context comes from the model when the block has none.
	if _, err := New("rope", map[string]any{"rope_scaling": block("rope_type", "yarn", "factor", 4.0)}, Arch{Dim: 32, NumHeads: 2, NumKVHeads: 2, HeadDim: 16, TrainLen: 64}); err != nil {
		t.Errorf("yarn with the model's train length: %v", err)
	}
}

// Llama 3.1's scaling, written in Meta's terms of wavelengths λ_i = 2π/θ_i: keep pairs with
// λ < L/high_freq_factor, divide by s those with λ > L/low_freq_factor, and blend in between
// with weight (L/λ - low)/(high - low).
func TestRoPEScalingLlama3(t *testing.T) {
	const hd, b, s, L, low, high = 128, 500000.0, 8.0, 8192, 1.0, 4.0
	sc := newScaledRoPE(t, hd, 0, map[string]any{"base": b, "rope_scaling": block(
		"rope_type", "llama3", "factor", s, "low_freq_factor", low, "high_freq_factor", high, "original_max_position_embeddings", L)}).(*RoPE)
	kept, divided, blended := 0, 0, 0
	for i, f := range sc.InvFreq() {
		theta := 1 / math.Pow(b, float64(2*i)/hd)
		lambda := 2 * math.Pi / theta
		var want float64
		switch {
		case lambda < L/high:
			want, kept = theta, kept+1
		case lambda > L/low:
			want, divided = theta/s, divided+1
		default:
			w := (L/lambda - low) / (high - low)
			want, blended = (1-w)*theta/s+w*theta, blended+1
		}
		if !closeRel(f, want) {
			t.Errorf("llama3 θ_%d = %g, want %g", i, f, want)
		}
	}
	if kept == 0 || divided == 0 || blended == 0 {
		t.Errorf("llama3: %d kept, %d divided, %d blended; every regime should be exercised", kept, divided, blended)
	}
	if sc.AttentionFactor() != 1 {
		t.Errorf("llama3 attention factor %g, want 1", sc.AttentionFactor())
	}
}

// Long inputs go through dynamic NTK's Scores in blocks of queries: the same scores as in one
// piece, whatever the block (here 1, 3 and 7 queries of 20, against 20 keys).
func TestDynamicNTKScoresInBlocks(t *testing.T) {
	const hd, L, s = 16, 8, 20
	r := rand.New(rand.NewPCG(11, 12))
	be := backend(t)
	opts := map[string]any{"rope_scaling": block("rope_type", "dynamic", "factor", 4.0, "original_max_position_embeddings", L)}
	d := newScaledRoPE(t, hd, 0, opts).(*DynamicNTK)
	q, k := randomTensor(r, 2, 2, s, hd), randomTensor(r, 2, 2, s, hd)
	pos := make([][]int32, 2)
	for b := range pos {
		for i := range s {
			pos[b] = append(pos[b], int32(3*b+i))
		}
	}
	run := func() []float32 {
		out := MustExecOnce(be, func(qn, kn, qp, kp *Node) *Node { return d.Scores(nil, 0, qn, kn, qp, kp) }, q, k, pos, pos)
		return tensors.MustCopyFlatData[float32](out)
	}
	defer func(v int) { dynamicBlockValues = v }(dynamicBlockValues)
	whole := run()
	pairs := d.RoPE.RotaryDims() / 2
	for _, queries := range []int{1, 3, 7} {
		dynamicBlockValues = queries * 2 * 2 * s * pairs // b·h·t·P values a query
		got := run()
		for i := range whole {
			if math.Abs(float64(got[i]-whole[i])) > 1e-5*max(1, math.Abs(float64(whole[i]))) {
				t.Fatalf("blocks of %d queries: score %d is %g, in one piece %g", queries, i, got[i], whole[i])
			}
		}
	}
}
