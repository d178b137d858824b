package cpu

// Products with weights kept quantized. posformer's layers express a bfloat16, Q8_0 or Q4_0
// matrix as its stored parts followed by the ops that dequantize them (layers/weight.go):
//
//	BF16: W = convert(w)
//	Q8_0: W = reshape(convert(q) ⊙ broadcast(d))
//	Q4_0: W = reshape((convert(concat(q & 15, q / 16)) + (−8)) ⊙ broadcast(d))
//
// Run op by op, that writes the whole float32 matrix at every call, four times the bytes the
// product then reads. When such a W is the right operand of x·Wᵀ and nothing else reads the
// intermediate values, Compile rewrites the product to read the stored parts directly
// (fuseQuantizedProducts): a few rows of x go through kernels that widen the weights in registers;
// many rows dequantize a panel of W at a time into cache-sized scratch for the blocked GEMM. With
// actq8 (Q8_0 and Q4_0), x is quantized to int8 blocks instead and every block is an integer dot
// product: row by row for a few rows, on the integer GEMM (kernels.ActGemm) for many.
// Any other use of the same ops still runs op by op, so the match only changes the speed.
//
// A matrix held in row groups (layers.GroupedVars: sixteen rows interleaved, the form a loader
// chooses for a backend that asks for it, PrefersRowGroups) reaches the same expression through
// the transposes that move its groups back into rows; the match passes through them and the
// product reads the groups (kernels.GroupDotRows): one or a few rows of x, and many, each four
// rows of x against a task's groups in L2. Where those kernels do not run (a kernel set changed
// after loading), a task moves its rows out of their groups into scratch at every call.

import (
	"encoding/binary"
	"math"
	"slices"
	"sync/atomic"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/posformer/posformer/engine/cpu/internal/freelist"
	"github.com/posformer/posformer/engine/cpu/kernels"
	"github.com/posformer/posformer/layers/quant"
)

// quantDotAttr replaces the dotAttr of a DotGeneral rewritten to x·Wᵀ with W stored as typ;
// its inputs become x, the values and (block formats) the scales.
type quantDotAttr struct {
	dot     *dotAttr
	typ     quant.Type
	N, K    int
	grouped bool // the values and scales are in row groups (quant.Group)
}

// quantDotsCompiled counts the products rewritten so far, groupedDotsCompiled those of them
// whose matrix is in row groups (for tests).
var quantDotsCompiled, groupedDotsCompiled atomic.Int64

// fuseQuantizedProducts finds the products whose right operand is a dequantized matrix and makes
// them read its stored parts; the dequantizing nodes then are dead unless something else reads
// them.
func fuseQuantizedProducts(nodes []*node, outs []*node) int {
	uses := useCounts(nodes, outs)
	rewritten := 0
	for _, n := range nodes {
		attr, ok := n.attr.(*dotAttr)
		if !ok || n.op != backends.OpTypeDotGeneral || n.shape.DType != dtypes.Float32 {
			continue
		}
		w := n.inputs[1]
		if w.shape.Rank() != 2 || len(attr.rhsBatch) != 0 || !slices.Equal(attr.rhsContract, []int{1}) {
			continue
		}
		N, K := w.shape.Dimensions[0], w.shape.Dimensions[1]
		m := &dequantMatch{uses: uses}
		if !m.match(w, N, K) {
			continue
		}
		inputs := []*node{n.inputs[0], m.q}
		if m.d != nil {
			inputs = append(inputs, m.d)
		}
		n.inputs = inputs
		n.attr = &quantDotAttr{dot: attr, typ: m.typ, N: N, K: K, grouped: m.qGrouped}
		rewritten++
		quantDotsCompiled.Add(1)
		if m.qGrouped {
			groupedDotsCompiled.Add(1)
		}
	}
	return rewritten
}

// useCounts counts, for each node, the nodes that read it and the outputs that are it.
func useCounts(nodes []*node, outs []*node) []int {
	uses := make([]int, len(nodes))
	for _, n := range nodes {
		for _, in := range n.inputs {
			uses[in.id]++
		}
	}
	for _, o := range outs {
		uses[o.id]++
	}
	return uses
}

