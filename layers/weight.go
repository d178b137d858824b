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
// A Q8_0 or Q4_0 matrix whose rows are a multiple of 16 may instead be held in row groups
// (quant.Group: sixteen rows interleaved, scales as half floats: a GGUF file's bytes), the
// variables GroupedVars lists; the graph then moves the groups back into rows first (rowParts),
// and the CPU backend reads the groups directly. A loader chooses the form (models.StoreTensor
// groups for a backend that asks for it); Matrix follows what the context holds.
//
// Only an inference context holds quantized matrices (SetWeightType); training contexts stay
// float32. Matrices whose input width is not a multiple of 32 stay float32 under Q8_0/Q4_0 (as
// llama.cpp leaves such tensors unquantized).

import (
	"fmt"
	"slices"

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

// Names of the variables of a matrix held as t in row groups.
func groupedName(t quant.Type) string      { return "weight_" + t.String() + "_rows" }
func groupedScaleName(t quant.Type) string { return "weight_" + t.String() + "_rows_scale" }

// Groupable reports whether a matrix [out, in] held as t can be held in row groups.
func Groupable(t quant.Type, out, in int) bool {
	return (t == quant.Q8_0 || t == quant.Q4_0) && out%quant.GroupRows == 0 && in%32 == 0
}

// GroupedForm returns the variable and its shape that hold in row groups the matrix whose
// values variable in rows is name [store...] (QuantizedVars), if it can be grouped.
func GroupedForm(name string, store []int) (string, []int, bool) {
	for _, t := range []quant.Type{quant.Q8_0, quant.Q4_0} {
		if name != quantName(t) || len(store) != 2 {
			continue
		}
		out, in := store[0], store[1]*32/(t.BlockBytes()-2)
		if names, _, dims := GroupedVars(t, out, in); names != nil {
			return names[0], dims[0], true
		}
	}
	return "", nil, false
}

// GroupedVars lists the variables holding a matrix [out, in] as t in row groups (Groupable):
// name, dtype and shape of the grouped values [out/16, in/32, 16 × a block's bytes of values],
// then of the half-float scales [out/16, in/32, 16]. A backend that asks for them must hold
// float16 parameters (GoMLX's reference backend does not).
func GroupedVars(t quant.Type, out, in int) (names []string, types []dtypes.DType, shapes [][]int) {
	if !Groupable(t, out, in) {
		return nil, nil, nil
	}
	vt := dtypes.Int8
	if t == quant.Q4_0 {
		vt = dtypes.Uint8
	}
	g, nb := out/quant.GroupRows, in/32
	return []string{groupedName(t), groupedScaleName(t)}, []dtypes.DType{vt, dtypes.Float16},
		[][]int{{g, nb, quant.GroupRows * (t.BlockBytes() - 2)}, {g, nb, quant.GroupRows}}
}

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
		case scaleName(t), groupedScaleName(t):
			return "", nil
		case groupedName(t):
			return "weight", []int{shape[0] * quant.GroupRows, shape[1] * 32}
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
	q, d    *Node // Q8_0/Q4_0: values and scales, in rows or (rank 3) in row groups
}

// FloatWeight wraps a float32 matrix [out, in].
func FloatWeight(w *Node) Weight {
	dims := w.Shape().Dimensions
	return Weight{Type: quant.F32, Out: dims[0], In: dims[1], w: w}
}

// QuantizedWeight wraps the stored parts of a matrix [out, in] held as t: the bfloat16 values,
// or the values and scales of a block format (the variables QuantizedVars or GroupedVars list).
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
	q, d := w.rowParts()
	return dequantize(w.Type, q, d)
}

// grouped reports whether the matrix is held in row groups.
func (w Weight) grouped() bool { return w.q != nil && w.q.Rank() == 3 }

// rowParts returns the matrix's values and scales in rows, [out, in/32 · a block's bytes of
// values] and float32 [out, in/32]: as they are for a matrix held in rows, moved back out of their groups otherwise
// (quant.Group's layout, undone).
func (w Weight) rowParts() (*Node, *Node) {
	if !w.grouped() {
		return w.q, w.d
	}
	dims := w.q.Shape().Dimensions
	g, nb, vb := dims[0], dims[1], dims[2]/quant.GroupRows
	q := Reshape(w.q, g, nb, vb/4, quant.GroupRows, 4)
	q = Reshape(TransposeAllDims(q, 0, 3, 1, 2, 4), g*quant.GroupRows, nb*vb)
	d := TransposeAllDims(ConvertDType(w.d, dtypes.Float32), 0, 2, 1)
	return q, Reshape(d, g*quant.GroupRows, nb)
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
	if !w.grouped() {
		return dequantize(w.Type, Gather(w.q, at), Gather(w.d, at))
	}
	return w.groupedRows(ids)
}

// groupedRows is Rows for a matrix in row groups: each row's bytes gathered where its group
// keeps them, 4 bytes at every step s of every block b, at ((g·nb + b)·steps + s)·16 + r in
// units of 4 bytes for row 16g + r, and its scales at (g·nb + b)·16 + r.
func (w Weight) groupedRows(ids *Node) *Node {
	const G = quant.GroupRows
	dims := w.q.Shape().Dimensions
	groups, nb, vb := dims[0], dims[1], dims[2]/G
	steps := vb / 4
	units, scales := make([]int32, nb*steps), make([]int32, nb)
	for b := range nb {
		scales[b] = int32(b * G)
		for st := range steps {
			units[b*steps+st] = int32((b*steps + st) * G)
		}
	}
	// at(first, offsets): each id's first index plus the offsets, flat [ids·len(offsets), 1]
	// (Gather takes indices of at most one axis more than the table).
	at := func(first *Node, offsets []int32) *Node {
		first = ExpandAxes(first, -1)
		all := Add(first, ExpandLeftToRank(Const(ids.Graph(), offsets), first.Rank()))
		return Reshape(all, ids.Shape().Size()*len(offsets), 1)
	}
	lane, group := ModScalar(ids, G), DivScalar(ids, G)
	lead := ids.Shape().Dimensions
	q := Gather(Reshape(w.q, groups*nb*steps*G, 4), at(Add(MulScalar(group, nb*steps*G), lane), units))
	d := ConvertDType(Gather(Reshape(w.d, groups*nb*G, 1), at(Add(MulScalar(group, nb*G), lane), scales)), dtypes.Float32)
	return dequantize(w.Type, Reshape(q, slices.Concat(lead, []int{nb * vb})...), Reshape(d, slices.Concat(lead, []int{nb})...))
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
