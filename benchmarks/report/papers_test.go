package report

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/posformer/posformer/benchmarks/recipe"
	"github.com/posformer/posformer/benchmarks/stats"
	"github.com/posformer/posformer/engine/train/tasks"
)

func src(byTask map[string][]Result) Source { return Source{ByTask: byTask} }

// flatLM builds lm rows at L = 64 and k·L for three seeds: each scheme's own row and its sliding
// row at k·L, the row gap[scheme] bits above its sliding row (± 0.01 by seed). The seeds differ
// by 0.3 bit, so that only the pairing by seed can call a gap of 0.05 under 0.1; the loss at L
// is far below (3.0), which the rule of v2 (16L against L) would call a rise.
func flatLM(k int, gap map[string]float64) []Result {
	var rs []Result
	for scheme, g := range gap {
		for seed := 1; seed <= 3; seed++ {
			base := 3.4 + 0.3*float64(seed)
			rs = append(rs, res("lm", scheme, "", seed, 64, "bits_per_byte", 3.0),
				res("lm", scheme, recipe.SlidingVariant, seed, k*64, "bits_per_byte", base),
				res("lm", scheme, "", seed, k*64, "bits_per_byte", base+g+0.01*float64(seed-2)))
		}
	}
	return rs
}

// Press et al.: ALiBi 0.02 over its sliding row (flat) and the others 0.5 over theirs is
// reproduced; ALiBi 0.5 over, or T5 at its sliding row, is not; one seed is inconclusive.
func TestPressFlatAgainstSliding(t *testing.T) {
	gap := map[string]float64{"alibi": 0.02, "sinusoidal": 0.5, "rope": 0.6, "t5": 0.4}
	f := pressFinding(src(map[string][]Result{"lm": flatLM(16, gap)}))
	if f.Verdict != Reproduced || f.Comparisons != 4 || !strings.Contains(f.Conditions, ByT) {
		t.Errorf("expected reproduced, 4 comparisons: %+v", f)
	}
	// Unpaired, ALiBi's 16L row (3.7 to 4.3) overlaps its sliding row: only the pairing decides.
	rs := flatLM(16, gap)
	if a, b := summaryOf(seedValues(rs, "alibi", "bits_per_byte", 1024)), summaryOf(seedValues(rs, "alibi + sliding L", "bits_per_byte", 1024)); stats.Separated(a, b) {
		t.Fatalf("the construction should overlap unpaired: %+v %+v", a, b)
	}
	gap["alibi"] = 0.5
	if f := pressFinding(src(map[string][]Result{"lm": flatLM(16, gap)})); f.Verdict != NotReproduced || !strings.Contains(f.Reason, "alibi at 16L") {
		t.Errorf("alibi rising: %+v", f)
	}
	gap["alibi"], gap["t5"] = 0.02, 0.0
	if f := pressFinding(src(map[string][]Result{"lm": flatLM(16, gap)})); f.Verdict != NotReproduced || !strings.Contains(f.Reason, "t5 at 16L") {
		t.Errorf("t5 flat: %+v", f)
	}
	gap["t5"] = 0.11 // the interval straddles 0.1
	if f := pressFinding(src(map[string][]Result{"lm": flatLM(16, gap)})); f.Verdict != Inconclusive || !strings.Contains(f.Reason, "t5") {
		t.Errorf("t5 straddling: %+v", f)
	}
	var one []Result
	for _, r := range flatLM(16, gap) {
		if r.Seed == 1 {
			one = append(one, r)
		}
	}
	if f := pressFinding(src(map[string][]Result{"lm": one})); f.Verdict != Inconclusive || !strings.Contains(f.Reason, "needs two or more seeds") {
		t.Errorf("one seed: %+v", f)
	}
}

// Li et al. are judged at 2L and 4L only: FIRE flat there and far above its sliding row at 16L
// is reproduced.
func TestLiFIREAtItsRange(t *testing.T) {
	rs := append(flatLM(2, map[string]float64{"fire": 0.03}), flatLM(4, map[string]float64{"fire": 0.05})...)
	rs = append(rs, flatLM(16, map[string]float64{"fire": 0.9})...)
	if f := liFinding(src(map[string][]Result{"lm": rs})); f.Verdict != Reproduced || f.Comparisons != 2 {
		t.Errorf("FIRE: %+v", f)
	}
	if f := chiFinding(src(map[string][]Result{"lm": flatLM(16, map[string]float64{"kerple": 0.3})})); f.Verdict != NotReproduced {
		t.Errorf("KERPLE rising: %+v", f)
	}
}

