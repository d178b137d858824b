package layers

// Weight matrices kept in a narrower type than float32 (bfloat16, or ggml's Q8_0 and Q4_0
// blocks, see layers/quant), for inference.
//
// The graph says what the numbers mean, and nothing else: a quantized matrix is its stored
// parts (int8 or packed nibbles, and one float32 scale per block of 32 weights) followed by the
// ops that dequantize them,
//
//	Q8_0: W = d ⊙ float(q)             q int8 [out, in],      d float32 [out, in/32]
//	Q4_0: W = d ⊙ (float(nib(q)) − 8)  q uint8 [out, in/2],   nib: low nibbles, then high ones
//	BF16: W = float(w)                 w bfloat16 [out, in]
//
// so that any backend runs it. GoMLX's reference backend dequantizes the whole matrix at every
// call; posformer's CPU backend recognizes "x·Wᵀ of a dequantized W" when it compiles the graph
// and runs one kernel that reads the stored bytes (engine/cpu/quantdot.go), which is what makes
// decoding faster: it reads 2, 1.125 or 0.625 bytes per weight instead of 4.
//
// Only an inference context holds quantized matrices (SetWeightType); training contexts stay
// float32. Matrices whose input width is not a multiple of 32 stay float32 under Q8_0/Q4_0 (as
// llama.cpp leaves such tensors unquantized).

import (
	"fmt"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/posformer/posformer/layers/quant"
)

// weightTypeParam holds the weight type of an inference context (see SetWeightType).
const weightTypeParam = "posformer_weight_type"

// WeightTypes lists the types SetWeightType accepts, for messages.
const WeightTypes = "f32, bf16, q8_0, q4_0"

// ParseWeightType reads a --weights value: one of WeightTypes (float16 is read from files but
// never held in memory).
func ParseWeightType(s string) (quant.Type, error) {
	t, err := quant.Parse(s)
	if err != nil || t == quant.F16 {
		return 0, fmt.Errorf("%q: unknown weight type (valid: %s)", s, WeightTypes)
	}
	return t, nil
}

// SetWeightType makes ctx (and its sub-scopes) hold its weight matrices as t (one of
// WeightTypes). Norms, biases and the positional schemes' parameters stay float32.
func SetWeightType(ctx *context.Context, t quant.Type) error {
	if t == quant.F16 || t.BlockBytes() == 0 {
		return fmt.Errorf("weights cannot be held as %v in memory (valid: %s)", t, WeightTypes)
	}
	ctx.SetParam(weightTypeParam, t.String())
	return nil
}

// WeightType is the type in which ctx holds its weight matrices (F32 unless SetWeightType).
func WeightType(ctx *context.Context) quant.Type {
	t, err := quant.Parse(context.GetParamOr(ctx, weightTypeParam, "f32"))
	if err != nil {
		panic(err) // only SetWeightType writes the parameter
	}
	return t
}

// MatrixType is the type a matrix [out, in] is held in by ctx: its weight type, or F32 when the
// input width is not a whole number of blocks.
func MatrixType(ctx *context.Context, shape []int) quant.Type {
	t := WeightType(ctx)
	if len(shape) != 2 || shape[1]%t.BlockSize() != 0 {
		return quant.F32
	}
	return t
}

// Names of the variables of a matrix held as t (the checkpoint tensor is "weight" [out, in]).
func quantName(t quant.Type) string { return "weight_" + t.String() }
func scaleName(t quant.Type) string { return "weight_" + t.String() + "_scale" }

// QuantizedVars lists the variables holding a matrix [out, in] as t: name, dtype and shape of
// the values, then of the scales (block formats only).
func QuantizedVars(t quant.Type, out, in int) (names []string, types []dtypes.DType, shapes [][]int) {
	switch t {
	case quant.BF16:
		return []string{quantName(t)}, []dtypes.DType{dtypes.BFloat16}, [][]int{{out, in}}
	case quant.Q8_0:
		return []string{quantName(t), scaleName(t)}, []dtypes.DType{dtypes.Int8, dtypes.Float32}, [][]int{{out, in}, {out, in / 32}}
	case quant.Q4_0:
		return []string{quantName(t), scaleName(t)}, []dtypes.DType{dtypes.Uint8, dtypes.Float32}, [][]int{{out, in / 2}, {out, in / 32}}
	}
	return nil, nil, nil
}

