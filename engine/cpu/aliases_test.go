package cpu

import (
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

// Readers look through same-dimensions reshapes and through broadcasts a fused tree can take as
// leaves; the broadcasts a tree cannot take, or that another op reads, stay. Each case gives
// what the unfused ops give, bit for bit.
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
		// A column [3, 70, 1] broadcast to the rows, read by the tree and by a reduction: the
		// tree reads the column, the reduction the broadcast.
		{"a column also reduced", [][]int{{3, 70, 10}, {3, 70, 1}}, func(bld backends.Builder, op op, x []backends.Op) []backends.Op {
			col := op(bld.BroadcastInDim(x[1], s, []int{0, 1, 2}))
			return []backends.Op{op(bld.Add(op(bld.Mul(x[0], col)), x[0])), op(bld.ReduceSum(col, 1))}
		}, 3},
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