// dequantMatch walks a dequantizing expression; every node it passes through must be read
// only there.
type dequantMatch struct {
	uses []int
	typ  quant.Type
	q, d *node
	// q and d hold the matrix in row groups (layers' Weight.rowParts moves them back into
	// rows: transposes the match passes through).
	qGrouped, dGrouped bool
}

// through reports whether n is read by its consumer in the expression only.
func (m *dequantMatch) through(n *node) bool { return m.uses[n.id] == 1 }

// strip skips reshapes (which keep the row-major order of the values), each read once.
func (m *dequantMatch) strip(n *node) (*node, bool) {
	for n.op == backends.OpTypeReshape {
		if !m.through(n) {
			return nil, false
		}
		n = n.inputs[0]
	}
	return n, true
}

func (m *dequantMatch) match(w *node, N, K int) bool {
	v, ok := m.strip(w)
	if !ok || !m.through(v) || v.shape.DType != dtypes.Float32 {
		return false
	}
	switch v.op {
	case backends.OpTypeConvertDType:
		src, ok := m.strip(v.inputs[0])
		if ok && src.shape.DType == dtypes.BFloat16 && src.shape.Size() == N*K && v.inputs[0].shape.Size() == N*K {
			m.typ, m.q = quant.BF16, src
			return true
		}
	case backends.OpTypeMul:
		if K%32 != 0 || v.shape.Rank() < 2 || v.shape.Dimensions[v.shape.Rank()-1] != 32 {
			return false
		}
		for _, order := range [][2]int{{0, 1}, {1, 0}} {
			values, scales := v.inputs[order[0]], v.inputs[order[1]]
			if m.scales(scales, v, N*K/32) && m.values(values, N*K) && m.qGrouped == m.dGrouped {
				return true
			}
			m.q, m.d, m.qGrouped, m.dGrouped = nil, nil, false, false
		}
	}
	return false
}

// scales matches broadcast(reshape(d)) from [..., nb, 1] to mul's shape [..., nb, 32].
func (m *dequantMatch) scales(b, mul *node, blocks int) bool {
	if b.op != backends.OpTypeBroadcastInDim || !m.through(b) || !b.shape.Equal(mul.shape) {
		return false
	}
	x := b.inputs[0]
	r := b.shape.Rank()
	axes, _ := b.attr.([]int)
	if x.shape.Rank() != r || x.shape.Dimensions[r-1] != 1 || !slices.Equal(x.shape.Dimensions[:r-1], b.shape.Dimensions[:r-1]) {
		return false
	}
	for i, a := range axes {
		if a != i {
			return false
		}
	}
	d, ok := m.strip(x)
	if !ok || d.shape.DType != dtypes.Float32 || d.shape.Size() != blocks {
		return false
	}
	if d.op == backends.OpTypeTranspose {
		// Row groups' half-float scales: widened, then moved back into rows.
		c, ok := m.ungrouped(d, []int{0, 2, 1})
		if !ok || c.op != backends.OpTypeConvertDType || !m.through(c) {
			return false
		}
		g, ok := m.strip(c.inputs[0])
		if !ok || g.shape.DType != dtypes.Float16 || g.shape.Rank() != 3 {
			return false
		}
		m.d, m.dGrouped = g, true
		return true
	}
	m.d = d
	return true
}

// ungrouped matches a transpose by perm of a reshape of a rank-3 node (row groups [g, nb, ...],
// see Weight.rowParts) and returns that node.
func (m *dequantMatch) ungrouped(n *node, perm []int) (*node, bool) {
	if n.op != backends.OpTypeTranspose || !m.through(n) {
		return nil, false
	}
	if p, _ := n.attr.([]int); !slices.Equal(p, perm) {
		return nil, false
	}
	g, ok := m.strip(n.inputs[0])
	if !ok || g.shape.Rank() != 3 || g.shape.Dimensions[2]%quant.GroupRows != 0 {
		return nil, false
	}
	return g, true
}