// Chen et al.: PI against its control at 4L, paired by the base seed. The bases differ by 0.4 bit
// (or 0.3 of exact match) seed to seed, PI is 0.1 better than the control on every seed.
func TestChenAgainstControl(t *testing.T) {
	build := func(piGain float64) map[string][]Result {
		var lm, pk []Result
		for seed := 1; seed <= 3; seed++ {
			b := 3.0 + 0.4*float64(seed)
			lm = append(lm, res("lm", "rope", "4L ft", seed, 256, "bits_per_byte", b),
				res("lm", "rope", "PI s=4 ft", seed, 256, "bits_per_byte", b-piGain+0.005*float64(seed)),
				res("lm", "rope", recipe.SlidingVariant, seed, 256, "bits_per_byte", b+0.2))
			e := 0.3 * float64(seed-1)
			pk = append(pk, res("passkey", "rope", "4L ft", seed, 256, "exact_match", 0.2+e),
				res("passkey", "rope", "PI s=4 ft", seed, 256, "exact_match", 0.2+e+piGain+0.005*float64(seed)))
		}
		return map[string][]Result{"lm": lm, "passkey": pk}
	}
	if f := chenFinding(src(build(0.1)), 4); f.Verdict != Reproduced || f.Comparisons != 3 {
		t.Errorf("PI ahead of its control: %+v", f)
	}
	f := chenFinding(src(build(-0.1)), 4)
	if f.Verdict != NotReproduced || !strings.Contains(f.Reason, "lm rope + PI s=4 ft at 4L vs rope + 4L ft at 4L") || !strings.Contains(f.Reason, "passkey") {
		t.Errorf("the control ahead: %+v", f)
	}
}

// Kazemnejad et al. at 2L with and without the BOS rows: NoPE ≥ T5 > the rest holds with BOS;
// without, ALiBi above NoPE is a disagreement with the paper's headline.
func TestKazemnejadBothWays(t *testing.T) {
	em := map[string]float64{"none": 0.8, "t5": 0.8, "alibi": 0.3, "rope": 0.2, "sinusoidal": 0.1, "learned": 0.1}
	var rs []Result
	for _, task := range []string{"copy", "reverse"} {
		for s, v := range em {
			for seed := 1; seed <= 3; seed++ {
				e := 0.01 * float64(seed)
				rs = append(rs, res(task, s, "BOS", seed, 128, "exact_match", v+e))
				plain := v + e
				if s == "alibi" {
					plain = 0.95 + e/10
				}
				rs = append(rs, res(task, s, "", seed, 128, "exact_match", plain))
			}
		}
	}
	by := map[string][]Result{}
	for _, r := range rs {
		by[r.Task] = append(by[r.Task], r)
	}
	if f := kazemnejadFinding(src(by), true); f.Verdict != Reproduced || f.Comparisons != 18 {
		t.Errorf("with BOS: %+v", f)
	}
	f := kazemnejadFinding(src(by), false)
	if f.Verdict != NotReproduced || !strings.Contains(f.Reason, "contradicts the paper's headline") || !strings.Contains(f.Reason, "copy none at 2L vs alibi at 2L") {
		t.Errorf("without BOS, ALiBi ahead: %+v", f)
	}
}

// Seeds that split (two learn, one stays at chance) read "2 of 3 seeds learned" in a finding and
// "2/3 learned" in a table, where the t-interval would leave [0, 1].
func TestSplitSeedsInFindingsAndTables(t *testing.T) {
	var rs []Result
	for seed, v := range map[int]float64{1: 0.9, 2: 0.02, 3: 0.85} {
		rs = append(rs, res("copy", "cope", "", seed, 128, "exact_match", v), res("copy", "rope", "", seed, 128, "exact_match", 0.01*float64(seed)))
	}
	rs = append(rs, res("copy", "chance", "", 1, 128, "exact_match", 0))
	f := copeFinding(src(map[string][]Result{"copy": rs}))
	if !strings.Contains(f.Measured, "cope 2 of 3 seeds learned (0.875; the others 0.020)") {
		t.Errorf("finding: %+v", f)
	}
	tab := Table("copy", rs, "exact_match", AllSubs)
	if !strings.Contains(tab, "| 2/3 learned: 0.875 |") || !strings.Contains(tab, "k/n learned") {
		t.Errorf("table:\n%s", tab)
	}
}

// docFile renders per-document scores as eval.EncodeDocScores does.
func docFile(lines ...string) []byte {
	return []byte("model,variant,length,bits,n\n" + strings.Join(lines, "\n") + "\n")
}

