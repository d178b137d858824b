package layers

// Packed weight matrices: the inference layout for the pure-Go backend.
//
// A weight matrix W [out, in] (stored as PyTorch stores it) multiplies x [rows, in] as x·Wᵀ. In
// an inference context (SetPacked) every such matrix is kept split into P blocks of rows,
// W_packed [P, out/P, in] — the same numbers in the same order, only a different shape — so
// that a product with few rows (decoding) can be written as P independent products, one per
// block, which the backend runs in parallel:
//
//	y[:, p·n:(p+1)·n] = x · W_packed[p]ᵀ          n = out/P, for p in [0, P)
//
// Why: GoMLX's pure-Go DotGeneral (v0.26) runs a product "small" (one dot product per output
// element, parallel only across the batch axes) when it has at most SmallPathLimit output
// elements per batch item, and otherwise copies both operands into 32×32 blocks first — for a
// matrix-vector product that copy touches every weight and pads the single row to 32. A plain
// x·Wᵀ with one row has no batch axis, so it runs on one core. With the block axis as a batch
// axis the same product runs on every core without copying W. Reshaping W [out, in] inside the
// graph would copy it at every call (the backend copies any buffer it does not own), hence the
// layout is chosen when the weights are stored.
//
// Checkpoints always hold [out, in]; CheckpointName maps a packed variable back.

import (
	"runtime"

	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/ml/context"
)

// PackedName is the variable name of a packed matrix; the checkpoint name is "weight".
const PackedName = "weight_packed"

// packedParam marks a context whose matrices are packed (see SetPacked).
const packedParam = "posformer_packed_weights"

// SetPacked makes ctx (and its sub-scopes) an inference context: matrices built from now on are
// stored packed. Training contexts are never packed.
func SetPacked(ctx *context.Context) { ctx.SetParam(packedParam, true) }

// Packed reports whether ctx stores its matrices packed.
func Packed(ctx *context.Context) bool { return context.GetParamOr(ctx, packedParam, false) }

// PackParts is P for a matrix with out rows: the smallest multiple of the core count that
// divides out and leaves blocks of at most maxPackRows rows (so that a batch of up to 8 rows
// stays in the backend's small product), or 1 when out has no such divisor.
func PackParts(out int) int {
	step := max(2, runtime.NumCPU())
	for p := step; p <= out; p += step {
		if out%p == 0 && out/p <= maxPackRows {
			return p
		}
	}
	return 1
}

// maxPackRows bounds a block's rows: 8 decoded rows × 2048 = SmallPathLimit.
const maxPackRows = 2048

// SmallPathLimit is the most output elements per batch item that simplego's DotGeneral computes
// without blocking (16 blocks of its float32 block size, 32×32 in v0.26); such products run in
// parallel only across their batch axes.
var SmallPathLimit = 16 << (2 * simplego.DotGeneralTargetBlockLog2Dim[dtypes.Float32])

// minParallelWork is the fewest multiply-adds worth splitting across cores: below it, starting
// the goroutines costs more than it saves (measured: a 64×64 product is faster on one core).
const minParallelWork = 32 << 10

// StoredMatrix is how ctx holds the variable name of shape: a weight matrix ("weight", [out,
// in]) of an inference context is held packed, as "weight_packed" [P, out/P, in]; anything
// else as it is. Matrix creates variables this way and loaders store tensors this way.
func StoredMatrix(ctx *context.Context, name string, shape []int) (string, []int) {
	if name == "weight" && len(shape) == 2 && Packed(ctx) {
		if p := PackParts(shape[0]); p > 1 {
			return PackedName, []int{p, shape[0] / p, shape[1]}
		}
	}
	return name, shape
}

// Unpacked is the [out, in] shape of a packed matrix [P, out/P, in].
func Unpacked(store []int) []int {
	return []int{store[0] * store[1], store[2]}
}

// CheckpointName maps a variable to its checkpoint tensor: a packed matrix [P, n, in] is the
// tensor "weight" [P·n, in], and so are the values of a quantized one (weight.go), whose
// scales map to no tensor of their own (an empty name); everything else keeps its name and shape.
func CheckpointName(name string, shape []int) (string, []int) {
	if name == PackedName && len(shape) == 3 {
		return "weight", Unpacked(shape)
	}
	if n, s, ok := quantizedCheckpoint(name, shape); ok {
		return n, s
	}
	return name, shape
}

// MatMulT computes x·Wᵀ for x [..., in] and w either [out, in] or packed [P, out/P, in],
// returning [..., out]. The formulation depends only on static shapes (see the file comment).
func MatMulT(x, w *Node) *Node {
	last := x.Rank() - 1
	if w.Rank() == 2 {
		return DotGeneral(x, []int{last}, nil, w, []int{1}, nil)
	}
	dims := w.Shape().Dimensions
	p, n, in := dims[0], dims[1], dims[2]
	lead := x.Shape().Dimensions[:last]
	rows := 1
	for _, d := range lead {
		rows *= d
	}
	outDims := append(append([]int(nil), lead...), p*n)
	if p > 1 && rows*n <= SmallPathLimit && rows*p*n*in >= minParallelWork {
		// One product per block of W, the block index as the batch axis.
		xb := BroadcastToDims(Reshape(x, 1, rows, in), p, rows, in)
		y := DotGeneral(xb, []int{2}, []int{0}, w, []int{2}, []int{0}) // [p, rows, n]
		if rows > 1 {
			y = TransposeAllAxes(y, 1, 0, 2)
		}
		return Reshape(y, outDims...)
	}
	// Many rows (prefill, training-sized batches) or a tiny product: one DotGeneral, the block
	// axis being just another output axis.
	return Reshape(DotGeneral(x, []int{last}, nil, w, []int{2}, nil), outDims...)
}

// GatherRows looks up rows ids [...] (int32) of table [vocab, dim], or of a packed table
// [P, vocab/P, dim], returning [..., dim].
func GatherRows(table, ids *Node) *Node {
	if table.Rank() == 2 {
		return Gather(table, ExpandAxes(ids, -1))
	}
	n := table.Shape().Dim(1)
	block := DivScalar(ids, n)
	row := Sub(ids, MulScalar(block, n))
	return Gather(table, Stack([]*Node{block, row}, -1))
}