// Row groups of values [g, nb, steps, 16, 4] back in rows [g, 16, nb, steps, 4].
var ungroupValues = []int{0, 3, 1, 2, 4}

// values matches convert(q) (Q8_0) or convert(concat(q & 15, q / 16)) + (−8) (Q4_0).
func (m *dequantMatch) values(v *node, n int) bool {
	v, ok := m.strip(v)
	if !ok || !m.through(v) {
		return false
	}
	if v.op == backends.OpTypeConvertDType {
		src, ok := m.strip(v.inputs[0])
		if ok && src.shape.DType == dtypes.Int8 && src.shape.Size() == n {
			m.typ, m.q = quant.Q8_0, src
			if g, ok := m.ungrouped(src, ungroupValues); ok {
				m.q, m.qGrouped = g, true
			}
			return true
		}
		return false
	}
	if v.op != backends.OpTypeAdd {
		return false
	}
	for _, order := range [][2]int{{0, 1}, {1, 0}} {
		conv, c := v.inputs[order[0]], v.inputs[order[1]]
		if constScalar(c) != -8 || conv.op != backends.OpTypeConvertDType || !m.through(conv) {
			continue
		}
		cat := conv.inputs[0]
		r := cat.shape.Rank()
		if cat.op != backends.OpTypeConcatenate || !m.through(cat) || len(cat.inputs) != 2 || cat.attr.(int) != r-1 || cat.shape.DType != dtypes.Uint8 {
			continue
		}
		lo, hi := cat.inputs[0], cat.inputs[1]
		if lo.shape.Dimensions[r-1] != 16 || hi.shape.Dimensions[r-1] != 16 || !m.through(lo) || !m.through(hi) {
			continue
		}
		qlo, ok1 := m.byConst(lo, backends.OpTypeBitwiseAnd, 15)
		qhi, ok2 := m.byConst(hi, backends.OpTypeDiv, 16)
		if !ok1 || !ok2 {
			continue
		}
		a, ok1 := m.stripShared(qlo)
		b, ok2 := m.stripShared(qhi)
		if !ok1 || !ok2 || a != b || a.shape.Size() != n/2 {
			continue
		}
		if r, ok := m.strip(a); ok && r != a {
			// Only row groups moved back into rows reach the shared reshape through another.
			if a, ok = m.ungrouped(r, ungroupValues); !ok {
				continue
			}
			m.qGrouped = true
		} else if g, ok := m.ungrouped(a, ungroupValues); ok {
			a, m.qGrouped = g, true
		}
		m.typ, m.q = quant.Q4_0, a
		return true
	}
	return false
}

// byConst matches op(x, c) with c a scalar constant of value want (x on the left: Div and the
// layers' BitwiseAnd are written that way).
func (m *dequantMatch) byConst(n *node, op backends.OpType, want float64) (*node, bool) {
	if n.op != op || len(n.inputs) != 2 || constScalar(n.inputs[1]) != want {
		return nil, false
	}
	return n.inputs[0], true
}

// stripShared strips the reshape both nibble ops read: it is read twice, by them.
func (m *dequantMatch) stripShared(n *node) (*node, bool) {
	for n.op == backends.OpTypeReshape && m.uses[n.id] == 2 {
		n = n.inputs[0]
	}
	if n.op == backends.OpTypeReshape && m.uses[n.id] != 1 {
		return nil, false
	}
	return n, true
}

// constScalar is the value of a one-element constant, NaN for anything else.
func constScalar(n *node) float64 {
	data, ok := n.attr.([]byte)
	if n.op != backends.OpTypeConstant || !ok || n.shape.Size() != 1 {
		return math.NaN()
	}
	switch n.shape.DType {
	case dtypes.Float32:
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(data)))
	case dtypes.Uint8:
		return float64(data[0])
	}
	return math.NaN()
}

// panelFloats bounds the float32 scratch of one dequantized panel of W (about L2's share).
const panelFloats = 32 << 10

