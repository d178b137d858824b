package report

import (
	"math"
	"strings"
	"testing"

	"github.com/posformer/posformer/benchmarks/recipe"
)

// The cost table sums the recorded times and fills a missing one with its label's mean, or the
// task's where the label has none; baselines and evaluation-only rows are not models.
func TestCostTable(t *testing.T) {
	nan := math.NaN()
	res := func(scheme, variant string, seed int) Result {
		return Result{Task: "copy", Model: scheme, Scheme: scheme, Variant: variant, Seed: seed, Depth: nan, Metric: "exact_match"}
	}
	rs := []Result{
		res("rope", "", 1), res("rope", "", 1), // two metrics or lengths of one model
		res("rope", "", 2), res("rope", "", 3), res("alibi", "", 1), res("t5", "", 1),
		res("rope", recipe.ScalingVariant("yarn", 4), 1), // scored from rope's checkpoint
		res("chance", "", 1),
	}
	curve := func(label string, seed int, trainH, evalH float64) Curve {
		c := Curve{Label: label, EvalSeconds: evalH * 3600}
		c.Info.Seed, c.Info.WallSeconds = seed, trainH*3600
		return c
	}
	cs := []Curve{curve("rope", 1, 6, 1), curve("rope", 2, 12, nan), curve("alibi", 1, 3, 0.6)}
	// Training: rope 6 + 12 + 9 (seed 3 at rope's mean), alibi 3, t5 7 (the task's mean of 6, 12
	// and 3) = 37 h, two filled. Evaluation: rope 1 + 1 + 1, alibi 0.6, t5 0.8 (the mean of 1 and
	// 0.6) = 4.4 h, three filled. The machine: (37 + 4.4) / 2 = 20.7 h.
	s := CostTable(map[string][]Result{"copy": rs}, map[string][]Curve{"copy": cs})
	for _, want := range []string{"| copy | 5 | 37.0 | 2 | 4.4 | 3 |", "| all | 5 | 37.0 | 2 | 4.4 | 3 |", "about 20.7 h of the machine"} {
		if !strings.Contains(s, want) {
			t.Errorf("cost table lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "| lm |") || strings.Contains(s, "without the evaluation") {
		t.Errorf("a task without models has a row, or a timed task is called untimed:\n%s", s)
	}
	// A task with no timed evaluation shows none rather than 0 h, and the total says so.
	for i := range cs {
		cs[i].EvalSeconds = nan
	}
	s = CostTable(map[string][]Result{"copy": rs}, map[string][]Curve{"copy": cs})
	for _, want := range []string{"| copy | 5 | 37.0 | 2 | — | 5 |", "about 18.5 h of the machine, without the evaluation of copy"} {
		if !strings.Contains(s, want) {
			t.Errorf("cost table lacks %q:\n%s", want, s)
		}
	}
}
