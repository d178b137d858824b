package cpu

// The worker pool: goroutines started once per backend, never per op. An op that is worth
// splitting cuts its work into many small tasks and every participant (the caller included)
// pulls the next task from one atomic counter, so a core that is busy elsewhere or descheduled
// takes fewer tasks instead of stalling the step (a fixed half-and-half split does stall).
// Idle workers spin briefly, because ops come microseconds apart while decoding, then park.

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/posformer/posformer/engine/cpu/kernels"
)

// spinFor is how long an idle worker polls for the next job before parking: longer than the gap
// between two parallel ops of a decoding step, short enough not to burn a core between steps.
const spinFor = 200 * time.Microsecond

type job struct {
	fn    func(task int)
	n     int64
	next  atomic.Int64
	done  atomic.Int64
	fault atomic.Pointer[any] // the first panic of a task, re-raised in the caller
	// ranges, in runRanges' jobs: each thread's own run of tasks (nil: every thread claims
	// from next).
	ranges []taskRange
	// prefetch, in a hint's job (hint): what the workers fetch; such a job has no tasks.
	prefetch *prefetchWork
}

// rangedJob is a job with room for the ranges of a small pool, so that it stays one
// allocation; the other jobs stay small (a decoding step makes about a hundred).
type rangedJob struct {
	job
	inline [4]taskRange
}

// taskRange is a run of tasks [front, back) not yet claimed, packed in one word (front in the
// high half) so that its owner claiming from the front and a thief from the back agree on each
// task; alone on its cache line, which stays with its owner until someone steals.
type taskRange struct {
	fb atomic.Uint64
	_  [56]byte
}

// claim takes the task at the front (or, for a thief, at the back) of the range, or returns -1
// when none is left.
func (r *taskRange) claim(back bool) int64 {
	for {
		v := r.fb.Load()
		f, b := v>>32, v&0xffffffff
		if f >= b {
			return -1
		}
		next, task := (f+1)<<32|b, f
		if back {
			next, task = f<<32|(b-1), b-1
		}
		if r.fb.CompareAndSwap(v, next) {
			return int64(task)
		}
	}
}

type pool struct {
	busy    sync.Mutex // one job at a time; a second caller runs its tasks inline
	gen     atomic.Uint64
	current atomic.Pointer[job]
	workers []*worker
	quit    atomic.Bool
}

type worker struct {
	id     int // its thread number in a job (the caller is 0)
	parked atomic.Bool
	wake   chan struct{}
}

// newPool starts threads-1 workers (the caller is the last thread).
func newPool(threads int) *pool {
	p := &pool{}
	for i := range max(threads-1, 0) {
		w := &worker{id: i + 1, wake: make(chan struct{}, 1)}
		p.workers = append(p.workers, w)
		go p.loop(w)
	}
	return p
}

// threads is the number of goroutines that share a job.
func (p *pool) threads() int { return len(p.workers) + 1 }

// run calls fn(i) for every i in [0, n) across the pool and returns when all are done.
func (p *pool) run(n int, fn func(task int)) { p.start(n, fn, false) }

// runRanges is run for tasks that stream memory in order, a decoding step's rows of weights:
// each thread takes its own contiguous run of the tasks, front to back, and then steals from the
// back of the others' runs. Its reads stay one stream, and the counters it claims on stay in its
// own cache, where with one shared counter every task moved that line between the cores (110M
// Q4_0 decoding: 310-324 tokens a second with 8 tasks a product claimed from one counter,
// 336-357 with one task a thread). A thread that is descheduled still loses its run to the
// others, task by task, as with run.
func (p *pool) runRanges(n int, fn func(task int)) { p.start(n, fn, true) }

func (p *pool) start(n int, fn func(task int), ranged bool) {
	if n <= 0 {
		return
	}
	if n == 1 || len(p.workers) == 0 || !p.busy.TryLock() {
		for i := range n {
			fn(i)
		}
		return
	}
	defer p.busy.Unlock()
	var j *job
	if ranged {
		rj := &rangedJob{job: job{fn: fn, n: int64(n)}}
		j = &rj.job
		j.split(p.threads(), rj.inline[:])
	} else {
		j = &job{fn: fn, n: int64(n)}
	}
	p.current.Store(j)
	p.gen.Add(1)
	for _, w := range p.workers {
		if w.parked.Load() && w.parked.CompareAndSwap(true, false) {
			w.wake <- struct{}{}
		}
	}
	j.work(0)
	for spins := 0; j.done.Load() < j.n; spins++ {
		if spins > 64 {
			runtime.Gosched()
		}
	}
	if f := j.fault.Load(); f != nil {
		panic(*f) // on the caller's goroutine, where Execute turns it into an error
	}
}