// panels are the dequantization scratch buffers, reused across calls and threads.
var panels = freelist.New(freelist.Config[float32]{Max: freelist.PerCPU})

// quantDotPlan is what lowering decides for one rewritten product at compile time: its slots,
// its path, and how its rows of W are cut into tasks. A step runs one (lowerQuantDot) or a group
// of sibling products (siblingdots.go).
type quantDotPlan struct {
	xs                shapes.Shape
	perm              []int
	identity          bool
	M, N, K, rows     int
	tasks             int
	ix, iq, id, io    int // slots of x, the values, the scales (-1 for none) and y
	sx, sa            int // scratch: x with its axes moved (-1 if not needed), x quantized (-1)
	act, gemm, noPack bool
	stored            quantMatrix
}

// planQuantDot plans a rewritten product: x [M, K] (after moving its axes) times Wᵀ.
func planQuantDot(lw *lowering, qa *quantDotAttr) *quantDotPlan {
	n := lw.n
	p := &quantDotPlan{xs: n.inputs[0].shape, N: qa.N, K: qa.K, id: -1, sx: -1, sa: -1}
	lf := freeAxes(p.xs.Rank(), qa.dot.lhsBatch, qa.dot.lhsContract)
	p.perm = slices.Concat(lf, qa.dot.lhsContract)
	p.identity = true
	for i, a := range p.perm {
		p.identity = p.identity && a == i
	}
	N, K := p.N, p.K
	M := p.xs.Size() / K
	p.M = M
	p.ix, p.iq, p.io = lw.in[0], lw.in[1], lw.out
	if len(lw.in) > 2 {
		p.id = lw.in[2]
	}
	if !p.identity {
		p.sx = lw.scratch(byteSize(p.xs))
	}
	// With actq8, x is quantized to int8 blocks once per call: the few-rows products (decoding)
	// take it row by row (kernels.ActDotRows, VNNI's layout where the CPU has it), the products of
	// more rows (prefill) as one block of rows for the integer GEMM (kernels.ActGemm).
	p.act = lw.e.backend.actq8 && (qa.typ == quant.Q8_0 || qa.typ == quant.Q4_0)
	p.gemm = p.act && M > 4
	if p.act {
		lw.e.backend.actUsed.Store(true)
		if p.gemm {
			// Room for either form: the integer GEMM's, or each row's plain form, which
			// the row-group kernels read (plainRows).
			p.sa = lw.scratch(max(kernels.ActRowsBytes(M, K), plainBytes(M, K)))
		} else {
			p.sa = lw.scratch(plainBytes(M, K))
		}
	}
	p.stored = quantMatrix{typ: qa.typ, K: K, grouped: qa.grouped}
	pool := lw.e.backend.pool
	// Rows of W per task: whole vectors, about 4 tasks per thread (each task costs two atomic
	// operations on a cache line the threads share: a task of 32 rows of 768 Q8_0 values, 1 µs,
	// lost a tenth of its time to them); the float32 panels of many rows of x fit the scratch.
	rows := max(16, (N+4*pool.threads()-1)/(4*pool.threads())+15) &^ 15
	switch {
	case p.gemm:
		// The integer GEMM walks a task's weight rows once per four rows of x: up to 256 of them
		// (192 KB of Q8_0 at K = 768) stay in L2 meanwhile.
		rows = max(16, min((N+4*pool.threads()-1)/(4*pool.threads()), kernels.QuantRowBlock)) &^ 15
	case M > 4:
		rows = max(16, min(rows, panelFloats/K)&^15)
	}
	if rows == 0 {
		rows = 16
	}
	p.rows = rows
	p.tasks = (N + rows - 1) / rows
	p.noPack = M <= maxNTRows && ntDepth(K) // as for float32 weights (dot.go)
	return p
}

