package positional

// ALiBi, attention with linear biases (Press et al. 2022, "Train Short, Test Long: Attention
// with Linear Biases Enables Input Length Extrapolation"):
//
//	logits_hij = q_i · k_j / sqrt(d) - m_h · (i - j)
//	m_h = 2^(-8h/n), h = 1..n, for n heads when n is a power of two. Otherwise, with p the
//	largest power of two below n: the p slopes for p heads, then every other slope of the
//	2p-head sequence for the remaining n-p heads (the paper's reference code).
//
// Option slopes sets the m_h by hand, one per head, to study other decay rates.
//
// Causal form: keys j <= i only, so the distance is i - j. Bidirectional form (encoders):
// the symmetric -m_h·|i - j|. Both are computed as -m_h·|i - j|, identical on every key the
// causal mask leaves visible.

import (
	"fmt"
	"math"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/ml/context"
)

func init() {
	Register("alibi", func(opts *Options, arch Arch) (Scheme, error) {
		slopes := opts.Floats("slopes", ALiBiSlopes(arch.NumHeads))
		if len(slopes) != arch.NumHeads {
			return nil, fmt.Errorf("slopes has %d values, want one per head (%d)", len(slopes), arch.NumHeads)
		}
		for h, m := range slopes {
			if !(m > 0) || math.IsInf(m, 0) {
				return nil, fmt.Errorf("slopes must be positive and finite, head %d has %g", h, m)
			}
		}
		return &ALiBi{slopes: slopes}, nil
	})
}

// ALiBi adds a per-head linear distance penalty.
type ALiBi struct {
	slopes []float64
}

// Name implements Scheme.
func (*ALiBi) Name() string { return "alibi" }

// Slopes returns m_h for every head.
func (a *ALiBi) Slopes() []float64 { return a.slopes }

// ALiBiSlopes returns the paper's slopes for n heads.
func ALiBiSlopes(n int) []float64 {
	pow2 := func(n int) []float64 {
		s := make([]float64, n)
		for h := range s {
			s[h] = math.Pow(2, -8*float64(h+1)/float64(n))
		}
		return s
	}
	if n <= 0 {
		return nil
	}
	p := 1 << int(math.Floor(math.Log2(float64(n))))
	slopes := pow2(p)
	if p == n {
		return slopes
	}
	extra := pow2(2 * p)
	for i := 0; len(slopes) < n; i += 2 {
		slopes = append(slopes, extra[i])
	}
	return slopes
}

// Bias implements the Bias hook.
func (a *ALiBi) Bias(ctx *context.Context, layer int, qPos, kPos *Node, numHeads int) *Node {
	g := qPos.Graph()
	qp := ExpandAxes(ConvertDType(qPos, dtypes.Float32), 1, -1) // [b, 1, s, 1]
	kp := ExpandAxes(ConvertDType(kPos, dtypes.Float32), 1, 2)  // [b, 1, 1, t]
	dist := Abs(Sub(qp, kp))
	m := Reshape(Const(g, toFloat32(a.slopes)), 1, numHeads, 1, 1)
	return Neg(Mul(dist, m))
}
