// Package freelist is the one kind of buffer reuse the CPU backend and its kernels need: a
// bounded free list of slices, guarded by a mutex. Unlike a sync.Pool it survives garbage
// collections: under a tight memory limit (cmd/infer sets one) the collector runs often, and a
// pool emptied at every cycle would turn each call's buffers into fresh garbage. Its bounds keep
// what it holds from growing with the largest burst of concurrent calls ever seen.
package freelist

import (
	"runtime"
	"slices"
	"sync"
)

// Config sets a List's bounds and how it hands out and allocates slices.
type Config[E any] struct {
	Max    int // the most slices kept
	Budget int // the most elements kept, their capacities summed (0: no bound but Max)

	// Exact: Get(n) takes only a kept slice of capacity n; otherwise the smallest of
	// capacity at least n.
	Exact bool

	// KeepLargest: past the bounds, Put drops the smallest slices (the new one included) rather
	// than the new one, and always keeps the largest even if it alone is over the budget (a
	// larger slice serves every caller a smaller one served).
	KeepLargest bool

	// Alloc makes a slice of n elements when none kept fits (nil: make([]E, n)).
	Alloc func(n int) []E

	// Free releases a slice the list drops past its bounds, or that Drain empties it of (nil:
	// left to the collector): the counterpart of an Alloc whose memory the collector does not
	// manage.
	Free func(s []E)
}

// List is a free list of slices of E. Its methods are safe to call from several goroutines.
type List[E any] struct {
	cfg  Config[E]
	mu   sync.Mutex
	free [][]E // by capacity, ascending
	held int   // their capacities summed
}

// New returns an empty list with the bounds of cfg.
func New[E any](cfg Config[E]) *List[E] {
	if cfg.Alloc == nil {
		cfg.Alloc = func(n int) []E { return make([]E, n) }
	}
	return &List[E]{cfg: cfg}
}

// Get returns a slice of n elements: a kept one that fits (see Config.Exact), taken off the
// list, or else a new one from Config.Alloc. A reused slice holds what it held before.
func (l *List[E]) Get(n int) []E {
	l.mu.Lock()
	i, _ := slices.BinarySearchFunc(l.free, n, func(s []E, n int) int { return cap(s) - n })
	if i < len(l.free) && (!l.cfg.Exact || cap(l.free[i]) == n) {
		s := l.free[i]
		l.free = slices.Delete(l.free, i, i+1)
		l.held -= cap(s)
		l.mu.Unlock()
		return s[:n]
	}
	l.mu.Unlock()
	return l.cfg.Alloc(n)
}

// Put hands s back for reuse. Past the bounds a slice is dropped (left to the collector): s
// itself, or with Config.KeepLargest the smallest ones.
func (l *List[E]) Put(s []E) {
	c := cap(s)
	if c == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	over := func(count, held int) bool {
		return count > l.cfg.Max || (l.cfg.Budget > 0 && held > l.cfg.Budget)
	}
	if !l.cfg.KeepLargest && over(len(l.free)+1, l.held+c) {
		l.release(s)
		return
	}
	i, _ := slices.BinarySearchFunc(l.free, c, func(s []E, c int) int { return cap(s) - c })
	l.free = slices.Insert(l.free, i, s)
	l.held += c
	for len(l.free) > 1 && over(len(l.free), l.held) {
		l.held -= cap(l.free[0])
		l.release(l.free[0])
		l.free = slices.Delete(l.free, 0, 1)
	}
}

// Drain drops every kept slice (through Config.Free).
func (l *List[E]) Drain() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.free {
		l.release(s)
	}
	l.free, l.held = nil, 0
}

// release hands a dropped slice, whole, to Config.Free.
func (l *List[E]) release(s []E) {
	if l.cfg.Free != nil {
		l.cfg.Free(s[:cap(s)])
	}
}

// Sizes returns the capacities of the slices kept, smallest first (for tests).
func (l *List[E]) Sizes() []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	sizes := make([]int, len(l.free))
	for i, s := range l.free {
		sizes[i] = cap(s)
	}
	return sizes
}

// PerCPU bounds a list of scratch buffers that a call's tasks take one per thread: one per CPU
// busy at a time, twice that for calls that overlap, and no fewer than 8.
var PerCPU = max(8, 2*runtime.NumCPU())