// bind points c at this call's bytes in f, with x the float32 rows [M, K] (its axes moved
// already); quantizing x, if act, is left to the caller.
func (p *quantDotPlan) bind(f *frame, c *quantCall, x []float32) {
	c.x = x
	c.w = p.stored // the matrix's fixed parts, then this call's bytes
	c.w.q = f.slots[p.iq]
	switch {
	case p.id >= 0 && p.stored.grouped:
		c.w.dh = typed[uint16](f.slots[p.id])
	case p.id >= 0:
		c.w.d = typed[float32](f.slots[p.id])
	}
	c.y = typed[float32](f.slots[p.io])
	c.M, c.N, c.K, c.rows, c.act, c.gemm, c.noPack = p.M, p.N, p.K, p.rows, p.act, p.gemm, p.noPack
	c.xa, c.layout, c.plainRows = nil, false, false
}

// plainRows reports whether a product of many rows of x quantizes them each in its plain form,
// for the row-group kernels, rather than for the integer GEMM: for weights in row groups where
// those kernels run. The weights of a task stay in L2 while every row of x passes over them,
// and a group's block costs about a quarter of a GEMM tile's instructions per value.
func (p *quantDotPlan) plainRows() bool {
	return p.gemm && p.stored.grouped && kernels.GroupKernels()
}

// plainBytes is the scratch of M rows of x of K quantized in their plain form, with the packed
// sums and scales of each four rows (kernels.Pack4) after them.
func plainBytes(M, K int) int { return M*kernels.ActRowBytes(K) + M/4*kernels.Pack4Bytes(K) }

// quantizePlain quantizes the M rows of x [M, K] each in its plain form into xa (plainBytes),
// across the pool, and packs them.
func quantizePlain(pool *pool, typ quant.Type, x []float32, M, K int, xa []byte) {
	rb := kernels.ActRowBytes(K)
	pool.parallelFor(M, 16, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			// Lengths are fixed at compile time, so quantizing cannot fail.
			kernels.QuantizeAct(typ, x[i*K:i*K+K], xa[i*rb:], false)
		}
	})
	pack4(xa, M, K)
}

// pack4 packs every four rows of x of K quantized in their plain form in xa (plainBytes) for
// the row-group kernels' four rows at a time.
func pack4(xa []byte, M, K int) {
	rb, pb := kernels.ActRowBytes(K), kernels.Pack4Bytes(K)
	for g := range M / 4 {
		kernels.Pack4(xa[4*g*rb:], rb, K, xa[M*rb+g*pb:])
	}
}

// x returns the call's x as float32 rows [M, K]: its slot, or its axes moved into scratch.
func (p *quantDotPlan) x(f *frame) []float32 {
	if p.identity {
		return typed[float32](f.slots[p.ix])
	}
	transposeBytes(4, f.slots[p.ix], p.xs.Dimensions, p.perm, f.slots[p.sx])
	return typed[float32](f.slots[p.sx])
}

// quantizeRows quantizes the M ≤ 4 rows of x into xa (plainBytes) for products with typ
// weights, in the VNNI layout or in the plain form, packed (pack4) for the row-group kernels.
func quantizeRows(typ quant.Type, x []float32, M, K int, xa []byte, layout bool) {
	for i := range M {
		// Lengths are fixed at compile time, so quantizing cannot fail.
		kernels.QuantizeAct(typ, x[i*K:i*K+K], xa[i*kernels.ActRowBytes(K):], layout)
	}
	if !layout {
		pack4(xa, M, K)
	}
}

