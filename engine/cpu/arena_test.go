package cpu

import (
	"slices"
	"testing"
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
