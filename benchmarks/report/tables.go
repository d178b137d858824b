package report

import (
	"fmt"
	"image/color"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/posformer/posformer/benchmarks/plot"
	"github.com/posformer/posformer/benchmarks/recipe"
	"github.com/posformer/posformer/benchmarks/stats"
	"github.com/posformer/posformer/engine/train/tasks"
)

// Series is one table row / plot curve: a label's value at each length, summarized over seeds.
type Series struct {
	Label string
	Order int
	Seeds int // seeds with at least one value
	Cells map[int]stats.Summary
	// Splits are the cells of an accuracy whose seeds split between learning and not
	// (stats.SplitLearned): the table shows how many learned instead of the interval.
	Splits map[int]stats.Split
	// Bootstrapped are the cells whose interval is the bootstrap over seeds and documents.
	Bootstrapped map[int]bool
}

// AllSubs selects the mean over a task's depths or pair counts (the headline); any other value
// of the sub argument of Aggregate selects that one depth or pair count.
var AllSubs = math.Inf(1)

// PerSeed returns, for one label and metric, each seed's value at each length: the mean over the
// selected depths or pair counts (every one has the same number of sequences) and over duplicates.
func PerSeed(rs []Result, label, metric string, sub float64) map[int]map[int]float64 {
	type key struct{ seed, length int }
	sum, n := map[key]float64{}, map[key]int{}
	for _, r := range rs {
		if r.Metric != metric || r.Label() != label {
			continue
		}
		if s := r.Sub(); sub != AllSubs && !(s == sub || (math.IsNaN(s) && math.IsNaN(sub))) {
			continue
		}
		k := key{r.Seed, r.Length}
		sum[k] += r.Value
		n[k]++
	}
	out := map[int]map[int]float64{}
	for k, s := range sum {
		if out[k.length] == nil {
			out[k.length] = map[int]float64{}
		}
		out[k.length][k.seed] = s / float64(n[k])
	}
	return out
}

// Aggregate summarizes one metric by label and length (sub: AllSubs, or one depth / pair count),
// with Student-t intervals over seeds.
func Aggregate(rs []Result, metric string, sub float64) ([]Series, []int) {
	return AggregateDocs(rs, metric, sub, nil)
}

// AggregateDocs is Aggregate with the per-document scores of lm and mlm: a cell whose every seed
// has them gets the bootstrap over seeds and documents (over all depths: sub AllSubs).
func AggregateDocs(rs []Result, metric string, sub float64, idx DocIndex) ([]Series, []int) {
	labels := map[string]bool{}
	lengthSet := map[int]bool{}
	for _, r := range rs {
		if r.Metric == metric {
			labels[r.Label()] = true
		}
	}
	var out []Series
	for lab := range labels {
		s := Series{Label: lab, Order: labelOrder(lab), Cells: map[int]stats.Summary{}, Splits: map[int]stats.Split{}, Bootstrapped: map[int]bool{}}
		seeds := map[int]bool{}
		for length, bySeed := range PerSeed(rs, lab, metric, sub) {
			for seed, v := range bySeed {
				if !math.IsNaN(v) {
					seeds[seed] = true
				}
			}
			s.Cells[length] = summaryOf(bySeed)
			if sub == AllSubs && !IsBaseline(lab) {
				c, method := cellSummary(rs, idx, lab, metric, length, bySeed)
				s.Cells[length], s.Bootstrapped[length] = c, method == ByBootstrap
			}
			if tasks.HigherIsBetter(metric) && !IsBaseline(lab) {
				if sp, ok := stats.SplitLearned(sortedValues(bySeed), baselineAt(rs, metric, length)); ok {
					s.Splits[length] = sp
				}
			}
			lengthSet[length] = true
		}
		s.Seeds = len(seeds)
		if len(s.Cells) > 0 {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Order != out[j].Order {
			return out[i].Order < out[j].Order
		}
		return out[i].Label < out[j].Label
	})
	var lengths []int
	for l := range lengthSet {
		lengths = append(lengths, l)
	}
	sort.Ints(lengths)
	return out, lengths
}

