package engine

import (
	"slices"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

// The fields private.go reads are where it expects them, on every backend the engine offers
// here: a GoMLX upgrade that renames them fails this test.
func TestPrivateFields(t *testing.T) {
	for _, name := range []string{"cpu", "go"} {
		backend, err := NewBackend(name)
		if err != nil {
			t.Fatal(err)
		}
		g := NewGraph(backend, "pinned")
		lhs := Parameter(g, "lhs", shapes.Make(dtypes.Float32, 2, 4, 3, 5))
		rhs := Parameter(g, "rhs", shapes.Make(dtypes.Float32, 5, 2, 3, 7))
		dot := DotGeneral(lhs, []int{3, 2}, []int{0}, rhs, []int{0, 2}, []int{1})
		lc, lb, rc, rb := dotGeneralAxes(dot)
		if !slices.Equal(lc, []int{3, 2}) || !slices.Equal(lb, []int{0}) || !slices.Equal(rc, []int{0, 2}) || !slices.Equal(rb, []int{1}) {
			t.Errorf("%s: dotGeneralAxes = %v %v %v %v, want [3 2] [0] [0 2] [1]", name, lc, lb, rc, rb)
		}
		if executableOf(g) != nil {
			t.Errorf("%s: an uncompiled graph has an executable", name)
		}
		g.Compile(dot)
		if executableOf(g) == nil {
			t.Errorf("%s: executableOf finds no executable in a compiled graph", name)
		}
	}
}
