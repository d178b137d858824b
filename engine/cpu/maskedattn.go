package cpu

// Attention computed only where the mask lets a query see. In a causal prefill of s tokens,
// query i sees keys 0..i: half of the s×s scores are masked, and op by op the products q·k
// and p·v, the logits' elementwise tree, the row maximum and the exponential all run over the
// hidden half too (a third of a 512-token prefill of the 15M shape). A cache larger than what it
// holds adds empty slots, also masked.
//
// The chain, as layers.Attention writes it for the schemes without relative values
// (SoftmaxValues), after fusion:
//
//	L = q·k                    [B, M, T]: B = batch·kvHeads, M = group·queries, T = keys
//	A = tree(L, ...) + mask    a fused tree whose root adds the mask, [batch, heads, queries, T]
//	R = max(A) over keys
//	E = exp(A − R)             a fused tree
//	num = E·v, den = E·1       (then num/den, a step of its own)
//
// Every value of L, A and R read by the chain alone, none an output; E too, or else (a training
// step, whose gradients read E again) E is kept: written whole into bytes of its own, zeros
// where the mask hides. It runs as one step:
// a task takes a batch item and up to maskedTaskRows queries of one head (decoding: all the
// query heads of one key/value head, see minMaskedQueries), reads each query's
// first and last visible key from the mask (a key is hidden where the mask is at most
// maskHides), and computes q·k over the block's span of keys only, the two trees and the
// maximum over each row's own span, zeros in E for the rest of the block's span, and p·v over
// that span. The results are op by op's: a hidden key's logit is about −1e9, so its exponential
// is exactly 0 in float32 and it changes neither the row's maximum nor either sum (the sums may
// differ in their last bits: fewer terms, added in another order). A row with no visible key
// (a padding query) is computed over all keys, as op by op does. Keys and values kept as halves
// (a float16 or bfloat16 cache, halfdot.go) are widened a task's span at a time.

import (
	"slices"
	"sync/atomic"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/posformer/posformer/engine/cpu/kernels"
)

// maskHides is the largest mask value that hides a key: far below any logit, far above
// layers' maskedLogit (−1e9); exp of a logit this low is 0 in float32.
const maskHides = -1e8

// minMaskedQueries is the fewest queries per head for which a task takes queries of one head:
// with fewer (decoding: one query a head) a task takes every query head of a key/value head, so
// that grouped query heads read their keys once.
const minMaskedQueries = 16

// maskedRowByRow is the most rows of a block multiplied a row at a time (decoding's case), as
// the products without packing do (dot.go): packing the keys would cost more than the product.
const maskedRowByRow = 4

// maskedBlockWide is the widest span of keys over which a task evaluates the logits' and the
// exponentials' trees over its whole block at once rather than over each row's own keys: on
// short rows the calls cost more than the hidden keys they skip.
const maskedBlockWide = 256

// maskedTaskRows is the most queries a task takes: 128 rows of 512 keys are 256 KB of scores,
// which stay in L2 from q·k to p·v.
const maskedTaskRows = 128

// maskedAttentionsCompiled counts the chains rewritten so far (for tests); maskedAttentionOn
// switches the rewrite (tests turn it off to compare).
var (
	maskedAttentionsCompiled atomic.Int64
	maskedAttentionOn        = true
)

// maskedAttention is one chain found by findMaskedAttentions, and its plan.
type maskedAttention struct {
	qk, a, r, e, num, den, mask *node
	fa, fe                      *fusion
	// keepE: E is read outside the chain or is an output, so it gets bytes of its own and every
	// element is written (0 for hidden keys), not only the block's span.
	keepE          bool
	last           *node // the member lowered last: the chain's step
	B, M, T, D, HD int   // batch items, rows and keys of each, q·k's depth, v's width
	queries        int   // queries per head (rows of one head within M)
	transK, transV bool  // Sgemm's transB for q·k and p·v
	// rowDims are the logits' dimensions but the last, and maskStrides, when the mask is
	// broadcast to them, the stride of each in the mask's rows (0 along a broadcast axis).
	rowDims, maskStrides []int
	// halfK, halfV: the keys or values are a cache kept as float16 or bfloat16 (halfdot.go),
	// widened a task's span at a time (dtypes.InvalidDType: float32).
	halfK, halfV dtypes.DType
	// spansFrom is the earlier chain over the same mask (every layer's), whose step finds the
	// rows' visible spans for this one (nil: this chain finds them); step is the chain's step.
	spansFrom *maskedAttention
	step      int
}

