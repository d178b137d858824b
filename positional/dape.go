package positional

// Data-adaptive positional encoding, DAPE (Zheng et al. 2024, "DAPE: Data-Adaptive Positional
// Encoding for Length Extrapolation"): a static bias B (ALiBi, KERPLE or FIRE) is adapted to
// the attention it is added to by a small MLP that looks, at each query-key pair, across the
// heads at the logits and the bias together,
//
//	A = softmax(Z + B + f([Z; B]))      Z = QKᵀ/√d, f: R^(2h) → R^h
//	f(x) = W₂·LeakyReLU(W₁·x + b₁) + b₂  (hidden width D, one MLP per layer)
//
// so a pair's bias can grow or shrink with what the heads' logits say about it. W₂ and the biases
// start at zero: a DAPE model starts as its bias scheme and learns the adaptation.
//
// The bias scheme is an option ("bias": "alibi" (default), "kerple" or "fire"); the options DAPE
// does not read are the bias scheme's (FIRE's init_l, say). DAPE calls its Bias hook itself, inside the Contextual hook, where both Z and B are
// at hand.

import (
	"fmt"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/gomlx/pkg/ml/context/initializers"
)

// dapeBiases are the bias schemes DAPE adapts, as the paper does.
var dapeBiases = []string{"alibi", "kerple", "fire"}

func init() {
	Register("dape", func(opts *Options, arch Arch) (Scheme, error) {
		name := opts.String("bias", "alibi", dapeBiases...)
		d := &DAPE{Width: opts.Int("mlp_width", 32), Heads: arch.NumHeads}
		if d.Width < 1 {
			return nil, fmt.Errorf("mlp_width must be >= 1, got %d", d.Width)
		}
		inner, err := New(name, opts.Rest(), arch)
		if err != nil {
			return nil, err
		}
		d.Base = inner.(Bias)
		return d, nil
	})
}

// DAPE adds B + f([Z; B]) to the logits Z, B the bias of Base.
type DAPE struct {
	Base  Bias // the adapted bias scheme
	Width int  // D, the MLP's hidden width
	Heads int
}

// Name implements Scheme.
func (*DAPE) Name() string { return "dape" }

// ContextualLogits implements Contextual.
func (d *DAPE) ContextualLogits(ctx *context.Context, layer int, _, logits, _, qPos, kPos *Node) *Node {
	dims := logits.Shape().Dimensions
	bias := BroadcastToDims(ConvertDType(d.Base.Bias(ctx, layer, qPos, kPos, d.Heads), logits.DType()), dims...)
	g := logits.Graph()
	mctx := LayerScope(ctx, layer).In("dape")
	h := d.Heads
	w1 := mctx.WithInitializer(initializers.RandomNormalFn(mctx, 0.02)).VariableWithShape("w1", shapes.Make(dtypes.Float32, 2*h, d.Width)).ValueGraph(g)
	zero := mctx.WithInitializer(initializers.Zero)
	b1 := zero.VariableWithShape("b1", shapes.Make(dtypes.Float32, d.Width)).ValueGraph(g)
	w2 := zero.VariableWithShape("w2", shapes.Make(dtypes.Float32, d.Width, h)).ValueGraph(g)
	b2 := zero.VariableWithShape("b2", shapes.Make(dtypes.Float32, h)).ValueGraph(g)
	return Add(bias, dapeMLP(logits, bias, w1, b1, w2, b2))
}

// dapeMLP is f([Z; B]) for logits and bias [b, h, s, t]: per pair, the 2h values through
// W₁ [2h, D], LeakyReLU (slope 0.01) and W₂ [D, h], returned as [b, h, s, t].
func dapeMLP(logits, bias, w1, b1, w2, b2 *Node) *Node {
	dt := logits.DType()
	x := Concatenate([]*Node{logits, bias}, 1)                               // [b, 2h, s, t]
	hid := DotGeneral(x, []int{1}, nil, ConvertDType(w1, dt), []int{0}, nil) // [b, s, t, D]
	hid = Add(hid, ExpandLeftToRank(ConvertDType(b1, dt), hid.Rank()))
	hid = Max(hid, MulScalar(hid, 0.01))
	out := DotGeneral(hid, []int{3}, nil, ConvertDType(w2, dt), []int{0}, nil) // [b, s, t, h]
	out = Add(out, ExpandLeftToRank(ConvertDType(b2, dt), out.Rank()))
	return TransposeAllAxes(out, 0, 3, 1, 2)
}
