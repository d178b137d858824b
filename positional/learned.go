package positional

// Learned absolute positions (Gehring et al. 2017, "Convolutional Sequence to Sequence
// Learning"; BERT; GPT-2):
//
//	x' = x + P[pos]            P a trainable table of max_positions rows
//
// The table says nothing about positions it never saw. Past its end the default is an error;
// two opt-in policies exist for experiments:
//
//	clamp:        P[min(pos, max_positions-1)]
//	interpolate:  positions 0..interpolate_to-1 are squeezed onto the table,
//	              p = pos·(max_positions-1)/(interpolate_to-1), x' = x + lerp(P[⌊p⌋], P[⌈p⌉])

import (
	"fmt"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/gomlx/pkg/ml/context/initializers"
)

func init() {
	Register("learned", func(opts *Options, arch Arch) (Scheme, error) {
		l := &Learned{
			MaxPositions:  opts.Int("max_positions", 0),
			Beyond:        opts.String("beyond", "error", "error", "clamp", "interpolate"),
			InterpolateTo: opts.Int("interpolate_to", 0),
		}
		if l.MaxPositions < 1 {
			return nil, fmt.Errorf("needs max_positions >= 1 (the table length), got %d", l.MaxPositions)
		}
		if l.Beyond == "interpolate" && l.InterpolateTo <= l.MaxPositions {
			return nil, fmt.Errorf("beyond=interpolate needs interpolate_to > max_positions (%d), got %d", l.MaxPositions, l.InterpolateTo)
		}
		return l, nil
	})
}

// Learned is a trainable table of position embeddings.
type Learned struct {
	MaxPositions  int
	Beyond        string // "error", "clamp" or "interpolate"
	InterpolateTo int    // for Beyond == "interpolate": the length squeezed onto the table
}

// Name implements Scheme.
func (*Learned) Name() string { return "learned" }

// Limit implements Limited: positions past the table are an error unless a policy is chosen.
func (l *Learned) Limit() int {
	switch l.Beyond {
	case "error":
		return l.MaxPositions
	case "interpolate":
		return l.InterpolateTo
	}
	return 0
}

// LimitFix implements Limited.
func (l *Learned) LimitFix() string {
	if l.Beyond == "interpolate" {
		return fmt.Sprintf("beyond=interpolate fits %d positions onto the table; raise interpolate_to", l.InterpolateTo)
	}
	return fmt.Sprintf("the learned table has %d positions; shorten the input or set the scheme's \"beyond\" option to clamp or interpolate", l.MaxPositions)
}

// Input implements the Input hook.
func (l *Learned) Input(ctx *context.Context, x, pos *Node) *Node {
	return Add(x, ConvertDType(l.Code(ctx, pos, x.Shape().Dim(-1)), x.DType()))
}

// Code implements Absolute: the table's rows at pos.
func (l *Learned) Code(ctx *context.Context, pos *Node, dim int) *Node {
	table := ctx.WithInitializer(initializers.RandomNormalFn(ctx, 0.02)).
		VariableWithShape("table", shapes.Make(dtypes.Float32, l.MaxPositions, dim)).ValueGraph(pos.Graph())
	last := l.MaxPositions - 1
	if l.Beyond != "interpolate" {
		// Clamping also keeps the gather in range under the "error" policy, which the engine
		// enforces before running the graph.
		return Gather(table, ExpandAxes(ClipScalar(pos, 0, float64(last)), -1))
	}
	p := MulScalar(ConvertDType(pos, dtypes.Float32), float64(last)/float64(l.InterpolateTo-1))
	p = ClipScalar(p, 0, float64(last))
	lo := Floor(p)
	w := ExpandAxes(Sub(p, lo), -1)
	loIdx := ConvertDType(lo, dtypes.Int32)
	hiIdx := MinScalar(AddScalar(loIdx, 1), last)
	return Add(Mul(OneMinus(w), Gather(table, ExpandAxes(loIdx, -1))), Mul(w, Gather(table, ExpandAxes(hiIdx, -1))))
}