// labelOrder groups the rows: baselines, then schemes in recipe order, each followed by its
// variants (RoPE scaling rows by type, then factor).
func labelOrder(label string) int {
	base, variant, _ := strings.Cut(label, " + ")
	o := (recipe.SchemeOrder(base) + 2) * 1000
	if variant == "" {
		return o
	}
	for i, t := range recipe.V2.RopeTypes {
		if strings.HasPrefix(variant, t+" s=") {
			var f float64
			fmt.Sscanf(strings.TrimPrefix(variant, t+" s="), "%g", &f)
			return o + 10 + 100*i + int(math.Min(f, 99))
		}
	}
	// Trained variants and the sliding window right after the scheme.
	switch {
	case variant == recipe.RandPosVariant:
		return o + 1
	case strings.HasPrefix(variant, "PI "):
		return o + 2
	case variant == recipe.SlidingVariant:
		return o + 3
	}
	return o + 4
}

// IsBaseline reports whether a label is a model-free baseline (chance, unigram, bag).
func IsBaseline(label string) bool { return recipe.SchemeOrder(label) < 0 }

// displayName is a row's name in a table.
func displayName(task, label string, seeds int) string {
	name := "`" + label + "`"
	switch {
	case label == "bag":
		name += " (position-blind)"
	case label == "none" && tasks.Kind(task) == "encoder":
		name += " (position-blind)"
	case label == "none":
		name += " (NoPE)"
	}
	if seeds > 1 {
		name += fmt.Sprintf(" (%d seeds)", seeds)
	}
	return name
}

// Table renders one metric as Markdown: a row per label, a column per length, each cell the mean
// over seeds ± the half width of its 95% interval (Student t), or the value alone for one seed.
func Table(task string, rs []Result, metric string, sub float64) string {
	return TableDocs(task, rs, metric, sub, nil)
}

// TableDocs is Table with lm's and mlm's per-document scores: their cells' intervals are the
// bootstrap over seeds and documents (the ends need not be symmetric: the cell shows the mean
// and [lo, hi]). Cells of an accuracy whose seeds split between learning and not show
// "k/n learned: mean of those". A caption line under the table says which interval is which.
func TableDocs(task string, rs []Result, metric string, sub float64, idx DocIndex) string {
	ss, lengths := AggregateDocs(rs, metric, sub, idx)
	if len(ss) == 0 {
		return ""
	}
	L := TrainLen(rs)
	var b strings.Builder
	boot, tcells, splits := 0, 0, 0
	b.WriteString("| model |")
	for _, l := range lengths {
		fmt.Fprintf(&b, " %d (%gL) |", l, float64(l)/float64(L))
	}
	b.WriteString("\n| --- |" + strings.Repeat(" ---: |", len(lengths)) + "\n")
	for _, s := range ss {
		b.WriteString("| " + displayName(task, s.Label, s.Seeds) + " |")
		for _, l := range lengths {
			c, ok := s.Cells[l]
			sp, split := s.Splits[l]
			switch {
			case !ok:
				b.WriteString(" |")
			case math.IsNaN(c.Mean):
				b.WriteString(" — |")
			case split:
				splits++
				fmt.Fprintf(&b, " %d/%d learned: %s |", sp.Learned, sp.N, Num(sp.LearnedMean))
			case c.HasInterval() && s.Bootstrapped[l]:
				boot++
				fmt.Fprintf(&b, " %s [%s, %s] |", Num(c.Mean), Num(c.Lo), Num(c.Hi))
			case c.HasInterval():
				tcells++
				fmt.Fprintf(&b, " %s ± %s |", Num(c.Mean), Num(c.HalfWidth()))
			default:
				fmt.Fprintf(&b, " %s |", Num(c.Mean))
			}
		}
		b.WriteString("\n")
	}
	var notes []string
	if boot > 0 {
		notes = append(notes, fmt.Sprintf("mean [95%% interval]: bootstrap over seeds and the test text's documents (%d resamples)", stats.Resamples))
	}
	if tcells > 0 {
		what := "mean ± 95% half width: Student t over seeds"
		if DocsMetric(task) == metric {
			what += " (no per-document scores kept for these cells)"
		}
		notes = append(notes, what)
	}
	if splits > 0 {
		notes = append(notes, fmt.Sprintf("k/n learned: the seeds split, k of n above the best baseline by %.1f, with those k's mean", stats.LearnMargin))
	}
	if len(notes) > 0 && (boot > 0 || splits > 0 || DocsMetric(task) == metric) {
		b.WriteString("\n" + strings.Join(notes, "; ") + ".\n")
	}
	return b.String()
}

