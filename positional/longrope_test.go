package positional

import (
	"math"
	"math/rand/v2"
	"testing"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// A Phi-3-shaped block (head dim 96, base 10000, L = 4096, s = 32): θ'_i = 1/(λ_i·10^(i/12)),
// so pairs 0, 12, 24 and 36 have round unscaled frequencies 1, 1/10, 1/100, 1/1000; the factors
// below are made up, the formula is Hugging Face's _compute_longrope_parameters.
func TestLongRoPEPhi3Frequencies(t *testing.T) {
	const hd, L = 96, 4096
	short, long := make([]any, hd/2), make([]any, hd/2)
	for i := range short {
		short[i], long[i] = 1+float64(i)/100, 1+float64(i)/10
	}
	s := newScaledRoPE(t, hd, 0, map[string]any{"rope_scaling": block("rope_type", "longrope", "factor", 32.0,
		"original_max_position_embeddings", L, "short_factor", short, "long_factor", long)})
	lr, ok := s.(*LongRoPE)
	if !ok {
		t.Fatalf("rope with rope_type longrope is %T, want *LongRoPE", s)
	}
	if _, isQK := Scheme(lr).(QueryKey); isQK {
		t.Fatal("LongRoPE must not rotate keys before they are cached")
	}
	want := map[int][2]float64{ // pair: short θ', long θ'
		0:  {1 / 1.00, 1 / 1.0},
		12: {1 / (1.12 * 10), 1 / (2.2 * 10)},
		24: {1 / (1.24 * 100), 1 / (3.4 * 100)},
		36: {1 / (1.36 * 1000), 1 / (4.6 * 1000)},
	}
	for _, c := range []struct {
		n    int
		long bool
	}{{0, false}, {1, false}, {L, false}, {L + 1, true}, {8 * L, true}} {
		f := lr.InvFreqAt(c.n)
		for i, w := range want {
			if got, exp := f[i], w[map[bool]int{false: 0, true: 1}[c.long]]; !closeRel(got, exp) {
				t.Errorf("length %d: θ'_%d = %g, want %g", c.n, i, got, exp)
			}
		}
	}
	// √(1 + ln 32 / ln 4096) = √(1 + 5/12).
	if got, exp := lr.AttentionFactor(), math.Sqrt(17.0/12); !closeRel(got, exp) {
		t.Errorf("attention factor %g, want √(17/12) = %g", got, exp)
	}
	given := newScaledRoPE(t, hd, 0, map[string]any{"rope_scaling": block("rope_type", "longrope", "factor", 32.0,
		"original_max_position_embeddings", L, "short_factor", short, "long_factor", long, "attention_factor", 1.5)})
	if got := given.(*LongRoPE).AttentionFactor(); got != 1.5 {
		t.Errorf("attention_factor 1.5 given: %g", got)
	}
}

// LongRoPE's Scores against an independent computation in float64: for query m and key n,
// q'·k' = m²·Σ_i cos(δθ'_i)(q_a k_a + q_b k_b) + sin(δθ'_i)(q_a k_b − q_b k_a), δ = m − n, with the
// short factors when m < L and the long ones from m = L on (half layout: a = i, b = i + r/2).
func TestLongRoPEScores(t *testing.T) {
	const hd, L = 16, 8
	r := rand.New(rand.NewPCG(41, 42))
	short, long := make([]any, hd/2), make([]any, hd/2)
	shortF, longF := make([]float64, hd/2), make([]float64, hd/2)
	for i := range short {
		shortF[i], longF[i] = 1+r.Float64(), 2+3*r.Float64()
		short[i], long[i] = shortF[i], longF[i]
	}
	lr := newScaledRoPE(t, hd, 0, map[string]any{"rope_scaling": block("rope_type", "longrope", "factor", 4.0,
		"original_max_position_embeddings", L, "short_factor", short, "long_factor", long)}).(*LongRoPE)
	m2 := 1 + math.Log(4)/math.Log(L)
	q, k := randomTensor(r, 1, 2, 1, hd), randomTensor(r, 1, 2, 1, hd)
	qv, kv := tensors.MustCopyFlatData[float32](q), tensors.MustCopyFlatData[float32](k)
	be := backend(t)
	for _, c := range [][2]int32{{3, 1}, {7, 0}, {8, 2}, {8, 8}, {20, 19}, {50, 3}} {
		got := tensors.MustCopyFlatData[float32](MustExecOnce(be, func(qn, kn, qp, kp *Node) *Node {
			return lr.Scores(nil, 0, qn, kn, qp, kp)
		}, q, k, [][]int32{{c[0]}}, [][]int32{{c[1]}}))
		ext := shortF
		if int(c[0]) >= L {
			ext = longF
		}
		for h := range 2 {
			qh, kh := qv[h*hd:(h+1)*hd], kv[h*hd:(h+1)*hd]
			want := 0.0
			for i := range hd / 2 {
				theta := 1 / (ext[i] * math.Pow(10000, float64(2*i)/hd))
				d := float64(c[0]-c[1]) * theta
				qa, qb, ka, kb := float64(qh[i]), float64(qh[i+hd/2]), float64(kh[i]), float64(kh[i+hd/2])
				want += math.Cos(d)*(qa*ka+qb*kb) + math.Sin(d)*(qa*kb-qb*ka)
			}
			want *= m2
			if math.Abs(float64(got[h])-want) > 1e-4*max(1, math.Abs(want)) {
				t.Errorf("(m, n) = %v head %d: score %g, want %g", c, h, got[h], want)
			}
		}
	}
}

// p-RoPE: the slowest 1−p of the pairs stop rotating. p = 1 is RoPE, p = 0 is NoPE (scores are
// the plain q·k at any positions), and in between the kept pairs are RoPE's fastest.
func TestPRoPE(t *testing.T) {
	const hd = 16
	plain := newScaledRoPE(t, hd, 0, nil).(*RoPE).InvFreq()
	for _, c := range []struct {
		p    float64
		kept int
	}{{1, 8}, {0.75, 6}, {0.5, 4}, {0.3, 2}, {0, 0}} {
		f := newScaledRoPE(t, hd, 0, map[string]any{"p": c.p}).(*RoPE).InvFreq()
		for i := range f {
			want := plain[i]
			if i >= c.kept {
				want = 0
			}
			if f[i] != want {
				t.Errorf("p = %g: θ_%d = %g, want %g", c.p, i, f[i], want)
			}
		}
	}
	r := rand.New(rand.NewPCG(43, 44))
	q, k := randomTensor(r, 1, 1, 1, hd), randomTensor(r, 1, 1, 1, hd)
	nope := newScaledRoPE(t, hd, 0, map[string]any{"p": 0.0}).(*RoPE)
	be := backend(t)
	for _, pos := range [][2]int32{{0, 0}, {5, 1}, {300, 7}} {
		out := MustExecOnce(be, func(qn, kn, qp, kp *Node) *Node {
			return Sub(ReduceAllSum(Mul(nope.Rotate(qn, qp), nope.Rotate(kn, kp))), ReduceAllSum(Mul(qn, kn)))
		}, q, k, [][]int32{{pos[0]}}, [][]int32{{pos[1]}})
		if d := tensors.ToScalar[float32](out); math.Abs(float64(d)) > 1e-5 {
			t.Errorf("p = 0 at positions %v: score differs from the plain q·k by %g", pos, d)
		}
	}
	if _, err := New("rope", map[string]any{"p": 1.5}, Arch{Dim: 32, NumHeads: 2, NumKVHeads: 2, HeadDim: hd}); err == nil {
		t.Error("p = 1.5 accepted")
	}
	if _, err := New("rope", map[string]any{"base": 1e308}, Arch{Dim: 32, NumHeads: 2, NumKVHeads: 2, HeadDim: hd}); err == nil {
		t.Error("base 1e308 accepted: its slow frequencies are zero in float32")
	}
}
