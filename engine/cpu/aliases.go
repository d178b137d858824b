package cpu

// Reading through copies. GoMLX's graphs put ops between elementwise ops that copy or rename a
// value without computing anything: Identity (a reshape to the same dimensions) after every
// gradient sum, and BroadcastInDim to widen a scalar or a [b, s, 1] column to the shape of the
// array it combines with. Each stops a fused tree (fuse.go): the reshape because it is not
// elementwise, the broadcast because it writes the full array (8 MB for attention's
// [32, 4, 128, 128] scores) that the tree then reads back. A binary op broadcasts size-1 axes
// itself, and a fused tree reads such an operand as a broadcast leaf, so readers are pointed at
// the value under the copy:
//   - every reader of a same-dimensions reshape reads the reshape's operand;
//   - a binary float32 op reading a broadcast of a scalar, or of an array of its rank whose
//     axes keep their places (size 1 where broadcast), reads that array when a fused tree could
//     take it as a leaf (leafModeOf).
// The copies are then dead unless something else reads them (an output, another op).

import "github.com/gomlx/gomlx/backends"

var binaryFusable = map[backends.OpType]bool{
	backends.OpTypeAdd: true, backends.OpTypeSub: true, backends.OpTypeMul: true, backends.OpTypeDiv: true,
	backends.OpTypeMax: true, backends.OpTypeMin: true,
}

// readThroughCopies points readers of same-dimensions reshapes and of broadcasts an elementwise
// op can do itself at the values under them.
func readThroughCopies(nodes []*node) {
	for _, n := range nodes {
		for i, in := range n.inputs {
			for in.op == backends.OpTypeReshape && in.shape.Equal(in.inputs[0].shape) {
				in = in.inputs[0]
			}
			if binaryFusable[n.op] && fusable(n) && in.op == backends.OpTypeBroadcastInDim && in.shape.Equal(n.shape) {
				if x := in.inputs[0]; broadcastInPlace(x, in) {
					if _, ok := leafModeOf(x.shape.Dimensions, n.shape.Dimensions); ok {
						in = x
					}
				}
			}
			n.inputs[i] = in
		}
	}
}

// broadcastInPlace reports whether b broadcasts x without moving its axes: x is a scalar, or of
// b's rank with its axes in order.
func broadcastInPlace(x, b *node) bool {
	if x.shape.Rank() == 0 {
		return true
	}
	axes := b.attr.([]int)
	if x.shape.Rank() != b.shape.Rank() {
		return false
	}
	for i, a := range axes {
		if a != i {
			return false
		}
	}
	return true
}
