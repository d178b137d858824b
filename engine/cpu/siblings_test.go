package cpu

import (
	"testing"

	"github.com/gomlx/gomlx/backends"
)

// Sibling trees run as one step when they share an array and the later one's leaves are ready
// before the earlier root; otherwise each keeps its step. Each case gives what the unfused ops
// give, bit for bit.
func TestSiblingTrees(t *testing.T) {
	type op = func(backends.Op, error) backends.Op
	small := []int{3, 700}
	for _, c := range []struct {
		name   string
		inputs [][]int
		build  func(bld backends.Builder, op op, x []backends.Op) []backends.Op
		steps  int
	}{
		// (x − b₁)·b₂ and exp(x)·b₁ + x share x and the broadcast column b₁; on an array
		// large enough to be split over threads.
		{"broadcast leaves, split", [][]int{big, {4, 128, 1}, {1, 1, 130}}, func(bld backends.Builder, op op, x []backends.Op) []backends.Op {
			y1 := op(bld.Mul(op(bld.Sub(x[0], x[1])), x[2]))
			y2 := op(bld.Add(op(bld.Mul(op(bld.Exp(x[0])), x[1])), x[0]))
			return []backends.Op{y1, y2}
		}, 1},
		// The later root is an output and also read by a reduction after the step.
		{"a root read after", [][]int{small, small, small}, func(bld backends.Builder, op op, x []backends.Op) []backends.Op {
			y1 := op(bld.Mul(op(bld.Logistic(x[0])), x[1]))
			y2 := op(bld.Sub(op(bld.Mul(x[0], x[2])), x[1]))
			return []backends.Op{y1, y2, op(bld.ReduceSum(y2, 1))}
		}, 2},
		// The later tree reads a transpose made after the earlier root: not ready there.
		{"a leaf made later", [][]int{small, small, {700, 3}}, func(bld backends.Builder, op op, x []backends.Op) []backends.Op {
			y1 := op(bld.Mul(op(bld.Exp(x[0])), x[1]))
			tr := op(bld.Transpose(x[2], 1, 0))
			y2 := op(bld.Mul(op(bld.Add(x[0], tr)), x[1]))
			return []backends.Op{y1, y2}
		}, 3},
		// The later tree reads the earlier root (an output, so not taken in): not siblings.
		{"reads the earlier root", [][]int{small, small}, func(bld backends.Builder, op op, x []backends.Op) []backends.Op {
			y1 := op(bld.Mul(op(bld.Exp(x[0])), x[1]))
			y2 := op(bld.Mul(op(bld.Add(y1, x[0])), x[1]))
			return []backends.Op{y1, y2}
		}, 2},
		// Only a scalar in common: nothing to share.
		{"a scalar in common", [][]int{small, small}, func(bld backends.Builder, op op, x []backends.Op) []backends.Op {
			half := op(bld.Constant([]float32{0.5}))
			y1 := op(bld.Mul(op(bld.Exp(x[0])), half))
			y2 := op(bld.Mul(op(bld.Exp(x[1])), half))
			return []backends.Op{y1, y2}
		}, 2},
		// Five trees reading x: at most maxSiblings in one step.
		{"many siblings", [][]int{small}, func(bld backends.Builder, op op, x []backends.Op) []backends.Op {
			var outs []backends.Op
			for k := range 5 {
				c := op(bld.Constant([]float32{float32(k)}))
				outs = append(outs, op(bld.Mul(op(bld.Add(x[0], c)), x[0])))
			}
			return outs
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
