package serve

// The scheduler is the one goroutine that touches the engine. It gives each request a row (a
// slot) of a Session for as long as it runs, up to Config.Parallel rows in all, and every step
// decodes one token for every running request in one batched Append. A request that arrives
// while others decode waits in the queue and joins at the next step; a request whose context
// is done (client gone, timeout, stop string) gives its row back before the next step.
//
// Two measured costs shape it (benchmarks/SERVE.md):
//
//   - A step computes every row of its session, empty ones too: a 16-row step costs about 4
//     one-row steps of the 15M shape, 13 of the shipped model. So the decoding session has as many rows as the running
//     requests need, rounded up to a power of two: when more run than it has rows, they move
//     into a larger session (Session.CopyRow), and when three quarters of its rows are empty,
//     into a smaller one.
//   - A step pads every row to its longest chunk: a joining prompt of 13 tokens fed beside 15
//     decoding rows would make all 16 compute 16 positions. So joining requests feed their
//     prompts (in chunks of Config.Chunk tokens) in a prefill session of their own (grown
//     the same way as more join), in the same step as the others' decoding, and move into the
//     decoding session once their prompt is in, with their first token sampled.
//
// Requests talk to it over channels: jobs come in through the queue, tokens go out through
// each job's events channel, which is buffered for every token the job may receive, so that a
// slow client never holds up the others.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/posformer/posformer/engine"
)

// Job is one generation request as the scheduler sees it.
type Job struct {
	ctx     context.Context // done: free the row
	prompt  []int
	max     int // tokens to generate at most (>= 1)
	sampler *engine.Sampler
	stop    []int // sampling one of these ends the job (not sent)
	// events receives each generated token, then one final event. Its capacity is max+1.
	events chan Event
}

// Event is a generated token, or the end of a job: Finish is "stop" (a stop token) or
// "length" (max tokens or the context), or Err is set.
type Event struct {
	Token  int
	Finish string
	Err    error
}

// NewJob is a request to continue prompt by up to max tokens (>= 1) drawn by sm, ending early
// when it samples one of stop (not sent) or when ctx is done (which frees its row).
func NewJob(ctx context.Context, prompt []int, max int, sm *engine.Sampler, stop []int) *Job {
	return &Job{ctx: ctx, prompt: prompt, max: max, sampler: sm, stop: stop, events: make(chan Event, max+1)}
}

// Events delivers each generated token, then one final event (Finish or Err set). It never
// blocks the scheduler: it holds every event the job may receive.
func (j *Job) Events() <-chan Event { return j.events }

// slot is the state of a running request.
type slot struct {
	j         *Job
	id        int // its number among the Config.Parallel slots, fixed while it runs (Slots)
	fed       int // prompt tokens already in the cache
	pos       int // position of the next token fed (once the prompt is in)
	next      int // the token sampled last, fed at pos by the next step
	generated int
}

// pool is a session and the requests in its rows (nil: a free row).
type pool struct {
	sess *engine.Session
	rows []*slot
}

func (p *pool) busy() int {
	n := 0
	for _, r := range p.rows {
		if r != nil {
			n++
		}
	}
	return n
}

// ErrShutdown ends the jobs that run or wait when the scheduler stops.
var ErrShutdown = errors.New("the server is shutting down")

// Config is how many requests a scheduler runs at once and how it feeds their prompts.
type Config struct {
	Parallel int // rows at most, both sessions together (>= 1): requests decoded at once
	Queue    int // jobs that may wait for a row; past that Submit refuses
	Chunk    int // prompt tokens a joining request feeds per step (>= 1)
	// StepDelay slows every step down, so that tests can watch requests while they run.
	StepDelay time.Duration
	// ContextShift, when not nil, lets a row generate past the context: when its cache is
	// full it drops old tokens after the sinks (engine.ContextShift), each row on its own.
	ContextShift *engine.ContextShift
}