// members are the chain's nodes that would each have had a step.
func (ma *maskedAttention) members() []*node {
	return []*node{ma.qk, ma.a, ma.r, ma.e, ma.num, ma.den}
}

// maskedAttentions are the chains found, each under the id of its last member, and the other
// members, which get no step of their own.
type maskedAttentions struct {
	at   map[int]*maskedAttention
	skip []bool
}

// findMaskedAttentions finds the chains described above among the live nodes.
func findMaskedAttentions(nodes []*node, outs []*node, live []bool, fusions map[int]*fusion) maskedAttentions {
	ms := maskedAttentions{at: map[int]*maskedAttention{}, skip: make([]bool, len(nodes))}
	if !maskedAttentionOn {
		return ms
	}
	readers, isOutput := liveReaders(nodes, live), outputSet(nodes, outs)
	// walk appends the readers of x that are not views of it, looked for through views, and
	// reports whether x or a view of it is an output.
	var walk func(x *node, acc []*node) ([]*node, bool)
	walk = func(x *node, acc []*node) ([]*node, bool) {
		out := isOutput[x.id]
		for _, r := range readers[x.id] {
			if !isView(r) {
				acc = append(acc, r)
				continue
			}
			var o bool
			acc, o = walk(r, acc)
			out = out || o
		}
		return acc, out
	}
	// sinks are walk's readers; ok is false when x or a view of it is an output.
	sinks := func(x *node, acc []*node) ([]*node, bool) {
		acc, out := walk(x, acc)
		if out {
			return nil, false
		}
		return acc, true
	}
	readBy := func(x *node, want ...*node) bool {
		got, ok := sinks(x, nil)
		if !ok || len(got) != len(want) {
			return false
		}
		for _, w := range want {
			if !slices.Contains(got, w) {
				return false
			}
		}
		return true
	}
	firstOver := map[*node]*maskedAttention{} // by mask
	for _, n := range nodes {
		if ma := matchMaskedAttention(n, fusions, sinks, walk, readBy); ma != nil {
			if f := firstOver[ma.mask]; f != nil && f.B == ma.B && f.M == ma.M && f.T == ma.T {
				ma.spansFrom = f
			} else if f == nil {
				firstOver[ma.mask] = ma
			}
			ms.at[ma.last.id] = ma
			for _, m := range ma.members() {
				ms.skip[m.id] = m != ma.last
			}
			maskedAttentionsCompiled.Add(1)
		}
	}
	return ms
}

// base is x with views looked through.
func base(x *node) *node {
	for isView(x) {
		x = x.inputs[0]
	}
	return x
}

