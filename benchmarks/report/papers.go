package report

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/posformer/posformer/benchmarks/recipe"
	"github.com/posformer/posformer/benchmarks/stats"
	"github.com/posformer/posformer/engine/train/tasks"
)

// Verdicts of a finding.
const (
	Reproduced    = "reproduced"
	NotReproduced = "not reproduced"
	Inconclusive  = "inconclusive"
)

// FlatBits is how much a bits-per-byte curve may rise from L to 16L and still be called flat:
// 0.1 bit per byte, about 7% in perplexity per byte. The papers show curves, not a threshold;
// this one is ours, stated wherever it is used.
const FlatBits = 0.1

// Finding is one row of "against the papers": a published claim and what our results say.
type Finding struct {
	Paper, Claim      string
	Measured          string // values with their 95% intervals
	Verdict, Reason   string
	Tasks, Conditions string // where we test it
}

// Papers checks each published finding the benchmark touches against the results (by task),
// deciding only from intervals: a claim is reproduced when every comparison it makes holds with
// disjoint 95% intervals (or, for "flat", an interval entirely under FlatBits), not reproduced
// when one comparison holds the other way round with disjoint intervals, and inconclusive
// otherwise (overlapping intervals, a single seed, or rows not measured).
func Papers(byTask map[string][]Result) []Finding {
	r := recipe.V2
	return []Finding{
		flatFinding(byTask[tasks.LM]),
		piFinding(tasks.LM, byTask[tasks.LM], r.PIFactor),
		piFinding(tasks.Passkey, byTask[tasks.Passkey], r.PIFactor),
		yarnFinding(byTask[tasks.LM], slices.Max(r.RopeFactors)),
		nopeFinding(byTask[tasks.Copy], byTask[tasks.Reverse]),
		randposFinding(byTask[tasks.Copy], byTask[tasks.Reverse], r.RandPosSchemes),
	}
}

// The schemes the findings compare, beside the recipe's RandPosSchemes and RoPE (PI, YaRN).
var (
	// T5's bias degrades in Press et al.'s own Figure 1 ("current position methods (sinusoidal,
	// rotary, and T5) show degraded perplexity"), so it stands with the schemes that degrade.
	flatSchemes, degradeSchemes = []string{"alibi", "kerple", "fire"}, []string{"sinusoidal", "learned", "rope", "t5"}
	nopeGood, nopeAbsolute      = []string{"none", "t5"}, []string{"sinusoidal", "learned"}
)

// Compared is, for each task, the schemes whose rows "against the papers" compares (their
// trained variants go with them): the grid trains these to every seed before the rest
// (grid.Order), so that the findings get their intervals first.
func Compared() map[string][]string {
	lm := append(slices.Clone(flatSchemes), degradeSchemes...) // rope's rows serve PI and YaRN too
	synthetic := append(slices.Clone(nopeGood), nopeAbsolute...)
	for _, s := range recipe.V2.RandPosSchemes {
		if !slices.Contains(synthetic, s) {
			synthetic = append(synthetic, s)
		}
	}
	return map[string][]string{tasks.LM: lm, tasks.Passkey: {"rope"}, tasks.Copy: synthetic, tasks.Reverse: synthetic}
}

// seedValues is one label's value per seed at a length (depths and pairs averaged).
func seedValues(rs []Result, label, metric string, length int) map[int]float64 {
	return PerSeed(rs, label, metric, AllSubs)[length]
}

// summaryOf summarizes per-seed values, added in seed order: in a map's order the mean's last
// bit changed from run to run, and with it a rounded cell of RESULTS.md.
func summaryOf(m map[int]float64) stats.Summary {
	var vals []float64
	for _, seed := range slices.Sorted(maps.Keys(m)) {
		vals = append(vals, m[seed])
	}
	return stats.Summarize(vals)
}

// pairedDelta summarizes a(seed) - b(seed) over the seeds both have.
func pairedDelta(a, b map[int]float64) stats.Summary {
	var d []float64
	for _, seed := range slices.Sorted(maps.Keys(a)) {
		if vb, ok := b[seed]; ok {
			d = append(d, a[seed]-vb)
		}
	}
	return stats.Summarize(d)
}

