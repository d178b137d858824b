package engine

import (
	"testing"

	"github.com/gomlx/gomlx/backends"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// The replacement gradient must equal GoMLX's stock one on layouts that attention uses:
// batch axes, several free axes, contracting axes out of order; on every backend, since the
// rewrite is registered for all of them.
func TestDotGeneralVJP(t *testing.T) {
	for _, name := range []string{"cpu", "go"} {
		t.Run(name, func(t *testing.T) {
			backend, err := NewBackend(name)
			if err != nil {
				t.Fatal(err)
			}
			testDotGeneralVJP(t, backend)
		})
	}
}

func testDotGeneralVJP(t *testing.T, backend backends.Backend) {
	ours := VJPRegistration[NodeTypeDotGeneral]
	cases := []struct {
		lhs, rhs       []int
		lc, lb, rc, rb []int
	}{
		{[]int{3, 4}, []int{5, 4}, []int{1}, nil, []int{1}, nil},
		{[]int{2, 3, 4, 5}, []int{2, 3, 6, 5}, []int{3}, []int{0, 1}, []int{3}, []int{0, 1}},
		{[]int{2, 4, 3, 5}, []int{5, 2, 3, 7}, []int{3, 2}, []int{0}, []int{0, 2}, []int{1}},
		// A linear layer's weight gradient, which contracts all 8·32 rows.
		{[]int{8, 32, 12}, []int{20, 12}, []int{2}, nil, []int{1}, nil},
	}
	for _, c := range cases {
		run := func() []*tensors.Tensor {
			return MustExecOnceN(backend, func(g *Graph) []*Node {
				lhs := IotaFull(g, shapes.Make(dtypes.Float32, c.lhs...))
				lhs = Sin(lhs)
				rhs := Cos(IotaFull(g, shapes.Make(dtypes.Float32, c.rhs...)))
				out := DotGeneral(lhs, c.lc, c.lb, rhs, c.rc, c.rb)
				loss := ReduceAllSum(Mul(out, Sin(IotaFull(g, out.Shape()))))
				return Gradient(loss, lhs, rhs)
			})
		}
		got := run()
		delete(VJPRegistration, NodeTypeDotGeneral)
		VJPRegistration[NodeTypeDotGeneral] = stockDotGeneralVJP
		want := run()
		VJPRegistration[NodeTypeDotGeneral] = ours
		for i := range got {
			if !got[i].InDelta(want[i], 1e-3) {
				t.Errorf("case %v: gradient %d differs:\n got %v\nwant %v", c, i, got[i], want[i])
			}
		}
	}
}
