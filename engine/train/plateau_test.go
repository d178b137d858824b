package train

import (
	"math"
	"testing"
)

// The plateau decision and the warmup-stable-decay schedule, by hand: evaluations every 100
// steps, window 2, tolerance 1%. The loss falls until step 400 and then stays within 1% of its
// best for two evaluations, so the cool-down starts at step 600 and lasts 0.2·600 = 120 steps.
func TestPlateauByHand(t *testing.T) {
	p := newPlateau(2, 0.01, 10000, 100)
	for i, e := range []float64{3, 2, 1.5, 1.2, 1.195, 1.19} {
		p.observe(100*(i+1), e)
		if i < 5 && p.start >= 0 {
			t.Fatalf("cool-down started at step %d after evaluation %d", p.start, i+1)
		}
	}
	if p.start != 600 || p.end != 720 {
		t.Fatalf("cool-down %d..%d, want 600..720", p.start, p.end)
	}
	for _, c := range []struct {
		step int
		want float64
	}{{0, 0.1}, {5, 0.6}, {9, 1}, {10, 1}, {599, 1}, {600, 1}, {660, 0.55}, {719, 1 - 0.9*119.0/120}} {
		if got := p.lr(c.step, 1, 10); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("lr at step %d: %v, want %v", c.step, got, c.want)
		}
	}
	if r := p.stopReason(); r != "plateau at step 600, cool-down to 720" {
		t.Errorf("stop reason %q", r)
	}
	// Near zero, improvements of under 0.001 nats do not count, however large relatively.
	q := newPlateau(1, 0.01, 10000, 100)
	for i, e := range []float64{0.01, 0.0095, 0.0094} {
		q.observe(100*(i+1), e)
	}
	if q.start != 200 {
		t.Errorf("improvements under 0.001 nats: cool-down at %d, want 200", q.start)
	}
	// Without a plateau the cool-down starts at cap/1.2 and ends at the cap.
	c := newPlateau(3, 0.01, 1200, 100)
	for i := range 12 {
		c.observe(100*(i+1), 10-float64(i))
	}
	if c.start != 1000 || c.end != 1200 || c.stopReason() != "step cap 1200" {
		t.Errorf("capped run: cool-down %d..%d (%s), want 1000..1200", c.start, c.end, c.stopReason())
	}
	// -plateau-min: an encoder's early plateau (flat from step 300, as mlm's position-blind phase)
	// does not stop it before step 800; the loss then falls again, and the plateau that counts
	// is the later one, at 1,200.
	e := newPlateau(2, 0.01, 10000, 100)
	e.min = 800
	for i, l := range []float64{3, 2.95, 2.94, 2.94, 2.94, 2.94, 2.94, 2.5, 2, 1.8, 1.79, 1.79, 1.79} {
		e.observe(100*(i+1), l)
		if e.start >= 0 && 100*(i+1) < 800 {
			t.Fatalf("-plateau-min 800: cool-down started at step %d", e.start)
		}
	}
	if e.start != 1200 {
		t.Errorf("-plateau-min 800: cool-down at %d, want 1200 (the later plateau)", e.start)
	}
	// A cap inside the warm-up (a pilot): the cool-down from 100 to 120 still applies, as the
	// lower of the two rates (at step 119: warm-up 0.6, cool-down 1-0.9·19/20 = 0.145).
	w := newPlateau(5, 0.01, 120, 100)
	if got := w.lr(119, 1, 200); math.Abs(got-0.145) > 1e-12 || w.start != 100 || w.end != 120 {
		t.Errorf("short run: lr %v at step 119, cool-down %d..%d", got, w.start, w.end)
	}
}
