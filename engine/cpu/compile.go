package cpu

// Compile turns the recorded nodes into a plan: the steps to run in order, and where each value
// lives. A value lives in an input buffer (parameters), in the executable (constants), in a fresh
// buffer handed to the caller (outputs), or at a fixed offset of an arena, scratch memory lent to
// each call from a pool the backend's executables share: two values share arena bytes when their lifetimes do
// not overlap. A reshape (and Identity, and a same-size Bitcast) is the bytes of its input under
// another shape, so it costs nothing. An op that updates its operand (scatter, dynamic update
// slice) writes into a donated input buffer instead of copying it: that is how the KV cache is
// updated in place.

import (
	"fmt"
	"slices"
	"sort"
	"sync"
	"unsafe"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

type slotKind int

const (
	slotArena slotKind = iota
	slotParam
	slotConst
	slotOutput
)

// slot is a run of bytes one or more nodes (a value and its views) live in.
type slot struct {
	kind  slotKind
	size  int
	param int    // slotParam: the parameter's index
	data  []byte // slotConst
	off   int    // slotArena: offset in the arena
	def   int    // the step that writes it (-1 for params and constants)
	last  int    // the last step that reads it
	out   int    // slotOutput: the output's index
}

// frame is the memory of one call: each slot's bytes.
type frame struct {
	slots  [][]byte
	arena  []byte
	regs   []float32   // fused trees' registers (fuse.go)
	leaves [][]float32 // fused trees' leaves
	state  []any       // per step, objects a step keeps across calls (stepState)
}

// stepState returns the object step keeps in this frame, made by mk on the frame's first call.
// Frames are reused call after call (one per concurrent call), so a step that needs an object
// per call (a task closure for the pool) allocates it once instead of once per call.
func (f *frame) stepState(step int, mk func() any) any {
	if step >= len(f.state) {
		f.state = append(f.state, make([]any, step+1-len(f.state))...)
	}
	if f.state[step] == nil {
		f.state[step] = mk()
	}
	return f.state[step]
}

type stepFn func(f *frame)

// inPlace is an op that may update a donated parameter's buffer instead of a copy of it.
type inPlace struct {
	param   int // the parameter
	slot    int // the op's slot, which then is the parameter's buffer
	output  int // the output index of that slot, or -1
	opSlot  int // the parameter's slot
	opShape shapes.Shape
}

// Executable implements backends.Executable.
type Executable struct {
	backend     *Backend
	name        string
	paramNames  []string
	paramShapes []shapes.Shape
	outShapes   []shapes.Shape
	slots       []slot
	steps       []stepFn
	stepOps     []backends.OpType
	stepLabels  []string // with step timers on (steptimes.go)
	outSlot     []int    // the slot holding each output
	outCopy     []bool   // the output must be copied out of its slot (a parameter, a constant, or an output twice)
	inPlace     []inPlace
	arenaSize   int
	framesMu    sync.Mutex
	frames      []*frame          // idle frames, kept across garbage collections (as the freelist package explains)
	prefetches  []*weightPrefetch // decoding's quantized products in step order (prefetch.go)
}

var _ backends.Executable = (*Executable)(nil)

// Compile implements backends.Builder: the graph passes, then memory and steps. The passes
// that change the graph (fuseQuantizedProducts, fuseHalfOperands, readThroughCopies, eliminateCommonSubexpressions,
// fuseElementwise) run unless the backend option optimize is off; none changes what the graph
// computes (the tests compare each with optimize=false).
func (b *Builder) Compile(outputs []backends.Op, _ []*backends.ShardingSpec) (backends.Executable, error) {
	outs, err := b.nodesOf(outputs...)
	if err != nil {
		return nil, err
	}
	b.compiled = true
	e := newExecutable(b, outs)
	nodes, optimize := b.nodes, b.backend.optimize
	if optimize {
		fuseQuantizedProducts(nodes, outs)
		fuseHalfOperands(nodes, outs)
	}
	foldIotas(nodes)
	if optimize {
		readThroughCopies(nodes)
		outs = eliminateCommonSubexpressions(nodes, outs)
	}
	live := liveNodes(nodes, outs)
	fusions, fused := map[int]*fusion{}, make([]bool, len(nodes))
	if optimize {
		fusions, fused = fuseElementwise(nodes, live, outs)
	}
	slotOf := e.assignSlots(nodes, live, fused)
	e.assignOutputs(outs, slotOf)
	if err := e.lowerSteps(nodes, outs, live, fused, fusions, slotOf); err != nil {
		return nil, fmt.Errorf("backend %s: compiling %q: %w", BackendName, b.name, err)
	}
	e.dropUnsafeInPlace()
	e.planArena()
	return e, nil
}

// newExecutable starts the executable of b's graph with outputs outs: its names and shapes.
func newExecutable(b *Builder, outs []*node) *Executable {
	e := &Executable{backend: b.backend, name: b.name}
	for _, p := range b.params {
		e.paramNames = append(e.paramNames, p.attr.(*paramAttr).name)
		e.paramShapes = append(e.paramShapes, p.shape)
	}
	for _, o := range outs {
		e.outShapes = append(e.outShapes, o.shape)
	}
	return e
}

// foldIotas turns every Iota into a constant, computed once here: it depends on nothing.
func foldIotas(nodes []*node) {
	for _, n := range nodes {
		if n.op == backends.OpTypeIota {
			if data, err := iotaBytes(n); err == nil {
				n.op, n.attr = backends.OpTypeConstant, data
			}
		}
	}
}

// liveNodes marks the nodes the outputs depend on (indexed by node id).
func liveNodes(nodes []*node, outs []*node) []bool {
	live := make([]bool, len(nodes))
	var mark func(n *node)
	mark = func(n *node) {
		if live[n.id] {
			return
		}
		live[n.id] = true
		for _, in := range n.inputs {
			mark(in)
		}
		if n.owner != nil {
			mark(n.owner)
		}
	}
	for _, o := range outs {
		mark(o)
	}
	return live
}

// fuseElementwise finds the elementwise trees to fuse (see fuse.go); their inner nodes
// (fused[id]) get neither a slot nor a step.
func fuseElementwise(nodes []*node, live []bool, outs []*node) (fusions map[int]*fusion, fused []bool) {
	uses := make([]int, len(nodes))
	for _, n := range nodes {
		if live[n.id] {
			for _, in := range n.inputs {
				uses[in.id]++
			}
		}
	}
	fusions, fused = findFusions(nodes, live, uses, outputSet(nodes, outs))
	mergeSiblings(fusions)
	return fusions, fused
}

// liveReaders lists, for each node, the live nodes that read it (once per operand).
func liveReaders(nodes []*node, live []bool) [][]*node {
	readers := make([][]*node, len(nodes))
	for _, n := range nodes {
		if live[n.id] {
			for _, in := range n.inputs {
				readers[in.id] = append(readers[in.id], n)
			}
		}
	}
	return readers
}

// outputSet marks the nodes that are outputs (indexed by node id).
func outputSet(nodes, outs []*node) []bool {
	isOutput := make([]bool, len(nodes))
	for _, o := range outs {
		isOutput[o.id] = true
	}
	return isOutput
}

// assignSlots gives every live value a slot (a view shares its input's) and returns the slot of
// each node by id, -1 for none.
func (e *Executable) assignSlots(nodes []*node, live, fused []bool) []int {
	slotOf := make([]int, len(nodes))
	for i := range slotOf {
		slotOf[i] = -1
	}
	for _, n := range nodes {
		if !live[n.id] || fused[n.id] {
			continue
		}
		switch {
		case n.op == backends.OpTypeParameter:
			slotOf[n.id] = e.newSlot(slot{kind: slotParam, param: n.attr.(*paramAttr).index, size: byteSize(n.shape), def: -1})
		case n.op == backends.OpTypeConstant:
			slotOf[n.id] = e.newSlot(slot{kind: slotConst, data: n.attr.([]byte), size: byteSize(n.shape), def: -1})
		case isView(n):
			slotOf[n.id] = slotOf[n.inputs[0].id]
		default:
			slotOf[n.id] = e.newSlot(slot{kind: slotArena, size: byteSize(n.shape)})
		}
	}
	return slotOf
}

func (e *Executable) newSlot(s slot) int {
	e.slots = append(e.slots, s)
	return len(e.slots) - 1
}

// assignOutputs lets each output take its slot over unless it is a parameter, a constant, or
// already an output (then the output is a copy).
func (e *Executable) assignOutputs(outs []*node, slotOf []int) {
	for i, o := range outs {
		s := slotOf[o.id]
		e.outSlot = append(e.outSlot, s)
		if k := e.slots[s].kind; k != slotArena {
			e.outCopy = append(e.outCopy, true)
			continue
		}
		e.slots[s].kind = slotOutput
		e.slots[s].out = i
		e.outCopy = append(e.outCopy, false)
	}
}

// lowerSteps lowers every live node that computes something to a step, in creation order,
// recording the liveness of every slot. A group of sibling quantized products (siblingdots.go)
// is one step, at its first member's place, and an attention chain over a mask (maskedattn.go)
// one step at its last member's: every member's slots are defined there.
func (e *Executable) lowerSteps(nodes, outs []*node, live, fused []bool, fusions map[int]*fusion, slotOf []int) error {
	for i := range e.slots {
		e.slots[i].last = -1
	}
	sib := findSiblingDots(nodes, live, fused, e.backend.actq8)
	var att maskedAttentions
	if e.backend.optimize {
		att = findMaskedAttentions(nodes, outs, live, fusions)
	}
	for _, n := range nodes {
		if !live[n.id] || fused[n.id] || isView(n) || n.owner != nil || n.op == backends.OpTypeParameter || n.op == backends.OpTypeConstant {
			continue
		}
		if sib.later[n.id] {
			continue // run by the step of the first product of its group
		}
		if att.skip != nil && att.skip[n.id] {
			continue // run by the step of its attention chain's last member
		}
		if ma := att.at[n.id]; ma != nil {
			t := len(e.steps)
			lw := e.newLowering(n, t, ma.inputs(), live, slotOf)
			for _, m := range ma.members() {
				switch {
				case m == n:
				case m == ma.a || m == ma.e && !ma.keepE:
					// Their values live in q·k's bytes (maskedattn.go): no bytes of their own.
					e.slots[slotOf[m.id]].size = 0
				default:
					lw.extra = append(lw.extra, slotOf[m.id])
				}
			}
			e.steps = append(e.steps, lowerMaskedAttention(lw, ma, slotOf))
			e.stepOps = append(e.stepOps, n.op)
			if StepTimesEnabled() {
				e.stepLabels = append(e.stepLabels, "masked attention "+stepLabel(ma.qk, nil, ma.qk.inputs))
			}
			for _, s := range append([]int{lw.out}, lw.extra...) {
				e.slots[s].def = t
				e.slots[s].last = max(e.slots[s].last, t)
			}
			for _, s := range lw.in {
				e.slots[s].last = max(e.slots[s].last, t)
			}
			continue
		}
		f := fusions[n.id]
		if f != nil && f.root != n {
			continue // a later root of sibling trees, written by the first root's step
		}
		t := len(e.steps)
		inputs := n.inputs
		if f != nil {
			inputs = f.leaves
		}
		lw := e.newLowering(n, t, inputs, live, slotOf)
		if f != nil {
			for _, o := range f.outs {
				lw.extra = append(lw.extra, slotOf[o.id])
			}
		}
		lws := []*lowering{lw}
		var fn stepFn
		var err error
		switch group := sib.group[n.id]; {
		case f != nil:
			fn = lowerFusion(lw, f)
		case group != nil:
			for _, m := range group[1:] {
				lws = append(lws, e.newLowering(m, t, m.inputs, live, slotOf))
			}
			fn, err = lowerSiblingDots(lws)
		default:
			fn, err = lower(lw)
		}
		if err != nil {
			return err
		}
		e.steps = append(e.steps, fn)
		e.stepOps = append(e.stepOps, n.op)
		if StepTimesEnabled() {
			lbl := stepLabel(n, f, inputs)
			if len(lws) > 1 {
				lbl = fmt.Sprintf("%s (and %d sibling products)", lbl, len(lws)-1)
			}
			e.stepLabels = append(e.stepLabels, lbl)
		}
		for _, lw := range lws {
			for _, s := range append([]int{lw.out}, lw.extra...) {
				e.slots[s].def = t
				e.slots[s].last = max(e.slots[s].last, t)
			}
			for _, s := range lw.in {
				e.slots[s].last = max(e.slots[s].last, t)
			}
			if lw.inPlaceOperand {
				e.planInPlace(lw.n, slotOf)
			}
		}
	}
	e.linkPrefetches()
	return nil
}

// newLowering starts the lowering of n as step t: the slots of its inputs, output and extra
// outputs.
func (e *Executable) newLowering(n *node, t int, inputs []*node, live []bool, slotOf []int) *lowering {
	lw := &lowering{e: e, n: n, step: t, out: slotOf[n.id]}
	for _, in := range inputs {
		lw.in = append(lw.in, slotOf[in.id])
	}
	for _, x := range n.extra {
		if live[x.id] {
			lw.extra = append(lw.extra, slotOf[x.id])
		} else {
			// Computed anyway: give it bytes for the duration of the step.
			lw.extra = append(lw.extra, e.newSlot(slot{kind: slotArena, size: byteSize(x.shape)}))
		}
	}
	return lw
}

// isView reports whether n is its input's bytes under another shape.
func isView(n *node) bool { return n.op == backends.OpTypeReshape }

// planInPlace records that n (which copies its operand, input 0, and then updates the copy) may
// use the operand's buffer directly when it is a donated parameter.
func (e *Executable) planInPlace(n *node, slotOf []int) {
	ps := slotOf[n.inputs[0].id]
	if e.slots[ps].kind != slotParam || byteSize(n.shape) != e.slots[ps].size {
		return
	}
	s := slotOf[n.id]
	out := -1
	if e.slots[s].kind == slotOutput {
		out = e.slots[s].out
	}
	e.inPlace = append(e.inPlace, inPlace{param: e.slots[ps].param, slot: s, output: out, opSlot: ps, opShape: n.shape})
}

// dropUnsafeInPlace keeps an in-place update only where the parameter is read by nothing after
// the op, and by nothing else at the op's step, and is not itself an output.
func (e *Executable) dropUnsafeInPlace() {
	e.inPlace = slices.DeleteFunc(e.inPlace, func(ip inPlace) bool {
		ps := e.slots[ip.opSlot]
		if ps.last != e.slots[ip.slot].def {
			return true
		}
		if slices.Contains(e.outSlot, ip.opSlot) {
			return true
		}
		// Another parameter-updating op on the same parameter: keep only the first.
		for _, other := range e.inPlace {
			if other.param == ip.param && other.slot != ip.slot {
				return true
			}
		}
		return false
	})
}

// planArena gives every arena slot an offset: slots whose lifetimes overlap get disjoint bytes.
func (e *Executable) planArena() {
	type block struct{ off, size int }
	var free []block // sorted by offset, coalesced
	end := 0
	allocate := func(size int) int {
		size = (size + 63) &^ 63 // keep every slot 64-byte aligned
		best := -1
		for i, f := range free {
			if f.size >= size && (best < 0 || f.size < free[best].size) {
				best = i
			}
		}
		if best < 0 {
			// Grow the arena, absorbing a free block at its end.
			if n := len(free); n > 0 && free[n-1].off+free[n-1].size == end {
				off := free[n-1].off
				free = free[:n-1]
				end = off + size
				return off
			}
			off := end
			end += size
			return off
		}
		off := free[best].off
		if free[best].size == size {
			free = slices.Delete(free, best, best+1)
		} else {
			free[best].off += size
			free[best].size -= size
		}
		return off
	}
	release := func(off, size int) {
		size = (size + 63) &^ 63
		i := sort.Search(len(free), func(i int) bool { return free[i].off > off })
		free = slices.Insert(free, i, block{off, size})
		if i+1 < len(free) && free[i].off+free[i].size == free[i+1].off {
			free[i].size += free[i+1].size
			free = slices.Delete(free, i+1, i+2)
		}
		if i > 0 && free[i-1].off+free[i-1].size == free[i].off {
			free[i-1].size += free[i].size
			free = slices.Delete(free, i, i+1)
		}
	}
	byDef := make([][]int, len(e.steps))
	byLast := make([][]int, len(e.steps))
	for i, s := range e.slots {
		if s.kind != slotArena || s.def < 0 {
			continue
		}
		byDef[s.def] = append(byDef[s.def], i)
		byLast[max(s.last, s.def)] = append(byLast[max(s.last, s.def)], i)
	}
	for t := range e.steps {
		for _, i := range byDef[t] {
			e.slots[i].off = allocate(e.slots[i].size)
		}
		for _, i := range byLast[t] {
			release(e.slots[i].off, e.slots[i].size)
		}
	}
	e.arenaSize = end
}

// lowering is what an op's lowering function gets: its node and the slots of its inputs and
// outputs. It may ask for scratch bytes that live for its step only.
type lowering struct {
	e              *Executable
	n              *node
	step           int
	in             []int
	out            int
	extra          []int
	inPlaceOperand bool // the op copies input 0 into its output and updates it (see planInPlace)
}

// intScratch returns a scratch slot for n ints (index vectors), so a step allocates nothing.
func (lw *lowering) intScratch(n int) int { return lw.scratch(n * int(unsafe.Sizeof(int(0)))) }

// scratch returns a slot of size bytes the step may use freely.
func (lw *lowering) scratch(size int) int {
	lw.e.slots = append(lw.e.slots, slot{kind: slotArena, size: size, def: lw.step, last: lw.step})
	return len(lw.e.slots) - 1
}

// eliminateCommonSubexpressions computes identical nodes once: every layer of a model asks its
// positional scheme for the same cos/sin (or bias) of the same positions, and GoMLX records
// each request anew. It points every node at the first of the nodes identical to each of its inputs
// (same op, shape, inputs and parameters, in creation order) and returns the outputs so
// mapped; the duplicates are then dead. Parameters differ by index; a constant is compared by
// its bytes (up to 64 KiB); nodes with several outputs are left alone.
func eliminateCommonSubexpressions(nodes []*node, outs []*node) []*node {
	// intoTree: read by exactly one node, an elementwise op of its shape that fusion will
	// likely take it into (fuse.go).
	readers := make([]int, len(nodes))
	fusedReader := make([]bool, len(nodes))
	for _, n := range nodes {
		for _, in := range n.inputs {
			readers[in.id]++
			fusedReader[in.id] = fusable(n) && fusable(in) && in.shape.Equal(n.shape)
		}
	}
	intoTree := make([]bool, len(nodes))
	for i := range nodes {
		intoTree[i] = readers[i] == 1 && fusedReader[i]
	}
	canon := make([]*node, len(nodes))
	seen := map[string]*node{}
	var key []byte
	for _, n := range nodes {
		canon[n.id] = n
		for i, in := range n.inputs {
			n.inputs[i] = canon[in.id]
		}
		if len(n.extra) > 0 || n.owner != nil || n.op == backends.OpTypeParameter {
			continue
		}
		if intoTree[n.id] && n.shape.Size() > 4096 {
			// Cheaper to recompute inside the fused tree that reads it (autodiff repeats the
			// forward's products in the backward pass) than to materialize and keep it alive.
			// recompute.go applies the same reasoning to one value read by several trees.
			continue
		}
		key = fmt.Appendf(key[:0], "%d|%s|", n.op, n.shape)
		for _, in := range n.inputs {
			key = fmt.Appendf(key, "%d,", in.id)
		}
		if data, ok := n.attr.([]byte); ok {
			if n.op != backends.OpTypeConstant || len(data) > 64<<10 {
				continue
			}
			key = append(key, data...)
		} else {
			key = fmt.Appendf(key, "|%v", n.attr)
		}
		if m, ok := seen[string(key)]; ok {
			canon[n.id] = m
			continue
		}
		seen[string(key)] = n
	}
	mapped := make([]*node, len(outs))
	for i, o := range outs {
		mapped[i] = canon[o.id]
	}
	return mapped
}