// meanOverLengths is each seed's mean over the given lengths (seeds missing one are left out).
func meanOverLengths(rs []Result, label, metric string, lengths []int) map[int]float64 {
	per := PerSeed(rs, label, metric, AllSubs)
	out := map[int]float64{}
	for seed := range per[lengths[0]] {
		sum, ok := 0.0, true
		for _, l := range lengths {
			v, has := per[l][seed]
			ok = ok && has && !math.IsNaN(v)
			sum += v
		}
		if ok {
			out[seed] = sum / float64(len(lengths))
		}
	}
	return out
}

// fmtSum prints "label +0.012 ± 0.020 (n=3)".
func fmtSum(label string, s stats.Summary, signed bool) string {
	if s.N == 0 || math.IsNaN(s.Mean) {
		return label + " not measured"
	}
	v := Num(s.Mean)
	if signed && s.Mean >= 0 {
		v = "+" + v
	}
	if s.HasInterval() {
		return fmt.Sprintf("%s %s ± %s (n=%d)", label, v, Num(s.HalfWidth()), s.N)
	}
	return fmt.Sprintf("%s %s (n=1)", label, v)
}

// missing lists labels whose summary has no interval (absent, or one seed).
func missing(labels []string, ss []stats.Summary) []string {
	var out []string
	for i, s := range ss {
		if !s.HasInterval() {
			out = append(out, fmt.Sprintf("%s (%s)", labels[i], seeds(s.N)))
		}
	}
	return out
}

func inconclusiveMissing(f Finding, miss []string) Finding {
	f.Verdict = Inconclusive
	f.Reason = "needs two or more seeds of: " + strings.Join(miss, ", ")
	return f
}

// pairs collects the comparisons of a finding, each expecting one side above the other, that do
// not hold: reversed (the expected side's interval lies below) or overlapping.
type pairs struct{ reversed, overlap []string }

// compare files the comparison named pair, whose claim is that hi lies above lo.
func (p *pairs) compare(pair string, lo, hi stats.Summary) {
	switch {
	case stats.Below(lo, hi): // holds
	case stats.Below(hi, lo):
		p.reversed = append(p.reversed, pair)
	default:
		p.overlap = append(p.overlap, pair)
	}
}

// verdict is the finding's: inconclusive while a summary lacks seeds, not reproduced if any
// comparison is reversed (reversedWhy, then the pairs), inconclusive if any overlaps, and
// reproduced (heldWhy) when every one holds.
func (p pairs) verdict(f Finding, miss []string, reversedWhy, heldWhy string) Finding {
	switch {
	case len(miss) > 0:
		return inconclusiveMissing(f, miss)
	case len(p.reversed) > 0:
		f.Verdict, f.Reason = NotReproduced, reversedWhy+": "+strings.Join(p.reversed, "; ")
	case len(p.overlap) > 0:
		f.Verdict, f.Reason = Inconclusive, "intervals overlap: "+strings.Join(p.overlap, "; ")
	default:
		f.Verdict, f.Reason = Reproduced, heldWhy
	}
	return f
}