// lowerQuantDot lowers a rewritten product: x [M, K] (after moving its axes) times Wᵀ.
func lowerQuantDot(lw *lowering, qa *quantDotAttr) (stepFn, error) {
	p := planQuantDot(lw, qa)
	pool := lw.e.backend.pool
	M, N, K, tasks := p.M, p.N, p.K, p.tasks
	step := lw.step
	pf := lw.e.quantPrefetch([]*quantDotPlan{p}, []int{0, tasks})
	return func(f *frame) {
		// The call's state lives in the frame, made once: a closure over it, handed to the
		// pool, would be a heap object per call, and decoding's garbage costs page faults.
		c := f.stepState(step, newQuantCall).(*quantCall)
		p.bind(f, c, p.x(f))
		if p.plainRows() {
			c.xa, c.plainRows = f.slots[p.sa], true
			quantizePlain(pool, qa.typ, c.x, M, K, c.xa)
		} else if p.gemm {
			c.rowsQ = c.quant.rows(pool, qa.typ, c.x, M, K, f.slots[p.sa])
		} else if p.act {
			c.xa, c.layout = f.slots[p.sa], p.vnniLayout()
			quantizeRows(qa.typ, c.x, M, K, c.xa, c.layout)
		}
		c.pa = kernels.PackedA{}
		if M > 4 && !p.noPack && !p.gemm {
			// x is packed once; every panel of W is multiplied by it.
			buf := floats.Get(kernels.PackedASize(M, K))
			defer floats.Put(buf)
			c.pa = kernels.PackA(false, M, K, 1, c.x, K, buf)
		}
		runQuantTasks(pool, M*N*K, tasks, c.run)
		pf.hintNext(pool, f)
	}, nil
}

// runQuantTasks runs fn for each of n tasks of a quantized step doing macs multiply-adds: on the
// caller's thread (quantOnCaller), else across the pool in runs of tasks.
func runQuantTasks(pool *pool, macs, n int, fn func(t int)) {
	if quantOnCaller(pool, macs) {
		for t := range n {
			fn(t)
		}
		return
	}
	pool.runRanges(n, fn)
}

// quantCall is one call of a quantized product: its operands, and run, its task method bound
// once.
type quantCall struct {
	w                   quantMatrix
	x, y                []float32
	xa                  []byte
	layout, act, noPack bool
	gemm                bool // act with more than four rows: rowsQ, for kernels.ActGemm
	plainRows           bool // gemm, but xa holds every row's plain form (quantDotPlan.plainRows)
	rowsQ               kernels.ActRows
	quant               actRowsJob
	pa                  kernels.PackedA
	M, N, K, rows       int
	run                 func(t int)
}

func newQuantCall() any {
	c := &quantCall{}
	c.run = c.task
	c.quant.run = c.quant.task
	return c
}

// actRowsJob quantizes the rows of x for the integer GEMM across the pool's threads, groups of
// four rows a task's share (one thread: 70 µs for 512 rows of 288, before any product starts).
type actRowsJob struct {
	a   kernels.ActRows
	x   []float32
	run func(t int) // task, bound once
}

// actRowsPerTask is how many groups of four rows a task of actRowsJob quantizes.
const actRowsPerTask = 8

// rows quantizes x [M, K] for products with typ weights into buf.
func (j *actRowsJob) rows(pool *pool, typ quant.Type, x []float32, M, K int, buf []byte) kernels.ActRows {
	// Lengths are fixed at compile time, so the view and the quantizing cannot fail.
	j.a, _ = kernels.ActRowsView(typ, M, K, buf)
	j.x = x
	pool.run((j.a.Groups()+actRowsPerTask-1)/actRowsPerTask, j.run) // one task, or one thread: on the caller's
	j.x = nil
	return j.a
}

func (j *actRowsJob) task(t int) {
	j.a.QuantizeGroups(j.x, j.a.K, t*actRowsPerTask, min(j.a.Groups(), (t+1)*actRowsPerTask))
}

// vnniLayout reports whether x is quantized in the VNNI kernels' layout for this product: where
// they run, unless the weights are in row groups, whose kernels read x's plain form.
func (p *quantDotPlan) vnniLayout() bool { return kernels.VNNI() && !p.stored.grouped }

// task computes rows [t·rows, (t+1)·rows) of y.
func (c *quantCall) task(t int) {
	n0 := t * c.rows
	n1 := min(c.N, n0+c.rows)
	if !c.w.grouped {
		c.rowsTask(c.w, c.y, n0, n1)
		return
	}
	if c.plainRows || c.act && !c.gemm && !c.layout && kernels.GroupKernels() {
		c.w.mulGroupsAct(c.M, c.xa, c.y, c.N, n0, n1)
		return
	}
	// The other paths read whole rows: the task's, moved out of their groups.
	nb, vb := c.K/32, c.w.typ.BlockBytes()-2
	buf := groupScratch.Get((n1 - n0) * nb * (vb + 4))
	defer groupScratch.Put(buf)
	rows := quantMatrix{typ: c.w.typ, K: c.K, q: buf[:(n1-n0)*nb*vb], d: typed[float32](buf[(n1-n0)*nb*vb:])}
	quant.UngroupRows(c.w.typ, c.w.q, c.w.dh, nb, n0, n1, rows.q, rows.d)
	c.rowsTask(rows, c.y[n0:], 0, n1-n0)
}

