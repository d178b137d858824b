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
	"reflect"
	"sync"
	"unsafe"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// direct is one compiled graph with its variables' buffers in parameter order.
type direct struct {
	g     *graph.Graph
	exe   backends.Executable // g's backend executable, nil if it could not be found
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
	d := &direct{g: g, exe: executableOf(g), nArgs: nArgs}
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

// runBuffers executes the graph on buffers and returns buffers: the decoding step's own path,
// which wraps nothing in tensors (a tensor per output and per input was most of a small
// model's garbage, about 80 allocations a token).
func (d *direct) runBuffers(args []backends.Buffer, donate []bool) ([]backends.Buffer, error) {
	c := d.pool.Get().(*directCall)
	defer d.pool.Put(c)
	copy(c.inputs, args)
	copy(c.donate, donate)
	copy(c.inputs[d.nArgs:], d.vars)
	clear(c.donate[d.nArgs:])
	return d.exe.Execute(c.inputs, c.donate, 0)
}

// executableOf returns the backend executable of a compiled graph. GoMLX (v0.26) keeps it in
// an unexported field and only offers Graph.RunWithBuffers, which wraps every output in a new
// tensor; reading the field lets decoding hand buffers to the backend directly. If a GoMLX
// version renames the field, this returns nil and decoding takes RunWithBuffers
// (TestDecodingRunsOnBuffers notices).
func executableOf(g *graph.Graph) backends.Executable {
	f := reflect.ValueOf(g).Elem().FieldByName("executable")
	if !f.IsValid() || f.Type() != reflect.TypeFor[backends.Executable]() {
		return nil
	}
	exe, _ := reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Interface().(backends.Executable)
	return exe
}