// flatFinding: Press et al. 2022 (Fig. 1) and the KERPLE and FIRE papers.
func flatFinding(rs []Result) Finding {
	f := Finding{Paper: "Press et al. 2022 (ALiBi, Fig. 1); Chi et al. 2022 (KERPLE); Li et al. 2023 (FIRE)",
		Claim: "ALiBi, KERPLE and FIRE keep language-model loss flat past the training length; sinusoidal, learned, RoPE and T5's bias degrade (Press et al., Fig. 1: \"sinusoidal, rotary, and T5 show degraded perplexity\")",
		Tasks: "lm", Conditions: fmt.Sprintf("bits per byte at 16L minus at L, per seed; flat: 95%% interval under +%.1f bit", FlatBits)}
	L := TrainLen(rs)
	flat, degrade := flatSchemes, degradeSchemes
	var labels []string
	var ds []stats.Summary
	var parts []string
	for _, l := range append(slices.Clone(flat), degrade...) {
		d := pairedDelta(seedValues(rs, l, "bits_per_byte", 16*L), seedValues(rs, l, "bits_per_byte", L))
		labels, ds = append(labels, l), append(ds, d)
		parts = append(parts, fmtSum(l, d, true))
	}
	f.Measured = "16L − L: " + strings.Join(parts, "; ")
	if m := missing(labels, ds); len(m) > 0 {
		return inconclusiveMissing(f, m)
	}
	var rises, stays, unsure []string
	for i, l := range labels {
		d := ds[i]
		isFlat := i < len(flat)
		switch {
		case isFlat && d.Lo > FlatBits:
			rises = append(rises, fmt.Sprintf("%s rises by %s", l, Num(d.Mean)))
		case !isFlat && d.Hi <= FlatBits:
			stays = append(stays, fmt.Sprintf("%s stays within %.1f bit", l, FlatBits))
		case isFlat && d.Hi > FlatBits, !isFlat && d.Lo <= FlatBits:
			unsure = append(unsure, fmt.Sprintf("%s's interval straddles +%.1f", l, FlatBits))
		}
	}
	switch {
	case len(rises)+len(stays) > 0:
		f.Verdict, f.Reason = NotReproduced, strings.Join(append(rises, stays...), "; ")
		if note := fireCapNote(rs, L); note != "" && slices.ContainsFunc(rises, func(r string) bool { return strings.HasPrefix(r, "fire ") }) {
			f.Reason += "; " + note
		}
	case len(unsure) > 0:
		f.Verdict, f.Reason = Inconclusive, strings.Join(unsure, "; ")
	default:
		f.Verdict, f.Reason = Reproduced, fmt.Sprintf("%s rise by less than %.1f bit and %s by more, intervals clear of it", strings.Join(flat, ", "), FlatBits, strings.Join(degrade, ", "))
	}
	return f
}

// fireCapNote reports the ablation of FIRE's progressive interpolation on lm (the same models
// evaluated with the normaliser's query position capped at L, recipe.FIRECapVariant): its rise
// from L to 16L, and whether that is flat. "" without two seeds of it.
func fireCapNote(rs []Result, L int) string {
	label := "fire + " + recipe.FIRECapVariant
	d := pairedDelta(seedValues(rs, label, "bits_per_byte", 16*L), seedValues(rs, label, "bits_per_byte", L))
	if !d.HasInterval() {
		return ""
	}
	note := "with its normaliser capped at L (our ablation of the progressive interpolation) " + fmtSum("fire", d, true)
	if d.Hi <= FlatBits {
		note += ", flat: the interpolation is what rises"
	}
	return note
}

// PasskeyDrop is how much passkey exact match may fall from L to s·L after the PI fine-tune and
// still count as kept: 0.1, a threshold of ours like FlatBits (Chen et al. report 100% retrieval
// across the extended window).
const PasskeyDrop = 0.1

// piFinding: Chen et al. 2023, position interpolation with a short fine-tune, on lm (the loss
// at s·L, their Table 1 and Fig. 2) or passkey (retrieval across the extended window, §3.3).
func piFinding(task string, rs []Result, factor int) Finding {
	pi := "rope + " + recipe.PIVariant(factor)
	f := Finding{Paper: "Chen et al. 2023 (position interpolation)", Tasks: task}
	metric, unit, tol := "bits_per_byte", "bit", FlatBits
	f.Claim = fmt.Sprintf("a short fine-tune with positions interpolated by s lets RoPE run at s·L with about its loss at L (s = %d here)", factor)
	if task == tasks.Passkey {
		metric, unit, tol = "exact_match", "exact match", PasskeyDrop
		f.Claim = fmt.Sprintf("after a short fine-tune with positions interpolated by s, RoPE retrieves the passkey across s·L as it does within L (s = %d here)", factor)
	}
	f.Conditions = fmt.Sprintf("%s; PI-fine-tuned RoPE at %dL against RoPE at L (paired by seed; kept: the drop's 95%% interval under %g) and against unscaled RoPE at %dL", metric, factor, tol, factor)
	L := TrainLen(rs)
	atL := seedValues(rs, "rope", metric, L)
	piS, rope := seedValues(rs, pi, metric, factor*L), seedValues(rs, "rope", metric, factor*L)
	// d is how much worse PI at s·L is than RoPE at L (positive: worse), per seed.
	d, better := pairedDelta(piS, atL), stats.Below
	if tasks.HigherIsBetter(metric) {
		d, better = pairedDelta(atL, piS), func(a, b stats.Summary) bool { return stats.Below(b, a) }
	}
	sPI, sRope := summaryOf(piS), summaryOf(rope)
	f.Measured = fmt.Sprintf("%s at %dL: %s; %s; PI at %dL worse than RoPE at L by %s", metric, factor, fmtSum("PI", sPI, false), fmtSum("RoPE", sRope, false), factor, strings.TrimSpace(fmtSum("", d, true)))
	if m := missing([]string{pi, "rope"}, []stats.Summary{sPI, sRope}); len(m) > 0 || !d.HasInterval() {
		if len(m) == 0 {
			m = []string{fmt.Sprintf("PI and RoPE with the same seeds (%d pairs)", d.N)}
		}
		return inconclusiveMissing(f, m)
	}
	switch {
	case d.Lo > tol || better(sRope, sPI):
		f.Verdict, f.Reason = NotReproduced, fmt.Sprintf("PI at %dL is %s %s worse than RoPE at L (interval beyond %g) or no better than unscaled RoPE", factor, Num(d.Mean), unit, tol)
	case d.Hi <= tol && better(sPI, sRope):
		f.Verdict, f.Reason = Reproduced, fmt.Sprintf("PI at %dL is within %g %s of RoPE at L and better than unscaled RoPE, intervals disjoint", factor, tol, unit)
	default:
		f.Verdict, f.Reason = Inconclusive, "the intervals overlap the threshold or each other"
	}
	return f
}

