package cpu

// Recomputing shared elementwise values inside the fused trees that read them. A fused tree
// (fuse.go) takes in a node only when every reader of the node is in the tree; a value read by
// several trees is computed by a step of its own and written to memory, and each tree reads it
// back. Training makes such values common: autodiff keeps the forward's intermediates for the
// backward pass. SwiGLU's s = σ(g) is read by a = g·s and by three terms of the gradient, and
// a = g·s by h = a·u and by the gradient's dh·a: on [batch, seq, hidden] arrays of 8 MB, out
// of cache, each of those is a pass over memory (Logistic, Mul, Mul: read 5 arrays, write 3).
//
// The rule: a node is recomputed in every tree that reads it, and gets no step of its own, when
//   - it is a float32 elementwise op (fusable) and not an output,
//   - every reader of it is a fusable op of its shape (so every reader lands in a fused tree),
//   - it and the recomputed nodes it reads (its "cone") read at most one array that is not a
//     scalar: each tree then reads that array in place of the node, so no tree reads more than
//     before, and the node's write, its own pass and its memory are saved,
//   - the cone has at most maxRecomputeOps ops, so the repeated arithmetic stays cheaper than
//     the pass it replaces (σ costs about 0.7 ns an element in L1, a pass over memory several),
//   - it has at least recomputeMinSize elements: a smaller value stays in cache, where its step
//     costs little and recomputing it is pure extra work.
//
// For SwiGLU, s and a are then recomputed from g: the forward is one step h = g·σ(g)·u, and
// the gradient's two trees read g instead of s and a. An operand of a recomputed node that is
// not recomputed itself is a leaf of each tree that recomputes it (never taken in, since its
// reader is now in several trees). The common-subexpression pass has the same rule for a
// duplicate read by one tree (compile.go): there too, computing it again inside the tree is
// cheaper than materializing it.

const (
	maxRecomputeOps  = 4
	recomputeMinSize = 1 << 16
)

// recomputable marks, by node id, the nodes the fused trees recompute instead of reading.
func recomputable(nodes []*node, live []bool, readers [][]*node, isOutput []bool) []bool {
	rec := make([]bool, len(nodes))
	// cone[id]: the recomputed nodes a recomputable node brings into a tree (itself included),
	// and the non-scalar arrays they read.
	type cone struct{ ops, leaves map[int]bool }
	cones := make([]cone, len(nodes))
	for _, x := range nodes { // creation order is topological: operands' cones are known
		if !live[x.id] || isOutput[x.id] || !fusable(x) || x.shape.Size() < recomputeMinSize {
			continue
		}
		ok := len(readers[x.id]) > 0
		for _, r := range readers[x.id] {
			ok = ok && fusable(r) && r.shape.Equal(x.shape)
		}
		if !ok {
			continue
		}
		c := cone{ops: map[int]bool{x.id: true}, leaves: map[int]bool{}}
		for _, in := range x.inputs {
			if rec[in.id] {
				for id := range cones[in.id].ops {
					c.ops[id] = true
				}
				for id := range cones[in.id].leaves {
					c.leaves[id] = true
				}
			} else if m, _ := leafModeOf(in.shape.Dimensions, x.shape.Dimensions); m.period > 1 {
				c.leaves[in.id] = true
			}
		}
		if len(c.leaves) <= 1 && len(c.ops) <= maxRecomputeOps {
			rec[x.id] = true
			cones[x.id] = c
		}
	}
	return rec
}
