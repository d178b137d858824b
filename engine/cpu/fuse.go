package cpu

// Fusion of elementwise chains. A float32 expression such as silu(a)·b or Adam's
// m/(sqrt(v)+ε) is a tree of elementwise ops whose intermediate values are read once; run op by
// op, each intermediate goes to memory and back. Fused, the tree runs block by block (a few
// hundred elements that stay in L1) in one step: inputs are read once, the result written once.
// A node joins its consumers' tree when it is float32 elementwise, has their shape, is read by
// nothing outside the tree, and is not an output; leaves are full arrays of that shape, scalars, or
// arrays broadcast to it along size-1 axes when the axes they keep are contiguous (RMSNorm's
// x·r with r [b, s, 1], its scale [1, 1, d], RoPE's cos [1, 1, s, d] against [1, h, s, d],
// softmax's x − max): such a leaf's block is gathered with one division and one remainder
// per element, so a norm or a rotation runs as one step instead of one per op.
//
// Two extensions for values read by several consumers, which training is full of: a shared
// value cheap to compute from one array is recomputed in every tree that reads it
// (recompute.go), and trees of one shape that read the same arrays run as one step that writes
// each of their roots (siblings.go).

import (
	"math"
	"slices"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/posformer/posformer/engine/cpu/kernels"
)

// fuseBlock is how many elements a fused tree evaluates at a time.
const fuseBlock = 512

// fusable ops: the float32 elementwise ops the block evaluator implements (a unary op other than
// Neg, Abs, Sqrt and Rsqrt runs through its vecUnary32 slice function, which it must have).
var fusableOps = map[backends.OpType]bool{
	backends.OpTypeAdd: true, backends.OpTypeSub: true, backends.OpTypeMul: true, backends.OpTypeDiv: true,
	backends.OpTypeMax: true, backends.OpTypeMin: true, backends.OpTypeNeg: true, backends.OpTypeAbs: true,
	backends.OpTypeExp: true, backends.OpTypeLog: true, backends.OpTypeSqrt: true, backends.OpTypeRsqrt: true,
	backends.OpTypeTanh: true, backends.OpTypeLogistic: true, backends.OpTypeSign: true,
	backends.OpTypeLog1p: true, backends.OpTypeSin: true, backends.OpTypeCos: true,
}

// fusable reports whether n may be part of a fused tree: a float32 elementwise op whose operands
// are of its shape, scalars, or broadcast to it in a way a leaf can be (leafModeOf).
func fusable(n *node) bool {
	if !fusableOps[n.op] || n.shape.DType != dtypes.Float32 || n.shape.Size() < 2 {
		return false
	}
	for _, in := range n.inputs {
		if _, ok := leafModeOf(in.shape.Dimensions, n.shape.Dimensions); !ok {
			return false
		}
	}
	return true
}

// leafMode is how a leaf's values map onto the fused tree's elements: element i reads
// leaf[(i / inner) % period] (full arrays: inner 1, period the size; scalars: period 1).
// reg is the register a broadcast leaf is gathered into (-1: none needed).
type leafMode struct{ inner, period, reg int }

// leafModeOf finds the mode of a leaf of dims under a tree of dims out (same rank, each axis
// equal or 1 in the leaf): the axes the leaf keeps must be contiguous once out's size-1 axes
// are left aside.
func leafModeOf(dims, out []int) (leafMode, bool) {
	size := 1
	for _, d := range out {
		size *= d
	}
	if len(dims) != len(out) {
		n := 1
		for _, d := range dims {
			n *= d
		}
		return leafMode{1, 1, -1}, n == 1 // a scalar of another rank
	}
	// Classify each axis of out (size-1 axes are neutral): kept (the leaf has it) or broadcast.
	first, last := -1, -1
	for a := range out {
		switch {
		case out[a] == 1:
		case dims[a] == out[a]:
			if first < 0 {
				first = a
			}
			last = a
		case dims[a] != 1:
			return leafMode{}, false
		}
	}
	if first < 0 {
		return leafMode{1, 1, -1}, true // a scalar in disguise
	}
	period, inner := 1, 1
	for a := range out {
		switch {
		case a >= first && a <= last:
			if out[a] != 1 && dims[a] != out[a] {
				return leafMode{}, false // a broadcast axis between kept ones
			}
			period *= out[a]
		case a > last:
			inner *= out[a]
		}
	}
	return leafMode{inner, period, -1}, true
}

// fusion is a fused tree: its root, its members in evaluation order, and its leaves; or
// sibling trees run as one step (siblings.go), the first root's, which also writes outs.
type fusion struct {
	root    *node
	members []*node // topological order
	leaves  []*node
	outs    []*node // the later roots of merged siblings
}