// With one document per seed the bootstrap's interval is the seeds' lowest and highest value
// (stats.TestBootstrapOneDocumentIsTheSeeds), and the table and its caption say so.
func TestBootstrapCellsInTables(t *testing.T) {
	var rs []Result
	idx := DocIndex{}
	var lines []string
	for seed, v := range map[int]float64{1: 3.0, 2: 3.3, 3: 2.8} {
		r := res("lm", "rope", "", seed, 128, "bits_per_byte", v)
		rs = append(rs, r)
		lines = append(lines, fmt.Sprintf("%s,,128,%g,100", r.Model, v*100))
	}
	if err := idx.add(docFile(lines...)); err != nil {
		t.Fatal(err)
	}
	tab := TableDocs("lm", rs, "bits_per_byte", AllSubs, idx)
	if !strings.Contains(tab, "| 3.033 [2.800, 3.300] |") || !strings.Contains(tab, "bootstrap over seeds and the test text's documents") {
		t.Errorf("table:\n%s", tab)
	}
	// Without the docs: the t-interval, and the caption says why.
	if tab := TableDocs("lm", rs, "bits_per_byte", AllSubs, nil); !strings.Contains(tab, "± ") || !strings.Contains(tab, "no per-document scores") {
		t.Errorf("fallback:\n%s", tab)
	}
	if err := idx.add([]byte("model,n\n")); err == nil {
		t.Error("a wrong header was read")
	}
}

// The learning-rate table: the lowest validation loss chosen, the other rates' curves left out of
// the training section; a sweep not finished chooses nothing.
func TestLRSweep(t *testing.T) {
	curve := func(name, scheme string, loss float64) Curve {
		c := Curve{Name: name, Label: scheme}
		c.Info.Scheme, c.Info.Seed, c.Info.FinalEvalLoss = scheme, 1, recipe.Loss(loss)
		return c
	}
	cs := []Curve{curve("rope", "rope", 1.3), curve("rope-lr0.0005", "rope", 1.4), curve("rope-lr0.002", "rope", 1.2), curve("rope-seed2", "rope", 1.25), curve("alibi", "alibi", 1.1)}
	cs[3].Info.Seed = 2
	rows, kept := SplitSweep(tasks.LM, cs)
	if len(rows) != 4 || !rows[2].Chosen || rows[2].Rate != 0.002 || rows[0].Chosen || rows[1].Chosen || rows[3].Chosen {
		t.Errorf("rows %+v", rows)
	}
	var names []string
	for _, c := range kept {
		names = append(names, c.Name)
	}
	if strings.Join(names, " ") != "rope-lr0.002 rope-seed2" {
		t.Errorf("kept %v", names)
	}
	if tab := LRTable(rows); !strings.Contains(tab, "| lm | `rope` | 0.002 | **1.200** | ✓ |") {
		t.Errorf("table:\n%s", tab)
	}
	// rs with a sweep's other rate: dropped from the findings' inputs.
	rs := []Result{res("lm", "rope", "lr=0.0005", 1, 64, "bits_per_byte", 3), res("lm", "rope", "", 1, 64, "bits_per_byte", 3)}
	if got := WithoutSweepRates(rs); len(got) != 1 || got[0].Variant != "" {
		t.Errorf("%+v", got)
	}
	// Unfinished (two rates of three): none chosen, every sweep model only in the table, as
	// grid.SweepLabels labels each by its rate until the choice.
	if rows, kept := SplitSweep(tasks.Copy, cs[:2]); len(kept) != 0 || len(rows) != 2 || rows[0].Chosen || rows[1].Chosen {
		t.Errorf("unfinished sweep: %+v, kept %d", rows, len(kept))
	}
	if math.IsNaN(rows[0].Loss) {
		t.Error("loss")
	}
}

// Every finding of v3 on empty results: inconclusive, never a panic, each with its comparisons
// counted, and the section states their total.
func TestPapersOnNothing(t *testing.T) {
	fs := Papers(Source{ByTask: map[string][]Result{}})
	n := 0
	for _, f := range fs {
		if f.Verdict != Inconclusive || f.Comparisons == 0 {
			t.Errorf("%s: %+v", f.Paper, f)
		}
		n += f.Comparisons
	}
	if s := PapersSection(fs); !strings.Contains(s, fmt.Sprintf("%d findings rest on %d comparisons", len(fs), n)) {
		t.Errorf("section:\n%s", s)
	}
}
