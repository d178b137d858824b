package engine

// Every decoding step, from a prompt's first chunk to each generated token, runs through one
// stepper: a KV-cache graph compiled once for its shapes, executed on backend buffers. The
// cache stays in backend buffers between steps (Session), inputs are written into buffers and
// the logits read out of one, so a step wraps nothing in tensors: a tensor per input and per
// output was most of a small model's garbage, about 80 allocations a token.
//
// The graph is built without context.Exec, which on every call looks the graph up by the
// arguments' shapes, walks every variable of the context to hand its buffer over and wraps the
// call in panic recovery; for a small model that bookkeeping costs as much as the step's
// arithmetic. The engine's variables never change after loading, so their buffers are listed
// once, by parameter handle, when the stepper is built.

import (
	"fmt"
	"sync"
	"time"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// stepKey identifies a compiled KV-cache graph: batch rows of seq tokens into a cache of window
// slots; with pick, the graph returns the logits of one token per row (a prompt's last).
type stepKey struct {
	pick               bool
	batch, seq, window int
}

// stepper is one compiled KV-cache graph with its variables' buffers in parameter order.
type stepper struct {
	backend backends.Backend
	g       *Graph
	exe     backends.Executable // g's backend executable; nil if GoMLX hid it (see executableOf)
	nArgs   int                 // inputs before the variables
	vars    []backends.Buffer   // the variables' buffers, parameters nArgs..
	pool    sync.Pool           // *stepCall
}

// stepCall is the argument lists of one execution, reused.
type stepCall struct {
	inputs []backends.Buffer
	donate []bool
}

// stepArgs lists a step graph's inputs in order: tokens, positions, validity and cache slots
// [batch, seq]; the cache (stepKey's window): slot positions, slot validity, then keys and
// values of every layer; with pick, the index [batch] of each row's token to return.
func (e *Engine) stepArgs(k stepKey) []shapes.Shape {
	in := stepInputShapes(k)
	return append(append(in[:4:4], e.cacheShapes(k.batch, k.window)...), in[4:]...)
}

// stepInputShapes are the shapes of a step's inputs besides the cache, in stepArgs' order:
// tokens, positions, validity and slots, then with pick the last-token indices.
func stepInputShapes(k stepKey) []shapes.Shape {
	in := shapes.Make(dtypes.Int32, k.batch, k.seq)
	out := []shapes.Shape{in, in, shapes.Make(dtypes.Bool, k.batch, k.seq), in}
	if k.pick {
		out = append(out, shapes.Make(dtypes.Int32, k.batch))
	}
	return out
}

// stepperFor returns the stepper of k, building and compiling it on first use. The time spent
// is counted in CompileTime, so that the rates Generate reports exclude it.
func (e *Engine) stepperFor(k stepKey) (*stepper, error) {
	if st, ok := e.steppers.Load(k); ok {
		return st.(*stepper), nil
	}
	e.stepMu.Lock()
	defer e.stepMu.Unlock()
	if st, ok := e.steppers.Load(k); ok {
		return st.(*stepper), nil
	}
	start := time.Now()
	st, err := e.newStepper(k)
	if err != nil {
		return nil, err
	}
	e.compiling.Add(int64(time.Since(start)))
	e.steppers.Store(k, st)
	return st, nil
}

// newStepper builds k's graph on the engine's context, compiles it and lists its variables.
func (e *Engine) newStepper(k stepKey) (st *stepper, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("compiling the decoding step (batch %d, %d tokens, window %d): %v", k.batch, k.seq, k.window, r)
		}
	}()
	g := NewGraph(e.Backend, fmt.Sprintf("step_b%d_s%d_w%d", k.batch, k.seq, k.window))
	var in []*Node
	for i, sh := range e.stepArgs(k) {
		in = append(in, Parameter(g, fmt.Sprintf("arg%d", i), sh))
	}
	g.Compile(e.cachedGraph(e.Ctx, in, k.pick)...)
	if e.Ctx.NeedsInitialization() {
		// A model built on an empty context: its variables get their random initial values.
		if err := e.Ctx.InitializeVariables(e.Backend, nil); err != nil {
			return nil, err
		}
	}
	byName := map[string]*tensors.Tensor{}
	for v := range e.Ctx.IterVariables() {
		value, err := v.Value()
		if err != nil {
			return nil, err
		}
		byName[v.ParameterName()] = value
	}
	st = &stepper{backend: e.Backend, g: g, exe: executableOf(g), nArgs: len(in)}
	for h := len(in); h < g.NumParameters(); h++ {
		name := g.GetParameterByHandle(ParameterHandle(h)).GetParameterName()
		value, ok := byName[name]
		if !ok {
			return nil, fmt.Errorf("parameter %d (%s) of graph %s is not a variable", h, name, g.Name())
		}
		buf, err := value.Buffer(e.Backend, 0)
		if err != nil {
			return nil, fmt.Errorf("variable %s: %w", name, err)
		}
		st.vars = append(st.vars, buf)
	}
	n := g.NumParameters()
	st.pool.New = func() any { return &stepCall{inputs: make([]backends.Buffer, n), donate: make([]bool, n)} }
	return st, nil
}

// run executes the graph on args (the inputs stepArgs lists, donated where donate says) and
// returns its outputs: the logits, then the new cache.
func (st *stepper) run(args []backends.Buffer, donate []bool) (outs []backends.Buffer, err error) {
	c := st.pool.Get().(*stepCall)
	defer st.pool.Put(c)
	copy(c.inputs, args)
	copy(c.donate, donate)
	copy(c.inputs[st.nArgs:], st.vars)
	clear(c.donate[st.nArgs:])
	if st.exe != nil {
		return st.exe.Execute(c.inputs, c.donate, 0)
	}
	// GoMLX hid the executable: run through the graph, which wraps every output in a tensor,
	// and take the buffers back out.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	ts := st.g.RunWithBuffers(c.inputs, c.donate, 0)
	outs = make([]backends.Buffer, len(ts))
	for i, t := range ts {
		if outs[i], err = t.DonateBuffer(st.backend, 0); err != nil {
			return nil, err
		}
	}
	return outs, nil
}