// yarnFinding: Peng et al. 2023, evaluated here without fine-tuning at a fixed factor.
func yarnFinding(rs []Result, factor float64) Finding {
	yarn, linear := "rope + "+recipe.ScalingVariant("yarn", factor), "rope + "+recipe.ScalingVariant("linear", factor)
	f := Finding{Paper: "Peng et al. 2023 (YaRN)",
		Claim: "YaRN extends RoPE's context by s (after a short fine-tune); without one it already beats plain RoPE and position interpolation",
		Tasks: "lm", Conditions: fmt.Sprintf("no fine-tuning, s = %g, bits per byte at %gL", factor, factor)}
	L := TrainLen(rs)
	n := int(factor) * L
	sY, sR, sLin := summaryOf(seedValues(rs, yarn, "bits_per_byte", n)), summaryOf(seedValues(rs, "rope", "bits_per_byte", n)), summaryOf(seedValues(rs, linear, "bits_per_byte", n))
	atL := summaryOf(seedValues(rs, "rope", "bits_per_byte", L))
	rec := ""
	if gap := sR.Mean - atL.Mean; gap > 0 && !math.IsNaN(sY.Mean) {
		rec = fmt.Sprintf("; YaRN closes %.0f%% of RoPE's gap to its loss at L", 100*(sR.Mean-sY.Mean)/gap)
	}
	f.Measured = fmtSum("YaRN", sY, false) + "; " + fmtSum("RoPE", sR, false) + "; " + fmtSum("PI (linear)", sLin, false) + rec
	if m := missing([]string{yarn, "rope", linear}, []stats.Summary{sY, sR, sLin}); len(m) > 0 {
		return inconclusiveMissing(f, m)
	}
	switch {
	case stats.Below(sR, sY) || stats.Below(sLin, sY):
		f.Verdict, f.Reason = NotReproduced, "YaRN is worse than plain RoPE or linear interpolation, intervals disjoint"
	case stats.Below(sY, sR) && stats.Below(sY, sLin):
		f.Verdict, f.Reason = Reproduced, "YaRN is below both, intervals disjoint"
	default:
		f.Verdict, f.Reason = Inconclusive, "YaRN's interval overlaps plain RoPE's or linear interpolation's"
	}
	return f
}