// matchMaskedAttention returns the chain whose E is n, or nil.
func matchMaskedAttention(n *node, fusions map[int]*fusion, sinks, walk func(*node, []*node) ([]*node, bool), readBy func(*node, ...*node) bool) *maskedAttention {
	fe := fusions[n.id]
	if fe == nil || fe.root != n || len(fe.outs) > 0 || len(fe.members) != 2 {
		return nil
	}
	sub := fe.members[0]
	if n.op != backends.OpTypeExp || sub.op != backends.OpTypeSub || n.inputs[0] != sub {
		return nil
	}
	ma := &maskedAttention{e: n, fe: fe, a: base(sub.inputs[0]), r: base(sub.inputs[1])}
	fa := fusions[ma.a.id]
	if fa == nil || fa.root != ma.a || len(fa.outs) > 0 || ma.a.op != backends.OpTypeAdd || ma.r.op != backends.OpTypeReduceMax {
		return nil
	}
	ma.fa = fa
	dims := ma.a.shape.Dimensions
	rank := len(dims)
	if rank < 2 || !ma.a.shape.Equal(n.shape) || base(ma.r.inputs[0]) != ma.a {
		return nil
	}
	if axes := ma.r.attr.(*reduceAttr).axes; len(axes) != 1 || axes[0] != rank-1 {
		return nil
	}
	ma.T, ma.queries = dims[rank-1], dims[rank-2]
	if !readBy(ma.a, sub, ma.r) || !readBy(ma.r, sub) {
		return nil
	}
	// The mask: the root's second operand, a leaf of the logits' shape or broadcast to it along
	// leading axes (one mask for every head, aliases.go), each of its rows a row of keys.
	ma.mask = ma.a.inputs[1]
	if !slices.Contains(fa.leaves, ma.mask) || !ma.mask.shape.Equal(ma.a.shape) && !ma.maskBroadcast() {
		return nil
	}
	// E is read by the two products, E·v and E·1, and when it is read by anything else (a
	// training step's gradients: Eᵀ·dO for v, dE⊙E for the logits), or is an output, E is kept
	// whole (keepE). Any product reading E as its left operand may be E·v: the one whose layout
	// plan accepts is.
	rs, out := walk(n, nil)
	ma.keepE = out
	var nums []*node
	for _, d := range rs {
		if _, _, ok := productAttr(d); !ok || d.op != backends.OpTypeDotGeneral || base(d.inputs[0]) != n {
			ma.keepE = true
			continue
		}
		if isOnes(base(d.inputs[1]), ma.T) && ma.den == nil {
			ma.den = d
		} else {
			nums = append(nums, d)
		}
	}
	if ma.den == nil || len(nums) == 0 {
		return nil
	}
	ma.keepE = ma.keepE || len(nums) > 1
	// L: the one leaf of the logits' tree that is a plain float32 product read by the tree alone.
	for _, l := range fa.leaves {
		q := base(l)
		if _, _, ok := productAttr(q); !ok || q.op != backends.OpTypeDotGeneral || q.shape.DType != dtypes.Float32 || !l.shape.Equal(ma.a.shape) {
			continue
		}
		got, ok := sinks(q, nil)
		if !ok || slices.ContainsFunc(got, func(r *node) bool { return !slices.Contains(fa.members, r) }) {
			continue
		}
		if ma.qk != nil {
			return nil // two candidates: not the chain layers writes
		}
		ma.qk = q
	}
	if ma.qk == nil || ma.mask == ma.qk || base(ma.mask) == ma.qk {
		return nil
	}
	for _, d := range nums {
		if ma.num = d; ma.plan() {
			break
		}
		ma.num = nil
	}
	if ma.num == nil {
		return nil
	}
	ma.last = ma.num
	if ma.den.id > ma.num.id {
		ma.last = ma.den
	}
	return ma
}

// maskBroadcast reports whether the mask is broadcast to the logits along leading axes, and
// records the strides that find a logits row's mask row (maskRow).
func (ma *maskedAttention) maskBroadcast() bool {
	dims, out := ma.mask.shape.Dimensions, ma.a.shape.Dimensions
	rank := len(out)
	if len(dims) != rank || dims[rank-1] != out[rank-1] {
		return false
	}
	if m, ok := leafModeOf(dims, out); !ok || m.inner != 1 {
		return false
	}
	ma.rowDims, ma.maskStrides = out[:rank-1], operandStrides(out[:rank-1], dims[:rank-1])
	return true
}

