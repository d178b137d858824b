package models

import (
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/posformer/posformer/layers"
	"github.com/posformer/posformer/layers/quant"
)

// grouping is a backend that asks for row groups (RowGroupsPreferrer), or says it does not.
type grouping struct {
	backends.Backend
	prefers bool
}

func (g grouping) PrefersRowGroups() bool { return g.prefers }

// A backend that asks for row groups gets its Q8_0 and Q4_0 matrices of whole groups of rows in
// them, as GroupedVars lists them (a matrix of 40 rows, and any other backend, in rows, which
// the graph reads as the file's blocks dequantized, exactly, on GoMLX's reference backend; the
// CPU backend's tests read the groups, engine/cpu/groupdot_test.go).
func TestStoreGroupsRowsForABackendThatAsks(t *testing.T) {
	ref, err := simplego.New("ops_sequential")
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Finalize()
	r := rand.New(rand.NewPCG(3, 4))
	for _, typ := range []quant.Type{quant.Q8_0, quant.Q4_0} {
		for _, c := range []struct {
			out     int
			prefers bool
			grouped bool
		}{{48, true, true}, {40, true, false}, {48, false, false}} {
			const in = 64
			w := make([]float32, c.out*in)
			for i := range w {
				w[i] = float32(r.NormFloat64())
			}
			raw, err := quant.Quantize(typ, w)
			if err != nil {
				t.Fatal(err)
			}
			deq := make([]float32, len(w))
			if err := quant.Dequantize(typ, raw, deq); err != nil {
				t.Fatal(err)
			}
			ctx := context.New()
			if err := layers.SetWeightType(ctx, typ); err != nil {
				t.Fatal(err)
			}
			be := grouping{ref, c.prefers}
			if err := StoreTensor(ctx, be, "layer_0.w.weight", []int{c.out, in}, typ, raw); err != nil {
				t.Fatal(err)
			}
			names, types, dims := layers.GroupedVars(typ, c.out, in)
			scope := ctx.InAbsPath("/" + Scope + "/layer_0/w")
			grouped := names != nil && scope.GetVariable(names[0]) != nil
			if grouped != c.grouped {
				t.Fatalf("%v, %d rows, backend prefers groups %v: grouped %v, want %v", typ, c.out, c.prefers, grouped, c.grouped)
			}
			if grouped {
				for i, name := range names {
					if v := scope.GetVariable(name); !v.Shape().Equal(shapes.Make(types[i], dims[i]...)) {
						t.Fatalf("%v: %s is %s, want %v %v", typ, name, v.Shape(), types[i], dims[i])
					}
				}
				continue // float16 scales: not for the reference backend
			}
			exe := context.MustNewExec(be, ctx.Reuse(), func(ctx *context.Context, g *Graph) *Node {
				return layers.Matrix(ctx.In(Scope).In("layer_0").In("w"), g, c.out, in, dtypes.Float32, 0).Float()
			})
			got := tensors.MustCopyFlatData[float32](exe.MustExec()[0])
			for i := range deq {
				if got[i] != deq[i] {
					t.Fatalf("%v, %d rows, grouped %v: W[%d] = %g, want %g", typ, c.out, grouped, i, got[i], deq[i])
				}
			}
		}
	}
}
