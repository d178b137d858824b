package positional

// RoPE context extension at inference time. A model trained at length L runs at s·L (s the
// factor) by changing its rotary frequencies θ_i = b^(-2i/r), i < r/2, and for YaRN the logits'
// scale too, without retraining:
//
//	linear   θ'_i = θ_i / s                         position interpolation (Chen et al. 2023)
//	ntk      θ'_i = (b·s^(r/(r-2)))^(-2i/r)         "NTK-aware" base change (bloc97 2023)
//	dynamic  ntk with s replaced, at length n > L, by s·n/L - (s-1)   (emozilla 2023; HF "dynamic")
//	yarn     θ'_i = (1-γ_i)·θ_i/s + γ_i·θ_i, attention factor 0.1·ln(s) + 1   (Peng et al. 2023)
//	llama3   as yarn, with γ_i linear in the turns L·θ_i/2π between low_freq_factor (1) and
//	         high_freq_factor (4), no attention factor (Meta's Llama 3.1; HF "llama3")
//	longrope θ'_i = θ_i / λ_i, λ the short factors up to L and the long ones past it, attention
//	         factor √(1 + ln s / ln L)   (Ding et al. 2024; Phi-3; HF "longrope"; longrope.go)
//
// Linear squeezes every position into the trained range, at the price of crowding neighbours
// together; NTK raises the base so that the fast pairs (local order) barely move and the slow
// ones (long range) are interpolated; YaRN ramps per pair between the two. Its γ_i is 1 (keep
// θ_i) for pairs that turn more than β_fast (32) times over the trained context, 0 (divide by
// s) for pairs that turn fewer than β_slow (1) times, and linear in between. The paper writes
// the ramp as linear in the number of turns r_i = L·θ_i/2π; its reference code, Hugging Face and
// llama.cpp make it linear in the pair index i between the pairs where r_i = β_fast and
// r_i = β_slow (floored and ceiled). We follow the code: it is what checkpoints were tuned with.
// YaRN's factor multiplies cos and sin, so both q and k: the logits grow by its square, the
// paper's 1/t with √(1/t) = 0.1·ln(s) + 1.
//
// Dynamic NTK's base grows with the length, so a key rotated under one base is wrong under the
// next. Hugging Face and vLLM cache rotated keys and so mix bases once generation passes L (the
// "stale cache" bug). Here the keys are cached unrotated and rotated at attention time, and
// each query uses the base of its own length, n = position + 1: a token's hidden state then
// depends only on the tokens before it, so cached decoding equals full recomputation at every
// position and at every layer. (Hugging Face's single forward over n tokens uses base(n) for all
// of them; ours differs there on purpose, and equals what token-by-token generation computes.)
// The price: the q·k product becomes an elementwise sum over [seq, keys, r/2] (see Scores), as a
// query-dependent rotation of the keys cannot be folded into one matrix product.
//
// The configuration is Hugging Face's rope_scaling block, as written in config.json:
//
//	"positional": {"name": "rope", "rope_scaling": {"rope_type": "yarn", "factor": 4,
//	               "original_max_position_embeddings": 128}}
//
// with "type" accepted for "rope_type" (older configs), and "beta_fast", "beta_slow",
// "attention_factor" (replaces 0.1·ln s + 1) and "truncate" (true) for YaRN,
// "low_freq_factor" and "high_freq_factor" for llama3. The original
// context L defaults to the length the model was trained at (train_seq_len).

import (
	"fmt"
	"math"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/ml/context"
)

// ScalingTypes are the accepted rope_type values.
var ScalingTypes = []string{"none", "default", "linear", "ntk", "dynamic", "yarn", "llama3", "longrope"}

// Scaling is a RoPE context-extension method.
type Scaling struct {
	Type       string    // "none", "linear", "ntk", "dynamic" or "yarn"
	Factor     float64   // s >= 1
	OrigLen    int       // L, the trained context (dynamic, yarn)
	BetaFast   float64   // yarn: pairs turning more than this over L keep their frequency (32)
	BetaSlow   float64   // yarn: pairs turning fewer than this are fully interpolated (1)
	AttnFactor float64   // yarn: multiplies cos and sin; 0 means 0.1·ln(s) + 1
	Truncate   bool      // yarn: floor/ceil the ramp's ends to whole pairs, as HF and llama.cpp do
	LowFreq    float64   // llama3: pairs turning fewer than this many times are interpolated (1)
	HighFreq   float64   // llama3: pairs turning more than this many times are kept (4)
	Short      []float64 // longrope: each pair's rescale factor λ_i up to the original context
	Long       []float64 // longrope: the same past it
}

// describe names the scaling for messages: " with rope_scaling yarn ×4", or "" for none.
func (s *Scaling) describe() string {
	if s == nil {
		return ""
	}
	return fmt.Sprintf(" with rope_scaling %s ×%g", s.Type, s.Factor)
}