// maskRow is the mask's row under row g of the logits (of B·M).
func (ma *maskedAttention) maskRow(g int) int {
	if ma.maskStrides == nil {
		return g
	}
	r := 0
	for a := len(ma.rowDims) - 1; a >= 0; a-- {
		r += g % ma.rowDims[a] * ma.maskStrides[a]
		g /= ma.rowDims[a]
	}
	return r
}

// plan checks the products' layouts (each operand read in place, the rows of q·k those of
// E·v) and records their sizes.
func (ma *maskedAttention) plan() bool {
	qkAttr, halfK, _ := productAttr(ma.qk)
	numAttr, halfV, _ := productAttr(ma.num)
	denAttr, halfOnes, _ := productAttr(ma.den)
	if halfOnes != dtypes.InvalidDType {
		return false
	}
	ma.halfK, ma.halfV = halfK, halfV
	B, M, N, K, lp, rp := planDot(ma.qk, qkAttr)
	if lp.perm != nil || lp.trans || rp.perm != nil || N != ma.T || B*M*N != ma.a.shape.Size() || M%ma.queries != 0 {
		return false
	}
	ma.B, ma.M, ma.D, ma.transK = B, M, K, !rp.trans
	B2, M2, N2, K2, lp2, rp2 := planDot(ma.num, numAttr)
	if lp2.perm != nil || lp2.trans || rp2.perm != nil || B2 != B || M2 != M || K2 != ma.T {
		return false
	}
	ma.HD, ma.transV = N2, !rp2.trans
	B3, M3, N3, K3, lp3, _ := planDot(ma.den, denAttr)
	return lp3.perm == nil && !lp3.trans && B3 == 1 && M3 == B*M && N3 == 1 && K3 == ma.T
}

// productAttr returns a float32 product's dotAttr, and the storage of its right operand when
// the product reads it as halves (fuseHalfOperands); ok is false for other nodes.
func productAttr(n *node) (attr *dotAttr, half dtypes.DType, ok bool) {
	switch a := n.attr.(type) {
	case *dotAttr:
		return a, dtypes.InvalidDType, true
	case *halfDotAttr:
		return a.dot, a.half, true
	}
	return nil, dtypes.InvalidDType, false
}

// segment is how many consecutive rows of an item a task's block of queries is cut from: one
// head's queries, or every row of the item when there are few queries a head.
func (ma *maskedAttention) segment() int {
	if ma.queries >= minMaskedQueries {
		return ma.queries
	}
	return ma.M
}

// isOnes reports whether x is t float32 ones: a constant, or a constant broadcast.
func isOnes(x *node, t int) bool {
	if x.shape.DType != dtypes.Float32 || x.shape.Size() != t {
		return false
	}
	if x.op == backends.OpTypeBroadcastInDim {
		x = base(x.inputs[0])
	}
	data, ok := x.attr.([]byte)
	if x.op != backends.OpTypeConstant || !ok || x.shape.DType != dtypes.Float32 {
		return false
	}
	for _, v := range typed[float32](data) {
		if v != 1 {
			return false
		}
	}
	return true
}

// maskedInputs are the nodes a chain reads from outside it.
func (ma *maskedAttention) inputs() []*node {
	ins := []*node{ma.qk.inputs[0], ma.qk.inputs[1], ma.num.inputs[1]}
	ins = append(ins, ma.fa.leaves...)
	return append(ins, ma.fe.leaves...)
}