// nopeFinding: Kazemnejad et al. 2023 on copy and reverse.
func nopeFinding(copyRs, reverseRs []Result) Finding {
	f := Finding{Paper: "Kazemnejad et al. 2023 (NoPE)",
		Claim: "NoPE and T5's relative bias generalize copy and reverse to longer inputs better than absolute positions (sinusoidal, learned)",
		Tasks: "copy, reverse", Conditions: "token accuracy at 2L, every pair (NoPE or T5) vs (sinusoidal or learned)"}
	good, absolute := nopeGood, nopeAbsolute
	var measured, miss []string
	var ps pairs
	for _, tr := range []struct {
		task string
		rs   []Result
	}{{tasks.Copy, copyRs}, {tasks.Reverse, reverseRs}} {
		n := 2 * TrainLen(tr.rs)
		sum := map[string]stats.Summary{}
		var parts []string
		for _, l := range append(slices.Clone(good), absolute...) {
			sum[l] = summaryOf(seedValues(tr.rs, l, "token_accuracy", n))
			parts = append(parts, fmtSum(l, sum[l], false))
			if !sum[l].HasInterval() {
				miss = append(miss, fmt.Sprintf("%s %s (%s)", tr.task, l, seeds(sum[l].N)))
			}
		}
		measured = append(measured, tr.task+": "+strings.Join(parts, ", "))
		for _, g := range good {
			for _, a := range absolute {
				ps.compare(fmt.Sprintf("%s %s vs %s", tr.task, g, a), sum[a], sum[g])
			}
		}
	}
	f.Measured = strings.Join(measured, "; ")
	return ps.verdict(f, miss, "the absolute scheme is better, intervals disjoint", "NoPE and T5 above both absolute schemes on both tasks, intervals disjoint")
}

// randposFinding: Ruoss et al. 2023.
func randposFinding(copyRs, reverseRs []Result, schemes []string) Finding {
	f := Finding{Paper: "Ruoss et al. 2023 (randomized positions)",
		Claim: "training on randomized positions (a sorted random subset of a longer range) improves length generalization of every encoding",
		Tasks: "copy, reverse", Conditions: "token accuracy averaged over 2L..16L, each scheme with and without randomized positions"}
	var measured, miss []string
	var ps pairs
	for _, tr := range []struct {
		task string
		rs   []Result
	}{{tasks.Copy, copyRs}, {tasks.Reverse, reverseRs}} {
		L := TrainLen(tr.rs)
		var past []int
		for _, l := range []int{2, 4, 8, 16} {
			past = append(past, l*L)
		}
		for _, s := range schemes {
			rp := s + " + " + recipe.RandPosVariant
			plain, with := summaryOf(meanOverLengths(tr.rs, s, "token_accuracy", past)), summaryOf(meanOverLengths(tr.rs, rp, "token_accuracy", past))
			measured = append(measured, fmt.Sprintf("%s %s: %s → %s", tr.task, s, fmtSum("", plain, false), fmtSum("", with, false)))
			pair := tr.task + " " + s
			if !plain.HasInterval() || !with.HasInterval() {
				miss = append(miss, fmt.Sprintf("%s (%s and %s)", pair, seeds(plain.N), seeds(with.N)))
				continue
			}
			ps.compare(pair, plain, with)
		}
	}
	f.Measured = strings.Join(measured, "; ")
	return ps.verdict(f, miss, "randomized positions are worse, intervals disjoint", "better for every scheme and task, intervals disjoint")
}

// PapersSection renders the findings as RESULTS.md's "Against the papers" section.
func PapersSection(fs []Finding) string {
	var b strings.Builder
	b.WriteString("Computed by `benchmarks/report` from the results below, never written by hand. A claim is **reproduced** when each\n" +
		"comparison it makes holds with disjoint 95% intervals over seeds (\"flat\": the interval of the rise lies under\n" +
		fmt.Sprintf("+%.1f bit per byte, a threshold of ours), **not reproduced** when one holds the other way round with disjoint\n", FlatBits) +
		"intervals, and **inconclusive** otherwise (the seeds cannot tell, or a row was not measured).\n\n")
	b.WriteString("| finding | paper reports | we measured (mean ± 95% interval) | verdict | why |\n| --- | --- | --- | --- | --- |\n")
	esc := func(s string) string { return strings.ReplaceAll(s, "|", "\\|") }
	for _, f := range fs {
		fmt.Fprintf(&b, "| %s (%s; %s) | %s | %s | **%s** | %s |\n", esc(f.Paper), f.Tasks, esc(f.Conditions), esc(f.Claim), esc(f.Measured), f.Verdict, esc(f.Reason))
	}
	return b.String()
}

func seeds(n int) string {
	if n == 1 {
		return "1 seed"
	}
	return fmt.Sprintf("%d seeds", n)
}
