package cpu

// Sibling quantized products in one step. Decoding a token, every layer multiplies one
// activation by several stored matrices: the normed hidden state by Wq, Wk and Wv, and again by
// the gate and up matrices of SwiGLU. Lowered one by one (lowerQuantDot), each product quantizes
// the same x to int8 blocks and hands its rows of W to the pool, whose run is a barrier: the
// other threads spin while the caller finishes, about a hundred times per token. Run as one
// step, x is quantized once and the tasks of all the products (each its own rows of W, the same
// rows per task as alone, so the results are the same bit for bit) make up one pool job: one
// barrier instead of three (or two).
//
// A prefill's products of many rows of x on integer arithmetic (the backend option actq8) group
// the same way, for another reason: each quantizes x, a serial pass before its GEMM (512 rows
// of 288 about 70 µs on one thread, a third of such a product's time on two), and once is
// enough. Without actq8 many rows take the float32 GEMM, which packs x per product: those stay
// alone.
//
// The rule: a product joins the group of an earlier product (its first member) when both are
// rewritten quantized products (fuseQuantizedProducts) of at most four rows of x or on the
// integer GEMM, read the same x
// node with the same axes contracted (so the same bytes), and every other input of the later
// one is a parameter, a constant, or computed before the first member (a smaller node id once
// views are looked through). The group runs at the first member's step, where all its inputs
// are ready; so none reads another member's output (that has a larger id), and each later
// output is ready before its readers. Every member's slots (output and scratch) are then
// defined at that step (lowerSteps), so the arena gives them disjoint bytes. A group has at
// most maxSiblingDots members.
//
// x quantized for Q8_0 weights is the same bytes as for Q4_0 in ggml's order; in the VNNI
// layout (kernels.ActView) the two types place the bytes differently, so there it is quantized
// once per type, as it is for the GEMM (whose rows carry per-type block sums).

import (
	"slices"
	"sync/atomic"

	"github.com/gomlx/gomlx/backends"
	"github.com/posformer/posformer/layers/quant"
)

// maxSiblingDots bounds a group: its later outputs live from the group's step on.
const maxSiblingDots = 8

// siblingDotMembers counts the products lowered in groups so far (for tests).
var siblingDotMembers atomic.Int64

// siblingDotsOn switches the grouping; tests turn it off to compare.
var siblingDotsOn = true

// siblingDots are the groups found: the members of each group under its first member's id (first
// first), and the later members, which get no step of their own.
type siblingDots struct {
	group map[int][]*node
	later []bool
}

// findSiblingDots groups the live quantized products by the rule above.
func findSiblingDots(nodes []*node, live, fused []bool, actq8 bool) siblingDots {
	sd := siblingDots{group: map[int][]*node{}, later: make([]bool, len(nodes))}
	if !siblingDotsOn {
		return sd
	}
	var open [][]*node // groups in the making, the first member first
	for _, n := range nodes {
		if !live[n.id] || fused[n.id] || !groupableQuantDot(n, actq8) {
			continue
		}
		joined := false
		for i, g := range open {
			if len(g) < maxSiblingDots && sameX(g[0], n) && readyBefore(n, g[0]) {
				open[i] = append(g, n)
				joined = true
				break
			}
		}
		if !joined {
			open = append(open, []*node{n})
		}
	}
	for _, g := range open {
		if len(g) < 2 {
			continue
		}
		sd.group[g[0].id] = g
		for _, m := range g[1:] {
			sd.later[m.id] = true
		}
	}
	return sd
}

// groupableQuantDot reports whether n is a rewritten product of at most four rows of x, or one
// that runs on the integer GEMM (actq8, Q8_0 or Q4_0 weights: planQuantDot's gemm).
func groupableQuantDot(n *node, actq8 bool) bool {
	qa, ok := n.attr.(*quantDotAttr)
	if !ok || n.op != backends.OpTypeDotGeneral {
		return false
	}
	return n.inputs[0].shape.Size()/qa.K <= 4 || actq8 && (qa.typ == quant.Q8_0 || qa.typ == quant.Q4_0)
}

// sameX reports whether a and b read the same bytes as x: the same node, the same axes.
func sameX(a, b *node) bool {
	qa, qb := a.attr.(*quantDotAttr), b.attr.(*quantDotAttr)
	return a.inputs[0] == b.inputs[0] && slices.Equal(qa.dot.lhsBatch, qb.dot.lhsBatch) &&
		slices.Equal(qa.dot.lhsContract, qb.dot.lhsContract)
}

