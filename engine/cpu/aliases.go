package cpu

// Reading through copies. GoMLX's graphs put ops between elementwise ops that copy or rename a
// value without computing anything: Identity (a reshape to the same dimensions) after every
// gradient sum, and BroadcastInDim to widen a scalar to the shape of the array it combines
// with (attention's 1/√d in the softmax gradient). Each stops a fused tree (fuse.go): the
// reshape because it is not elementwise, the broadcast because it writes the full array (8 MB
// for attention's [32, 4, 128, 128] scores) that the tree then reads back. So readers are
// pointed at the value under the copy:
//   - every reader of a same-dimensions reshape reads the reshape's operand;
//   - a binary float32 op reading a broadcast of a scalar reads the scalar (binary.go and the
//     fused trees broadcast it themselves);
//   - a binary float32 op reading a broadcast along leading axes reads the array under it
//     (attention's mask [b, 1, s, t] under the logits [b, h, s, t]): binary.go reads it with
//     stride 0 along those axes, a fused tree block by block in place, each block one run of
//     it (fuse.go's leaves with inner 1).
// The copies are then dead unless something else reads them (an output, another op).
//
// A broadcast column ([b, s, 1] to [b, s, d]) is left alone: read as a broadcast leaf, its
// values are gathered into a register block by block, and with two of them the gradient of
// RMSNorm's fused step took twice as long as reading the materialized arrays (step times of
// BenchmarkTrainStep/v2-lm).

import "github.com/gomlx/gomlx/backends"

var binaryFusable = map[backends.OpType]bool{
	backends.OpTypeAdd: true, backends.OpTypeSub: true, backends.OpTypeMul: true, backends.OpTypeDiv: true,
	backends.OpTypeMax: true, backends.OpTypeMin: true,
}

// readThroughCopies points readers of same-dimensions reshapes and of broadcast scalars at the
// values under them.
func readThroughCopies(nodes []*node) {
	for _, n := range nodes {
		for i, in := range n.inputs {
			for in.op == backends.OpTypeReshape && in.shape.Equal(in.inputs[0].shape) {
				in = in.inputs[0]
			}
			if binaryFusable[n.op] && fusable(n) && in.op == backends.OpTypeBroadcastInDim && in.shape.Equal(n.shape) {
				if x := in.inputs[0]; broadcastScalar(x, in) || broadcastLeading(x, in) {
					in = x
				}
			}
			n.inputs[i] = in
		}
	}
}

// broadcastScalar reports whether b broadcasts a scalar x that a binary op can read in its
// place: of rank 0, or of b's rank with every dimension 1 (operandStrides then gives it stride 0).
func broadcastScalar(x, b *node) bool {
	return x.shape.Size() == 1 && (x.shape.Rank() == 0 || x.shape.Rank() == b.shape.Rank())
}

// broadcastLeading reports whether b broadcasts x of its rank along leading axes only, so that
// b's elements are whole copies of x one after another: a fused tree reads x in place.
func broadcastLeading(x, b *node) bool {
	if x.shape.Rank() != b.shape.Rank() || x.shape.DType != b.shape.DType {
		return false
	}
	for i, a := range b.attr.([]int) {
		if a != i {
			return false // a transposing broadcast
		}
	}
	m, ok := leafModeOf(x.shape.Dimensions, b.shape.Dimensions)
	return ok && m.inner == 1 && m.period > 1
}
