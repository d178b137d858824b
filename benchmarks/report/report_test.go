package report

import (
	"bytes"
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/posformer/posformer/benchmarks/plot"
	"github.com/posformer/posformer/benchmarks/recipe"
	"github.com/posformer/posformer/benchmarks/stats"
	"github.com/posformer/posformer/engine/train/tasks"
)

func res(task, scheme, variant string, seed, length int, metric string, v float64) Result {
	return Result{Task: task, Model: recipe.ModelName(scheme, variant, seed), Scheme: scheme, Variant: variant, Seed: seed, TrainLen: 64,
		Length: length, Depth: math.NaN(), Metric: metric, Value: v}
}

// Seeds become mean ± the Student-t half width; depths are averaged per seed first.
func TestTableShowsIntervals(t *testing.T) {
	var rs []Result
	for seed, v := range map[int]float64{1: 0.2, 2: 0.4, 3: 0.6} {
		rs = append(rs, res("copy", "rope", "", seed, 128, "exact_match", v))
	}
	rs = append(rs, res("copy", "chance", "", 0, 128, "exact_match", 1e-9))
	for _, d := range []float64{0, 1} {
		r := res("passkey", "alibi", "", 1, 128, "exact_match", d) // 0 at depth 0, 1 at depth 1
		r.Depth = d
		rs = append(rs, r)
	}
	tab := Table("copy", rs[:4], "exact_match", AllSubs)
	half := stats.TQuantile(0.975, 2) * 0.2 / math.Sqrt(3)
	if want := "| `rope` (3 seeds) | 0.400 ± " + Num(half) + " |"; !strings.Contains(tab, want) {
		t.Errorf("table lacks %q:\n%s", want, tab)
	}
	if !strings.Contains(tab, "| `chance` | 1e-09 |") || !strings.Contains(tab, "128 (2L)") {
		t.Errorf("baseline or header wrong:\n%s", tab)
	}
	if pk := Table("passkey", rs[4:], "exact_match", AllSubs); !strings.Contains(pk, "| `alibi` | 0.500 |") {
		t.Errorf("depths not averaged:\n%s", pk)
	}
	if sub := SubTables("passkey", rs[4:], "exact_match"); !strings.Contains(sub, "Key at depth 1") || !strings.Contains(sub, "| `alibi` | 1.000 |") {
		t.Errorf("per-depth tables:\n%s", sub)
	}
}

// A ranking separates only disjoint intervals.
func TestRanking(t *testing.T) {
	var rs []Result
	for seed := 1; seed <= 3; seed++ {
		d := 0.01 * float64(seed)
		rs = append(rs, res("copy", "none", "", seed, 128, "token_accuracy", 0.9+d), res("copy", "t5", "", seed, 128, "token_accuracy", 0.88+d),
			res("copy", "learned", "", seed, 128, "token_accuracy", 0.1+d))
	}
	got := Ranking("copy", rs, "token_accuracy")
	if !strings.Contains(got, "- 2L: none, t5 **>** learned") || strings.Contains(got, "letters") {
		t.Errorf("ranking:\n%s", got)
	}
	// A scheme whose seeds disagree spans both: one tier, but none and learned still differ,
	// which the letters show.
	for seed, v := range []float64{0.1, 0.9, 0.5} {
		rs = append(rs, res("copy", "rope", "", seed+1, 128, "token_accuracy", v))
	}
	got = Ranking("copy", rs, "token_accuracy")
	if !strings.Contains(got, "- 2L: none (a), t5 (a), rope (ab), learned (b)") || !strings.Contains(got, "share none differ") {
		t.Errorf("ranking with a wide interval:\n%s", got)
	}
}