// findFusions groups the live nodes into trees; a node in a tree but not its root gets no step.
// A recomputable node (recompute.go) may be in several trees; it gets no step once every reader
// of it is in a tree that recomputes it.
func findFusions(nodes []*node, live []bool, uses []int, isOutput []bool) (map[int]*fusion, []bool) {
	readers := liveReaders(nodes, live)
	rec := recomputable(nodes, live, readers, isOutput)
	served := map[int]map[int]bool{} // of a recomputable node: the readers that recompute it
	member := make([]bool, len(nodes))
	roots := map[int]*fusion{}
	for i := len(nodes) - 1; i >= 0; i-- {
		n := nodes[i]
		if !live[i] || member[i] || !fusable(n) {
			continue
		}
		if rec[i] && !slices.ContainsFunc(readers[i], func(r *node) bool { return !served[i][r.id] }) {
			member[i] = true // its readers come later, so they are all in their trees by now
			continue
		}
		f := &fusion{root: n}
		// A node joins once every one of its uses is by a member: it is then read from its
		// register as many times as it is used (a SwiGLU gradient's g·b feeds two terms), and
		// no path from a member leaves the tree before its root, so no leaf depends on one.
		// A recomputable node joins at its first use, and its operands that are not
		// recomputable stay leaves: other trees compute it too, and read them.
		in := map[int]bool{n.id: true}
		usedBy := map[int]int{} // uses of a node by members so far
		var grow func(m *node, recomputed bool)
		grow = func(m *node, recomputed bool) {
			for _, x := range m.inputs {
				if in[x.id] {
					continue
				}
				if rec[x.id] && x.shape.Equal(n.shape) {
					in[x.id] = true
					grow(x, true)
					continue
				}
				if recomputed {
					continue
				}
				usedBy[x.id]++
				if usedBy[x.id] < uses[x.id] {
					continue
				}
				if fusable(x) && x.shape.Equal(n.shape) && !isOutput[x.id] && !member[x.id] {
					in[x.id] = true
					grow(x, false)
				}
			}
		}
		grow(n, rec[i]) // (a recomputable root: some reader did not recompute it, others may have)
		if len(in) < 2 {
			continue
		}
		// The members in topological order (ids ascend), taken from the tree's own set: a scan
		// of every node before the root, for every root, made compiling a graph of some
		// hundred thousand nodes take minutes.
		ids := make([]int, 0, len(in))
		for id := range in {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		leafSeen := map[int]bool{}
		for _, id := range ids {
			m := nodes[id]
			f.members = append(f.members, m)
			if m != n && !rec[m.id] {
				member[m.id] = true
			}
			for _, x := range m.inputs {
				if in[x.id] && rec[x.id] {
					if served[x.id] == nil {
						served[x.id] = map[int]bool{}
					}
					served[x.id][m.id] = true
				}
				if !in[x.id] && !leafSeen[x.id] {
					leafSeen[x.id] = true
					f.leaves = append(f.leaves, x)
				}
			}
		}
		roots[n.id] = f
	}
	return roots, member
}

// fusedInstr is one op of a fused tree: operands are registers (>= 0: a member's block) or
// leaves (-1-k: leaf k).
type fusedInstr struct {
	op   backends.OpType
	a, b int
}

// fusedProgram is a fused tree compiled for evalFused: its instructions, how each leaf is read,
// how many registers it needs, and which instructions write a root (outOf).
type fusedProgram struct {
	prog  []fusedInstr
	modes []leafMode
	nRegs int
	outOf []int
}

func newFusedProgram(f *fusion) *fusedProgram {
	leafIdx := map[int]int{}
	modes := make([]leafMode, len(f.leaves))
	for k, l := range f.leaves {
		leafIdx[l.id] = k
		modes[k], _ = leafModeOf(l.shape.Dimensions, f.root.shape.Dimensions)
	}
	// A broadcast leaf (neither scalar nor full) gets a register past the program's, for the
	// blocks in which it must be gathered.
	nRegs := len(f.members)
	for k, m := range modes {
		modes[k].reg = -1
		if m.period > 1 && (m.inner > 1 || m.period < f.root.shape.Size()) {
			modes[k].reg = nRegs
			nRegs++
		}
	}
	// outOf: for each instruction, the index of the root it computes (0: f.root, 1+k: f.outs[k]),
	// or -1.
	outOf := make([]int, len(f.members))
	for i, m := range f.members {
		outOf[i] = -1
		if m == f.root {
			outOf[i] = 0
		}
		if k := slices.Index(f.outs, m); k >= 0 {
			outOf[i] = 1 + k
		}
	}
	reg := map[int]int{}
	prog := make([]fusedInstr, len(f.members))
	for i, m := range f.members {
		reg[m.id] = i
		operand := func(x *node) int {
			if r, ok := reg[x.id]; ok {
				return r
			}
			return -1 - leafIdx[x.id]
		}
		in := fusedInstr{op: m.op, a: operand(m.inputs[0]), b: 0}
		if len(m.inputs) > 1 {
			in.b = operand(m.inputs[1])
		}
		prog[i] = in
	}
	return &fusedProgram{prog: prog, modes: modes, nRegs: nRegs, outOf: outOf}
}

// evalRange runs the program on elements [start, end), a block at a time, with regs of at
// least nRegs·fuseBlock floats.
func (p *fusedProgram) evalRange(regs []float32, leaves [][]float32, start, end int, dsts [][]float32) {
	for s := start; s < end; s += fuseBlock {
		evalFused(p.prog, regs, leaves, p.modes, s, min(fuseBlock, end-s), dsts, p.outOf)
	}
}

func lowerFusion(lw *lowering, f *fusion) stepFn {
	fp := newFusedProgram(f)
	prog, modes, nRegs, outOf := fp.prog, fp.modes, fp.nRegs, fp.outOf
	// dsts: where each root is written (f.root to the step's slot, f.outs to its extra slots).
	slots := lw.in
	outSlots := append([]int{lw.out}, lw.extra[len(lw.extra)-len(f.outs):]...)
	size := f.root.shape.Size()
	p := lw.e.backend.pool
	return func(fr *frame) {
		leaves := fr.leafViews(len(slots) + len(outSlots))
		for k, s := range slots {
			leaves[k] = typed[float32](fr.slots[s])
		}
		dsts := leaves[len(slots):]
		leaves = leaves[:len(slots)]
		for k, s := range outSlots {
			dsts[k] = typed[float32](fr.slots[s])
		}
		blocks := (size + fuseBlock - 1) / fuseBlock
		if size < 2*elementwiseGrain {
			regs := fr.fuseRegs(nRegs * fuseBlock)
			evalBlocks(prog, regs, leaves, modes, size, 0, blocks, dsts, outOf)
			return
		}
		p.parallelFor(blocks, max(1, elementwiseGrain/fuseBlock), func(lo, hi int) {
			// Reused registers, not fresh ones per chunk: garbage here grows the heap into
			// fresh pages between collections, and faulting them in is slow (compile.go).
			regs := floats.Get(nRegs * fuseBlock)
			evalBlocks(prog, regs, leaves, modes, size, lo, hi, dsts, outOf)
			floats.Put(regs)
		})
	}
}

func evalBlocks(prog []fusedInstr, regs []float32, leaves [][]float32, modes []leafMode, size, lo, hi int, dsts [][]float32, outOf []int) {
	for blk := lo; blk < hi; blk++ {
		start := blk * fuseBlock
		n := min(fuseBlock, size-start)
		evalFused(prog, regs, leaves, modes, start, n, dsts, outOf)
	}
}

// fuseRegs returns the frame's scratch for a fused tree run on the calling goroutine.
func (f *frame) fuseRegs(n int) []float32 {
	if len(f.regs) < n {
		f.regs = make([]float32, n)
	}
	return f.regs[:n]
}

// evalFused runs the program on elements [start, start+n). An instruction that computes a root
// (outOf[i] = k >= 0) writes its block of dsts[k] in place of its register, and is read there.
func evalFused(prog []fusedInstr, regs []float32, leaves [][]float32, modes []leafMode, start, n int, dsts [][]float32, outOf []int) {
	block := func(i int) []float32 {
		if k := outOf[i]; k >= 0 {
			return dsts[k][start : start+n]
		}
		return regs[i*fuseBlock : i*fuseBlock+n]
	}
	// vec returns an operand's block, or (nil, value) for a scalar leaf. A broadcast leaf is
	// read in place when the block is one run of it, else gathered into its register.
	vec := func(o int) ([]float32, float32) {
		if o >= 0 {
			return block(o), 0
		}
		k := -1 - o
		m, src := modes[k], leaves[k]
		if m.period <= 1 {
			return nil, src[0]
		}
		if s := start % m.period; m.inner == 1 && s+n <= m.period {
			return src[s : s+n], 0
		}
		// A block inside one run (softmax's row max under a row of scores) is a scalar: the
		// scalar kernels then take it, instead of a register filled element by element.
		if q := start / m.inner; q == (start+n-1)/m.inner {
			return nil, src[q%m.period]
		}
		g := regs[m.reg*fuseBlock : m.reg*fuseBlock+n]
		if m.inner == 1 {
			// Whole periods by copy (a bias [1, 1, 1, 32] under [b, n, n, 32]).
			period := src[:m.period]
			j := copy(g, period[start%m.period:])
			for j < n {
				j += copy(g[j:], period)
			}
			return g, 0
		}
		// Runs of inner equal values.
		for i := start; i < start+n; {
			q := i / m.inner
			end := min(start+n, (q+1)*m.inner)
			fill(g[i-start:end-start], src[q%m.period])
			i = end
		}
		return g, 0
	}
	for i, in := range prog {
		out := block(i)
		a, sa := vec(in.a)
		binary := isFusedBinary(in.op)
		var b []float32
		var sb float32
		if binary {
			b, sb = vec(in.b)
			if a == nil && b != nil && scalarFirst(in.op, sa, b, out) {
				continue
			}
		}
		if a == nil {
			// A scalar first operand the op cannot take as such: broadcast it into the
			// output block first.
			fill(out, sa)
			a = out
		}
		if binary {
			fusedBinary(in.op, a, b, sb, out)
			continue
		}
		switch in.op {
		case backends.OpTypeNeg:
			kernels.MulScalar(a, -1, out)
		case backends.OpTypeAbs:
			for j, x := range a[:len(out)] {
				out[j] = float32(math.Abs(float64(x)))
			}
		case backends.OpTypeSqrt:
			for j, x := range a[:len(out)] {
				out[j] = float32(math.Sqrt(float64(x)))
			}
		case backends.OpTypeRsqrt:
			for j, x := range a[:len(out)] {
				out[j] = float32(1 / math.Sqrt(float64(x)))
			}
		default:
			vecUnary32[in.op](a, out)
		}
	}
}

func isFusedBinary(op backends.OpType) bool {
	switch op {
	case backends.OpTypeAdd, backends.OpTypeSub, backends.OpTypeMul, backends.OpTypeDiv, backends.OpTypeMax, backends.OpTypeMin:
		return true
	}
	return false
}

// scalarFirst computes s op b into out with the scalar kernels where that gives the same
// bits as op on a broadcast s, and reports whether it did: 1 − σ(x) in a logistic's
// gradient, 1 + x in SiLU's, a filled block otherwise (a third of a SwiGLU gradient's time).
// Sub takes −b + s, exact in both steps; Max and Min, whose NaN rules depend on the operands'
// order, are left to the broadcast.
func scalarFirst(op backends.OpType, s float32, b, out []float32) bool {
	switch op {
	case backends.OpTypeAdd:
		kernels.AddScalar(b, s, out)
	case backends.OpTypeMul:
		kernels.MulScalar(b, s, out)
	case backends.OpTypeSub:
		kernels.MulScalar(b, -1, out)
		kernels.AddScalar(out, s, out)
	default:
		return false
	}
	return true
}

// fill sets every element of out to v, 16 at a time: an array assignment is four vector
// stores, three times a loop's speed on a softmax row of 128 (and twice a doubled copy's).
func fill(out []float32, v float32) {
	if len(out) < 32 {
		for j := range out {
			out[j] = v
		}
		return
	}
	var b [16]float32
	for i := range b {
		b[i] = v
	}
	j := 0
	for ; j+16 <= len(out); j += 16 {
		*(*[16]float32)(out[j:]) = b
	}
	for ; j < len(out); j++ {
		out[j] = v
	}
}

func fusedBinary(op backends.OpType, a, b []float32, sb float32, out []float32) {
	if b == nil {
		switch op {
		case backends.OpTypeAdd:
			kernels.AddScalar(a, sb, out)
		case backends.OpTypeSub:
			kernels.AddScalar(a, -sb, out)
		case backends.OpTypeMul:
			kernels.MulScalar(a, sb, out)
		case backends.OpTypeDiv:
			for j, x := range a {
				out[j] = x / sb
			}
		case backends.OpTypeMax:
			kernels.MaximumScalar(a, sb, out)
		case backends.OpTypeMin:
			kernels.MinimumScalar(a, sb, out)
		}
		return
	}
	switch op {
	case backends.OpTypeAdd:
		kernels.Add(a, b, out)
	case backends.OpTypeSub:
		kernels.Sub(a, b, out)
	case backends.OpTypeMul:
		kernels.Mul(a, b, out)
	case backends.OpTypeDiv:
		kernels.Div(a, b, out)
	case backends.OpTypeMax:
		kernels.Maximum(a, b, out)
	case backends.OpTypeMin:
		kernels.Minimum(a, b, out)
	}
}

// leafViews returns the frame's scratch list of leaf slices.
func (f *frame) leafViews(n int) [][]float32 {
	if cap(f.leaves) < n {
		f.leaves = make([][]float32, n)
	}
	return f.leaves[:n]
}