// Scheduler owns the engine and its sessions.
type Scheduler struct {
	e        *engine.Engine
	dec      pool // requests decoding
	pre      pool // requests feeding their prompt (sess nil when none)
	parallel int  // rows at most, both pools together
	chunk    int  // prompt tokens a row feeds per step
	limit    int  // tokens a row holds at most
	shift    *engine.ContextShift

	queue chan *Job // waiting jobs; its capacity is Config.Queue
	quit  chan struct{}
	done  chan struct{}
	// delay slows every step down, so that tests can watch requests while they run.
	delay time.Duration

	busy    atomic.Int32 // rows in use
	ids     []bool       // slot numbers in use (the scheduler goroutine's)
	view    atomic.Pointer[[]SlotState]
	size    atomic.Int32 // rows of the decoding session
	steps   atomic.Int64 // decoding steps
	resizes atomic.Int64 // sessions replaced by a larger or smaller one
}

// NewScheduler starts the scheduler goroutine on e, which it then owns (an engine serves one
// scheduler); Stop ends it.
func NewScheduler(e *engine.Engine, c Config) *Scheduler {
	s := &Scheduler{
		e: e, parallel: c.Parallel, chunk: c.Chunk, limit: e.SequenceLimit(), delay: c.StepDelay, shift: c.ContextShift,
		queue: make(chan *Job, c.Queue), quit: make(chan struct{}), done: make(chan struct{}),
	}
	s.ids = make([]bool, c.Parallel)
	s.reset()
	go s.run()
	return s
}

// SlotState is what a slot is doing, as llama-server's GET /slots shows it.
type SlotState struct {
	ID         int
	Processing bool
	Tokens     int // tokens in its cache: prompt fed so far, then prompt and generated
	Generated  int
	Max        int // tokens the request may generate at most
}

// Slots is the state of each of the Config.Parallel slots, as of the last step (or the last
// request that ended). A running request keeps its slot number from admission to its end,
// though the scheduler moves its row between sessions.
func (s *Scheduler) Slots() []SlotState {
	return slices.Clone(*s.view.Load())
}

// publish records the slots' state for Slots; the scheduler goroutine calls it after every
// change readers may see.
func (s *Scheduler) publish() {
	view := make([]SlotState, len(s.ids))
	for i := range view {
		view[i].ID = i
	}
	for _, p := range []*pool{&s.dec, &s.pre} {
		for _, r := range p.rows {
			if r == nil {
				continue
			}
			tokens := r.pos
			if r.fed < len(r.j.prompt) {
				tokens = r.fed
			}
			view[r.id] = SlotState{ID: r.id, Processing: true, Tokens: tokens, Generated: r.generated, Max: r.j.max}
		}
	}
	s.view.Store(&view)
}

// Limit is the most tokens a request holds, prompt and generated together.
func (s *Scheduler) Limit() int { return s.limit }

// Busy is the number of rows in use: requests feeding their prompt or decoding.
func (s *Scheduler) Busy() int { return int(s.busy.Load()) }

// Queued is the number of jobs waiting for a row.
func (s *Scheduler) Queued() int { return len(s.queue) }

// SessionRows is the size of the decoding session: the rows each step computes.
func (s *Scheduler) SessionRows() int { return int(s.size.Load()) }

// Steps counts the decoding steps run so far.
func (s *Scheduler) Steps() int64 { return s.steps.Load() }

// Resizes counts the sessions replaced by a larger or smaller one so far.
func (s *Scheduler) Resizes() int64 { return s.resizes.Load() }

// SessionSizes are the row counts of the sessions a Scheduler of parallel rows uses: powers of
// two, and parallel itself.
func SessionSizes(parallel int) []int {
	var out []int
	for n := 1; n < parallel; n *= 2 {
		out = append(out, n)
	}
	return append(out, parallel)
}