// Subs lists the depths or pair counts present for a metric.
func Subs(rs []Result, metric string) []float64 {
	set := map[float64]bool{}
	for _, r := range rs {
		if r.Metric == metric && !math.IsNaN(r.Sub()) {
			set[r.Sub()] = true
		}
	}
	var out []float64
	for s := range set {
		out = append(out, s)
	}
	sort.Float64s(out)
	return out
}

// SubTables shows a metric at each depth (passkey) or number of pairs (mqar): the
// needle-in-a-haystack grid, one table per depth.
func SubTables(task string, rs []Result, metric string) string {
	var parts []string
	for _, d := range Subs(rs, metric) {
		what := fmt.Sprintf("Key at depth %s (0: first, 1: just before the question)", DepthString(d))
		if task == tasks.MQAR {
			what = fmt.Sprintf("%g key-value pairs", d)
		}
		parts = append(parts, what+":\n\n"+Table(task, rs, metric, d))
	}
	return strings.Join(parts, "\n")
}

// Ranking states, at each length past L, which schemes (rows with two or more seeds, baselines
// and variants left out) are ranked above which: tiers split only where the 95% intervals are
// disjoint, so "A > B" is never claimed where the seeds cannot tell.
func Ranking(task string, rs []Result, metric string) string {
	return RankingDocs(task, rs, metric, nil)
}

// RankingDocs is Ranking on the intervals TableDocs shows (the bootstrap where lm's and mlm's
// per-document scores are kept). A cell whose seeds split between learning and not keeps its
// t-interval here: wide, it joins the tiers it spans, and the letters show what it does not.
func RankingDocs(task string, rs []Result, metric string, idx DocIndex) string {
	ss, lengths := AggregateDocs(rs, metric, AllSubs, idx)
	L := TrainLen(rs)
	var b strings.Builder
	ranked, usedLetters := false, false
	for _, l := range lengths {
		if l <= L {
			continue
		}
		var labels []string
		var sums []stats.Summary
		for _, s := range ss {
			if c, ok := s.Cells[l]; ok && !IsBaseline(s.Label) && !strings.Contains(s.Label, " + ") && !math.IsNaN(c.Mean) {
				labels, sums = append(labels, s.Label), append(sums, c)
			}
		}
		if len(labels) < 2 {
			continue
		}
		higher := tasks.HigherIsBetter(metric)
		tiers, unranked := stats.Tiers(labels, sums, higher)
		ranked = ranked || len(tiers) > 0
		var parts []string
		for _, t := range tiers {
			parts = append(parts, strings.Join(t, ", "))
		}
		order, letters, _ := stats.Letters(labels, sums, higher)
		fmt.Fprintf(&b, "- %gL: ", float64(l)/float64(L))
		switch {
		case len(tiers) == 0:
			b.WriteString("no scheme has two seeds; nothing ranked")
		case len(order) == 1:
			b.WriteString("only " + order[0] + " has two seeds; nothing ranked")
		case separatedWithin(tiers, labels, sums):
			// The tiers hide pairs that differ (a wide interval joins them): letters show all.
			usedLetters = true
			for i := range order {
				order[i] += " (" + letters[i] + ")"
			}
			b.WriteString(strings.Join(order, ", "))
		case len(tiers) == 1:
			b.WriteString("no ranking: every interval overlaps another (" + parts[0] + ")")
		default:
			b.WriteString(strings.Join(parts, " **>** "))
		}
		if len(unranked) > 0 {
			b.WriteString(" (one seed, not ranked: " + strings.Join(unranked, ", ") + ")")
		}
		b.WriteString("\n")
	}
	if b.Len() == 0 {
		return ""
	}
	if !ranked {
		return "Not ranked: every scheme has one seed (a ranking needs 95% intervals).\n"
	}
	dir := "lower is better"
	if tasks.HigherIsBetter(metric) {
		dir = "higher is better"
	}
	how := "`>` only between groups whose 95% intervals are disjoint"
	if usedLetters {
		how += "; where a wide interval joins groups that differ, letters: two schemes that share none differ, the first named better"
	}
	return fmt.Sprintf("Ranking by %s (%s; %s):\n\n%s", metric, dir, how, b.String())
}

