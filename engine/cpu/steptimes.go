package cpu

// Per-step timers, for finding where a graph's time goes (which op, on which shapes): with
// $POSFORMER_STEP_TIMES set, or after EnableStepTimes, every executable compiled from then on
// labels its steps ("DotGeneral (Float32)[32 64 512] <- ...", "fused3 Add ...") and times each
// call; WriteStepTimes prints the totals. Off by default: a timed step costs two clock reads.
//
//	POSFORMER_STEP_TIMES=1 go test -run '^$' -bench 'TrainStepSchemes/fire$' ./benchmarks/

import (
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

var stepTimes struct {
	on   atomic.Bool
	mu   sync.Mutex
	time map[string]time.Duration
	n    map[string]int
}

func init() {
	if os.Getenv("POSFORMER_STEP_TIMES") != "" {
		EnableStepTimes()
	}
}

// EnableStepTimes turns the timers on for executables compiled from now on.
func EnableStepTimes() {
	stepTimes.mu.Lock()
	defer stepTimes.mu.Unlock()
	if stepTimes.time == nil {
		stepTimes.time, stepTimes.n = map[string]time.Duration{}, map[string]int{}
	}
	stepTimes.on.Store(true)
}

// DisableStepTimes turns the timers off for executables compiled from now on.
func DisableStepTimes() { stepTimes.on.Store(false) }

// StepTimesEnabled reports whether the timers are on.
func StepTimesEnabled() bool { return stepTimes.on.Load() }

// stepLabel names a step by its op and shapes, and the leaves of a fused tree.
func stepLabel(n *node, f *fusion, inputs []*node) string {
	lbl := n.op.String()
	if f != nil {
		for _, o := range f.outs {
			lbl += "+" + o.op.String() // sibling trees: every root's op
		}
	}
	lbl += " " + n.shape.String() + " <-"
	if f != nil {
		lbl = fmt.Sprintf("fused%d %s", len(f.leaves), lbl)
	}
	for _, in := range inputs {
		lbl += " " + in.shape.String()
	}
	return lbl
}

// runTimed runs the steps with a timer around each.
func (e *Executable) runTimed(f *frame) {
	times := make([]time.Duration, len(e.steps))
	for i, step := range e.steps {
		t0 := time.Now()
		step(f)
		times[i] = time.Since(t0)
	}
	stepTimes.mu.Lock()
	defer stepTimes.mu.Unlock()
	for i, d := range times {
		stepTimes.time[e.stepLabels[i]] += d
		stepTimes.n[e.stepLabels[i]]++
	}
}

// WriteStepTimes prints the top steps by total time since the timers were enabled (or reset),
// with their share, calls and label, and resets the totals.
func WriteStepTimes(w io.Writer, top int) {
	stepTimes.mu.Lock()
	defer stepTimes.mu.Unlock()
	labels := make([]string, 0, len(stepTimes.time))
	var total time.Duration
	for l, d := range stepTimes.time {
		labels = append(labels, l)
		total += d
	}
	slices.SortFunc(labels, func(a, b string) int { return int(stepTimes.time[b] - stepTimes.time[a]) })
	fmt.Fprintf(w, "step times: %v in %d kinds of step\n", total, len(labels))
	for _, l := range labels[:min(top, len(labels))] {
		fmt.Fprintf(w, "%6.2f%% %12v %7d  %s\n", 100*float64(stepTimes.time[l])/float64(max(total, 1)), stepTimes.time[l], stepTimes.n[l], l)
	}
	clear(stepTimes.time)
	clear(stepTimes.n)
}
