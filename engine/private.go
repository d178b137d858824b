package engine

// The two places where posformer reads GoMLX's unexported fields (v0.26), each because no
// exported API gives what it reads; both go when a GoMLX release exposes it. private_test.go
// pins what they read, so that an upgrade that renames a field fails a test rather than a user.

import (
	"reflect"
	"unsafe"

	"github.com/gomlx/gomlx/backends"
	. "github.com/gomlx/gomlx/pkg/core/graph"
)

// executableOf returns the backend executable of a compiled graph. GoMLX (v0.26) keeps it in an
// unexported field and only offers Graph.RunWithBuffers, which wraps every output in a new
// tensor; reading the field lets a step hand buffers to the backend directly. If a GoMLX version
// renames the field, this returns nil and steps take RunWithBuffers (TestPrivateFields
// notices).
func executableOf(g *Graph) backends.Executable {
	f := reflect.ValueOf(g).Elem().FieldByName("executable")
	if !f.IsValid() || f.Type() != reflect.TypeFor[backends.Executable]() {
		return nil
	}
	exe, _ := reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Interface().(backends.Executable)
	return exe
}

// dotGeneralAxes reads the axes a DotGeneral node was built with. GoMLX v0.26 keeps them in
// unexported fields, so they are read by reflection; TestPrivateFields pins them.
func dotGeneralAxes(node *Node) (lc, lb, rc, rb []int) {
	in := reflect.ValueOf(node).Elem().FieldByName("inputs").Elem().Elem()
	ints := func(name string) []int {
		f := in.FieldByName(name)
		out := make([]int, f.Len())
		for i := range out {
			out[i] = int(f.Index(i).Int())
		}
		return out
	}
	return ints("lhsContractingAxes"), ints("lhsBatchAxes"), ints("rhsContractingAxes"), ints("rhsBatchAxes")
}
