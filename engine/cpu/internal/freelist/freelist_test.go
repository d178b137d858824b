package freelist

import (
	"slices"
	"testing"
)

// counting returns a config whose Alloc counts its calls.
func counting(cfg Config[float32], allocs *int) Config[float32] {
	cfg.Alloc = func(n int) []float32 { *allocs++; return make([]float32, n) }
	return cfg
}

// Put past Max drops the slice put; Get on an empty list allocates, and Get takes back what was
// kept, the most recently put first.
func TestBound(t *testing.T) {
	allocs := 0
	l := New(counting(Config[float32]{Max: 2}, &allocs))
	a, b, c := l.Get(8), l.Get(8), l.Get(8)
	if allocs != 3 {
		t.Fatalf("3 Gets on an empty list allocated %d times, want 3", allocs)
	}
	a[0], b[0], c[0] = 1, 2, 3
	l.Put(a)
	l.Put(b)
	l.Put(c) // past Max: dropped
	if got := l.Sizes(); !slices.Equal(got, []int{8, 8}) {
		t.Fatalf("kept %v, want two slices of 8", got)
	}
	if x := l.Get(8); x[0] != 2 {
		t.Errorf("Get returned the slice holding %g, want the last one kept (2)", x[0])
	}
	if x := l.Get(8); x[0] != 1 {
		t.Errorf("Get returned the slice holding %g, want 1", x[0])
	}
	if allocs != 3 {
		t.Errorf("Gets of kept slices allocated (%d allocations, want 3)", allocs)
	}
	l.Get(8)
	if allocs != 4 {
		t.Errorf("Get on the emptied list: %d allocations, want 4", allocs)
	}
}

// A Budget bounds the elements kept: a slice that would pass it is dropped.
func TestBudget(t *testing.T) {
	l := New(Config[byte]{Max: 10, Budget: 100})
	for _, n := range []int{60, 30, 20, 10} {
		l.Put(make([]byte, n))
	}
	if got := l.Sizes(); !slices.Equal(got, []int{10, 30, 60}) {
		t.Errorf("kept %v, want [10 30 60] (20 would pass the budget of 100)", got)
	}
	l.Put(make([]byte, 0)) // nothing to reuse
	if got := l.Sizes(); len(got) != 3 {
		t.Errorf("an empty slice was kept: %v", got)
	}
}

// Get takes the smallest slice that fits, cut to n; with Exact only one of capacity n.
func TestFit(t *testing.T) {
	allocs := 0
	l := New(counting(Config[float32]{Max: 4}, &allocs))
	for _, n := range []int{16, 64, 32} {
		l.Put(make([]float32, n))
	}
	if x := l.Get(20); len(x) != 20 || cap(x) != 32 {
		t.Errorf("Get(20) = len %d cap %d, want the slice of 32 cut to 20", len(x), cap(x))
	}
	if x := l.Get(100); len(x) != 100 || allocs != 1 {
		t.Errorf("Get(100) with nothing large enough: len %d, %d allocations, want a new one", len(x), allocs)
	}
	e := New(counting(Config[float32]{Max: 4, Exact: true}, &allocs))
	e.Put(make([]float32, 64))
	if e.Get(32); allocs != 2 || !slices.Equal(e.Sizes(), []int{64}) {
		t.Errorf("Exact: Get(32) took the slice of 64 (kept %v)", e.Sizes())
	}
	if x := e.Get(64); cap(x) != 64 || allocs != 2 {
		t.Errorf("Exact: Get(64) allocated instead of taking the slice of 64")
	}
}

// KeepLargest keeps the largest slices that fit the bounds, and the largest one always.
func TestKeepLargest(t *testing.T) {
	l := New(Config[byte]{Max: 2, Budget: 100, KeepLargest: true})
	for _, n := range []int{10, 20, 30} {
		l.Put(make([]byte, n))
	}
	if got := l.Sizes(); !slices.Equal(got, []int{20, 30}) {
		t.Errorf("kept %v, want the two largest [20 30]", got)
	}
	l.Put(make([]byte, 150))
	if got := l.Sizes(); !slices.Equal(got, []int{150}) {
		t.Errorf("kept %v, want only the 150 (over the budget alone, but the largest)", got)
	}
}

// Every slice the list drops reaches Free, whole, and only those: past Max, past the budget
// with KeepLargest, and all of them at Drain.
func TestFree(t *testing.T) {
	var freed []int
	l := New(Config[byte]{Max: 2, Free: func(s []byte) {
		if len(s) != cap(s) {
			t.Errorf("Free got %d of %d bytes, want the whole slice", len(s), cap(s))
		}
		freed = append(freed, cap(s))
	}})
	l.Put(make([]byte, 8))
	l.Put(make([]byte, 16)[:4])
	l.Put(make([]byte, 32)) // past Max: dropped
	if !slices.Equal(freed, []int{32}) {
		t.Fatalf("after a Put past Max freed %v, want [32]", freed)
	}
	l.Drain()
	slices.Sort(freed)
	if !slices.Equal(freed, []int{8, 16, 32}) || len(l.Sizes()) != 0 {
		t.Errorf("Drain freed %v and kept %v, want [8 16 32] freed and nothing kept", freed, l.Sizes())
	}

	freed = nil
	k := New(Config[byte]{Max: 4, Budget: 100, KeepLargest: true, Free: func(s []byte) { freed = append(freed, cap(s)) }})
	for _, n := range []int{30, 40, 50} {
		k.Put(make([]byte, n))
	}
	if !slices.Equal(freed, []int{30}) || !slices.Equal(k.Sizes(), []int{40, 50}) {
		t.Errorf("KeepLargest past the budget freed %v and kept %v, want [30] freed, [40 50] kept", freed, k.Sizes())
	}
}
