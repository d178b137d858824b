package grid

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/posformer/posformer/benchmarks/recipe"
)

func timed(name, needs string, seconds float64) Cell {
	return Cell{Model: recipe.Model{Task: "t", Name: name, Init: needs, TrainSeconds: seconds}}
}

// The wall time of cells on a number of cores, against sums worked by hand.
func TestSimulate(t *testing.T) {
	dir := t.TempDir()
	four := []Cell{timed("a", "", 10), timed("b", "", 10), timed("c", "", 10), timed("d", "", 10)}
	for _, c := range []struct {
		slots int
		wall  float64
	}{{1, 40}, {2, 20}, {4, 10}, {100, 10}} {
		if s := Simulate(dir, four, c.slots); s.Wall != c.wall || s.Work != 40 || s.Path != 10 {
			t.Errorf("4 cells of 10 s on %d cores: wall %v, work %v, path %v; want %v, 40, 10", c.slots, s.Wall, s.Work, s.Path, c.wall)
		}
	}
	// a (10 s) → b (30 s), and c, d of 20 s, on two cores: the chain starts first (a, c at 0;
	// b at 10 when a ends; d at 20 when c ends): 40 s, the critical path.
	chain := []Cell{timed("c", "", 20), timed("d", "", 20), timed("a", "", 10), timed("b", "a", 30)}
	s := Simulate(dir, chain, 2)
	if s.Wall != 40 || s.Path != 40 || !slices.Equal(s.Critical, []string{"t/a", "t/b"}) || s.Work != 80 {
		t.Errorf("chain on 2 cores: %+v; want wall 40, path 40 (t/a → t/b), work 80", s)
	}
	// One core: the work, whatever the order.
	if s := Simulate(dir, chain, 1); s.Wall != 80 {
		t.Errorf("chain on 1 core: wall %v, want 80", s.Wall)
	}
	var b bytes.Buffer
	PlanNodes(&b, dir, chain, 1, 2)
	if out := b.String(); !strings.Contains(out, "t/a → t/b") || !strings.Contains(out, "critical path bounds") {
		t.Errorf("PlanNodes:\n%s", out)
	}
}

// The v2 grid on 64 and 300 cores: never under the critical path nor the work over the cores,
// and no slower on more cores.
func TestSimulateV2Bounds(t *testing.T) {
	dir := t.TempDir()
	var cells []Cell
	for _, m := range recipe.V2.Models(dir, []string{"lm", "passkey", "copy"}, recipe.V2.Schemes, 0) {
		cells = append(cells, Cell{Model: m})
	}
	prev := 0.0
	for _, slots := range []int{300, 64, 8} {
		s := Simulate(dir, cells, slots)
		if s.Wall < s.Path-1e-6 || s.Wall < s.Work/float64(slots)-1e-6 || s.Wall < prev {
			t.Errorf("%d cores: wall %v under a bound (path %v, work/cores %v) or under %v on more cores", slots, s.Wall, s.Path, s.Work/float64(slots), prev)
		}
		prev = s.Wall
		if len(s.Critical) != 2 || !strings.HasSuffix(s.Critical[1], "rope-pi4") {
			t.Errorf("%d cores: critical path %v, want a RoPE model and its PI fine-tune", slots, s.Critical)
		}
	}
}