// groupScratch holds a task's rows moved out of their groups (quantCall.task).
var groupScratch = freelist.New(freelist.Config[byte]{Max: freelist.PerCPU})

// rowsTask computes rows [n0, n1) of y (rows of N) with w holding those rows whole.
func (c *quantCall) rowsTask(w quantMatrix, y []float32, n0, n1 int) {
	M, N, K := c.M, c.N, c.K
	if c.gemm {
		w.mulGemmAct(&c.rowsQ, y, N, n0, n1)
		return
	}
	if c.act {
		w.mulRowsAct(M, c.xa, c.layout, y, N, n0, n1)
		return
	}
	if M <= 4 {
		w.mulRows(M, c.x, y, N, n0, n1)
		return
	}
	panel := panels.Get(panelFloats)
	for p0 := n0; p0 < n1; p0 += panelFloats / K {
		p1 := min(n1, p0+panelFloats/K)
		w.dequant(p0, p1, panel)
		if c.noPack {
			kernels.MatMulNT(M, p1-p0, K, c.x, K, panel, K, y[p0:], N)
		} else {
			kernels.SgemmPacked(c.pa, true, p1-p0, panel, K, 0, y[p0:], N)
		}
	}
	panels.Put(panel)
}

// quantOnCaller reports whether a quantized step doing macs multiply-adds runs on the calling
// thread alone: below minParallelQuantMACs, or with one thread.
func quantOnCaller(pool *pool, macs int) bool {
	return macs < minParallelQuantMACs || pool.threads() == 1
}

// minParallelQuantMACs is the least work worth splitting over threads for a quantized product:
// measured faster on one thread below it (a 288×288 Q8_0 product takes ~2 µs, less than handing
// half of it to another thread), while a 768×768 one (the 110M shape's attention, 30-40 µs)
// is above it.
const minParallelQuantMACs = 1 << 18

// quantMatrix is a stored matrix [N, K] of one call: its bytes, and its scales, in rows or in
// row groups (half-float scales, dh).
type quantMatrix struct {
	typ     quant.Type
	K       int
	q       []byte
	d       []float32
	dh      []uint16
	grouped bool
}

// mulGroupsAct computes y[i, n0:n1] = x[i]·W[n0:n1]ᵀ for the m rows of x quantized in xa in
// their plain form and packed (plainBytes), W in row groups (n0 and n1 − n0 whole groups but
// for the matrix's end), a block of weight rows at a time so that it stays in L2 across the
// rows of x.
func (w quantMatrix) mulGroupsAct(m int, xa []byte, y []float32, N, n0, n1 int) {
	K, nb, rb, pb := w.K, w.K/32, kernels.ActRowBytes(w.K), kernels.Pack4Bytes(w.K)
	rowBytes := nb * (w.typ.BlockBytes() - 2)
	for r0 := n0; r0 < n1; r0 += kernels.QuantRowBlock {
		r1 := min(n1, r0+kernels.QuantRowBlock)
		gq, gd := w.q[r0*rowBytes:r1*rowBytes], w.dh[r0*nb:r1*nb]
		i := 0
		for ; i+4 <= m; i += 4 {
			kernels.GroupDotRows4(w.typ, gq, gd, K, xa[i*rb:], rb, xa[m*rb+i/4*pb:], y[i*N+r0:], N, r1-r0)
		}
		for ; i < m; i++ {
			x := kernels.ActView(xa[i*rb:], K, false)
			kernels.GroupDotRows(w.typ, gq, gd, K, &x, y[i*N+r0:i*N+r1])
		}
	}
}