// sizeFor is the session size that holds n rows.
func (s *Scheduler) sizeFor(n int) int { return min(s.parallel, engine.Bucket(max(n, 1))) }

// ErrQueueFull refuses a job when Config.Queue jobs wait for a row already.
var ErrQueueFull = errors.New("the queue is full")

// Submit queues j: it refuses with ErrQueueFull when the queue is full, ErrShutdown once the
// scheduler stopped, and an error naming the problem for a job no row can run (which would
// otherwise fail the running jobs with it at the next step).
func (s *Scheduler) Submit(j *Job) error {
	if err := s.check(j); err != nil {
		return err
	}
	select {
	case <-s.quit:
		return ErrShutdown
	default:
	}
	select {
	case s.queue <- j:
		return nil
	default:
		return ErrQueueFull
	}
}

// check refuses a job whose prompt is empty, does not fit in a row, or holds a token outside
// the vocabulary, or that asks for no token.
func (s *Scheduler) check(j *Job) error {
	vocab := s.e.Model.Config.VocabSize
	switch {
	case len(j.prompt) == 0:
		return errors.New("the prompt is empty: give at least one token")
	case len(j.prompt) > s.limit:
		return fmt.Errorf("the prompt is %d tokens but a row holds %d; shorten it", len(j.prompt), s.limit)
	case j.max < 1:
		return fmt.Errorf("a job generates at least one token, not %d", j.max)
	}
	for _, id := range j.prompt {
		if id < 0 || id >= vocab {
			return fmt.Errorf("token id %d in the prompt is outside the vocabulary [0, %d)", id, vocab)
		}
	}
	return nil
}

// Stop ends the scheduler: running and queued jobs get ErrShutdown.
func (s *Scheduler) Stop() {
	select {
	case <-s.quit:
	default:
		close(s.quit)
	}
	<-s.done
}

func (s *Scheduler) run() {
	defer close(s.done)
	for {
		var first *Job
		if s.busy.Load() == 0 {
			select { // idle: wait for work without spinning
			case first = <-s.queue:
			case <-s.quit:
				s.shutdown()
				return
			}
		}
		select {
		case <-s.quit:
			s.shutdown()
			return
		default:
		}
		err := s.dropCancelled()
		switch {
		case err == nil:
			err = s.admit(first)
		case first != nil: // taken from the queue, never admitted
			first.events <- Event{Err: err}
		}
		if err == nil && s.busy.Load() > 0 {
			time.Sleep(s.delay)
			err = s.step()
		}
		if err != nil {
			s.failAll(err)
		}
	}
}

// admit takes first (if not nil) and as many waiting jobs as may join under Config.Parallel into
// the prefill session, growing it if they do not fit. Jobs whose client is gone already are
// dropped.
func (s *Scheduler) admit(first *Job) error {
	var joining []*Job
	if first != nil && first.ctx.Err() == nil {
		joining = append(joining, first)
	}
collect:
	for int(s.busy.Load())+len(joining) < s.parallel {
		select {
		case j := <-s.queue:
			if j.ctx.Err() == nil {
				joining = append(joining, j)
			}
		default:
			break collect
		}
	}
	if len(joining) == 0 {
		return nil
	}
	switch need := s.pre.busy() + len(joining); {
	case s.pre.sess == nil:
		n := s.sizeFor(need)
		s.pre = pool{sess: s.e.NewSession(n), rows: make([]*slot, n)}
	case need > len(s.pre.rows):
		if err := s.resize(&s.pre, s.sizeFor(need)); err != nil {
			for _, j := range joining {
				j.events <- Event{Err: err}
			}
			return err
		}
	}
	for i := range s.pre.rows {
		if len(joining) > 0 && s.pre.rows[i] == nil {
			id := slices.Index(s.ids, false) // one is free: fewer than Parallel rows are busy
			s.ids[id] = true
			s.pre.rows[i] = &slot{j: joining[0], id: id}
			joining = joining[1:]
			s.busy.Add(1)
		}
	}
	s.publish()
	return nil
}

