package positional

// Multiplicative absolute positions: the sinusoidal code of Vaswani et al. (2017, §3.5) applied
// by element-wise product instead of sum, the way RoPE (Su et al. 2021) mixes position into
// content multiplicatively, here once on the embeddings and without rotation:
//
//	PE(pos, 2i), PE(pos, 2i+1) = sin, cos(pos / base^(2i/d))      the sinusoidal code
//	m(pos) = 1 + α·PE(pos)                                        α = scale, 0 < α < 1
//	x' = x ⊙ m(pos)
//
// Why 1 + α·PE and not PE itself: x ⊙ PE zeroes dimension k wherever PE(pos, k) = 0 (every sin
// dimension at pos 0), and what is zeroed is lost. Since |PE| ≤ 1, every factor of m lies in
// [1−α, 1+α], away from zero, so x = x' ⊘ m(pos) recovers the token at every position; α is how
// strongly position modulates content (α → 0 is NoPE). Distinct positions get distinct factors:
// m(p) − m(q) = α·(PE(p) − PE(q)), and the first pair (sin p, cos p) repeats only when p − q is a
// multiple of 2π, which no nonzero integer is.

import (
	"fmt"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/ml/context"
)

func init() {
	Register("multiplicative", func(opts *Options, arch Arch) (Scheme, error) {
		m := &Multiplicative{
			Base:  opts.Float("base", 10000),
			Scale: opts.Float("scale", 0.5),
		}
		if arch.Dim%2 != 0 {
			return nil, fmt.Errorf("needs an even model dim (sin/cos pairs), got %d", arch.Dim)
		}
		if m.Base <= 1 {
			return nil, fmt.Errorf("base must be > 1, got %g", m.Base)
		}
		if m.Scale <= 0 || m.Scale >= 1 {
			return nil, fmt.Errorf("scale must be in (0, 1) so that 1 + scale·PE never reaches 0, got %g", m.Scale)
		}
		return m, nil
	})
}

// Multiplicative scales each embedding dimension by 1 + α·PE(pos).
type Multiplicative struct {
	Base  float64 // the 10000 of the sinusoidal code
	Scale float64 // α: the factors lie in [1−α, 1+α]
}

// Name implements Scheme.
func (*Multiplicative) Name() string { return "multiplicative" }

// Input implements the Input hook.
func (m *Multiplicative) Input(ctx *context.Context, x, pos *Node) *Node {
	return Mul(x, ConvertDType(m.Code(ctx, pos, x.Shape().Dim(-1)), x.DType()))
}

// Code implements Absolute: the factor m(pos) = 1 + α·PE(pos), [batch, seq, dim].
func (m *Multiplicative) Code(ctx *context.Context, pos *Node, dim int) *Node {
	return OnePlus(MulScalar(SinusoidalGraph(pos, dim, m.Base, dtypes.Float32), m.Scale))
}