// hint hands the spinning workers a job without tasks whose prefetch they run until the next
// job comes (prefetch.go); the caller goes on at once. Parked workers are left parked, and a
// pool busy with another caller's job is left alone. It reports whether it handed the job over.
func (p *pool) hint(j *job) bool {
	if len(p.workers) == 0 || !p.busy.TryLock() {
		return false
	}
	p.current.Store(j)
	p.gen.Add(1)
	p.busy.Unlock()
	return true
}

// work pulls tasks until none is left; id is the thread's number.
func (j *job) work(id int) {
	if j.ranges != nil {
		j.workRanges(id)
		return
	}
	for {
		i := j.next.Add(1) - 1
		if i >= j.n {
			return
		}
		j.task(int(i))
		j.done.Add(1)
	}
}

// split gives each of t threads its own run of the job's tasks, in order, in room if it holds
// them.
func (j *job) split(t int, room []taskRange) {
	j.ranges = room[:0]
	if t > len(room) {
		j.ranges = make([]taskRange, 0, t)
	}
	j.ranges = j.ranges[:t]
	for i := range t {
		lo, hi := threadRun(int(j.n), i, t)
		j.ranges[i].fb.Store(uint64(lo)<<32 | uint64(hi))
	}
}

// threadRun is thread id's own run [lo, hi) of n tasks split over t threads in order: what
// runRanges hands it first, and what a hint fetches for it (prefetch.go).
func threadRun(n, id, t int) (lo, hi int) {
	return n * id / t, n * (id + 1) / t
}

// workRanges runs the tasks of thread id's own range, then steals from the back of the others'.
func (j *job) workRanges(id int) {
	t := len(j.ranges)
	id %= t
	done := int64(0)
	for k := range t {
		r := &j.ranges[(id+k)%t]
		for {
			i := r.claim(k > 0)
			if i < 0 {
				break
			}
			j.task(int(i))
			done++
		}
	}
	if done > 0 {
		j.done.Add(done)
	}
}

// task runs one task; a panic is kept for the caller instead of ending the process from a
// worker goroutine.
func (j *job) task(i int) {
	defer func() {
		if r := recover(); r != nil {
			fault := r // declared here so that only a panic allocates
			j.fault.CompareAndSwap(nil, &fault)
		}
	}()
	j.fn(i)
}

func (p *pool) loop(w *worker) {
	seen := p.gen.Load()
	for !p.quit.Load() {
		if g := p.gen.Load(); g != seen {
			seen = g
			if j := p.current.Load(); j != nil {
				if j.prefetch != nil {
					j.prefetch.run(w.id, p.threads(), func() bool { return p.gen.Load() != g })
				}
				j.work(w.id)
			}
			continue
		}
		if !p.spin(seen) {
			// Park; re-check after announcing it so a job published meanwhile is not missed.
			w.parked.Store(true)
			if p.gen.Load() != seen || p.quit.Load() {
				if !w.parked.CompareAndSwap(true, false) {
					<-w.wake // the publisher already claimed us: take its token
				}
				continue
			}
			<-w.wake
		}
	}
}

// spin polls for a new generation for up to spinFor and reports whether one came. It does not
// yield to the scheduler: that costs more than the poll, and the goroutine is preemptible anyway.
func (p *pool) spin(seen uint64) bool {
	start := time.Now()
	for i := 0; ; i++ {
		if p.gen.Load() != seen || p.quit.Load() {
			return true
		}
		if i%256 == 255 && time.Since(start) > spinFor {
			return false
		}
		kernels.Pause()
	}
}

// close stops the workers.
func (p *pool) close() {
	p.quit.Store(true)
	p.gen.Add(1)
	for _, w := range p.workers {
		if w.parked.CompareAndSwap(true, false) {
			w.wake <- struct{}{}
		}
	}
}

// parallelFor splits [0, n) into chunks of at least grain and runs fn(lo, hi) on each across the
// pool (about 4 chunks per thread, so a slow thread takes fewer). Work below 2 grains runs inline.
func (p *pool) parallelFor(n, grain int, fn func(lo, hi int)) {
	if grain < 1 {
		grain = 1
	}
	chunks := min(n/grain, 4*p.threads())
	if chunks <= 1 {
		if n > 0 {
			fn(0, n)
		}
		return
	}
	size := (n + chunks - 1) / chunks
	chunks = (n + size - 1) / size
	p.run(chunks, func(c int) {
		lo := c * size
		fn(lo, min(lo+size, n))
	})
}