// dropCancelled frees the rows of jobs whose context is done.
func (s *Scheduler) dropCancelled() error {
	for _, p := range []*pool{&s.dec, &s.pre} {
		for i, r := range p.rows {
			if r != nil && r.j.ctx.Err() != nil {
				if err := s.free(p, i); err != nil {
					return err
				}
			}
		}
	}
	return s.shrink()
}

// free empties row i of p for the next job.
func (s *Scheduler) free(p *pool, i int) error {
	s.ids[p.rows[i].id] = false
	p.rows[i] = nil
	s.busy.Add(-1)
	s.publish()
	return p.sess.FreeRow(i)
}

// step feeds the next prompt chunk of every joining request (moving those whose prompt is in
// to the decoding session) and decodes one token for every decoding request. A panic in the
// engine fails the running jobs instead of the server.
func (s *Scheduler) step() (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("internal error in a decoding step: %v", p)
		}
	}()
	if s.pre.sess != nil {
		if err := s.prefill(); err != nil {
			return err
		}
	}
	if s.dec.busy() > 0 {
		if err := s.decode(); err != nil {
			return err
		}
	}
	s.publish()
	return s.shrink()
}

// prefill feeds a chunk of each joining prompt; a prompt that is in gets its first token and
// its row moves to the decoding session.
func (s *Scheduler) prefill() error {
	p := &s.pre
	n := len(p.rows)
	tokens, positions := make([][]int, n), make([][]int, n)
	for i, r := range p.rows {
		if r != nil {
			k := min(s.chunk, len(r.j.prompt)-r.fed)
			tokens[i], positions[i] = r.j.prompt[r.fed:r.fed+k], span(r.fed, k)
		}
	}
	last, err := p.sess.AppendLast(tokens, positions)
	if err != nil {
		return fmt.Errorf("prefill step: %w", err)
	}
	for i, r := range p.rows {
		if r == nil {
			continue
		}
		if r.fed += len(tokens[i]); r.fed < len(r.j.prompt) {
			continue // more prompt to feed
		}
		r.pos = len(r.j.prompt)
		if finish := s.sample(p, i, last[i]); finish != "" {
			if err := s.finish(p, i, finish); err != nil {
				return err
			}
			continue
		}
		if err := s.move(i); err != nil {
			return err
		}
	}
	if p.busy() == 0 {
		p.sess.Close()
		s.pre = pool{}
	}
	return nil
}

// move takes row i of the prefill session into a free row of the decoding session, growing
// that session if it is full.
func (s *Scheduler) move(i int) error {
	if need := s.dec.busy() + 1; need > len(s.dec.rows) {
		if err := s.resize(&s.dec, s.sizeFor(need)); err != nil {
			return err
		}
	}
	to := slices.Index(s.dec.rows, nil)
	if err := s.pre.sess.CopyRow(i, s.dec.sess, to); err != nil {
		return fmt.Errorf("moving a request to the decoding session: %w", err)
	}
	s.dec.rows[to], s.pre.rows[i] = s.pre.rows[i], nil
	return s.pre.sess.FreeRow(i)
}

// decode runs one batched step of the decoding session.
func (s *Scheduler) decode() error {
	p := &s.dec
	n := len(p.rows)
	tokens, positions := make([][]int, n), make([][]int, n)
	for i, r := range p.rows {
		if r == nil {
			continue
		}
		if r.pos >= s.limit && s.shift != nil {
			// The row is full: shift it; positions are slots, so the token goes to the first
			// free one.
			keep, discard, err := s.shift.Resolve(s.limit, len(r.j.prompt))
			if err == nil {
				err = p.sess.Shift(i, keep, discard)
			}
			if err != nil {
				return fmt.Errorf("context shift: %w", err)
			}
			r.pos -= discard
		}
		tokens[i], positions[i] = []int{r.next}, []int{r.pos}
	}
	last, err := p.sess.AppendLast(tokens, positions)
	if err != nil {
		return fmt.Errorf("decoding step: %w", err)
	}
	s.steps.Add(1)
	for i, r := range p.rows {
		if r == nil {
			continue
		}
		r.pos++
		if finish := s.sample(p, i, last[i]); finish != "" {
			if err := s.finish(p, i, finish); err != nil {
				return err
			}
		}
	}
	return nil
}