// lowerMaskedAttention lowers a chain to one step; slotOf gives every member's slot.
func lowerMaskedAttention(lw *lowering, ma *maskedAttention, slotOf []int) stepFn {
	pa, pe := newFusedProgram(ma.fa), newFusedProgram(ma.fe)
	slotsOf := func(ns []*node) []int {
		s := make([]int, len(ns))
		for i, x := range ns {
			s[i] = slotOf[x.id]
		}
		return s
	}
	leavesA, leavesE := slotsOf(ma.fa.leaves), slotsOf(ma.fe.leaves)
	s := slotsOf([]*node{ma.qk.inputs[0], ma.qk.inputs[1], ma.num.inputs[1], ma.mask, ma.qk, ma.r, ma.num, ma.den, ma.e})
	// A and E have no bytes of their own (lowerSteps): they are written over L, each tree's root,
	// its last instruction, writing an element after every read of it, so a task's scores stay
	// in one block of L2. The exponentials' tree reads A there. A kept E (keepE) is written to
	// its own bytes.
	aSlot := slotOf[ma.a.id]
	nb := (ma.segment() + maskedTaskRows - 1) / maskedTaskRows
	tasks := ma.B * (ma.M / ma.segment()) * nb
	serial := ma.B*ma.M*ma.T*(ma.D+ma.HD) < minParallelMACs
	regs := max(pa.nRegs, pe.nRegs) * fuseBlock
	pool, bf16 := lw.e.backend.pool, lw.e.backend.bf16dot
	step := lw.step
	ma.step = step
	newCall := func() any {
		c := &maskedCall{ma: ma, pa: pa, pe: pe, nb: nb, regs: regs, bf16: bf16,
			leavesA: make([][]float32, len(leavesA)), leavesE: make([][]float32, len(leavesE))}
		c.run = c.task
		if ma.spansFrom == nil {
			c.spans = make([]int32, 2*ma.B*ma.M)
			if ma.maskStrides != nil {
				c.maskSpans = make([]int32, 2*(ma.mask.shape.Size()/ma.T))
			}
		}
		c.findSpansRun = c.findSpans
		return c
	}
	return func(f *frame) {
		c := f.stepState(step, newCall).(*maskedCall)
		if ma.spansFrom != nil {
			// Found by the earlier chain's step, which has run (steps run in order).
			c.spans, c.found = f.stepState(ma.spansFrom.step, newCall).(*maskedCall).spans, true
		}
		v := func(i int) []float32 { return typed[float32](f.slots[s[i]]) }
		c.q, c.mask, c.l, c.r, c.num, c.den = v(0), v(3), v(4), v(5), v(6), v(7)
		c.k, c.v, c.kh, c.vh = nil, nil, nil, nil
		if ma.halfK != dtypes.InvalidDType {
			c.kh = typed[uint16](f.slots[s[1]])
		} else {
			c.k = v(1)
		}
		if ma.halfV != dtypes.InvalidDType {
			c.vh = typed[uint16](f.slots[s[2]])
		} else {
			c.v = v(2)
		}
		for i, sl := range leavesA {
			c.leavesA[i] = typed[float32](f.slots[sl])
		}
		for i, sl := range leavesE {
			c.leavesE[i] = typed[float32](f.slots[sl])
			if sl == aSlot {
				c.leavesE[i] = c.l
			}
		}
		c.dst[0], c.dstE[0] = c.l, c.l
		if ma.keepE {
			c.dstE[0] = v(8)
		}
		if !c.found && c.maskSpans != nil {
			n := (len(c.maskSpans)/2 + maskSpanRows - 1) / maskSpanRows
			if serial {
				for t := range n {
					c.findSpans(t)
				}
			} else {
				pool.run(n, c.findSpansRun)
			}
		}
		if serial {
			for t := range tasks {
				c.task(t)
			}
			return
		}
		pool.run(tasks, c.run)
	}
}

// maskedCall is one call of a chain: its arrays, and run, its task method bound once.
type maskedCall struct {
	ma                            *maskedAttention
	pa, pe                        *fusedProgram
	nb, regs                      int
	bf16                          bool
	q, k, v, mask, l, r, num, den []float32 // l: the scores, then the logits, then exp
	kh, vh                        []uint16  // keys or values kept as halves (k, v nil)
	leavesA, leavesE              [][]float32
	dst                           [1][]float32 // the logits' tree writes l
	dstE                          [1][]float32 // the exponentials' tree writes l, or E's own bytes (keepE)
	spans                         []int32      // each row's first visible key and one past its last
	found                         bool         // spans hold this call's rows (an earlier chain's)
	maskSpans                     []int32      // a broadcast mask's rows' spans, each found once
	run, findSpansRun             func(task int)
}

