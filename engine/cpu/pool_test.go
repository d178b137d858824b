package cpu

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

// Every task of a job runs exactly once, whichever mode and however many threads share it.
func TestPoolRunsEveryTaskOnce(t *testing.T) {
	for _, threads := range []int{1, 2, 3, 5} {
		p := newPool(threads)
		for _, ranged := range []bool{false, true} {
			for _, n := range []int{1, 2, 3, 7, 64, 1000} {
				counts := make([]atomic.Int32, n)
				for range 20 {
					p.start(n, func(i int) { counts[i].Add(1) }, ranged)
				}
				for i := range counts {
					if c := counts[i].Load(); c != 20 {
						t.Fatalf("%d threads, ranged %v, %d tasks: task %d ran %d times in 20 jobs", threads, ranged, n, i, c)
					}
				}
			}
		}
		p.close()
	}
}

// A thread of a ranged job runs its own run of tasks front to back, then takes the others'
// from their backs: here thread 1 of three finds no one else came, and runs 3..5, then 9..6
// (thread 2's, from the back), then 2..0 (thread 0's).
func TestRangedJobOrder(t *testing.T) {
	var order []int
	j := &job{fn: func(i int) { order = append(order, i) }, n: 10}
	j.split(3, make([]taskRange, 4)) // [0, 3), [3, 6), [6, 10)
	j.work(1)
	if want := []int{3, 4, 5, 9, 8, 7, 6, 2, 1, 0}; !slices.Equal(order, want) {
		t.Errorf("order %v, want %v", order, want)
	}
	if d := j.done.Load(); d != 10 {
		t.Errorf("done %d, want 10", d)
	}
	order = order[:0]
	j.work(0) // nothing left
	if len(order) != 0 || j.done.Load() != 10 {
		t.Errorf("a second thread ran %v (done %d)", order, j.done.Load())
	}
	var big job
	big.n = 7
	big.split(6, make([]taskRange, 4)) // more threads than the room holds
	got := 0
	for i := range big.ranges {
		v := big.ranges[i].fb.Load()
		got += int(v&0xffffffff) - int(v>>32)
	}
	if len(big.ranges) != 6 || got != 7 {
		t.Errorf("6 ranges of 7 tasks: %d ranges holding %d tasks", len(big.ranges), got)
	}
}

// A task that panics on a worker goroutine reaches the caller as a panic there (which Execute
// turns into an error), instead of ending the process, in either mode.
func TestPoolPanicReachesCaller(t *testing.T) {
	p := newPool(2)
	defer p.close()
	for _, ranged := range []bool{false, true} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "task 5") {
					t.Errorf("ranged %v: recovered %v, want the panic of task 5", ranged, r)
				}
			}()
			p.start(8, func(i int) {
				if i == 5 {
					panic(fmt.Sprintf("task %d", i))
				}
			}, ranged)
			t.Errorf("ranged %v: run returned normally", ranged)
		}()
	}
}
