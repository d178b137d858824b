package report

import (
	"math"
	"strings"
	"testing"
)

// The overview's kept share against hand-computed cases: an accuracy from chance, bits from the
// unigram model, a loss that falls past L (clipped to 1), a model that never learned the task
// (blank), variants left out, and a task the scheme has no result on (blank).
func TestOverview(t *testing.T) {
	var rs []Result
	add := func(task, scheme, variant string, length int, metric string, vs ...float64) {
		for i, v := range vs {
			rs = append(rs, res(task, scheme, variant, i+1, length, metric, v))
		}
	}
	// copy, L = 64: chance 0.1; rope 0.9 at L (two seeds 0.85, 0.95), 0.5 at 2L: (0.5-0.1)/(0.9-0.1) = 0.5.
	add("copy", "chance", "", 64, "token_accuracy", 0.1)
	add("copy", "chance", "", 128, "token_accuracy", 0.1)
	add("copy", "rope", "", 64, "token_accuracy", 0.85, 0.95)
	add("copy", "rope", "", 128, "token_accuracy", 0.5, 0.5)
	add("copy", "rope", "randpos", 64, "token_accuracy", 0.9)
	add("copy", "rope", "randpos", 128, "token_accuracy", 0.9)
	// ALiBi at 0.2 at L: a lead of 0.1 is under a fifth of the way from 0.1 to 1: not learned.
	add("copy", "alibi", "", 64, "token_accuracy", 0.2)
	add("copy", "alibi", "", 128, "token_accuracy", 0.2)
	// lm, L = 64 in res: unigram 5; rope 2 at L, 3.5 at 2L: (5-3.5)/(5-2) = 0.5; alibi 1.5 at 2L, clipped to 1.
	add("lm", "unigram", "", 64, "bits_per_byte", 5)
	add("lm", "unigram", "", 128, "bits_per_byte", 5)
	add("lm", "rope", "", 64, "bits_per_byte", 2)
	add("lm", "rope", "", 128, "bits_per_byte", 3.5)
	add("lm", "alibi", "", 64, "bits_per_byte", 2)
	add("lm", "alibi", "", 128, "bits_per_byte", 1.5)
	g := Overview(map[string][]Result{"copy": rs[:10], "lm": rs[10:]}, []int{2})
	schemes, taskNames, kept := g.Schemes, g.Tasks, g.Kept
	if strings.Join(schemes, ",") != "rope,alibi" || strings.Join(taskNames, ",") != "lm,copy" {
		t.Fatalf("schemes %v tasks %v; want [rope alibi] and [lm copy]", schemes, taskNames)
	}
	want := [][]float64{{0.5, 0.5}, {1, math.NaN()}}
	for i := range want {
		for j := range want[i] {
			got := kept[0][i][j]
			if !(math.Abs(got-want[i][j]) < 1e-9 || math.IsNaN(got) && math.IsNaN(want[i][j])) {
				t.Errorf("%s on %s: %v, want %v", schemes[i], taskNames[j], got, want[i][j])
			}
		}
	}
	table := g.Table(2)
	if !strings.Contains(table, "| `rope` | 0.50 | 0.50 |") || !strings.Contains(table, "| `alibi` | 1.00 | · |") {
		t.Errorf("table:\n%s", table)
	}
	// A task missing from the results is no column; a scheme without a result at kL, blank.
	g = Overview(map[string][]Result{"lm": rs[10:14]}, []int{2, 4})
	taskNames, kept = g.Tasks, g.Kept
	if len(taskNames) != 1 || kept[0][0][0] != 0.5 || !math.IsNaN(kept[1][0][0]) {
		t.Errorf("lm alone: tasks %v, kept %v", taskNames, kept)
	}
}