// parseScaling reads a rope_scaling block; trainLen is the default original context, pairs the
// number of rotary pairs.
func parseScaling(o *Options, trainLen, pairs int) (*Scaling, error) {
	if o == nil {
		return nil, nil
	}
	typ := o.String("rope_type", "", ScalingTypes...)
	if old := o.String("type", "", ScalingTypes...); typ == "" {
		typ = old
	}
	s := &Scaling{
		Type:       typ,
		Factor:     o.Float("factor", 1),
		OrigLen:    o.Int("original_max_position_embeddings", trainLen),
		BetaFast:   o.Float("beta_fast", 32),
		BetaSlow:   o.Float("beta_slow", 1),
		AttnFactor: o.Float("attention_factor", 0),
		Truncate:   o.Bool("truncate", true),
	}
	if typ == "llama3" {
		s.LowFreq, s.HighFreq = o.Float("low_freq_factor", 1), o.Float("high_freq_factor", 4)
	}
	if typ == "longrope" {
		s.Short, s.Long = o.Floats("short_factor", nil), o.Floats("long_factor", nil)
		for _, f := range []struct {
			name string
			v    []float64
		}{{"short_factor", s.Short}, {"long_factor", s.Long}} {
			if len(f.v) != pairs {
				return nil, fmt.Errorf("rope_scaling longrope needs %s with one factor per rotary pair (%d), got %d", f.name, pairs, len(f.v))
			}
			for i, x := range f.v {
				if !(x > 0) || math.IsInf(x, 0) {
					return nil, fmt.Errorf("rope_scaling longrope: %s[%d] must be finite and > 0, got %g", f.name, i, x)
				}
			}
		}
	}
	switch {
	case s.Type == "":
		return nil, fmt.Errorf("rope_scaling needs rope_type (valid: linear, ntk, dynamic, yarn, llama3, longrope)")
	case s.Type == "none" || s.Type == "default":
		return nil, nil
	case s.Factor < 1:
		return nil, fmt.Errorf("rope_scaling factor must be >= 1 (it extends the context s times), got %g", s.Factor)
	case (s.Type == "dynamic" || s.Type == "yarn" || s.Type == "llama3" || s.Type == "longrope") && s.OrigLen <= 0:
		return nil, fmt.Errorf("rope_scaling %s needs the original context length: set original_max_position_embeddings (--yarn-orig-ctx N)", s.Type)
	case s.Type == "yarn" && !(s.BetaFast > s.BetaSlow && s.BetaSlow > 0):
		return nil, fmt.Errorf("rope_scaling yarn needs beta_fast > beta_slow > 0, got %g and %g", s.BetaFast, s.BetaSlow)
	case s.Type == "llama3" && !(s.HighFreq > s.LowFreq && s.LowFreq > 0):
		return nil, fmt.Errorf("rope_scaling llama3 needs high_freq_factor > low_freq_factor > 0, got %g and %g", s.HighFreq, s.LowFreq)
	case s.AttnFactor < 0:
		return nil, fmt.Errorf("rope_scaling attention_factor must be > 0, got %g", s.AttnFactor)
	}
	return s, nil
}

// InvFreq returns the scaled θ'_i of r rotary dims with base b, for a sequence of length n
// (only dynamic NTK depends on n).
func (s *Scaling) InvFreq(r int, base float64, n int) []float64 {
	switch s.Type {
	case "linear":
		f := Frequencies(r, base)
		for i := range f {
			f[i] /= s.Factor
		}
		return f
	case "ntk":
		return Frequencies(r, NTKBase(base, s.Factor, r))
	case "dynamic":
		return Frequencies(r, s.DynamicBase(base, r, n))
	case "yarn":
		return s.yarnInvFreq(r, base)
	case "llama3":
		return s.llama3InvFreq(r, base)
	case "longrope":
		ext := s.Short
		if n > s.OrigLen {
			ext = s.Long
		}
		f := Frequencies(r, base)
		for i := range f {
			f[i] /= ext[i]
		}
		return f
	}
	return Frequencies(r, base)
}

// NTKBase is the NTK-aware base b·s^(r/(r-2)): it leaves θ_0 = 1 alone and divides the slowest
// frequency θ_{r/2-1} by s exactly.
func NTKBase(base, factor float64, r int) float64 {
	return base * math.Pow(factor, float64(r)/float64(r-2))
}

// DynamicBase is dynamic NTK's base at sequence length n: the trained base up to L, then
// NTKBase with the factor s·n/L - (s-1), which is 1 at n = L and grows by s/L per token, so the
// base keeps growing with the context.
func (s *Scaling) DynamicBase(base float64, r, n int) float64 {
	n = max(n, s.OrigLen)
	return NTKBase(base, s.Factor*float64(n)/float64(s.OrigLen)-(s.Factor-1), r)
}

