package cpu

import "testing"

// The pool keeps up to four idle arenas while they fit in a gigabyte, and always the largest:
// a run of ever larger arenas (longer and longer evaluations) leaves only the last.
func TestArenaPoolBounds(t *testing.T) {
	var p arenaPool
	for _, n := range []int{1 << 20, 2 << 20, 3 << 20, 4 << 20, 5 << 20} {
		p.put(make([]byte, n))
	}
	if len(p.free) != 4 || len(p.free[0]) != 5<<20 || len(p.free[3]) != 2<<20 {
		t.Fatalf("small arenas: kept %d, want the four largest", len(p.free))
	}
	if a := p.get(3 << 20); len(a) != 3<<20 {
		t.Errorf("get(3 MiB) returned %d bytes, want the smallest that fits", len(a))
	}
	var q arenaPool
	for _, n := range []int{600 << 20, 700 << 20, 800 << 20, 1500 << 20} {
		q.put(make([]byte, n))
	}
	if len(q.free) != 1 || len(q.free[0]) != 1500<<20 {
		sizes := []int{}
		for _, a := range q.free {
			sizes = append(sizes, len(a)>>20)
		}
		t.Errorf("large arenas: kept %v MiB, want only the 1500", sizes)
	}
}