// separatedWithin reports whether some two entries of one tier have disjoint intervals (a
// tier is a chain of overlaps, so its ends may be far apart).
func separatedWithin(tiers [][]string, labels []string, sums []stats.Summary) bool {
	of := map[string]stats.Summary{}
	for i, l := range labels {
		of[l] = sums[i]
	}
	for _, t := range tiers {
		for i := range t {
			for j := range i {
				if stats.Separated(of[t[i]], of[t[j]]) {
					return true
				}
			}
		}
	}
	return false
}

// TrainLen is L of a task's results (the same for all its checkpoints by the recipe).
func TrainLen(rs []Result) int {
	for _, r := range rs {
		if r.TrainLen > 0 {
			return r.TrainLen
		}
	}
	return 1
}

// Num prints a value with three decimals (tiny chance levels in scientific notation).
func Num(v float64) string {
	switch {
	case math.IsNaN(v):
		return "—"
	case v != 0 && math.Abs(v) < 0.001:
		return fmt.Sprintf("%.0e", v)
	}
	return fmt.Sprintf("%.3f", v)
}

// PlotMetric draws one metric against length, a curve per label with its 95% interval as error
// bars, the training length marked; variant rows (RoPE scaling, sliding window, PI, randomized
// positions) get panels of their own beside the schemes (splitPanels).
func PlotMetric(rs []Result, task, metric string) ([]byte, error) {
	return PlotMetricDocs(rs, task, metric, nil)
}

// PlotMetricDocs is PlotMetric with the tables' intervals (the bootstrap where lm's and mlm's
// per-document scores are kept).
func PlotMetricDocs(rs []Result, task, metric string, idx DocIndex) ([]byte, error) {
	ss, _ := AggregateDocs(rs, metric, AllSubs, idx)
	var all []plot.Series
	lo, hi := math.Inf(1), math.Inf(-1)
	base := math.NaN()
	for _, s := range ss {
		ps := plot.Series{Label: s.Label, Style: 1 + len(all)}
		var ls []int
		for l := range s.Cells {
			ls = append(ls, l)
		}
		sort.Ints(ls)
		for _, l := range ls {
			c := s.Cells[l]
			if math.IsNaN(c.Mean) {
				continue
			}
			ps.X, ps.Y = append(ps.X, float64(l)), append(ps.Y, c.Mean)
			ps.Lo, ps.Hi = append(ps.Lo, c.Lo), append(ps.Hi, c.Hi)
			lo, hi = math.Min(lo, c.Mean), math.Max(hi, c.Mean)
			if s.Label == "unigram" {
				base = c.Mean
			}
		}
		if len(ps.X) > 0 {
			all = append(all, ps)
		}
	}
	if len(all) == 0 {
		return nil, nil
	}
	panels := splitPanels(all)
	// Error bars of a dozen curves at the same length hide each other: each curve of a panel is
	// shifted by a few percent along the (logarithmic) length axis. The tables have the values.
	spread := func(ss []plot.Series) []plot.Series {
		out := make([]plot.Series, len(ss))
		for i, s := range ss {
			shift := math.Exp2(0.012 * (float64(i) - float64(len(ss)-1)/2))
			s.X = slices.Clone(s.X)
			for k := range s.X {
				s.X[k] *= shift
			}
			out[i] = s
		}
		return out
	}
	panel := func(title string, ss []plot.Series) plot.Lines {
		l := plot.Lines{Title: title, XLabel: "tokens (dashed: L); bars: 95% CI",
			YLabel: metric, Series: spread(ss), LogX: true, Marks: []float64{float64(TrainLen(rs))}, MaxLegend: 24}
		if strings.HasPrefix(metric, "bits") && !math.IsNaN(base) {
			// Schemes that fail past L leave the chart by several bits; clipping at the unigram
			// baseline plus a margin keeps the others readable (the tables have every value).
			l.YMin, l.YMax = math.Max(0, lo-0.2), math.Min(hi, base+1)
		} else {
			l.YMin, l.YMax = -0.02, 1.02
		}
		return l
	}
	var row []plot.Panel
	for _, p := range panels {
		title := task + ": " + metric
		if p.title != "" {
			title += ", " + p.title
		}
		row = append(row, panel(title, p.series))
	}
	return plot.Figure{Rows: [][]plot.Panel{row}, CellWidth: 700, CellHeight: 520, MaxCols: 2}.PNG()
}