// visibleSpan returns the first visible key of a mask row and one past the last, or the whole
// row when no key is visible. The hidden runs are skipped a long stretch at a time, then a
// vector's reach (a call of the max kernel costs about as much as 32 elements).
func visibleSpan(row []float32) (lo, hi int) {
	hidden := func(x []float32) bool { return kernels.Max(x) <= maskHides }
	for _, step := range [...]int{256, 32} {
		for lo+step <= len(row) && hidden(row[lo:lo+step]) {
			lo += step
		}
	}
	for lo < len(row) && row[lo] <= maskHides {
		lo++
	}
	if lo == len(row) {
		return 0, len(row)
	}
	hi = len(row)
	for _, step := range [...]int{256, 32} {
		for hi-step > lo && hidden(row[hi-step:hi]) {
			hi -= step
		}
	}
	for row[hi-1] <= maskHides {
		hi--
	}
	return lo, hi
}

// findSpans finds the visible spans of mask rows from task·maskSpanRows on (a task of the
// step that precedes the chain's tasks when the mask is broadcast to the heads: each row once).
func (c *maskedCall) findSpans(task int) {
	T := c.ma.T
	for m := task * maskSpanRows; m < min((task+1)*maskSpanRows, len(c.maskSpans)/2); m++ {
		l, h := visibleSpan(c.mask[m*T : (m+1)*T])
		c.maskSpans[2*m], c.maskSpans[2*m+1] = int32(l), int32(h)
	}
}

// maskSpanRows is how many mask rows a task of findSpans takes.
const maskSpanRows = 64

