package cpu

import (
	"math"
	"runtime"
	"runtime/debug"
	"slices"
	"testing"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// The pool keeps up to four idle arenas while they fit in a gigabyte, and always the largest:
// a run of ever larger arenas (longer and longer evaluations) leaves only the last.
func TestArenaPoolBounds(t *testing.T) {
	p := newArenaPool()
	for _, n := range []int{1 << 20, 2 << 20, 3 << 20, 4 << 20, 5 << 20} {
		p.Put(make([]byte, n))
	}
	if got := p.Sizes(); !slices.Equal(got, []int{2 << 20, 3 << 20, 4 << 20, 5 << 20}) {
		t.Fatalf("small arenas: kept %v, want the four largest", got)
	}
	if a := p.Get(3 << 20); len(a) != 3<<20 || cap(a) != 3<<20 {
		t.Errorf("Get(3 MiB) returned %d bytes of %d, want the smallest that fits", len(a), cap(a))
	}
	q := newArenaPool()
	for _, n := range []int{600 << 20, 700 << 20, 800 << 20, 1500 << 20} {
		q.Put(make([]byte, n))
	}
	if got := q.Sizes(); !slices.Equal(got, []int{1500 << 20}) {
		sizes := []int{}
		for _, n := range got {
			sizes = append(sizes, n>>20)
		}
		t.Errorf("large arenas: kept %v MiB, want only the 1500", sizes)
	}
}

// Finalized buffers come back by exact size, up to maxPooledBytes in all.
func TestBufferPoolBounds(t *testing.T) {
	p := newBufferPool()
	p.Put(make([]byte, 64))
	if b := p.Get(32); cap(b) != 32 {
		t.Errorf("Get(32) returned a buffer of capacity %d, want a new one of 32", cap(b))
	}
	if b := p.Get(64); cap(b) != 64 || len(p.Sizes()) != 0 {
		t.Errorf("Get(64) did not take the buffer of 64 back (kept %v)", p.Sizes())
	}
	p.Put(make([]byte, maxPooledBytes))
	p.Put(make([]byte, 8))
	if got := p.Sizes(); !slices.Equal(got, []int{maxPooledBytes}) {
		t.Errorf("kept %v, want only the first buffer (the second passes the budget)", got)
	}
}

// An arena does not count toward Go's soft memory limit (mapArena): 16 calls that each make
// 2 MiB of garbage, with an arena of at least 16 MiB, under a limit 16 MiB above what the process holds,
// collect about once per call or less (8 measured). On the Go heap the arena alone passed the
// limit and the collector ran about three times a call (49-51).
func TestArenaOutsideMemoryLimit(t *testing.T) {
	const n = 2048
	be := mustBackend(t, "threads=1")
	// Two outputs, the second a 2 MiB slice of the outer product: the garbage a call makes, as
	// the logits and activations a model's step returns are.
	exe := MustNewExec(be, func(x *Node) []*Node {
		outer := Mul(Reshape(x, n, 1), Reshape(x, 1, n))
		return []*Node{Add(ReduceMax(Transpose(outer, 0, 1), 0), ReduceSum(outer, 0)), Slice(outer, AxisRange(), AxisRange(0, 256))}
	})
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(i%7) - 3
	}
	in := tensors.FromValue(x)
	exe.MustExec(in) // compiles; the arena is mapped at this first call
	if sizes := be.arenas.Sizes(); len(sizes) == 0 || sizes[len(sizes)-1] < n*n*4 {
		t.Fatalf("the graph kept arenas of %v bytes, want one of at least %d: the test no longer measures an arena", sizes, n*n*4)
	}
	// The next call takes its arena afresh, under the limit: heap pages the dropped arena held
	// go back to the system, or the limit below would count them as held already.
	be.arenas.Drain()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(int64(ms.Sys-ms.HeapReleased) + 16<<20))
	gcs := ms.NumGC
	var got *tensors.Tensor
	for range 16 {
		got = exe.MustExec(in)[0]
	}
	runtime.ReadMemStats(&ms)
	if extra := ms.NumGC - gcs; extra > 16 {
		t.Errorf("16 calls with an arena of at least 16 MiB under a limit 16 MiB above the process started %d collections, want at most one a call", extra)
	}
	// The values are still right: column j of the outer product is x·x[j].
	sum := float32(0)
	for _, v := range x {
		sum += v
	}
	flat := tensors.MustCopyFlatData[float32](got)
	for j, v := range x {
		mx := float32(math.Inf(-1))
		for _, u := range x {
			mx = max(mx, u*v)
		}
		if want := mx + sum*v; math.Abs(float64(flat[j]-want)) > 1e-3*max(1, math.Abs(float64(want))) {
			t.Fatalf("output %d = %g, want %g", j, flat[j], want)
		}
	}
}
