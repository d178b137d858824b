package main

// The scheduler is the one goroutine that touches the engine. It holds a Session and gives each
// request a row (a slot) for as long as it runs, up to --parallel rows. Every step is one
// batched Append: rows that joined feed the next chunk of their prompt, the others the token
// they sampled last, and each row whose prompt is complete samples one token from its logits.
// A request that arrives while others decode waits in the queue and takes a free row at the
// next step; a request whose context is done (client gone, timeout, stop string) gives its row
// back before the next step.
//
// A step computes every row of the session, empty ones too (a 16-row step costs the 15M model
// about 7 one-row steps, see benchmarks/SERVE.md). So the session has as many rows as the
// requests need, rounded up to a power of two (at most --parallel): when more requests run
// than it has rows, the running rows move into a larger session (Session.CopyRow), and when
// three quarters of its rows are empty, into a smaller one.
//
// The scheduler speaks tokens only; text, stop strings and the wire format are the handlers'
// (server.go). Requests talk to it over channels: jobs come in through the queue, tokens go
// out through each job's events channel, which is buffered for every token the job may
// receive, so that a slow client never holds up the others.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/posformer/posformer/engine"
)

// job is one generation request as the scheduler sees it.
type job struct {
	ctx     context.Context // done: free the row
	prompt  []int
	max     int // tokens to generate at most (>= 1)
	sampler *engine.Sampler
	stop    []int // sampling one of these ends the job (not sent)
	// events receives each generated token, then one final event. Its capacity is max+1.
	events chan event
}

// event is a generated token, or the end of a job: finish is "stop" (a stop token) or
// "length" (max tokens or the context), or err is set.
type event struct {
	token  int
	finish string
	err    error
}

func newJob(ctx context.Context, prompt []int, max int, sm *engine.Sampler, stop []int) *job {
	return &job{ctx: ctx, prompt: prompt, max: max, sampler: sm, stop: stop, events: make(chan event, max+1)}
}

// slot is the state of a busy row.
type slot struct {
	j         *job
	fed       int // prompt tokens already in the cache
	pos       int // position of the next token fed (once the prompt is in)
	next      int // the token sampled last, fed at pos by the next step
	generated int
}

var errShutdown = errors.New("the server is shutting down")

// scheduler owns the engine and its session.
type scheduler struct {
	e        *engine.Engine
	sess     *engine.Session
	rows     []*slot // one per session row; nil when free
	parallel int     // rows at most
	chunk    int     // prompt tokens a row feeds per step
	limit    int     // tokens a row holds at most

	queue chan *job // waiting jobs; its capacity is --queue
	quit  chan struct{}
	done  chan struct{}

	busy atomic.Int32 // rows in use, for /health
	size atomic.Int32 // rows of the session, for /health
	// delay slows every step down, so that tests can watch requests while they run.
	delay time.Duration

	steps   atomic.Int64 // Append calls made, for tests
	resizes atomic.Int64 // sessions replaced by a larger or smaller one, for tests
}

// newScheduler starts the scheduler goroutine; stop ends it.
func newScheduler(e *engine.Engine, parallel, queue, chunk int, delay time.Duration) *scheduler {
	s := &scheduler{
		e: e, parallel: parallel, chunk: chunk, limit: e.SequenceLimit(), delay: delay,
		queue: make(chan *job, queue), quit: make(chan struct{}), done: make(chan struct{}),
	}
	s.reset(1)
	go s.run()
	return s
}

// sessionSizes are the row counts of the sessions a scheduler of parallel rows uses: powers of
// two, and parallel itself.
func sessionSizes(parallel int) []int {
	var out []int
	for n := 1; n < parallel; n *= 2 {
		out = append(out, n)
	}
	return append(out, parallel)
}

// sizeFor is the session size that holds n busy rows.
func (s *scheduler) sizeFor(n int) int { return min(s.parallel, engine.Bucket(max(n, 1))) }

// reset starts an empty session of n rows.
func (s *scheduler) reset(n int) {
	if s.sess != nil {
		s.sess.Close()
	}
	s.sess, s.rows = s.e.NewSession(n), make([]*slot, n)
	s.size.Store(int32(n))
}

// resize moves the busy rows into a new session of n rows (n >= busy), packed at the front.
func (s *scheduler) resize(n int) error {
	next := s.e.NewSession(n)
	rows := make([]*slot, n)
	k := 0
	for i, r := range s.rows {
		if r == nil {
			continue
		}
		if err := s.sess.CopyRow(i, next, k); err != nil {
			next.Close()
			return fmt.Errorf("moving %d running requests into a session of %d rows: %w", s.busy.Load(), n, err)
		}
		rows[k] = r
		k++
	}
	s.sess.Close()
	s.sess, s.rows = next, rows
	s.size.Store(int32(n))
	s.resizes.Add(1)
	return nil
}

// submit queues j, or reports false when the queue is full.
func (s *scheduler) submit(j *job) bool {
	select {
	case <-s.quit:
		return false
	default:
	}
	select {
	case s.queue <- j:
		return true
	default:
		return false
	}
}

