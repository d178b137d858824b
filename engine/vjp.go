package engine

import (
	"reflect"
	"runtime"
	"slices"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/posformer/posformer/layers"
)

// GoMLX's stock gradient of DotGeneral broadcasts both operands to the full
// [batch, lhs-free, rhs-free, contracted] shape and reduces it, which on the pure-Go backend
// is many times slower and hungrier than the textbook gradient: two more DotGenerals.
// Registered for every graph built in a process that imports engine.
func init() {
	stockDotGeneralVJP = VJPRegistration[NodeTypeDotGeneral]
	VJPRegistration[NodeTypeDotGeneral] = func(node *Node, v []*Node, _ shapes.Shape) []*Node {
		return dotGeneralVJP(node, v[0])
	}
	// GoMLX v0.26 defines no gradient for Rsqrt, used by the norms: d x^(-1/2) = -x^(-3/2)/2.
	if _, ok := VJPRegistration[NodeTypeRsqrt]; !ok {
		VJPRegistration[NodeTypeRsqrt] = func(node *Node, v []*Node, _ shapes.Shape) []*Node {
			return []*Node{Mul(v[0], MulScalar(PowScalar(node, 3), -0.5))}
		}
	}
}

// stockDotGeneralVJP is GoMLX's own, kept for the test that compares the two.
var stockDotGeneralVJP VJP

// dotGeneralAxes reads the axes a DotGeneral node was built with. GoMLX v0.26 keeps them in
// unexported fields, so they are read by reflection; TestDotGeneralVJP pins the behaviour.
func dotGeneralAxes(node *Node) (lc, lb, rc, rb []int) {
	in := reflect.ValueOf(node).Elem().FieldByName("inputs").Elem().Elem()
	ints := func(name string) []int {
		f := in.FieldByName(name)
		out := make([]int, f.Len())
		for i := range out {
			out[i] = int(f.Index(i).Int())
		}
		return out
	}
	return ints("lhsContractingAxes"), ints("lhsBatchAxes"), ints("rhsContractingAxes"), ints("rhsBatchAxes")
}

// splitContraction computes DotGeneral(a, aC, nil, b, bC, nil) as a sum of P products over
// slices of the contracted rows, with the slice index as a batch axis, when that lets the
// pure-Go backend use every core: the weight gradient of a linear layer contracts all the
// batch's rows into a small [out, in] matrix, a product that backend runs on one core (it
// parallelizes small products only across batch axes). It returns nil where the shapes do not
// fit: batch axes, contracted axes that are not the leading ones of both operands in order, too
// few rows, or an output large enough to be parallelized anyway.
func splitContraction(a *Node, aC []int, b *Node, bC []int) *Node {
	p := max(2, runtime.NumCPU())
	if len(aC) == 0 || len(aC) != len(bC) {
		return nil
	}
	rows := 1
	for i := range aC {
		if aC[i] != i || bC[i] != i || a.Shape().Dim(i) != b.Shape().Dim(i) {
			return nil
		}
		rows *= a.Shape().Dim(i)
	}
	aRest, bRest := a.Shape().Dimensions[len(aC):], b.Shape().Dimensions[len(bC):]
	out := 1
	for _, d := range append(slices.Clone(aRest), bRest...) {
		out *= d
	}
	if rows%p != 0 || rows < 64*p || out > layers.SmallPathLimit {
		return nil
	}
	a2 := Reshape(a, append([]int{p, rows / p}, aRest...)...)
	b2 := Reshape(b, append([]int{p, rows / p}, bRest...)...)
	return ReduceSum(DotGeneral(a2, []int{1}, []int{0}, b2, []int{1}, []int{0}), 0)
}

// freeAxes are the axes of a rank-r operand that are neither contracted nor batch axes.
func freeAxes(rank int, contracting, batch []int) []int {
	var free []int
	for a := 0; a < rank; a++ {
		if !slices.Contains(contracting, a) && !slices.Contains(batch, a) {
			free = append(free, a)
		}
	}
	return free
}

// dotGeneralVJP: out = lhs·rhs has axes [batch, lhsFree, rhsFree]. The gradient for lhs is
// v·rhs contracted over rhsFree, giving [batch, lhsFree, rhs's contracting axes in ascending
// order], transposed back into lhs's layout; symmetrically for rhs.
func dotGeneralVJP(node, v *Node) []*Node {
	lhs, rhs := node.Inputs()[0], node.Inputs()[1]
	lc, lb, rc, rb := dotGeneralAxes(node)
	lf := freeAxes(lhs.Rank(), lc, lb)
	rf := freeAxes(rhs.Rank(), rc, rb)
	nb := len(lb)
	vBatch := make([]int, nb)
	for i := range vBatch {
		vBatch[i] = i
	}
	vLF := make([]int, len(lf))
	for i := range vLF {
		vLF[i] = nb + i
	}
	vRF := make([]int, len(rf))
	for i := range vRF {
		vRF[i] = nb + len(lf) + i
	}
	grad := func(self *Node, selfC, selfB, selfF []int, other *Node, otherC, otherB, otherF, vSelfF, vOtherF []int) *Node {
		g := splitContraction(v, vOtherF, other, otherF)
		if g == nil {
			g = DotGeneral(v, vOtherF, vBatch, other, otherF, otherB)
		}
		// g's axes: batch, self's free axes, then other's contracting axes in ascending order.
		sorted := slices.Clone(otherC)
		slices.Sort(sorted)
		perm := make([]int, self.Rank())
		for i, a := range selfB {
			perm[a] = i
		}
		for i, a := range selfF {
			perm[a] = nb + i
		}
		for i, a := range selfC {
			perm[a] = nb + len(selfF) + slices.Index(sorted, otherC[i])
		}
		return TransposeAllAxes(g, perm...)
	}
	return []*Node{
		grad(lhs, lc, lb, lf, rhs, rc, rb, rf, vLF, vRF),
		grad(rhs, rc, rb, rf, lhs, lc, lb, lf, vRF, vLF),
	}
}