// mulRows computes y[i, n0:n1] = x[i]·W[n0:n1]ᵀ for the m ≤ 4 rows of x.
func (w quantMatrix) mulRows(m int, x, y []float32, N, n0, n1 int) {
	K, nb := w.K, w.K/32
	switch w.typ {
	case quant.BF16:
		wb := typed[uint16](w.q)
		if m == 1 {
			kernels.DotRowsBF16(wb[n0*K:n1*K], K, x[:K], y[n0:n1])
			return
		}
		kernels.MatMulNTBF16(m, n1-n0, K, x, K, wb[n0*K:], K, y[n0:], N)
	case quant.Q8_0:
		q := typed[int8](w.q)
		if m == 1 {
			kernels.DotRowsQ8_0(q[n0*K:n1*K], w.d[n0*nb:n1*nb], K, x[:K], y[n0:n1])
			return
		}
		kernels.MatMulNTQ8_0(m, n1-n0, K, x, K, q[n0*K:n1*K], w.d[n0*nb:n1*nb], y[n0:], N)
	case quant.Q4_0:
		q := w.q
		if m == 1 {
			kernels.DotRowsQ4_0(q[n0*K/2:n1*K/2], w.d[n0*nb:n1*nb], K, x[:K], y[n0:n1])
			return
		}
		kernels.MatMulNTQ4_0(m, n1-n0, K, x, K, q[n0*K/2:n1*K/2], w.d[n0*nb:n1*nb], y[n0:], N)
	}
}

// mulRowsAct computes y[i, n0:n1] = x[i]·W[n0:n1]ᵀ for the m rows of x quantized in xa by
// kernels.QuantizeAct (Q8_0 or Q4_0 weights), a block of weight rows at a time so that it stays in L2
// across the rows of x.
func (w quantMatrix) mulRowsAct(m int, xa []byte, layout bool, y []float32, N, n0, n1 int) {
	K, nb := w.K, w.K/32
	var rows [4]kernels.ActRow
	for i := range m {
		rows[i] = kernels.ActView(xa[i*kernels.ActRowBytes(K):], K, layout)
	}
	rowBytes := K // Q8_0: one int8 per value
	if w.typ == quant.Q4_0 {
		rowBytes = K / 2
	}
	for r0 := n0; r0 < n1; r0 += kernels.QuantRowBlock {
		r1 := min(n1, r0+kernels.QuantRowBlock)
		for i := range m {
			kernels.ActDotRows(w.typ, w.q[r0*rowBytes:r1*rowBytes], w.d[r0*nb:r1*nb], K, &rows[i], y[i*N+r0:i*N+r1])
		}
	}
}

// mulGemmAct computes y[:, n0:n1] = x·W[n0:n1]ᵀ for the rows of x quantized in a.
func (w quantMatrix) mulGemmAct(a *kernels.ActRows, y []float32, N, n0, n1 int) {
	K, nb := w.K, w.K/32
	rowBytes := K // Q8_0: one int8 per value
	if w.typ == quant.Q4_0 {
		rowBytes = K / 2
	}
	kernels.ActGemm(w.typ, a, w.q[n0*rowBytes:n1*rowBytes], w.d[n0*nb:n1*nb], n1-n0, y[n0:], N)
}

// dequant widens rows [n0, n1) of W into dst, row-major [n1-n0, K].
func (w quantMatrix) dequant(n0, n1 int, dst []float32) {
	K, nb := w.K, w.K/32
	dst = dst[:(n1-n0)*K]
	switch w.typ {
	case quant.BF16:
		kernels.DequantBF16(typed[uint16](w.q)[n0*K:n1*K], dst)
	case quant.Q8_0:
		kernels.DequantQ8_0(typed[int8](w.q)[n0*K:n1*K], w.d[n0*nb:n1*nb], dst)
	case quant.Q4_0:
		kernels.DequantQ4_0(w.q[n0*K/2:n1*K/2], w.d[n0*nb:n1*nb], dst)
	}
}
