package serve

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/posformer/posformer/engine"
)

func greedy(t *testing.T) *engine.Sampler {
	t.Helper()
	sm, err := engine.NewSampler(engine.Sampling{Temp: 0, TopK: 40, TopP: 0.95, RepeatPenalty: 1.1, RepeatLastN: 64, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	return sm
}

// collect reads a job's events to its end.
func collect(j *Job) (ids []int, finish string, err error) {
	for ev := range j.Events() {
		switch {
		case ev.Err != nil:
			return ids, "", ev.Err
		case ev.Finish != "":
			return ids, ev.Finish, nil
		}
		ids = append(ids, ev.Token)
	}
	return ids, "", errors.New("the events channel closed")
}

// Requests decoded together, joining while others decode (more than --parallel, prompts fed
// in several chunks), each get the tokens engine.Generate gives them alone.
func TestSchedulerMatchesGenerate(t *testing.T) {
	e := load(t, decoderPath)
	prompts := []string{"func main() {", "package main\n\nimport \"fmt\"\n", "x := ", "for i := range n {\n\t"}
	const max = 12
	var want [][]int
	for _, p := range prompts {
		var gen []int
		if _, err := e.Generate(tokens(p), max, greedy(t), nil, func(tok int) { gen = append(gen, tok) }); err != nil {
			t.Fatal(err)
		}
		want = append(want, gen)
	}

	s := NewScheduler(e, Config{Parallel: 2, Queue: 8, Chunk: 4})
	defer s.Stop()
	var jobs []*Job
	for _, p := range prompts {
		j := NewJob(context.Background(), tokens(p), max, greedy(t), nil)
		if err := s.Submit(j); err != nil {
			t.Fatalf("the queue refused a job while it had room: %v", err)
		}
		jobs = append(jobs, j)
	}
	for i, j := range jobs {
		got, finish, err := collect(j)
		if err != nil || finish != "length" || !slices.Equal(got, want[i]) {
			t.Errorf("%q: %v (%q, %v), want %v (length)", prompts[i], got, finish, err, want[i])
		}
	}
	if s.Busy() != 0 || s.Queued() != 0 {
		t.Errorf("%d rows busy, %d queued after every job finished", s.Busy(), s.Queued())
	}
	if s.Steps() < max-1 {
		t.Errorf("%d decoding steps for %d tokens per job", s.Steps(), max)
	}
}

// A stop token ends a job unsent; the queue refuses what it cannot hold; after Stop, running
// and queued jobs end with ErrShutdown and Submit refuses.
func TestSchedulerStopAndQueue(t *testing.T) {
	e := load(t, decoderPath)
	prompt := tokens("func main() {")
	var first []int
	if _, err := e.Generate(prompt, 10, greedy(t), nil, func(tok int) { first = append(first, tok) }); err != nil {
		t.Fatal(err)
	}
	k := 1 // the first token not generated before: the stop token
	for k < len(first) && slices.Contains(first[:k], first[k]) {
		k++
	}
	if k == len(first) {
		t.Fatalf("the greedy continuation %v repeats one token; the test needs two", first)
	}
	s := NewScheduler(e, Config{Parallel: 1, Queue: 1, Chunk: 256})
	j := NewJob(context.Background(), prompt, 10, greedy(t), []int{first[k]})
	if err := s.Submit(j); err != nil {
		t.Fatalf("an idle scheduler refused a job: %v", err)
	}
	got, finish, err := collect(j)
	if err != nil || finish != "stop" || !slices.Equal(got, first[:k]) {
		t.Errorf("stop at token %d: %v (%q, %v), want %v (stop)", first[k], got, finish, err, first[:k])
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	long := NewJob(ctx, prompt, s.Limit()-len(prompt), greedy(t), nil)
	if err := s.Submit(long); err != nil {
		t.Fatal(err)
	}
	<-long.Events() // running: its first token is out
	queued := NewJob(ctx, prompt, 1, greedy(t), nil)
	if err := s.Submit(queued); err != nil {
		t.Fatalf("a queue of 1 refused its first job: %v", err)
	}
	if err := s.Submit(NewJob(ctx, prompt, 1, greedy(t), nil)); !errors.Is(err, ErrQueueFull) {
		t.Errorf("a full queue while the only row was busy: %v, want ErrQueueFull", err)
	}
	if s.Busy() != 1 || s.Queued() != 1 {
		t.Errorf("%d rows busy and %d queued, want 1 and 1", s.Busy(), s.Queued())
	}
	s.Stop()
	for name, j := range map[string]*Job{"running": long, "queued": queued} {
		if _, _, err := collect(j); !errors.Is(err, ErrShutdown) {
			t.Errorf("the %s job after Stop: %v, want ErrShutdown", name, err)
		}
	}
	if err := s.Submit(NewJob(ctx, prompt, 1, greedy(t), nil)); !errors.Is(err, ErrShutdown) {
		t.Errorf("a stopped scheduler: %v, want ErrShutdown", err)
	}
}

// A job's final event comes after its row is free: a client that reads it and asks the
// server (/health, its next request) finds the row idle. Both ends are checked: at max tokens
// (after a decoding step, and right at the prefill's first token) and at a stop token.
func TestFinalEventAfterRowFreed(t *testing.T) {
	e := load(t, decoderPath)
	prompt := tokens("func main() {")
	var first []int
	if _, err := e.Generate(prompt, 1, greedy(t), nil, func(tok int) { first = append(first, tok) }); err != nil {
		t.Fatal(err)
	}
	s := NewScheduler(e, Config{Parallel: 2, Queue: 4, Chunk: 256})
	defer s.Stop()
	for _, c := range []struct {
		max    int
		stop   []int
		finish string
	}{{3, nil, "length"}, {1, nil, "length"}, {8, first, "stop"}} {
		for range 5 {
			j := NewJob(context.Background(), prompt, c.max, greedy(t), c.stop)
			if err := s.Submit(j); err != nil {
				t.Fatal(err)
			}
			_, finish, err := collect(j)
			if err != nil || finish != c.finish {
				t.Fatalf("max %d, stop %v: finished %q (%v), want %q", c.max, c.stop, finish, err, c.finish)
			}
			if b := s.Busy(); b != 0 {
				t.Fatalf("max %d, stop %v: %d rows busy after the final event, want 0", c.max, c.stop, b)
			}
		}
	}
}

// A job no row can run is refused at Submit, with an error naming the problem, and the
// scheduler goes on serving.
func TestSubmitRefusesBadJobs(t *testing.T) {
	e := load(t, decoderPath)
	s := NewScheduler(e, Config{Parallel: 2, Queue: 4, Chunk: 64})
	defer s.Stop()
	vocab, limit := e.Model.Config.VocabSize, s.Limit()
	for _, c := range []struct {
		prompt []int
		max    int
		says   string
	}{
		{nil, 4, "empty"},
		{make([]int, limit+1), 4, fmt.Sprintf("%d tokens but a row holds %d", limit+1, limit)},
		{[]int{1, vocab}, 4, fmt.Sprintf("token id %d", vocab)},
		{[]int{-1}, 4, "token id -1"},
		{[]int{1, 2}, 0, "at least one token"},
	} {
		err := s.Submit(NewJob(context.Background(), c.prompt, c.max, greedy(t), nil))
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("prompt of %d tokens, max %d: %v, want an error saying %q", len(c.prompt), c.max, err, c.says)
		}
	}
	j := NewJob(context.Background(), tokens("ok"), 2, greedy(t), nil)
	if err := s.Submit(j); err != nil {
		t.Fatal(err)
	}
	if got, finish, err := collect(j); err != nil || finish != "length" || len(got) != 2 {
		t.Errorf("a good job after the bad ones: %v (%q, %v)", got, finish, err)
	}
}

// SessionSizes are the powers of two below parallel, then parallel.
func TestSessionSizes(t *testing.T) {
	for parallel, want := range map[int][]int{1: {1}, 2: {1, 2}, 4: {1, 2, 4}, 6: {1, 2, 4, 6}, 16: {1, 2, 4, 8, 16}} {
		if got := SessionSizes(parallel); !slices.Equal(got, want) {
			t.Errorf("SessionSizes(%d) = %v, want %v", parallel, got, want)
		}
	}
}

// Slots shows each running request in a slot of its own, which it keeps while its row moves
// between sessions, with the tokens in its cache; once every request ended, every slot is idle
// and empty.
func TestSlots(t *testing.T) {
	e := load(t, decoderPath)
	// Slow steps keep the jobs running while the test looks.
	s := NewScheduler(e, Config{Parallel: 4, Queue: 8, Chunk: 64, StepDelay: 40 * time.Millisecond})
	defer s.Stop()
	if got := s.Slots(); len(got) != 4 || slices.ContainsFunc(got, func(v SlotState) bool { return v.Processing }) {
		t.Fatalf("a new scheduler's slots: %+v, want 4 idle", got)
	}
	prompts := []string{"func main() {", "x := 1"}
	var jobs []*Job
	for _, p := range prompts {
		j := NewJob(context.Background(), tokens(p), 6, greedy(t), nil)
		if err := s.Submit(j); err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, j)
	}
	// Read each job's first two tokens, then the slots: the step that sampled a job's first
	// token (its prompt in) has published the slots by the time its second token is sent.
	for _, j := range jobs {
		<-j.Events()
		<-j.Events()
	}
	// The view is published during a step too (a session that grows while a row moves into
	// it), so a reader may catch one from the middle of the step that sent the tokens: read
	// again until a step has ended (each takes StepDelay), for at most a second.
	inRange := func(n int) bool { return n >= len(tokens(prompts[1])) && n <= len(tokens(prompts[0]))+6 }
	var seen map[int]int // slot id -> tokens cached
	for deadline := time.Now().Add(time.Second); ; time.Sleep(5 * time.Millisecond) {
		seen = map[int]int{}
		ok := true
		for _, v := range s.Slots() {
			if v.Processing {
				seen[v.ID] = v.Tokens
				ok = ok && inRange(v.Tokens)
			}
		}
		if ok && len(seen) == 2 || time.Now().After(deadline) {
			break
		}
	}
	if len(seen) != 2 {
		t.Errorf("slots processing: %v, want one or two", seen)
	}
	for id, n := range seen {
		if !inRange(n) {
			t.Errorf("slot %d caches %d tokens, want between the shorter prompt and the longer prompt plus 6", id, n)
		}
	}
	for _, j := range jobs {
		if _, _, err := collect(j); err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range s.Slots() {
		if v.Processing || v.Tokens != 0 {
			t.Errorf("after every job ended, slot %+v", v)
		}
	}
}