// task computes one block of rows: batch item, head within the item, and block of queries,
// the blocks nearest the end (which see the most keys) first.
func (c *maskedCall) task(task int) {
	ma := c.ma
	T, D, HD := ma.T, ma.D, ma.HD
	seg := ma.segment()
	heads := ma.M / seg
	bi, rest := task/(heads*c.nb), task%(heads*c.nb)
	head, blk := rest/c.nb, c.nb-1-rest%c.nb
	r0 := head*seg + blk*maskedTaskRows
	rows := min(maskedTaskRows, (head+1)*seg-r0)
	first := bi*ma.M + r0 // the block's first row among all B·M
	span := c.spans[2*first : 2*(first+rows)]
	lo, hi := T, 0
	for i := range rows {
		if !c.found {
			if m := ma.maskRow(first + i); c.maskSpans != nil {
				span[2*i], span[2*i+1] = c.maskSpans[2*m], c.maskSpans[2*m+1]
			} else {
				l, h := visibleSpan(c.mask[m*T : (m+1)*T])
				span[2*i], span[2*i+1] = int32(l), int32(h)
			}
		}
		lo, hi = min(lo, int(span[2*i])), max(hi, int(span[2*i+1]))
	}
	w := hi - lo
	gemm := kernels.Sgemm
	if c.bf16 {
		gemm = kernels.SgemmBF16
	}
	// q·k over the block's keys: keys stored [T, D] (transK) or [D, T] per item.
	var kb []float32
	var ldk int
	if c.kh != nil {
		buf := halfScratch.Get(D * w)
		defer halfScratch.Put(buf)
		kb, ldk = widenSpan(ma.halfK, buf, c.kh[bi*T*D:(bi+1)*T*D], T, D, lo, hi, ma.transK)
	} else if ma.transK {
		kb, ldk = c.k[bi*T*D+lo*D:], D
	} else {
		kb, ldk = c.k[bi*T*D+lo:], T
	}
	switch {
	case rows > maskedRowByRow:
		gemm(false, ma.transK, rows, w, D, 1, c.q[first*D:], D, kb, ldk, 0, c.l[first*T+lo:], T)
	case ma.transK:
		for i := range rows {
			kernels.DotRows(kb, ldk, c.q[(first+i)*D:(first+i+1)*D], c.l[(first+i)*T+lo:(first+i)*T+hi])
		}
	default:
		for i := range rows {
			kernels.VecMat(c.q[(first+i)*D:(first+i+1)*D], kb, ldk, c.l[(first+i)*T+lo:(first+i)*T+hi])
		}
	}
	e := c.dstE[0]
	regs := floats.Get(c.regs)
	if w <= maskedBlockWide {
		// Short rows: each tree over the whole block at once, hidden keys included (their
		// logits are about −1e9 and their exponentials exactly 0, as op by op), rather than
		// two calls a row. Columns outside the block's span hold no scores: what the trees
		// compute there is cleared below, or never read.
		from, to := first*T+lo, (first+rows-1)*T+hi
		c.pa.evalRange(regs, c.leavesA, from, to, c.dst[:])
		for i := range rows {
			g := first + i
			c.r[g] = kernels.Max(c.l[g*T+int(span[2*i]) : g*T+int(span[2*i+1])])
		}
		c.pe.evalRange(regs, c.leavesE, from, to, c.dstE[:])
	}
	for i := range rows {
		g := first + i
		row := g * T
		l, h := int(span[2*i]), int(span[2*i+1])
		if w > maskedBlockWide {
			c.pa.evalRange(regs, c.leavesA, row+l, row+h, c.dst[:])
			c.r[g] = kernels.Max(c.l[row+l : row+h])
			c.pe.evalRange(regs, c.leavesE, row+l, row+h, c.dstE[:])
		}
		if ma.keepE {
			clear(e[row : row+l]) // read whole by E's other readers
			clear(e[row+h : row+T])
		} else {
			clear(e[row+lo : row+l])
			clear(e[row+h : row+hi])
		}
		c.den[g] = kernels.Sum(e[row+l : row+h])
	}
	floats.Put(regs)
	// p·v over the same keys: values stored [HD, T] (transV) or [T, HD] per item.
	var vb []float32
	var ldv int
	if c.vh != nil {
		buf := halfScratch.Get(HD * w)
		defer halfScratch.Put(buf)
		vb, ldv = widenSpan(ma.halfV, buf, c.vh[bi*T*HD:(bi+1)*T*HD], T, HD, lo, hi, !ma.transV)
	} else if ma.transV {
		vb, ldv = c.v[bi*T*HD+lo:], T
	} else {
		vb, ldv = c.v[bi*T*HD+lo*HD:], HD
	}
	switch {
	case rows > maskedRowByRow:
		gemm(false, ma.transV, rows, HD, w, 1, e[first*T+lo:], T, vb, ldv, 0, c.num[first*HD:], HD)
	case ma.transV:
		for i := range rows {
			kernels.DotRows(vb, ldv, e[(first+i)*T+lo:(first+i)*T+hi], c.num[(first+i)*HD:(first+i+1)*HD])
		}
	default:
		for i := range rows {
			kernels.VecMat(e[(first+i)*T+lo:(first+i)*T+hi], vb, ldv, c.num[(first+i)*HD:(first+i+1)*HD])
		}
	}
}

// widenSpan widens keys lo..hi-1 of one item of a half cache into buf and returns them as a
// product's operand with its leading dimension: item holds T keys of width values each, stored
// [T, width] (byKey) or [width, T].
func widenSpan(half dtypes.DType, buf []float32, item []uint16, T, width, lo, hi int, byKey bool) ([]float32, int) {
	w := hi - lo
	if byKey {
		widenHalf(half, buf[:w*width], item[lo*width:hi*width])
		return buf, width
	}
	for d := range width {
		widenHalf(half, buf[d*w:(d+1)*w], item[d*T+lo:d*T+hi])
	}
	return buf, w
}
