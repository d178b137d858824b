package engine

import (
	"slices"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

// GoMLX's stock gradient of DotGeneral broadcasts both operands to the full
// [batch, lhs-free, rhs-free, contracted] shape and reduces it, which on any backend costs
// memory and time in proportion to that product of all four sizes; the textbook gradient is
// two more DotGenerals.
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
		g := DotGeneral(v, vOtherF, vBatch, other, otherF, otherB)
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
