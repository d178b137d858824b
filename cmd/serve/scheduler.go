package main

// The scheduler is the one goroutine that touches the engine. It holds a Session of --parallel
// rows and gives each request a row (a slot) for as long as it runs. Every step is one batched
// Append: rows that joined feed the next chunk of their prompt, the others the token they
// sampled last, and each row whose prompt is complete samples one token from its logits. A
// request that arrives while others decode waits in the queue and takes a free row at the next
// step; a request whose context is done (client gone, timeout, stop string) gives its row
// back before the next step.
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
	e     *engine.Engine
	sess  *engine.Session
	chunk int // prompt tokens a row feeds per step
	limit int // tokens a row holds at most

	queue chan *job // waiting jobs; its capacity is --queue
	quit  chan struct{}
	done  chan struct{}
	rows  []*slot

	busy  atomic.Int32 // rows in use, for /health
	steps atomic.Int64 // Append calls made, for tests and /health
}

// newScheduler starts the scheduler goroutine; stop ends it.
func newScheduler(e *engine.Engine, parallel, queue, chunk int) *scheduler {
	s := &scheduler{
		e: e, sess: e.NewSession(parallel), chunk: chunk, limit: e.SequenceLimit(),
		queue: make(chan *job, queue), quit: make(chan struct{}), done: make(chan struct{}),
		rows: make([]*slot, parallel),
	}
	go s.run()
	return s
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
		if s.busy.Load() == 0 {
			select { // idle: wait for work without spinning
			case j := <-s.queue:
				s.admit(j)
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
		s.dropCancelled()
		s.admitWaiting()
		if s.busy.Load() == 0 {
			continue
		}
		if err := s.step(); err != nil {
			s.failAll(err)
		}
	}
}

// admit gives j a free row, unless its client is gone already.
func (s *scheduler) admit(j *job) {
	if j.ctx.Err() != nil {
		return
	}
	for i, r := range s.rows {
		if r == nil {
			s.rows[i] = &slot{j: j}
			s.busy.Add(1)
			return
		}
	}
	// Only called with a free row.
	j.events <- event{err: errors.New("internal: no free row")}
}

// admitWaiting fills free rows from the queue without waiting.
func (s *scheduler) admitWaiting() {
	for int(s.busy.Load()) < len(s.rows) {
		select {
		case j := <-s.queue:
			s.admit(j)
		default:
			return
		}
	}
}

// dropCancelled frees the rows of jobs whose context is done.
func (s *scheduler) dropCancelled() {
	for i, r := range s.rows {
		if r != nil && r.j.ctx.Err() != nil {
			s.free(i)
		}
	}
}

// free empties row i for the next job.
func (s *scheduler) free(i int) {
	s.rows[i] = nil
	s.busy.Add(-1)
	if err := s.sess.FreeRow(i); err != nil {
		s.failAll(err)
	}
}

// finish ends row i's job with reason and frees the row.
func (s *scheduler) finish(i int, reason string) {
	s.rows[i].j.events <- event{finish: reason}
	s.free(i)
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
	s.sess = s.e.NewSession(len(s.rows))
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
		s.sample(i, last[i])
	}
	return nil
}

// sample picks row i's next token from its logits, with engine.Generate's rules in its order,
// so that a served continuation is the one cmd/infer prints: a stop token ends the job unsent,
// then the token goes out, then the job ends at max tokens or when the row is full.
func (s *scheduler) sample(i int, logits []float32) {
	r := s.rows[i]
	tok := r.j.sampler.Next(logits)
	if slices.Contains(r.j.stop, tok) {
		s.finish(i, "stop")
		return
	}
	r.j.events <- event{token: tok}
	r.generated++
	switch {
	case r.generated >= r.j.max, r.pos >= s.limit:
		s.finish(i, "length")
	default:
		r.next = tok
	}
}

func span(from, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = from + i
	}
	return out
}
