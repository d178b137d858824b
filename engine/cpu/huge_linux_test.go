package cpu

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

// hugeRange covers exactly the whole 2 MiB pages inside a buffer, and nothing of small ones.
func TestHugeRange(t *testing.T) {
	const M = hugePage
	for _, c := range []struct {
		start  uintptr
		n      int
		lo, hi int
	}{
		{0, 4 * M, 0, 4 * M},
		{M, 4*M + 5, 0, 4 * M},
		{M + 64, 4 * M, M - 64, 4*M - 64},
		{M + 64, 2*M - 64, 0, 0}, // under two huge pages
		{64, 2 * M, M - 64, 2*M - 64},
		{64, 3 * M, M - 64, 3*M - 64},
		{64, M, 0, 0},
	} {
		lo, hi := hugeRange(c.start, c.n)
		if hi <= lo {
			lo, hi = 0, 0
		}
		if lo != c.lo || hi != c.hi {
			t.Errorf("hugeRange(%#x, %d) = [%d, %d), want [%d, %d)", c.start, c.n, lo, hi, c.lo, c.hi)
		}
		if hi > lo && ((c.start+uintptr(lo))%M != 0 || (c.start+uintptr(hi))%M != 0 || hi > c.n) {
			t.Errorf("hugeRange(%#x, %d) = [%d, %d) is not whole pages inside the buffer", c.start, c.n, lo, hi)
		}
	}
	// A large buffer from alloc is zero and writable whatever the kernel did with the advice.
	b := alloc(5 * M)
	for i := 0; i < len(b); i += 4096 {
		if b[i] != 0 {
			t.Fatalf("alloc: byte %d = %d", i, b[i])
		}
		b[i] = 1
	}
}

// A weight-sized buffer on the Go heap (under two huge pages, so hugePages leaves it) made by
// the backend ends on huge pages where the kernel can collapse memory (Linux 6.1 and later),
// its bytes and its neighbours' unchanged: /proc/self/smaps shows the mapping that holds it
// with huge pages over all of it.
func TestHugePagesAroundCollapses(t *testing.T) {
	neighbour := alloc(300 << 10)
	for i := range neighbour {
		neighbour[i] = byte(i * 7)
	}
	be := mustBackend(t, "")
	flat := make([]float32, 700<<10/4) // 700 KB, a 110M shape's attention matrix in Q8_0 is 627 KB
	for i := range flat {
		flat[i] = float32(i)
	}
	buf, err := be.BufferFromFlatData(0, flat, shapes.Make(dtypes.Float32, len(flat)))
	if err != nil {
		t.Fatal(err)
	}
	data := buf.(*Buffer).data
	if !hugePagesAround(data) {
		t.Skip("the kernel does not collapse memory into huge pages (MADV_COLLAPSE): nothing to check")
	}
	for i, x := range typed[float32](data) {
		if x != float32(i) {
			t.Fatalf("element %d = %g after the collapse", i, x)
		}
	}
	for i := range neighbour {
		if neighbour[i] != byte(i*7) {
			t.Fatalf("neighbouring byte %d changed", i)
		}
	}
	start := uintptr(unsafe.Pointer(&data[0]))
	need := (len(data) + hugePage - 1) / hugePage * hugePage >> 10
	// The Go runtime may return free heap pages beside the buffer to the kernel between the
	// collapse and the look at smaps, which splits the huge page again (seen once in about
	// fifteen runs on a loaded machine): collapse and look again, a few times.
	kb := anonHugeKB(t, start)
	for try := 0; try < 3 && kb < need; try++ {
		hugePagesAround(data)
		kb = anonHugeKB(t, start)
	}
	if kb < need {
		t.Errorf("the mapping holding the buffer has %d kB of huge pages, want at least the %d kB the buffer touches", kb, need)
	}
}

// anonHugeKB is the AnonHugePages of the mapping of /proc/self/smaps that contains addr.
func anonHugeKB(t *testing.T, addr uintptr) int {
	t.Helper()
	f, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skipf("no smaps: %v", err)
	}
	in := false
	for _, line := range strings.Split(string(f), "\n") {
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x ", &lo, &hi); n == 2 {
			in = lo <= addr && addr < hi
			continue
		}
		if rest, ok := strings.CutPrefix(line, "AnonHugePages:"); ok && in {
			kb, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			if err != nil {
				t.Fatalf("smaps line %q: %v", line, err)
			}
			return kb
		}
	}
	t.Fatalf("no mapping of /proc/self/smaps holds %#x", addr)
	return 0
}

// Buffers made from the host are collapsed when an executable first reads them without
// donating them (a model's weights), and only then; a donated one (a KV cache window) is not.
func TestHostBuffersCollapseOnFirstRead(t *testing.T) {
	be := mustBackend(t, "")
	n := 700 << 10 / 4
	shape := shapes.Make(dtypes.Float32, n)
	bld := be.Builder("first read")
	op := must[backends.Op](t)
	x := op(bld.Parameter("x", shape, nil))
	exe := must[backends.Executable](t)(bld.Compile([]backends.Op{op(bld.Add(x, x))}, nil))
	fromHost := func() *Buffer {
		buf, err := be.BufferFromFlatData(0, make([]float32, n), shape)
		if err != nil {
			t.Fatal(err)
		}
		return buf.(*Buffer)
	}
	weights, cache := fromHost(), fromHost()
	if !weights.hostMade.Load() || !cache.hostMade.Load() {
		t.Fatal("a buffer made from the host is not marked")
	}
	must[[]backends.Buffer](t)(exe.Execute([]backends.Buffer{weights}, nil, 0))
	must[[]backends.Buffer](t)(exe.Execute([]backends.Buffer{cache}, []bool{true}, 0))
	if weights.hostMade.Load() {
		t.Error("read without donating: still marked")
	}
	if !cache.hostMade.Load() {
		t.Error("donated: collapsed")
	}
	if hugePagesAround(fromHost().data) { // the kernel collapses memory: the weights must be on huge pages
		if kb := anonHugeKB(t, uintptr(unsafe.Pointer(&weights.data[0]))); kb < 2048 {
			t.Errorf("the weights' mapping has %d kB of huge pages", kb)
		}
	}
}