// yarnInvFreq follows Hugging Face's _compute_yarn_parameters (and the YaRN reference code).
func (s *Scaling) yarnInvFreq(r int, base float64) []float64 {
	// The pair index at which a pair turns `turns` times over the original context:
	// L·b^(-2i/r) / 2π = turns  ⇔  i = r·ln(L / (2π·turns)) / (2·ln b).
	pairAt := func(turns float64) float64 {
		return float64(r) * math.Log(float64(s.OrigLen)/(turns*2*math.Pi)) / (2 * math.Log(base))
	}
	low, high := pairAt(s.BetaFast), pairAt(s.BetaSlow)
	if s.Truncate {
		low, high = math.Floor(low), math.Ceil(high)
	}
	low, high = max(low, 0), min(high, float64(r-1))
	if low == high {
		high += 0.001 // as the reference code does, to avoid dividing by zero
	}
	f := Frequencies(r, base)
	for i, theta := range f {
		ramp := min(max((float64(i)-low)/(high-low), 0), 1) // 0 at fast pairs, 1 at slow ones
		keep := 1 - ramp                                    // γ_i
		f[i] = theta/s.Factor*(1-keep) + theta*keep
	}
	return f
}

// llama3InvFreq follows Hugging Face's _compute_llama3_parameters: in terms of the turns
// t_i = L·θ_i/2π a pair makes over the original context, keep θ_i when t_i > high_freq_factor,
// use θ_i/s when t_i < low_freq_factor, and in between mix with weight
// (t_i - low)/(high - low) on θ_i.
func (s *Scaling) llama3InvFreq(r int, base float64) []float64 {
	f := Frequencies(r, base)
	for i, theta := range f {
		turns := float64(s.OrigLen) * theta / (2 * math.Pi)
		switch {
		case turns > s.HighFreq:
		case turns < s.LowFreq:
			f[i] = theta / s.Factor
		default:
			w := (turns - s.LowFreq) / (s.HighFreq - s.LowFreq)
			f[i] = (1-w)*theta/s.Factor + w*theta
		}
	}
	return f
}

// AttentionFactor is the multiplier on cos and sin: YaRN's 0.1·ln(s) + 1 or LongRoPE's
// √(1 + ln s / ln L) (or the configured attention_factor), 1 for the other methods.
func (s *Scaling) AttentionFactor() float64 {
	switch {
	case s.Type != "yarn" && s.Type != "longrope":
		return 1
	case s.AttnFactor > 0:
		return s.AttnFactor
	case s.Type == "longrope":
		return LongRoPEAttentionFactor(s.Factor, s.OrigLen)
	}
	return YaRNAttentionFactor(s.Factor)
}

// YaRNAttentionFactor is √(1/t) = 0.1·ln(s) + 1 (1 for s <= 1).
func YaRNAttentionFactor(factor float64) float64 {
	if factor <= 1 {
		return 1
	}
	return 0.1*math.Log(factor) + 1
}

// DynamicNTK is RoPE whose base grows with the query's position past the original context.
// It implements Scores instead of QueryKey, so keys are cached unrotated (see the top of this
// file for why).
type DynamicNTK struct {
	RoPE *RoPE // base, layout, rotary dims; RoPE.Scaling is the dynamic block
}

// Name implements Scheme.
func (*DynamicNTK) Name() string { return "rope" }

// InvFreq returns the frequencies at the original context (the trained ones).
func (d *DynamicNTK) InvFreq() []float64 { return d.InvFreqAt(d.RoPE.Scaling.OrigLen) }

// InvFreqAt returns the frequencies a query at sequence length n uses.
func (d *DynamicNTK) InvFreqAt(n int) []float64 { return d.RoPE.InvFreqAt(n) }

// AttentionFactor is 1: dynamic NTK does not rescale the logits.
func (d *DynamicNTK) AttentionFactor() float64 { return 1 }

// dynamicBlockValues bounds the [b, h, pairs, queries, keys] terms of one block of DynamicNTK's
// Scores: half a million floats, 2 MB, so that a block's terms stay in cache between the ops
// that make and use them (the lm benchmark's eval at 16L: 1.7x faster than blocks of 64 MB).
var dynamicBlockValues = 1 << 19

// maxDynamicBlocks bounds the blocks of one layer's Scores, so that a long prompt of a wide model
// (12 heads of 32 pairs over 4,096 keys: 1.6 M terms a query) makes a graph of at most a thousand
// blocks a layer, not one a query. Fewer, larger blocks cost more than they save: a 930-token
// prompt of the 110M shape compiled in 2 s instead of 5.5 with 512 blocks a layer, and its
// prefill took 12-20 s instead of 9.
const maxDynamicBlocks = 1024