// sample picks row i's next token from its logits, with engine.Generate's rules in its order,
// so that a served continuation is the one cmd/infer prints: a stop token ends the job unsent,
// then the token goes out, then the job ends at max tokens or when the row is full. A job that
// ended gets its finish reason ("stop" or "length"), which the caller passes to finish.
func (s *Scheduler) sample(p *pool, i int, logits []float32) (finish string) {
	r := p.rows[i]
	tok := r.j.sampler.Next(logits)
	if slices.Contains(r.j.stop, tok) {
		return "stop"
	}
	r.j.events <- Event{Token: tok}
	r.generated++
	if r.generated >= r.j.max || (r.pos >= s.limit && s.shift == nil) {
		return "length"
	}
	r.next = tok
	return ""
}

// finish frees row i of p, then sends its job's final event: a client that reads the event
// and then asks the server (/health, or its next request) finds the row free already.
func (s *Scheduler) finish(p *pool, i int, reason string) error {
	j := p.rows[i].j
	err := s.free(p, i)
	if err != nil {
		j.events <- Event{Err: err}
		return err
	}
	j.events <- Event{Finish: reason}
	return nil
}

// shrink moves the decoding rows into a smaller session once three quarters of its rows are
// empty: a smaller session computes less per step.
func (s *Scheduler) shrink() error {
	if busy := s.dec.busy(); len(s.dec.rows) > 1 && busy <= len(s.dec.rows)/4 {
		return s.resize(&s.dec, s.sizeFor(busy))
	}
	return nil
}

// resize moves the rows of p (the decoding or the prefill pool) into a new session of n rows
// (n >= busy), packed at the front.
func (s *Scheduler) resize(p *pool, n int) error {
	next := pool{sess: s.e.NewSession(n), rows: make([]*slot, n)}
	k := 0
	for i, r := range p.rows {
		if r == nil {
			continue
		}
		if err := p.sess.CopyRow(i, next.sess, k); err != nil {
			next.sess.Close()
			return fmt.Errorf("moving %d running requests into a session of %d rows: %w", p.busy(), n, err)
		}
		next.rows[k] = r
		k++
	}
	p.sess.Close()
	*p = next
	if p == &s.dec {
		s.size.Store(int32(n))
	}
	s.resizes.Add(1)
	return nil
}

// reset drops both sessions and starts an empty one-row decoding session.
func (s *Scheduler) reset() {
	for _, p := range []*pool{&s.dec, &s.pre} {
		if p.sess != nil {
			p.sess.Close()
		}
	}
	s.pre = pool{}
	s.dec = pool{sess: s.e.NewSession(1), rows: make([]*slot, 1)}
	s.size.Store(1)
	s.busy.Store(0)
	clear(s.ids)
	s.publish()
}

// failAll ends every running job with err and starts afresh: after a failed step the caches'
// state is unknown.
func (s *Scheduler) failAll(err error) {
	for _, p := range []*pool{&s.dec, &s.pre} {
		for _, r := range p.rows {
			if r != nil {
				r.j.events <- Event{Err: err}
			}
		}
	}
	s.reset()
}

// shutdown ends running and queued jobs.
func (s *Scheduler) shutdown() {
	s.failAll(ErrShutdown)
	for {
		select {
		case j := <-s.queue:
			j.events <- Event{Err: ErrShutdown}
		default:
			return
		}
	}
}

func span(from, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = from + i
	}
	return out
}