// CheckpointName maps a variable to its checkpoint tensor: the values of a quantized matrix are
// the tensor "weight" [out, in], and its scales map to no tensor of their own (an empty name);
// everything else keeps its name and shape.
func CheckpointName(name string, shape []int) (string, []int) {
	for _, t := range []quant.Type{quant.BF16, quant.Q8_0, quant.Q4_0} {
		switch name {
		case quantName(t):
			if t == quant.Q4_0 {
				return "weight", []int{shape[0], 2 * shape[1]}
			}
			return "weight", shape
		case scaleName(t):
			return "", nil
		}
	}
	return name, shape
}

// Weight is a weight matrix W [out, in] as a graph reads it: float32, or the stored parts of a
// narrower type.
type Weight struct {
	Type    quant.Type
	Out, In int
	w       *Node // F32 or BF16: [out, in]
	q, d    *Node // Q8_0/Q4_0: values and scales
}

// FloatWeight wraps a float32 matrix [out, in].
func FloatWeight(w *Node) Weight {
	dims := w.Shape().Dimensions
	return Weight{Type: quant.F32, Out: dims[0], In: dims[1], w: w}
}

// QuantizedWeight wraps the stored parts of a matrix [out, in] held as t: the bfloat16 values,
// or the values and scales of a block format (the variables QuantizedVars lists).
func QuantizedWeight(t quant.Type, out, in int, parts ...*Node) Weight {
	w := Weight{Type: t, Out: out, In: in}
	if t.Quantized() {
		w.q, w.d = parts[0], parts[1]
	} else {
		w.w = parts[0]
	}
	return w
}

// Float returns W as float32 [out, in].
func (w Weight) Float() *Node {
	switch w.Type {
	case quant.F32:
		return w.w
	case quant.BF16:
		return ConvertDType(w.w, dtypes.Float32)
	}
	return dequantize(w.Type, w.q, w.d)
}

// MulT computes x·Wᵀ for x [..., in], returning [..., out].
func (w Weight) MulT(x *Node) *Node {
	return DotGeneral(x, []int{x.Rank() - 1}, nil, w.Float(), []int{1}, nil)
}

// Rows looks up rows ids [...] (int32) of W, returning float32 [..., in]: only the rows read are
// dequantized.
func (w Weight) Rows(ids *Node) *Node {
	switch w.Type {
	case quant.F32:
		return Gather(w.w, ExpandAxes(ids, -1))
	case quant.BF16:
		return ConvertDType(Gather(w.w, ExpandAxes(ids, -1)), dtypes.Float32)
	}
	at := ExpandAxes(ids, -1)
	return dequantize(w.Type, Gather(w.q, at), Gather(w.d, at))
}

// dequantize builds the float32 values [..., in] of blocks q [..., in] (Q8_0) or [..., in/2]
// (Q4_0) with scales d [..., in/32].
func dequantize(t quant.Type, q, d *Node) *Node {
	dims := d.Shape().Dimensions
	lead, nb := dims[:len(dims)-1], dims[len(dims)-1]
	blocks := append(append([]int(nil), lead...), nb, 32)
	var v *Node
	switch t {
	case quant.Q8_0:
		v = Reshape(ConvertDType(q, dtypes.Float32), blocks...)
	case quant.Q4_0:
		halves := append(append([]int(nil), lead...), nb, 16)
		q = Reshape(q, halves...)
		lo := BitwiseAnd(q, Scalar(q.Graph(), dtypes.Uint8, 15))
		hi := DivScalar(q, 16) // a shift (portable.go)
		v = AddScalar(ConvertDType(Concatenate([]*Node{lo, hi}, -1), dtypes.Float32), -8)
	default:
		panic(fmt.Errorf("layers: %v is not a block format", t))
	}
	scale := BroadcastToDims(Reshape(d, append(append([]int(nil), lead...), nb, 1)...), blocks...)
	return Reshape(Mul(v, scale), append(append([]int(nil), lead...), 32*nb)...)
}
