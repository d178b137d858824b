package cpu

// Sibling trees in one step. Two fused trees of one shape often read the same arrays: SwiGLU's
// gradient has du = dh·a and dg = (dh·u)·s + ..., both reading dh and (with a and s recomputed,
// recompute.go) g, and both computing σ(g). Run as two steps, each reads dh and g from memory
// and evaluates σ; run as one, block by block, dh and g are read once, σ(g) computed once, and
// both results written.
//
// The rule: a tree joins an earlier tree (the one whose root comes first) when both have the
// same shape, they share a leaf that is not a scalar or a member (a recomputed value), and every
// leaf of the later tree is computed before the earlier root (has a smaller id, or is a
// parameter or a constant, there from the start): the merged step runs where the earlier
// root's did, so its leaves are ready, and the later root, written there, is ready before any
// of its readers. A group has at most maxSiblings roots.

import (
	"slices"

	"github.com/gomlx/gomlx/backends"
)

const maxSiblings = 4

// mergeSiblings merges the trees of roots by the rule above: a merged tree lives under its first
// root, and each later root maps to it too (its step is the first root's). A tree's candidates
// are the later trees that share a leaf or a member with it (indexed once: trying every pair made
// a graph of thousands of trees take seconds to compile), tried in the order of their roots, and
// the trees sharing what a merge brings in join the candidates.
func mergeSiblings(roots map[int]*fusion) {
	ids := make([]int, 0, len(roots))
	for id := range roots {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	byLeaf, byMember := map[int][]int{}, map[int][]int{} // node id -> roots of the trees that hold it
	for _, id := range ids {
		f := roots[id]
		for _, l := range f.leaves {
			if l.shape.Size() > 1 {
				byLeaf[l.id] = append(byLeaf[l.id], id)
			}
		}
		for _, m := range f.members {
			byMember[m.id] = append(byMember[m.id], id)
		}
	}
	for _, id1 := range ids {
		f1 := roots[id1]
		if f1.root.id != id1 {
			continue // merged into an earlier tree
		}
		var next candidates
		after := id1
		add := func(f *fusion) {
			for _, l := range f.leaves {
				next.push(byLeaf[l.id], after)
			}
			for _, m := range f.members {
				next.push(byMember[m.id], after)
			}
		}
		add(f1)
		for id2, ok := next.pop(); ok && len(f1.outs) < maxSiblings-1; id2, ok = next.pop() {
			f2 := roots[id2]
			after = id2
			if f2.root.id != id2 || len(f2.outs) > 0 || !siblings(f1, f2) {
				continue
			}
			f1.merge(f2)
			roots[id2] = f1
			add(f2)
		}
	}
}

// candidates is an ascending set of tree roots still to try.
type candidates struct {
	ids  []int
	seen map[int]bool
}

// push adds the roots after a that are not there yet.
func (c *candidates) push(ids []int, a int) {
	for _, id := range ids {
		if id > a && !c.seen[id] {
			if c.seen == nil {
				c.seen = map[int]bool{}
			}
			c.seen[id] = true
			i, _ := slices.BinarySearch(c.ids, id)
			c.ids = slices.Insert(c.ids, i, id)
		}
	}
}

// pop takes the smallest root.
func (c *candidates) pop() (int, bool) {
	if len(c.ids) == 0 {
		return 0, false
	}
	id := c.ids[0]
	c.ids = c.ids[1:]
	return id, true
}

// siblings reports whether f2 (the later root) may join f1.
func siblings(f1, f2 *fusion) bool {
	if !f1.root.shape.Equal(f2.root.shape) {
		return false
	}
	for _, l := range f2.leaves {
		if l.id >= f1.root.id && l.op != backends.OpTypeParameter && l.op != backends.OpTypeConstant {
			return false
		}
	}
	for _, l := range f2.leaves {
		if l.shape.Size() > 1 && slices.Contains(f1.leaves, l) {
			return true
		}
	}
	for _, m := range f2.members {
		if slices.Contains(f1.members, m) {
			return true
		}
	}
	return false
}

// merge adds f2's members, leaves and root (as a further output) to f.
func (f *fusion) merge(f2 *fusion) {
	for _, m := range f2.members {
		if !slices.Contains(f.members, m) {
			f.members = append(f.members, m)
		}
	}
	slices.SortFunc(f.members, func(a, b *node) int { return a.id - b.id }) // creation order is topological
	for _, l := range f2.leaves {
		if !slices.Contains(f.leaves, l) && !slices.Contains(f.members, l) {
			f.leaves = append(f.leaves, l)
		}
	}
	f.outs = append(f.outs, f2.root)
}