// stop ends the scheduler: running and queued jobs get errShutdown.
func (s *scheduler) stop() {
	select {
	case <-s.quit:
	default:
		close(s.quit)
	}
	<-s.done
}

func (s *scheduler) run() {
	defer close(s.done)
	for {
		var first *job
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
		if err := s.dropCancelled(); err != nil {
			s.failAll(err)
		}
		if err := s.admit(first); err != nil {
			s.failAll(err)
			continue
		}
		if s.busy.Load() == 0 {
			continue
		}
		if err := s.step(); err != nil {
			s.failAll(err)
			continue
		}
		// Three quarters empty: a smaller session computes less per step.
		if busy := int(s.busy.Load()); len(s.rows) > 1 && busy <= len(s.rows)/4 {
			if err := s.resize(s.sizeFor(busy)); err != nil {
				s.failAll(err)
			}
		}
	}
}

// admit takes first (if not nil) and waiting jobs, as many as there are rows left under
// --parallel, grows the session if they do not fit, and gives each a free row. Jobs whose
// client is gone already are dropped.
func (s *scheduler) admit(first *job) error {
	var joining []*job
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
	if need := int(s.busy.Load()) + len(joining); need > len(s.rows) {
		if err := s.resize(s.sizeFor(need)); err != nil {
			for _, j := range joining {
				j.events <- event{err: err}
			}
			return err
		}
	}
	for i := range s.rows {
		if len(joining) == 0 {
			break
		}
		if s.rows[i] == nil {
			s.rows[i] = &slot{j: joining[0]}
			joining = joining[1:]
			s.busy.Add(1)
		}
	}
	return nil
}

// dropCancelled frees the rows of jobs whose context is done.
func (s *scheduler) dropCancelled() error {
	for i, r := range s.rows {
		if r != nil && r.j.ctx.Err() != nil {
			if err := s.free(i); err != nil {
				return err
			}
		}
	}
	return nil
}

// free empties row i for the next job.
func (s *scheduler) free(i int) error {
	s.rows[i] = nil
	s.busy.Add(-1)
	return s.sess.FreeRow(i)
}

// finish ends row i's job with reason and frees the row.
func (s *scheduler) finish(i int, reason string) error {
	s.rows[i].j.events <- event{finish: reason}
	return s.free(i)
}

// failAll ends every running job with err and starts a fresh session: after a failed step the
// cache's state is unknown.
func (s *scheduler) failAll(err error) {
	for i, r := range s.rows {
		if r != nil {
			r.j.events <- event{err: err}
			s.rows[i] = nil
			s.busy.Add(-1)
		}
	}
	s.reset(1)
}

// shutdown ends running and queued jobs.
func (s *scheduler) shutdown() {
	s.failAll(errShutdown)
	for {
		select {
		case j := <-s.queue:
			j.events <- event{err: errShutdown}
		default:
			return
		}
	}
}

// step runs one batched Append and hands each row its token. A panic in the engine fails the
// running jobs instead of the server.
func (s *scheduler) step() (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("internal error in a decoding step: %v", p)
		}
	}()
	time.Sleep(s.delay)
	n := len(s.rows)
	tokens, positions := make([][]int, n), make([][]int, n)
	for i, r := range s.rows {
		switch {
		case r == nil:
		case r.fed < len(r.j.prompt):
			k := min(s.chunk, len(r.j.prompt)-r.fed)
			tokens[i], positions[i] = r.j.prompt[r.fed:r.fed+k], span(r.fed, k)
		default:
			tokens[i], positions[i] = []int{r.next}, []int{r.pos}
		}
	}
	last, err := s.sess.AppendLast(tokens, positions)
	if err != nil {
		return fmt.Errorf("decoding step: %w", err)
	}
	s.steps.Add(1)
	for i, r := range s.rows {
		if r == nil {
			continue
		}
		if r.fed < len(r.j.prompt) {
			r.fed += len(tokens[i])
			if r.fed < len(r.j.prompt) {
				continue // more prompt to feed
			}
			r.pos = len(r.j.prompt)
		} else {
			r.pos++
		}
		if err := s.sample(i, last[i]); err != nil {
			return err
		}
	}
	return nil
}

// sample picks row i's next token from its logits, with engine.Generate's rules in its order,
// so that a served continuation is the one cmd/infer prints: a stop token ends the job unsent,
// then the token goes out, then the job ends at max tokens or when the row is full.
func (s *scheduler) sample(i int, logits []float32) error {
	r := s.rows[i]
	tok := r.j.sampler.Next(logits)
	if slices.Contains(r.j.stop, tok) {
		return s.finish(i, "stop")
	}
	r.j.events <- event{token: tok}
	r.generated++
	if r.generated >= r.j.max || r.pos >= s.limit {
		return s.finish(i, "length")
	}
	r.next = tok
	return nil
}

func span(from, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = from + i
	}
	return out
}
