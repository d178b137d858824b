package cpu

import (
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

// Readers look through same-dimensions reshapes and broadcast scalars; other broadcasts, and
// those another op reads, stay. Each case gives what the unfused ops give, bit for bit.
func TestReadThroughCopies(t *testing.T) {
	type op = func(backends.Op, error) backends.Op
	s := shapes.Make(dtypes.Float32, 3, 70, 10)
	for _, c := range []struct {
		name   string
		inputs [][]int
		build  func(bld backends.Builder, op op, x []backends.Op) []backends.Op
		steps  int
	}{
		// Softmax's gradient: (p + q) renamed by Identity, times e, times a broadcast scale.
		{"identity and a broadcast scalar", [][]int{{3, 70, 10}, {3, 70, 10}, {3, 70, 10}}, func(bld backends.Builder, op op, x []backends.Op) []backends.Op {
			scale := op(bld.BroadcastInDim(op(bld.Constant([]float32{0.125})), s, nil))
			sum := op(bld.Identity(op(bld.Add(x[0], x[1]))))
			return []backends.Op{op(bld.Mul(op(bld.Mul(sum, x[2])), scale))}
		}, 1},
		// A scalar of rank 3 broadcast, read by the tree and by a reduction: the tree reads the
		// scalar, the reduction the broadcast.
		{"a scalar also reduced", [][]int{{3, 70, 10}, {1, 1, 1}}, func(bld backends.Builder, op op, x []backends.Op) []backends.Op {
			b := op(bld.BroadcastInDim(x[1], s, []int{0, 1, 2}))
			return []backends.Op{op(bld.Add(op(bld.Mul(x[0], b)), x[0])), op(bld.ReduceSum(b, 1))}
		}, 3},
		// A lone binary op reading a broadcast scalar of rank 0 (binary.go's stride-0 operand).
		{"a lone op", [][]int{{3, 70, 10}}, func(bld backends.Builder, op op, x []backends.Op) []backends.Op {
			b := op(bld.BroadcastInDim(op(bld.Constant([]float32{3})), s, nil))
			return []backends.Op{op(bld.Div(x[0], b))}
		}, 1},
		// A column [3, 70, 1] stays a broadcast (read as an array by the tree).
		{"a column", [][]int{{3, 70, 10}, {3, 70, 1}}, func(bld backends.Builder, op op, x []backends.Op) []backends.Op {
			col := op(bld.BroadcastInDim(x[1], s, []int{0, 1, 2}))
			return []backends.Op{op(bld.Add(op(bld.Mul(x[0], col)), x[0]))}
		}, 2},
		// [3, 1, 10] keeps axes apart, which a leaf cannot; [10] broadcast by axes [2] is of
		// another rank: both broadcasts stay, and the trees read them.
		{"broadcasts a leaf cannot be", [][]int{{3, 70, 10}, {3, 1, 10}, {10}}, func(bld backends.Builder, op op, x []backends.Op) []backends.Op {
			b1 := op(bld.BroadcastInDim(x[1], s, []int{0, 1, 2}))
			b2 := op(bld.BroadcastInDim(x[2], s, []int{2}))
			return []backends.Op{op(bld.Add(op(bld.Mul(x[0], b1)), b2))}
		}, 3},
		// An Identity that is an output stays one (a copy), and its reader reads under it.
		{"identity output", [][]int{{3, 70, 10}, {3, 70, 10}}, func(bld backends.Builder, op op, x []backends.Op) []backends.Op {
			sum := op(bld.Add(x[0], x[1]))
			id := op(bld.Identity(sum))
			return []backends.Op{id, op(bld.Exp(op(bld.Neg(id))))}
		}, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			steps, _ := fusedVsOpByOp(t, c.build, c.inputs...)
			if steps != c.steps {
				t.Errorf("%d steps fused; want %d", steps, c.steps)
			}
		})
	}
}
