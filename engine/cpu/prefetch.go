package cpu

// Weights fetched ahead while decoding. A decoding step alternates products that stream their
// weights from memory, split over the threads, with short serial stretches on the calling
// thread (norms, x quantized, the cache write), during which the other threads wait and the
// memory bus idles. After each such product (quantized or float32), the workers are handed a
// hint: each starts fetching into its cache the rows of the next product that its own run of
// tasks (pool.runRanges) will read, then those the calling thread's run will, and stops at the
// next job. The calling thread does not wait for them, and nothing is computed: only when the
// data arrives changes. For float32 weights the gain is small: decoding 1.02-1.03x faster
// (110M and 15M shapes, the median of 18 pairs of runs alternated in one process).

import (
	"sync/atomic"

	"github.com/posformer/posformer/engine/cpu/kernels"
)

// prefetchBudget bounds what a worker fetches for one product: about its L2. Lines pushed out of
// the L2 land in the L3, so the bound matters little: with 110M Q4_0 the products' time with no
// fetching was 898 ms over 300 tokens, with 192 KB to 3 MB 670-850 ms, no size ahead of another
// beyond this host's spread (step timers, five alternated runs each).
const prefetchBudget = 1 << 20

// prefetchChunk is how much a worker fetches between looks for the next job.
const prefetchChunk = 4 << 10

// weightPrefetch is a decoding-sized product step (one product, or a group of siblings) as the
// step before it prefetches for it: where its members' weights lie and how its tasks cut them.
type weightPrefetch struct {
	sources []prefetchSource
	tasks   int // the step's tasks, all members together
	next    *weightPrefetch
}

// prefetchSource is one member of a product step as a hint fetches it: the slots of its
// weights' values and scales (-1: none, as float32 weights have), its first task in the step and
// its tasks, and its n rows cut rows a task.
type prefetchSource struct {
	values, scales        int
	first, tasks, rows, n int
}

// registerPrefetch records a decoding-sized product step that runs its tasks across the pool
// with runRanges, in step order, so that Compile can link each to the next one (linkPrefetches).
func (e *Executable) registerPrefetch(sources []prefetchSource) *weightPrefetch {
	last := sources[len(sources)-1]
	w := &weightPrefetch{sources: sources, tasks: last.first + last.tasks}
	e.prefetches = append(e.prefetches, w)
	return w
}

// quantPrefetch registers a step of quantized products with the tasks first[i] to first[i+1]
// for plans[i], when it is decoding-sized (x of at most four rows) and runs across the pool.
func (e *Executable) quantPrefetch(plans []*quantDotPlan, first []int) *weightPrefetch {
	macs := 0
	for _, p := range plans {
		if p.M > 4 || p.gemm {
			return nil
		}
		macs += p.M * p.N * p.K
	}
	if quantOnCaller(e.backend.pool, macs) {
		return nil // run on the calling thread: the workers' caches do not serve it
	}
	sources := make([]prefetchSource, len(plans))
	for i, p := range plans {
		sources[i] = prefetchSource{values: p.iq, scales: p.id, first: first[i], tasks: p.tasks, rows: p.rows, n: p.N}
	}
	return e.registerPrefetch(sources)
}

// linkPrefetches points each registered step at the next one.
func (e *Executable) linkPrefetches() {
	for i := 0; i+1 < len(e.prefetches); i++ {
		e.prefetches[i].next = e.prefetches[i+1]
	}
}

// prefetchHints counts the hints handed to a pool so far (for tests).
var prefetchHints atomic.Int64

// hintNext hands the pool's workers the next product's weights, if w has a next and the pool
// has workers.
func (w *weightPrefetch) hintNext(pool *pool, f *frame) {
	if w == nil || w.next == nil || len(pool.workers) == 0 {
		return
	}
	nx := w.next
	hj := &hintJob{}
	j, h := &hj.job, &hj.work
	j.prefetch = h
	h.tasks = nx.tasks
	for i, src := range nx.sources[:min(len(nx.sources), len(h.members))] {
		m := &h.members[i]
		m.q = f.slots[src.values]
		if src.scales >= 0 {
			m.d = f.slots[src.scales]
		}
		m.first, m.tasks, m.rows, m.n = src.first, src.tasks, src.rows, src.n
		h.count++
	}
	if pool.hint(j) {
		prefetchHints.Add(1)
	}
}

// hintJob is a hint's job and its work, one allocation.
type hintJob struct {
	job
	work prefetchWork
}

// prefetchWork is what a hint job fetches: the members' bytes of weights and of scales, and how
// their rows are cut into tasks.
type prefetchWork struct {
	members [3]prefetchMember
	count   int
	tasks   int
	fetch   func(b []byte) // kernels.Prefetch where nil (tests record the ranges)
}

type prefetchMember struct {
	q, d                  []byte // the matrix's values and scales ([rows, ...] each; d may be empty)
	first, tasks, rows, n int    // its first task in the job, its tasks, rows per task, rows
}

// run fetches what worker id of threads will read first, then what the calling thread (0) will,
// half the budget each, until stop reports a new job. The caller starts on the product at once,
// its first rows cold: fetched by the worker, they come from the worker's cache rather than from
// memory. A small gain against this host's spread: the products' time over 300 tokens of 110M
// Q4_0 (step timers, alternated runs) 751.7 → 678.8, 707.8 → 674.7 and 687.4 → 700.3 ms in three
// runs, Q8_0 845.9 → 852.8 and 888.6 → 827.5; fetching the caller's rows first was slower
// (735.1).
func (h *prefetchWork) run(id, threads int, stop func() bool) {
	if id == 0 {
		h.runFor(0, threads, prefetchBudget, stop)
		return
	}
	if h.runFor(id, threads, prefetchBudget/2, stop) {
		h.runFor(0, threads, prefetchBudget/2, stop)
	}
}

// runFor fetches up to budget bytes of thread id's run, in order; false if stop said to stop.
func (h *prefetchWork) runFor(id, threads, budget int, stop func() bool) bool {
	lo, hi := threadRun(h.tasks, id, threads)
	fetch := h.fetch
	if fetch == nil {
		fetch = kernels.Prefetch
	}
	for i := range h.count {
		m := &h.members[i]
		t0, t1 := max(lo, m.first), min(hi, m.first+m.tasks)
		if t0 >= t1 {
			continue
		}
		r0, r1 := (t0-m.first)*m.rows, min(m.n, (t1-m.first)*m.rows)
		qRow, dRow := len(m.q)/m.n, len(m.d)/m.n
		if qRow == 0 {
			continue
		}
		for r := r0; r < r1 && budget > 0; {
			rows := max(1, prefetchChunk/qRow)
			rows = min(rows, r1-r)
			fetch(m.q[r*qRow : (r+rows)*qRow])
			fetch(m.d[r*dRow : (r+rows)*dRow])
			budget -= rows * (qRow + dRow)
			r += rows
			if stop() {
				return false
			}
		}
	}
	return true
}
