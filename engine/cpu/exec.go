package cpu

import (
	"fmt"
	"os"
	"slices"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/posformer/posformer/engine/cpu/internal/freelist"
)

// Finalize implements backends.Executable.
func (e *Executable) Finalize() {}

// Inputs implements backends.Executable.
func (e *Executable) Inputs() ([]string, []shapes.Shape) { return e.paramNames, e.paramShapes }

// Outputs implements backends.Executable.
func (e *Executable) Outputs() []shapes.Shape { return e.outShapes }

func (e *Executable) newFrame() *frame {
	f := &frame{slots: make([][]byte, len(e.slots))}
	for i, s := range e.slots {
		if s.kind == slotConst {
			f.slots[i] = s.data
		}
	}
	return f
}

// newArenaPool returns the free list that lends arenas to calls. Executables of one backend
// share it, so a model with dozens of compiled graphs (shape buckets, cache windows) holds about
// one arena per concurrent call, the largest it needed, rather than one per graph. A call takes
// the smallest arena that fits. Arenas are mapped outside the Go heap (mapArena) and unmapped
// when the pool drops them, or when the backend is finalized or collected.
func newArenaPool() *freelist.List[byte] {
	return freelist.New(freelist.Config[byte]{Max: maxIdleArenas, Budget: maxIdleArenaBytes, KeepLargest: true, Alloc: mapArena, Free: unmapArena})
}

// maxIdleArenas and maxIdleArenaBytes bound the arenas kept between calls: the largest is always
// kept (it serves every caller), the others only while they fit in the byte budget. Evaluating
// ever longer sequences needs ever larger arenas, each a little larger than the last; keeping
// four of them held 8 GB at 2,048 tokens.
const (
	maxIdleArenas     = 4
	maxIdleArenaBytes = 1 << 30
)

// poisonArenas makes every call fill the arena it takes with NaN (tests, or
// $POSFORMER_POISON_ARENAS set): a step that reads an element no step wrote then shows as NaN,
// not as an earlier call's value or a fresh zero.
var poisonArenas = os.Getenv("POSFORMER_POISON_ARENAS") != ""

// Execute implements backends.Executable. Donated inputs belong to the executable from here on:
// they become outputs (updated in place) or are recycled.
func (e *Executable) Execute(inputs []backends.Buffer, donate []bool, _ backends.DeviceNum) (outs []backends.Buffer, err error) {
	if len(inputs) != len(e.paramShapes) {
		return nil, fmt.Errorf("backend %s: %q takes %d inputs, got %d", BackendName, e.name, len(e.paramShapes), len(inputs))
	}
	bufs := make([]*Buffer, len(inputs))
	for i, in := range inputs {
		bb, err := e.backend.buffer(in)
		if err != nil {
			return nil, fmt.Errorf("input %d (%s): %w", i, e.paramNames[i], err)
		}
		if !bb.shape.Equal(e.paramShapes[i]) {
			return nil, fmt.Errorf("backend %s: %q input %d (%s) is %s, compiled for %s", BackendName, e.name, i, e.paramNames[i], bb.shape, e.paramShapes[i])
		}
		bufs[i] = bb
	}
	donated := func(i int) bool { return i < len(donate) && donate[i] }
	for i, bb := range bufs {
		// A model's weights, read for the first time: onto huge pages (buffer.go). A donated
		// buffer is a cache updated in place, whose windows are many and mostly short-lived.
		if !donated(i) && bb.hostMade.Load() && bb.hostMade.CompareAndSwap(true, false) {
			hugePagesAround(bb.data)
		}
	}

	f := e.getFrame()
	f.arena = e.backend.arenas.Get(e.arenaSize)
	if poisonArenas {
		for i := range f.arena {
			f.arena[i] = 0xff // float32 NaN in every element, until a step writes it
		}
	}
	for i, s := range e.slots {
		if s.kind == slotArena {
			f.slots[i] = f.arena[s.off : s.off+s.size : s.off+s.size]
		}
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("backend %s: executing %q: %v", BackendName, e.name, r)
			outs = nil
			if f.arena != nil {
				// The pool re-raises a task's panic only once every task has returned, so
				// nothing writes to the arena any more: it can serve another call (the
				// collector would not reclaim it).
				e.backend.arenas.Put(f.arena)
				f.arena = nil
			}
		}
	}()
	for i, s := range e.slots {
		if s.kind == slotParam {
			f.slots[i] = bufs[s.param].data
		}
	}
	result := make([]*Buffer, len(e.outShapes))
	reused := make([]bool, len(inputs))
	for _, ip := range e.inPlace {
		if !donated(ip.param) || reused[ip.param] {
			continue
		}
		reused[ip.param] = true
		f.slots[ip.slot] = bufs[ip.param].data
		if ip.output >= 0 {
			buf := bufs[ip.param]
			buf.shape = e.outShapes[ip.output]
			result[ip.output] = buf
		}
	}
	for i, s := range e.slots {
		if s.kind == slotOutput && result[s.out] == nil {
			buf := e.backend.newBuffer(e.outShapes[s.out])
			result[s.out] = buf
			f.slots[i] = buf.data
		}
	}
	if e.stepLabels != nil {
		e.runTimed(f)
	} else {
		for _, step := range e.steps {
			step(f)
		}
	}
	outs = make([]backends.Buffer, len(result))
	for i, buf := range result {
		if e.outCopy[i] {
			buf = e.backend.newBuffer(e.outShapes[i])
			copy(buf.data, f.slots[e.outSlot[i]])
		}
		outs[i] = buf
	}
	for i, bb := range bufs {
		if donated(i) && !reused[i] && !slices.Contains(bufs[:i], bb) {
			_ = e.backend.BufferFinalize(bb)
		}
	}
	for i, s := range e.slots {
		if s.kind != slotConst {
			f.slots[i] = nil
		}
	}
	e.backend.arenas.Put(f.arena)
	f.arena = nil
	e.framesMu.Lock()
	e.frames = append(e.frames, f)
	e.framesMu.Unlock()
	return outs, nil
}

// getFrame returns an idle frame, or a new one when every frame is in use by another call.
func (e *Executable) getFrame() *frame {
	e.framesMu.Lock()
	defer e.framesMu.Unlock()
	if n := len(e.frames); n > 0 {
		f := e.frames[n-1]
		e.frames = e.frames[:n-1]
		return f
	}
	return e.newFrame()
}
