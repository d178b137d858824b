package positional

// Scalable softmax, SSMax (Nakanishi 2025, "Scalable-Softmax Is Superior for Attention"; the
// log-length scaling of Chiang & Cholak 2022, "Overcoming a Theoretical Limitation of
// Self-Attention"): before the softmax, each query's logits are multiplied by s·ln n, where n is
// the number of keys the query sees and s a learned scalar per layer and head,
//
//	softmax(z)_j  →  exp(s·ln(n)·z_j) / Σ_k exp(s·ln(n)·z_k)
//
// A plain softmax flattens as n grows (the largest of n logits gets a share that shrinks like
// 1/n unless its margin grows like ln n); the factor ln n keeps a query's attention as peaked
// over n keys as over few, which is what reading past the training length asks of it.
//
// It is an option of every scheme, "ssmax": true in the positional block (-pe ssmax=true), not a
// scheme: it multiplies whatever logits the scheme produced, biases included. s starts at
// 1/ln L (L the training length), so that at n = L the model starts as a plain softmax.

import (
	"fmt"
	"math"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/ml/context"
)

// SSMaxOption is the positional block's key that turns scalable softmax on for any scheme.
const SSMaxOption = "ssmax"

// SSMax scales each query's logits by s·ln n before the softmax.
type SSMax struct {
	TrainLen int // L: s starts at 1/ln L
}

// NewSSMax reads the ssmax option of a positional block: nil when it is absent or false.
func NewSSMax(raw map[string]any, arch Arch) (*SSMax, error) {
	v, ok := raw[SSMaxOption]
	if !ok {
		return nil, nil
	}
	on, isBool := v.(bool)
	if !isBool {
		return nil, fmt.Errorf("positional option %q must be true or false, got %v", SSMaxOption, v)
	}
	if !on {
		return nil, nil
	}
	if arch.TrainLen < 2 {
		return nil, fmt.Errorf("positional option %s needs the training length (train_seq_len >= 2): s starts at 1/ln L", SSMaxOption)
	}
	return &SSMax{TrainLen: arch.TrainLen}, nil
}

// InitialScale is s's starting value, 1/ln L.
func (m *SSMax) InitialScale() float64 { return 1 / math.Log(float64(m.TrainLen)) }

// Scale multiplies logits [batch, heads, queries, keys] by s·ln n, n the number of keys each
// query sees (visible [batch or 1, heads or 1, queries, keys], true where a query sees a key),
// with s the variable "ssmax" [heads] of ctx (the layer's attention scope).
func (m *SSMax) Scale(ctx *context.Context, logits, visible *Node) *Node {
	g := logits.Graph()
	dims := logits.Shape().Dimensions
	s0 := m.InitialScale()
	init := func(g *Graph, shape shapes.Shape) *Node {
		return BroadcastToShape(Scalar(g, shape.DType, s0), shape)
	}
	s := ctx.WithInitializer(init).VariableWithShape("ssmax", shapes.Make(logits.DType(), dims[1])).ValueGraph(g)
	n := ReduceAndKeep(ConvertDType(visible, logits.DType()), ReduceSum, -1) // [.., queries, 1]
	logN := Log(MaxScalar(n, 1))                                             // a query that sees no key: ln 1 = 0
	factor := Mul(Reshape(s, 1, dims[1], 1, 1), logN)
	return Mul(logits, BroadcastToDims(factor, dims...))
}

// VisibleKeys turns an additive attention mask (0 where a query sees a key, a large negative
// number elsewhere) into the bool Scale takes.
func VisibleKeys(mask *Node) *Node {
	return Equal(mask, ScalarZero(mask.Graph(), mask.DType()))
}