// Scores computes q'·k' where query m and key n are both rotated with the frequencies θ(m) of
// the query's own length m+1. Per rotary pair (a, b) and δ = m - n,
//
//	q'·k' = cos(δθ)·(q_a k_a + q_b k_b) + sin(δθ)·(q_a k_b - q_b k_a)
//
// which needs only the unrotated q and k; pass-through dims add their plain product.
func (d *DynamicNTK) Scores(ctx *context.Context, layer int, q, k, qPos, kPos *Node) *Node {
	g := q.Graph()
	r := d.RoPE
	hd, pairs := r.HeadDim, r.RotaryDims()/2
	selA, selB := make([]float32, hd*pairs), make([]float32, hd*pairs)
	pass := make([]float32, hd)
	for i := range pass {
		pass[i] = 1
	}
	for i := range pairs {
		a, b := r.Pair(i)
		selA[a*pairs+i], selB[b*pairs+i] = 1, 1
		pass[a], pass[b] = 0, 0
	}
	// Pairs go on an outer axis and keys innermost: every elementwise op below then runs over
	// rows of t keys, not over rows of r/2 pairs (16 floats, where a loop's setup costs as much
	// as its work).
	pick := func(x *Node, sel []float32) *Node { // [b, h, s, hd] -> [b, h, P, s]
		m := ConvertDType(Reshape(Const(g, sel), hd, pairs), x.DType())
		return TransposeAllAxes(DotGeneral(x, []int{3}, nil, m, []int{0}, nil), 0, 1, 3, 2)
	}
	qa, qb := ExpandAxes(pick(q, selA), -1), ExpandAxes(pick(q, selB), -1) // [b, h, P, s, 1]
	ka, kb := ExpandAxes(pick(k, selA), 3), ExpandAxes(pick(k, selB), 3)   // [b, h, P, 1, t]

	// θ_i(m) = exp(-(2i/r)·ln base(m+1)), with ln base(n) = ln b + r/(r-2)·ln(s·n'/L - (s-1)),
	// n' = max(n, L).
	sc := r.Scaling
	rd := float64(2 * pairs)
	expo := make([]float32, pairs)
	for i := range expo {
		expo[i] = -float32(2*i) / float32(rd)
	}
	scores := func(qa, qb, qPos *Node) *Node { // queries [.., s', ..] against every key: [b, h, s', t]
		even := Add(Mul(qa, ka), Mul(qb, kb))
		odd := Sub(Mul(qa, kb), Mul(qb, ka))
		n := MaxScalar(AddScalar(ConvertDType(qPos, dtypes.Float32), 1), float64(sc.OrigLen))
		logBase := AddScalar(MulScalar(Log(AddScalar(MulScalar(n, sc.Factor/float64(sc.OrigLen)), 1-sc.Factor)), rd/(rd-2)), math.Log(r.Base))
		theta := Exp(Mul(ExpandAxes(logBase, 1), Reshape(Const(g, expo), 1, pairs, 1))) // [b, P, s']
		delta := Sub(ExpandAxes(ConvertDType(qPos, dtypes.Float32), -1), ExpandAxes(ConvertDType(kPos, dtypes.Float32), 1))
		angle := Mul(ExpandAxes(delta, 1), ExpandAxes(theta, -1)) // [b, P, s', t]
		angle = ExpandAxes(angle, 1)                              // [b, 1, P, s', t]
		cos, sin := ConvertDType(Cos(angle), q.DType()), ConvertDType(Sin(angle), q.DType())
		return ReduceSum(Add(Mul(even, cos), Mul(odd, sin)), 2)
	}
	// The terms are [b, h, P, s, t]: at 2,048 tokens, a gigabyte each per sequence. They go
	// through in blocks of queries, each block's terms dead before the next block's are made.
	dims := q.Shape().Dimensions
	s, t := dims[2], k.Shape().Dim(2)
	block := max(1, dynamicBlockValues/(dims[0]*dims[1]*t*pairs), (s+maxDynamicBlocks-1)/maxDynamicBlocks)
	var logits *Node
	if block >= s {
		logits = scores(qa, qb, qPos)
	} else {
		var parts []*Node
		for lo := 0; lo < s; lo += block {
			hi := min(s, lo+block)
			parts = append(parts, scores(SliceAxis(qa, 3, AxisRange(lo, hi)), SliceAxis(qb, 3, AxisRange(lo, hi)), SliceAxis(qPos, 1, AxisRange(lo, hi))))
		}
		logits = Concatenate(parts, 2)
	}
	if 2*pairs < hd {
		mask := ConvertDType(Reshape(Const(g, pass), 1, 1, 1, hd), q.DType())
		logits = Add(logits, DotGeneral(Mul(q, mask), []int{3}, []int{0, 1}, k, []int{3}, []int{0, 1}))
	}
	return logits
}