// readyBefore reports whether every input of n is there when first's step runs.
func readyBefore(n, first *node) bool {
	for _, in := range n.inputs {
		for isView(in) {
			in = in.inputs[0]
		}
		if in.op != backends.OpTypeParameter && in.op != backends.OpTypeConstant && in.id >= first.id {
			return false
		}
	}
	return true
}

// lowerSiblingDots lowers a group's products (lws[0] the first member's) into one step.
func lowerSiblingDots(lws []*lowering) (stepFn, error) {
	siblingDotMembers.Add(int64(len(lws)))
	plans := make([]*quantDotPlan, len(lws))
	first := make([]int, len(lws)+1) // each member's first task, then the total
	macs := 0
	for i, lw := range lws {
		plans[i] = planQuantDot(lw, lw.n.attr.(*quantDotAttr))
		first[i+1] = first[i] + plans[i].tasks
		macs += plans[i].M * plans[i].N * plans[i].K
	}
	// The member whose scratch holds the quantized x each member reads: the first quantizing
	// member in ggml's order, the first of the same type in the VNNI layout and for the GEMM.
	plainSrc, typeSrc := make([]int, len(plans)), make([]int, len(plans))
	for i, p := range plans {
		plainSrc[i], typeSrc[i] = i, i
		for j := range i {
			if plans[j].act && plainSrc[i] == i {
				plainSrc[i] = j
			}
			if plans[j].act && plans[j].stored.typ == p.stored.typ && typeSrc[i] == i {
				typeSrc[i] = j
			}
		}
	}
	mk := func() any {
		g := &siblingDotsCall{calls: make([]quantCall, len(plans)), first: first}
		g.run, g.quant.run = g.task, g.quant.task
		return g
	}
	pool := lws[0].e.backend.pool
	step := lws[0].step
	total := first[len(plans)]
	pf := lws[0].e.quantPrefetch(plans, first)
	return func(f *frame) {
		g := f.stepState(step, mk).(*siblingDotsCall)
		x := plans[0].x(f) // the same x for all (the later members' own scratch for it stays unused)
		for i, p := range plans {
			c := &g.calls[i]
			p.bind(f, c, x)
			switch {
			case p.plainRows():
				src := i // the first member that quantizes x's rows in their plain form
				for j := range i {
					if plans[j].plainRows() {
						src = j
						break
					}
				}
				if src == i {
					quantizePlain(pool, p.stored.typ, x, p.M, p.K, f.slots[p.sa])
				}
				c.xa, c.plainRows = f.slots[plans[src].sa], true
			case p.gemm:
				src := i // the first member of the same type on the integer GEMM
				for j := range i {
					if plans[j].gemm && !plans[j].plainRows() && plans[j].stored.typ == p.stored.typ {
						src = j
						break
					}
				}
				if src == i {
					c.rowsQ = g.quant.rows(pool, p.stored.typ, x, p.M, p.K, f.slots[p.sa])
				} else {
					c.rowsQ = g.calls[src].rowsQ
				}
			case p.act:
				layout := p.vnniLayout()
				src := xSource(plans, typeSrc, plainSrc, i, layout)
				if src == i {
					quantizeRows(p.stored.typ, x, p.M, p.K, f.slots[p.sa], layout)
				}
				c.xa, c.layout = f.slots[plans[src].sa], layout
			}
		}
		runQuantTasks(pool, macs, total, g.run)
		pf.hintNext(pool, f)
	}, nil
}

// xSource is the member whose scratch holds x quantized for member i, in the VNNI layout
// (layout) or the plain form: the first of the same type in the layout, the first in the plain
// form (any type's); the member itself where an earlier one has x in the other form only.
func xSource(plans []*quantDotPlan, typeSrc, plainSrc []int, i int, layout bool) int {
	src := plainSrc[i]
	if layout {
		src = typeSrc[i]
	}
	if plans[src].vnniLayout() != layout {
		return i
	}
	return src
}

// siblingDotsCall is one call of a group: its members' calls, and run, its task method bound once.
type siblingDotsCall struct {
	calls []quantCall
	first []int
	quant actRowsJob
	run   func(t int)
}

// task runs task t of the group: a task of the member whose range holds it.
func (g *siblingDotsCall) task(t int) {
	i := 0
	for t >= g.first[i+1] {
		i++
	}
	g.calls[i].task(t - g.first[i])
}