// A curvePanel is one panel of a metric's figure.
type curvePanel struct {
	title  string
	series []plot.Series
}

// baselineGrey draws the baselines (unigram, chance, the position-blind bag) in every panel,
// told apart by their dashes and from the schemes by their colour.
var baselineGrey = color.Gray{Y: 0x70}

// splitPanels lays a metric's curves (in table order) out in panels a reader can tell apart:
// first the schemes; then, for a variant several schemes share (each run in a sliding window
// of L, randomized positions), a panel of those variants in their schemes' styles, the schemes
// beside them when the panel stays small; then, for a scheme with variants of its own (RoPE's
// context extensions, its PI fine-tune), the scheme and its variants. Styles are fixed by the
// schemes' order, so a scheme keeps its look in every panel; every panel has the baselines.
func splitPanels(all []plot.Series) []curvePanel {
	var baselines, schemes []plot.Series
	scheme := map[string]plot.Series{} // by label; a zero Style where a base is no scheme row
	var suffixes, owners []string
	bySuffix := map[string][]plot.Series{}
	basesOf := map[string][]string{}
	for _, ps := range all {
		base, suffix, variant := strings.Cut(ps.Label, " + ")
		switch {
		case variant:
			if _, ok := bySuffix[suffix]; !ok {
				suffixes = append(suffixes, suffix)
			}
			bySuffix[suffix] = append(bySuffix[suffix], ps)
			basesOf[suffix] = append(basesOf[suffix], base)
		case IsBaseline(ps.Label):
			ps.Colour, ps.Style = baselineGrey, 1+len(baselines)*plot.Colours
			baselines = append(baselines, ps)
		default:
			ps.Style = 1 + len(schemes)
			scheme[ps.Label] = ps
			schemes = append(schemes, ps)
		}
	}
	panels := []curvePanel{{series: append(slices.Clone(baselines), schemes...)}}
	own := map[string][]plot.Series{}
	for _, suffix := range suffixes {
		vs := bySuffix[suffix]
		if len(vs) < 2 { // labels are unique: one variant per base
			base := basesOf[suffix][0]
			if _, ok := own[base]; !ok {
				owners = append(owners, base)
			}
			own[base] = append(own[base], vs...)
			continue
		}
		withBases := len(baselines)+2*len(vs) <= 12
		p := curvePanel{title: "+ " + suffix, series: slices.Clone(baselines)}
		for i, v := range vs {
			v.Style = scheme[basesOf[suffix][i]].Style
			if b, ok := scheme[basesOf[suffix][i]]; ok && withBases {
				p.series = append(p.series, b)
				v.Points = true
			}
			p.series = append(p.series, v)
		}
		panels = append(panels, p)
	}
	for _, base := range owners {
		p := curvePanel{title: base + " and its variants", series: slices.Clone(baselines)}
		if b, ok := scheme[base]; ok {
			p.series = append(p.series, b)
		}
		next := 1
		for _, v := range own[base] {
			if next == scheme[base].Style {
				next++
			}
			v.Style = next
			next++
			p.series = append(p.series, v)
		}
		panels = append(panels, p)
	}
	return panels
}