// Results survive a round trip through CSV; v1 files (no pairs column) are still read; Merge
// replaces a model's lines.
func TestCSV(t *testing.T) {
	dir := t.TempDir()
	r := res("mqar", "rope", "", 2, 256, "token_accuracy", 0.25)
	r.Pairs, r.N = 8, 400
	path := filepath.Join(dir, "x", "mqar.csv")
	if err := WriteCSV(path, []Result{r}); err != nil {
		t.Fatal(err)
	}
	back, err := ReadCSV(path)
	if err != nil || len(back) != 1 || back[0].Pairs != 8 || back[0].Value != 0.25 || back[0].N != 400 || !math.IsNaN(back[0].Depth) {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
	v1 := "task,model,scheme,variant,seed,train_len,length,depth,metric,value,n\npasskey,rope,rope,,1,64,128,0.5,exact_match,1,20\n"
	os.WriteFile(path, []byte(v1), 0o644)
	back, err = ReadCSV(path)
	if err != nil || len(back) != 1 || back[0].Depth != 0.5 || back[0].Metric != "exact_match" || back[0].N != 20 {
		t.Fatalf("v1 file: %+v, %v", back, err)
	}
	os.WriteFile(path, []byte("a,b\n1,2\n"), 0o644)
	if _, err := ReadCSV(path); err == nil || !strings.Contains(err.Error(), "not a results file") {
		t.Errorf("foreign file: %v", err)
	}
	m := Merge([]Result{r, res("mqar", "none", "", 1, 256, "token_accuracy", 0.1)}, []Result{res("mqar", "none", "", 1, 256, "token_accuracy", 0.3)})
	if len(m) != 2 || m[1].Value != 0.3 {
		t.Errorf("merge: %+v", m)
	}
}

// The report writes RESULTS.md with the papers section and a PNG per metric, keeping the
// hand-written reading.
func TestWriteReport(t *testing.T) {
	dir := t.TempDir()
	var rs []Result
	for seed := 1; seed <= 3; seed++ {
		for _, n := range []int{64, 128} {
			rs = append(rs, res("copy", "rope", "", seed, n, "exact_match", 0.5+0.1*float64(seed)), res("copy", "rope", "", seed, n, "token_accuracy", 0.7))
		}
	}
	if err := WriteCSV(CSVPath(dir, "copy"), rs); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "RESULTS.md"), []byte("x\n"+readingBegin+"\nmy reading\n"+readingEnd+"\n"), 0o644)
	if err := WriteReport(dir); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "RESULTS.md"))
	for _, want := range []string{"my reading", "## Against the papers", "| **inconclusive** |", "![copy exact_match vs length](results/copy-exact_match.png)", "Not evaluated yet: `go run ./cmd/bench -task lm`"} {
		if !bytes.Contains(md, []byte(want)) {
			t.Errorf("RESULTS.md lacks %q", want)
		}
	}
	sum, _ := os.ReadFile(filepath.Join(dir, "results", "copy-summary.csv"))
	half := stats.TQuantile(0.975, 2) * 0.1 / math.Sqrt(3)
	if want := "rope,64,,exact_match,3,0.7," + strconv.FormatFloat(0.7-half, 'g', 6, 64); !bytes.Contains(sum, []byte(want)) {
		t.Errorf("summary lacks %q:\n%s", want, sum)
	}
	data, err := os.ReadFile(filepath.Join(dir, "results", "copy-exact_match.png"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := png.Decode(bytes.NewReader(data)); err != nil {
		t.Errorf("plot: %v", err)
	}
}

// A metric's figure puts the schemes in one panel, a variant several schemes share in a panel of
// its own (in its schemes' styles), and a scheme's own variants beside that scheme; baselines
// are grey in every panel.
func TestSplitPanels(t *testing.T) {
	s := func(labels ...string) []plot.Series {
		var out []plot.Series
		for _, l := range labels {
			out = append(out, plot.Series{Label: l})
		}
		return out
	}
	type want struct {
		title  string
		labels []string
	}
	check := func(name string, got []curvePanel, ws []want) {
		t.Helper()
		if len(got) != len(ws) {
			t.Fatalf("%s: %d panels, want %d: %+v", name, len(got), len(ws), got)
		}
		for i, w := range ws {
			var labels []string
			for _, ps := range got[i].series {
				labels = append(labels, ps.Label)
			}
			if got[i].title != w.title || strings.Join(labels, "|") != strings.Join(w.labels, "|") {
				t.Errorf("%s panel %d: %q %v, want %q %v", name, i, got[i].title, labels, w.title, w.labels)
			}
		}
	}
	styleOf := func(p curvePanel, label string) plot.Series {
		for _, ps := range p.series {
			if ps.Label == label {
				return ps
			}
		}
		t.Fatalf("no %q in panel %q", label, p.title)
		return plot.Series{}
	}

	lm := splitPanels(s("unigram", "none", "none + sliding L", "rope", "rope + yarn s=4", "rope + PI s=4 ft", "rope + sliding L", "alibi", "alibi + sliding L"))
	check("lm", lm, []want{
		{"", []string{"unigram", "none", "rope", "alibi"}},
		{"+ sliding L", []string{"unigram", "none", "none + sliding L", "rope", "rope + sliding L", "alibi", "alibi + sliding L"}},
		{"rope and its variants", []string{"unigram", "rope", "rope + yarn s=4", "rope + PI s=4 ft"}},
	})
	if g := styleOf(lm[0], "unigram"); g.Colour != baselineGrey {
		t.Errorf("unigram's colour %v, want the baselines' grey", g.Colour)
	}
	for _, name := range []string{"none", "rope", "alibi"} {
		base, v := styleOf(lm[0], name), styleOf(lm[1], name+" + sliding L")
		if v.Style != base.Style || !v.Points || base.Points {
			t.Errorf("%s + sliding L: style %d points %v, want its scheme's style %d with points", name, v.Style, v.Points, base.Style)
		}
	}
	rope := styleOf(lm[2], "rope").Style
	yarn, pi := styleOf(lm[2], "rope + yarn s=4").Style, styleOf(lm[2], "rope + PI s=4 ft").Style
	if yarn == rope || pi == rope || yarn == pi {
		t.Errorf("rope's variants share a style: rope %d, yarn %d, PI %d", rope, yarn, pi)
	}

	// Fourteen schemes in a sliding window: too many to draw beside their schemes.
	var many []string
	for i := range 7 {
		many = append(many, fmt.Sprint("s", i), fmt.Sprint("s", i, " + sliding L"))
	}
	wide := splitPanels(s(many...))
	if len(wide) != 2 || len(wide[1].series) != 7 || wide[1].series[0].Points {
		t.Errorf("seven sliding variants: %+v, want a panel of the seven alone, without points", wide)
	}
}

// The needle-in-a-haystack figure has one heatmap per model (baselines left out), five to a row
// under a title; a task without depths or pairs has none.
func TestPlotSubGrid(t *testing.T) {
	var rs []Result
	for _, scheme := range []string{"chance", "rope", "alibi", "t5", "kerple", "fire", "shaw"} {
		for _, d := range []float64{0, 0.5, 1} {
			for _, n := range []int{64, 128} {
				r := res(tasks.Passkey, scheme, "", 1, n, "exact_match", d)
				r.Depth = d
				rs = append(rs, r)
			}
		}
	}
	data, err := PlotSubGrid(rs, tasks.Passkey, "exact_match")
	if err != nil || data == nil {
		t.Fatalf("passkey: %v (nil figure: %v)", err, data == nil)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != 5*280 || b.Dy() != 2*240+30 {
		t.Errorf("figure %dx%d, want 5 panels a row and 2 rows for 6 models (%dx%d)", b.Dx(), b.Dy(), 5*280, 2*240+30)
	}
	if data, err := PlotSubGrid([]Result{res(tasks.Copy, "rope", "", 1, 64, "exact_match", 1)}, tasks.Copy, "exact_match"); data != nil || err != nil {
		t.Errorf("copy has no depths, got a figure (%v)", err)
	}
}

// Results scored on two test texts are never reported together; results without a text
// (before they were recorded) mix with any.
func TestOneText(t *testing.T) {
	a := Result{Task: "copy", Model: "rope", Text: "go1.26.8:abc"}
	old := Result{Task: "copy", Model: "alibi"}
	if got, err := OneText(map[string][]Result{"copy": {old, a, a}}); err != nil || got != a.Text {
		t.Errorf("one text: %q, %v", got, err)
	}
	b := Result{Task: "lm", Model: "none", Text: "go1.25.0:def"}
	if _, err := OneText(map[string][]Result{"copy": {a}, "lm": {b}}); err == nil || !strings.Contains(err.Error(), "go1.25.0:def") || !strings.Contains(err.Error(), "go1.26.8:abc") {
		t.Errorf("two texts: %v", err)
	}
}
