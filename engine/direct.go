package engine

// Decoding steps run the compiled graph directly. GoMLX's context.Exec, on every call, looks the
// graph up by the arguments' shapes, walks every variable of the context to hand its buffer
// over and wraps the call in panic recovery; for a small model that bookkeeping costs as much
// as the step's arithmetic. The first call of each KV-cache graph goes through context.Exec
// (which compiles it and reports the graph); later calls reuse the graph with the variables'
// buffers listed once, by parameter handle. The engine's variables never change after loading,
// which is what makes the list valid for the engine's life.

import (
	"fmt"
	"sync"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// direct is one compiled graph with its variables' buffers in parameter order.
type direct struct {
	g     *graph.Graph
	nArgs int
	vars  []backends.Buffer // at handles nArgs.. (variables)
	pool  sync.Pool         // []backends.Buffer + []bool of one call
}

type directCall struct {
	inputs []backends.Buffer
	donate []bool
}

// newDirect lists the variables of g (every parameter past the first nArgs) by handle.
func (e *Engine) newDirect(g *graph.Graph, nArgs int) (*direct, error) {
	byName := map[string]*tensors.Tensor{}
	for v := range e.Ctx.IterVariables() {
		value, err := v.Value()
		if err != nil {
			return nil, err
		}
		byName[v.ParameterName()] = value
	}
	d := &direct{g: g, nArgs: nArgs}
	for h := nArgs; h < g.NumParameters(); h++ {
		name := g.GetParameterByHandle(graph.ParameterHandle(h)).GetParameterName()
		value, ok := byName[name]
		if !ok {
			return nil, fmt.Errorf("parameter %d (%s) of graph %s is not a variable", h, name, g.Name())
		}
		buf, err := value.Buffer(e.Backend, 0)
		if err != nil {
			return nil, fmt.Errorf("variable %s: %w", name, err)
		}
		d.vars = append(d.vars, buf)
	}
	n := g.NumParameters()
	d.pool.New = func() any { return &directCall{inputs: make([]backends.Buffer, n), donate: make([]bool, n)} }
	return d, nil
}

// run executes the graph on args (tensors, donated when donate[i]) and the variables.
func (d *direct) run(backend backends.Backend, args []*tensors.Tensor, donate []bool) (outs []*tensors.Tensor, err error) {
	c := d.pool.Get().(*directCall)
	defer d.pool.Put(c)
	for i, t := range args {
		if donate[i] {
			c.inputs[i], err = t.DonateBuffer(backend, 0)
		} else {
			c.inputs[i], err = t.Buffer(backend, 0)
		}
		if err != nil {
			return nil, err
		}
		c.donate[i] = donate[i]
	}
	copy(c.inputs[d.nArgs:], d.vars)
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	return d.g.RunWithBuffers(c.inputs, c.donate, 0), nil
}
