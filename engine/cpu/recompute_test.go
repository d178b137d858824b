package cpu

import (
	"testing"

	"github.com/gomlx/gomlx/backends"
)

// big is a shape past recomputeMinSize (4·128·130 elements), whose rows of 130 make blocks of
// 512 start mid-row.
var big = []int{4, 128, 130}

// SwiGLU's forward and backward: s = σ(g) and a = g·s are read by several trees, and are
// recomputed in each from g, so the graph is three trees (h, du, dg) instead of one op per step,
// and one step since they share g and their leaves are all inputs (siblings.go); the results
// are those of the unfused ops, bit for bit (the same float32 ops in the same order).
func TestRecomputeSwiGLU(t *testing.T) {
	steps, opByOp := fusedVsOpByOp(t, func(bld backends.Builder, op func(backends.Op, error) backends.Op, x []backends.Op) []backends.Op {
		g, u, dh := x[0], x[1], x[2]
		one := op(bld.Constant([]float32{1}))
		s := op(bld.Logistic(g))
		a := op(bld.Mul(g, s))
		h := op(bld.Mul(a, u))
		du := op(bld.Mul(dh, a))
		da := op(bld.Mul(dh, u))
		ds := op(bld.Mul(op(bld.Mul(da, g)), op(bld.Mul(s, op(bld.Sub(one, s))))))
		dg := op(bld.Add(op(bld.Mul(da, s)), ds))
		return []backends.Op{h, du, dg}
	}, big, big, big)
	if steps != 1 || opByOp != 11 {
		t.Errorf("%d steps fused, %d op by op; want 1 and 11", steps, opByOp)
	}
}

// The cases the rule must leave alone, or handle with care; each gives what the unfused ops
// give, bit for bit.
func TestRecomputeCases(t *testing.T) {
	type build = func(bld backends.Builder, op func(backends.Op, error) backends.Op, x []backends.Op) []backends.Op
	for _, c := range []struct {
		name   string
		inputs [][]int
		build  build
		steps  int
	}{
		// s = σ(g) is an output too: it is materialized, and the trees read it.
		{"an output", [][]int{big, big}, func(bld backends.Builder, op func(backends.Op, error) backends.Op, x []backends.Op) []backends.Op {
			s := op(bld.Logistic(x[0]))
			return []backends.Op{s, op(bld.Mul(s, x[1])), op(bld.Add(s, x[1]))}
		}, 3},
		// A reduction reads s: s is materialized for it, the trees read it.
		{"read by a reduction", [][]int{big, big}, func(bld backends.Builder, op func(backends.Op, error) backends.Op, x []backends.Op) []backends.Op {
			s := op(bld.Logistic(x[0]))
			return []backends.Op{op(bld.ReduceSum(s, 2)), op(bld.Mul(s, x[1])), op(bld.Add(s, x[1]))}
		}, 4},
		// z = p + q reads two arrays: recomputing it would read both in each tree, so z is
		// materialized; s = σ(z) is recomputed from it in both trees (z a leaf of each, not a
		// member of the first), which then run as one step.
		{"two-array operand", [][]int{big, big}, func(bld backends.Builder, op func(backends.Op, error) backends.Op, x []backends.Op) []backends.Op {
			p, q := x[0], x[1]
			s := op(bld.Logistic(op(bld.Add(p, q))))
			return []backends.Op{op(bld.Mul(s, p)), op(bld.Mul(s, q))}
		}, 2},
		// x·0.5 + 1 reads one array and scalars: recomputed in both trees, which also read
		// broadcast leaves (RMSNorm's r [b, s, 1], a scale [1, 1, d]); one tree reads it twice.
		// The two trees share it, and run as one step.
		{"scalars and broadcast leaves", [][]int{big, {4, 128, 1}, {1, 1, 130}}, func(bld backends.Builder, op func(backends.Op, error) backends.Op, x []backends.Op) []backends.Op {
			half, one := op(bld.Constant([]float32{0.5})), op(bld.Constant([]float32{1}))
			y := op(bld.Add(op(bld.Mul(x[0], half)), one))
			return []backends.Op{op(bld.Mul(op(bld.Mul(y, x[1])), y)), op(bld.Sub(y, x[2]))}
		}, 1},
		// An operand with a broadcast array is a second array: not recomputed.
		{"broadcast operand", [][]int{big, {1, 1, 130}, big}, func(bld backends.Builder, op func(backends.Op, error) backends.Op, x []backends.Op) []backends.Op {
			y := op(bld.Mul(x[0], x[1]))
			return []backends.Op{op(bld.Mul(y, x[2])), op(bld.Exp(y))}
		}, 3},
		// A chain of five ops is more arithmetic than the rule repeats.
		{"long chain", [][]int{big, big}, func(bld backends.Builder, op func(backends.Op, error) backends.Op, x []backends.Op) []backends.Op {
			y := x[0]
			for range 5 {
				y = op(bld.Logistic(y))
			}
			return []backends.Op{op(bld.Mul(y, x[1])), op(bld.Add(y, x[1]))}
		}, 3},
		// Below recomputeMinSize, a shared value keeps its own step.
		{"small", [][]int{{3, 700}, {3, 700}}, func(bld backends.Builder, op func(backends.Op, error) backends.Op, x []backends.Op) []backends.Op {
			s := op(bld.Logistic(x[0]))
			return []backends.Op{op(bld.Mul(s, x[1])), op(bld.Add(s, x[1]))}
		}, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			steps, _ := fusedVsOpByOp(t, c.build, c.inputs...)
			if steps != c.steps {
				t.Errorf("%d steps fused; want %d", steps, c.steps)
			}
		})
	}
}
