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

// FlatBits is how far a row may sit above its own sliding-window row (the same model never run
// past L, at the same length) and still be called flat: 0.1 bit per byte, about 7% in
// perplexity per byte. The papers show curves, not a threshold; this one is ours, stated
// wherever it is used. The sliding row is the reference because the loss at L is not: a row at
// 16L averages over bytes with more context than the windows at L give them, which favours the
// long row whether or not the scheme extrapolates.
const FlatBits = 0.1

// Finding is one row of "against the papers": a published claim and what our results say.
type Finding struct {
	Paper, Claim      string
	Measured          string // values with their 95% intervals
	Verdict, Reason   string
	Tasks, Conditions string // where we test it
	Comparisons       int    // the comparisons the verdict rests on
}

// Source is what the findings read: each task's results (the sweep's other rates dropped) and its
// per-document scores (nil where none were kept: t-intervals over seeds then).
type Source struct {
	ByTask map[string][]Result
	Docs   map[string]DocIndex
}

// outcome of one comparison.
type outcome int

const (
	holds outcome = iota
	reversed
	unclear
	missingSeeds
)

// check is one comparison of a finding: what it compared, its measurement, its outcome.
type check struct {
	name, measured string
	out            outcome
}

// checks collects a finding's comparisons.
type checks struct {
	src  Source
	list []check
	// cells are the unpaired comparisons' cells, each measured once, by "task at kL"
	cells     map[string][]string
	cellOrder []string
	// methods used for the intervals (t over seeds, bootstrap), for the finding's conditions
	methods map[string]bool
}

func newChecks(src Source) *checks {
	return &checks{src: src, methods: map[string]bool{}, cells: map[string][]string{}}
}

// addCell records a cell's text under its task and length, once.
func (c *checks) addCell(where, text string) {
	if _, ok := c.cells[where]; !ok {
		c.cellOrder = append(c.cellOrder, where)
	}
	if !slices.Contains(c.cells[where], text) {
		c.cells[where] = append(c.cells[where], text)
	}
}

// rs and idx of a task.
func (c *checks) data(task string) ([]Result, DocIndex) { return c.src.ByTask[task], c.src.Docs[task] }

// cell is a label's summary at a length, and its text: "k of n seeds learned" where an accuracy's
// seeds split.
func (c *checks) cell(task, label, metric string, length int) (stats.Summary, string) {
	rs, idx := c.data(task)
	bySeed := seedValues(rs, label, metric, length)
	s, method := cellSummary(rs, idx, label, metric, length, bySeed)
	if s.N > 0 {
		c.methods[method] = true
	}
	text := fmtSum(label, s, false)
	if tasks.HigherIsBetter(metric) {
		if sp, ok := stats.SplitLearned(sortedValues(bySeed), baselineAt(rs, metric, length)); ok {
			text = fmt.Sprintf("%s %d of %d seeds learned (%s; the others %s)", label, sp.Learned, sp.N, Num(sp.LearnedMean), Num(sp.FailedMean))
		}
	}
	return s, text
}

// better files the claim that a at la is better than b at lb: paired by seed (the difference per
// seed, then its interval) where the design pairs them, else by disjoint intervals.
func (c *checks) better(task, metric, a string, la int, b string, lb int, paired bool) {
	c.compare(task, metric, a, la, b, lb, paired, false)
}

// notWorse files the claim that a is at least as good as b: it fails only when b is better with
// disjoint intervals.
func (c *checks) notWorse(task, metric, a string, la int, b string, lb int, paired bool) {
	c.compare(task, metric, a, la, b, lb, paired, true)
}

func (c *checks) compare(task, metric, a string, la int, b string, lb int, paired, weak bool) {
	rs, idx := c.data(task)
	L := TrainLen(rs)
	name := fmt.Sprintf("%s %s%s vs %s%s", task, a, at(la, L), b, at(lb, L))
	higher := tasks.HigherIsBetter(metric)
	var ch check
	if paired {
		d, method := pairedSummary(rs, idx, metric, a, la, b, lb)
		if d.N > 0 {
			c.methods[method] = true
		}
		ch = check{name: name, measured: fmtSum(name+": difference", d, true)}
		ch.out = judgeGain(d, higher, weak)
	} else if d, ok := sharedTextSummary(rs, idx, metric, a, la, b, lb); ok {
		// Two models read the same documents: the text's variance is common to both and
		// cancels from their difference (the seeds are resampled on each side on their own).
		_, ta := c.cell(task, a, metric, la)
		_, tb := c.cell(task, b, metric, lb)
		c.addCell(task+at(la, L), ta)
		c.addCell(task+at(lb, L), tb)
		c.methods[ByBootstrap] = true
		ch = check{name: name, measured: fmtSum(name+": difference (documents shared)", d, true)}
		ch.out = judgeGain(d, higher, weak)
	} else {
		sa, ta := c.cell(task, a, metric, la)
		sb, tb := c.cell(task, b, metric, lb)
		c.addCell(task+at(la, L), ta)
		c.addCell(task+at(lb, L), tb)
		ch = check{name: name}
		aBetter := func() bool { return stats.Below(sb, sa) }
		bBetter := func() bool { return stats.Below(sa, sb) }
		if !higher {
			aBetter, bBetter = bBetter, aBetter
		}
		switch {
		case !sa.HasInterval() || !sb.HasInterval():
			ch.out = missingSeeds
		case aBetter():
			ch.out = holds
		case bBetter():
			ch.out = reversed
		case weak:
			ch.out = holds
		default:
			ch.out = unclear
		}
	}
	c.list = append(c.list, ch)
}

// judgeGain decides a claim that a is better than b (weak: at least as good) from the interval of
// a − b: better is above 0 when higher is better, below 0 otherwise.
func judgeGain(d stats.Summary, higher, weak bool) outcome {
	if !higher {
		d.Lo, d.Hi = -d.Hi, -d.Lo // the gain of a over b
	}
	switch {
	case !d.HasInterval():
		return missingSeeds
	case d.Lo > 0:
		return holds
	case d.Hi < 0:
		return reversed
	case weak:
		return holds
	}
	return unclear
}

// flat files the claim that label stays flat at k·L (flat) or degrades there (!flat), against its
// own sliding-window row at the same length, paired by seed.
func (c *checks) flat(task, label string, k int, flat bool) {
	c.flatAgainst(task, label, label+" + "+recipe.SlidingVariant, k, flat)
}

// flatAgainst is flat with the reference row named: another evaluation of the same model (its
// sliding window, for a row that reads the text another way), paired by seed.
func (c *checks) flatAgainst(task, label, ref string, k int, flat bool) {
	rs, idx := c.data(task)
	L := TrainLen(rs)
	metric := DocsMetric(task)
	d, method := pairedSummary(rs, idx, metric, label, k*L, ref, k*L)
	if d.N > 0 {
		c.methods[method] = true
	}
	name := fmt.Sprintf("%s %s at %dL − its sliding row", task, label, k)
	ch := check{name: name, measured: fmtSum(fmt.Sprintf("%s %dL − sliding", label, k), d, true)}
	switch {
	case !d.HasInterval():
		ch.out = missingSeeds
	case flat && d.Hi <= FlatBits, !flat && d.Lo > FlatBits:
		ch.out = holds
	case flat && d.Lo > FlatBits, !flat && d.Hi <= FlatBits:
		ch.out = reversed
	default:
		ch.out = unclear
	}
	c.list = append(c.list, ch)
}

// note adds a measurement that no comparison rests on (context for the reader).
func (c *checks) note(task, label, metric string, length int) {
	rs, _ := c.data(task)
	_, text := c.cell(task, label, metric, length)
	c.addCell(task+at(length, TrainLen(rs)), text)
}

// finding turns the comparisons into the verdict: not reproduced when one holds the other way
// round (we disagree, and say where), inconclusive when one lacks seeds or its intervals
// overlap, reproduced when every one holds.
func (c *checks) finding(f Finding) Finding {
	var measured, rev, unc, miss []string
	for _, where := range c.cellOrder {
		measured = append(measured, where+": "+strings.Join(c.cells[where], ", "))
	}
	for _, ch := range c.list {
		if ch.measured != "" {
			measured = append(measured, ch.measured)
		}
		switch ch.out {
		case holds:
			f.Comparisons++
		case reversed:
			f.Comparisons++
			rev = append(rev, ch.name)
		case unclear:
			f.Comparisons++
			unc = append(unc, ch.name)
		case missingSeeds:
			f.Comparisons++
			miss = append(miss, ch.name)
		}
	}
	f.Measured = strings.Join(measured, "; ")
	var methods []string
	for _, m := range []string{ByBootstrap, ByT} {
		if c.methods[m] {
			methods = append(methods, m)
		}
	}
	if len(methods) > 0 {
		f.Conditions += "; intervals: " + strings.Join(methods, ", ")
	}
	switch {
	case len(rev) > 0:
		f.Verdict, f.Reason = NotReproduced, "we disagree: the opposite holds with disjoint intervals for "+strings.Join(rev, "; ")
		if len(miss)+len(unc) > 0 {
			f.Reason += fmt.Sprintf(" (%d more comparisons undecided)", len(miss)+len(unc))
		}
	case len(miss) > 0:
		f.Verdict, f.Reason = Inconclusive, "needs two or more seeds of: "+strings.Join(miss, "; ")
	case len(unc) > 0:
		f.Verdict, f.Reason = Inconclusive, "intervals overlap: "+strings.Join(unc, "; ")
	default:
		f.Verdict, f.Reason = Reproduced, "every comparison holds at 95% (disjoint intervals, or a paired difference clear of its bound)"
	}
	return f
}

// at prints a length in units of L (" at 4L").
func at(length, L int) string { return fmt.Sprintf(" at %gL", float64(length)/float64(L)) }

// Papers checks each published finding the benchmark touches, each at its own length ratio and
// with its own metric, deciding only from intervals (the Finding's Reason says which way).
func Papers(src Source) []Finding {
	r := recipe.V3
	return []Finding{
		pressFinding(src), chiFinding(src), liFinding(src),
		kazemnejadFinding(src, true), kazemnejadFinding(src, false),
		ruossFinding(src, r.RandPosSchemes, r.RandPosFactor),
		chenFinding(src, r.PIFactor), pengFinding(src),
		copeFinding(src), ssmaxFinding(src), dapeFinding(src), pRopeFinding(src), poseFinding(src),
		jinFinding(src), xiaoFinding(src),
	}
}

// Compared is, for each task, the schemes whose rows "against the papers" compares (their
// trained variants go with them).
func Compared() map[string][]string {
	synthetic := []string{"none", "t5", "alibi", "rope", "sinusoidal", "learned"}
	return map[string][]string{
		tasks.LM:      {"alibi", "kerple", "fire", "sinusoidal", "rope", "t5", "dape"},
		tasks.Passkey: {"rope"}, tasks.Copy: append(slices.Clone(synthetic), "cope"), tasks.Reverse: synthetic,
		tasks.MQAR: {"cope", "rope"},
	}
}

// pressFinding: Press et al. 2022, Fig. 1, to 16L (their range: 512 to 16,384 is 32x; our lm
// rows stop at 16L for every scheme).
func pressFinding(src Source) Finding {
	c := newChecks(src)
	c.flat(tasks.LM, "alibi", 16, true)
	for _, s := range []string{"sinusoidal", "rope", "t5"} {
		c.flat(tasks.LM, s, 16, false)
	}
	return c.finding(Finding{Paper: "Press et al. 2022 (ALiBi, Fig. 1)",
		Claim: "ALiBi's loss stays flat on inputs far longer than trained on; sinusoidal, rotary and T5's bias degrade",
		Tasks: "lm", Conditions: fmt.Sprintf("bits per byte at 16L minus the same model's sliding-window row at 16L, per seed; flat: interval under +%.1f bit, degrades: over it", FlatBits)})
}

// chiFinding: Chi et al. 2022, KERPLE's flat loss on long inputs.
func chiFinding(src Source) Finding {
	c := newChecks(src)
	c.flat(tasks.LM, "kerple", 16, true)
	return c.finding(Finding{Paper: "Chi et al. 2022 (KERPLE)", Claim: "KERPLE's loss stays flat on inputs far longer than trained on",
		Tasks: "lm", Conditions: fmt.Sprintf("bits per byte at 16L minus KERPLE's sliding row at 16L, per seed; flat: interval under +%.1f bit", FlatBits)})
}

// liFinding: Li et al. 2023 claim FIRE at 2-4x the training length (their Fig. 1 and Table 1),
// not beyond; 16L is outside their claim.
func liFinding(src Source) Finding {
	c := newChecks(src)
	c.flat(tasks.LM, "fire", 2, true)
	c.flat(tasks.LM, "fire", 4, true)
	return c.finding(Finding{Paper: "Li et al. 2023 (FIRE)", Claim: "FIRE keeps its loss at 2-4x the training length (the paper's range)",
		Tasks: "lm", Conditions: fmt.Sprintf("bits per byte at 2L and 4L minus FIRE's sliding row there, per seed; flat: interval under +%.1f bit", FlatBits)})
}

// kazemnejadFinding: Kazemnejad et al. 2023 (Fig. 3 and 4): exact match at lengths between L and
// 2L, with a BOS token as they train (bos) or without.
func kazemnejadFinding(src Source, bos bool) Finding {
	c := newChecks(src)
	suffix, how := "", "without a BOS token (v2's rows)"
	if bos {
		suffix, how = " + BOS", "with a BOS token, as the paper trains"
	}
	others := []string{"alibi", "rope", "sinusoidal", "learned"}
	for _, task := range []string{tasks.Copy, tasks.Reverse} {
		n := 2 * TrainLen(src.ByTask[task])
		c.notWorse(task, "exact_match", "none"+suffix, n, "t5"+suffix, n, false)
		for _, g := range []string{"none", "t5"} {
			for _, o := range others {
				c.better(task, "exact_match", g+suffix, n, o+suffix, n, false)
			}
		}
	}
	f := c.finding(Finding{Paper: "Kazemnejad et al. 2023 (NoPE), " + how,
		Claim: "NoPE ≥ T5's bias > ALiBi, RoPE and absolute positions (sinusoidal, learned) on length generalization; headline: NoPE ahead of ALiBi and RoPE",
		Tasks: "copy, reverse", Conditions: "exact match at 2L (the paper tests lengths between L and 2L; our lengths are multiples of L, so 2L, the far end of its range); NoPE ≥ T5 fails only if T5 is above with disjoint intervals"})
	if f.Verdict == NotReproduced {
		var headline []string
		for _, ch := range c.list {
			if ch.out == reversed && strings.Contains(ch.name, " none"+suffix+" ") && (strings.Contains(ch.name, "vs alibi") || strings.Contains(ch.name, "vs rope")) {
				headline = append(headline, ch.name)
			}
		}
		if len(headline) > 0 {
			f.Reason += "; this contradicts the paper's headline (NoPE ahead of ALiBi and RoPE): " + strings.Join(headline, "; ")
		}
	}
	return f
}

// ruossFinding: Ruoss et al. 2023 state their gain as the accuracy averaged over test lengths
// longer than trained on, up to the range the positions are drawn from, each encoding with and
// without randomization; copy ("duplicate string") and reverse are among their tasks.
func ruossFinding(src Source, schemes []string, factor int) Finding {
	c := newChecks(src)
	for _, task := range []string{tasks.Copy, tasks.Reverse} {
		rs := src.ByTask[task]
		L := TrainLen(rs)
		var past []int
		for k := 2; k <= factor; k *= 2 {
			past = append(past, k*L)
		}
		for _, s := range schemes {
			rp := s + " + " + recipe.RandPosVariant
			plain, with := summaryOf(meanOverLengths(rs, s, "token_accuracy", past)), summaryOf(meanOverLengths(rs, rp, "token_accuracy", past))
			c.methods[ByT] = true
			ch := check{name: task + " " + s, measured: fmt.Sprintf("%s %s: %s → %s", task, s, strings.TrimSpace(fmtSum("", plain, false)), strings.TrimSpace(fmtSum("", with, false)))}
			switch {
			case !plain.HasInterval() || !with.HasInterval():
				ch.out = missingSeeds
			case stats.Below(plain, with):
				ch.out = holds
			case stats.Below(with, plain):
				ch.out = reversed
			default:
				ch.out = unclear
			}
			c.list = append(c.list, ch)
		}
	}
	return c.finding(Finding{Paper: "Ruoss et al. 2023 (randomized positions)",
		Claim: "training on randomized positions (a sorted random subset of a longer range) raises the accuracy averaged over longer test lengths, for each encoding",
		Tasks: "copy, reverse", Conditions: fmt.Sprintf("token accuracy averaged over 2L..%dL (the range the positions are drawn from), each scheme's randpos row against its base row", factor)})
}

// chenFinding: Chen et al. 2023, position interpolation, against its control (the same
// fine-tune at s·L without interpolation) and, on lm, against RoPE's own sliding row: the long
// context has to help, not just cost nothing.
func chenFinding(src Source, s int) Finding {
	c := newChecks(src)
	pi, ctl := "rope + "+recipe.PIVariant(s), "rope + 4L ft"
	for _, task := range []string{tasks.LM, tasks.Passkey} {
		n := s * TrainLen(src.ByTask[task])
		metric := tasks.Metrics(task)[0]
		c.better(task, metric, pi, n, ctl, n, true)
		if task == tasks.LM {
			c.better(task, metric, pi, n, "rope + "+recipe.SlidingVariant, n, true)
		}
	}
	return c.finding(Finding{Paper: "Chen et al. 2023 (position interpolation)",
		Claim: fmt.Sprintf("a short fine-tune with positions interpolated by s lets RoPE use s·L of context, better than fine-tuning at s·L without interpolation (s = %d)", s),
		Tasks: "lm, passkey", Conditions: fmt.Sprintf("at %dL: bits per byte (lm), exact match (passkey); PI against the control `4L ft` (1,000 steps each, from the same base: paired by seed) and, on lm, against RoPE's sliding row", s)})
}

// pengFinding: Peng et al. 2023, YaRN without fine-tuning (v3's ramp; LLaMA's β = 32 shown beside)
// and with its short fine-tune.
func pengFinding(src Source) Finding {
	c := newChecks(src)
	L := TrainLen(src.ByTask[tasks.LM])
	for _, f := range recipe.V3.RopeFactors {
		n, y := int(f)*L, "rope + "+recipe.ScalingVariant("yarn", f)
		c.better(tasks.LM, "bits_per_byte", y, n, "rope", n, true)
		c.better(tasks.LM, "bits_per_byte", y, n, "rope + "+recipe.ScalingVariant("linear", f), n, true)
		c.note(tasks.LM, "rope + "+fmt.Sprintf("yarn β=32 s=%g", f), "bits_per_byte", n)
	}
	c.notWorse(tasks.LM, "bits_per_byte", "rope + yarn s=4 ft", 4*L, "rope + "+recipe.PIVariant(4), 4*L, true)
	return c.finding(Finding{Paper: "Peng et al. 2023 (YaRN)",
		Claim: "YaRN extends RoPE's context by s without fine-tuning better than plain RoPE and linear interpolation, and with a fine-tune of 400 steps matches PI's 1,000",
		Tasks: "lm", Conditions: fmt.Sprintf("bits per byte at sL, s = 4 and 16, the same checkpoint (paired by seed); YaRN's ramp β = (%g, %g) scaled to this head size, LLaMA's β = 32 shown beside; `yarn s=4 ft` ≥ `PI s=4 ft` fails only if PI is better", recipe.YaRNBetaFast, recipe.YaRNBetaSlow)})
}

// copeFinding: Golovneva et al. 2024, CoPE on copying and recall, past L.
func copeFinding(src Source) Finding {
	c := newChecks(src)
	for _, task := range []string{tasks.Copy, tasks.MQAR} {
		n := 2 * TrainLen(src.ByTask[task])
		c.better(task, "exact_match", "cope", n, "rope", n, false)
	}
	return c.finding(Finding{Paper: "Golovneva et al. 2024 (CoPE)", Claim: "contextual positions generalize copying and recall to longer inputs better than RoPE",
		Tasks: "copy, mqar", Conditions: "exact match at 2L, CoPE against RoPE"})
}

// ssmaxFinding: Nakanishi 2025, scalable softmax on RoPE at long lengths.
func ssmaxFinding(src Source) Finding {
	c := newChecks(src)
	for _, task := range []string{tasks.LM, tasks.Passkey} {
		n := 16 * TrainLen(src.ByTask[task])
		c.better(task, tasks.Metrics(task)[0], "rope + SSMax", n, "rope", n, false)
	}
	return c.finding(Finding{Paper: "Nakanishi 2025 (SSMax)", Claim: "scaling attention logits by log n keeps attention focused on long inputs: RoPE with SSMax beats RoPE there",
		Tasks: "lm, passkey", Conditions: "at 16L: bits per byte (lm), exact match (passkey)"})
}

// dapeFinding: Zheng et al. 2024, DAPE over each bias scheme.
func dapeFinding(src Source) Finding {
	c := newChecks(src)
	n := 16 * TrainLen(src.ByTask[tasks.LM])
	for _, p := range [][2]string{{"dape", "alibi"}, {"dape + kerple", "kerple"}, {"dape + fire", "fire"}} {
		c.better(tasks.LM, "bits_per_byte", p[0], n, p[1], n, false)
	}
	return c.finding(Finding{Paper: "Zheng et al. 2024 (DAPE)", Claim: "an MLP over the attention scores and the bias improves each bias scheme past the training length",
		Tasks: "lm", Conditions: "bits per byte at 16L, DAPE over ALiBi, KERPLE and FIRE against each"})
}

// pRopeFinding: Barbero et al. 2024, p-RoPE (the lowest frequencies stop rotating).
func pRopeFinding(src Source) Finding {
	c := newChecks(src)
	L := TrainLen(src.ByTask[tasks.LM])
	for _, k := range []int{1, 16} {
		c.better(tasks.LM, "bits_per_byte", "rope + p=0.75", k*L, "rope", k*L, false)
	}
	return c.finding(Finding{Paper: "Barbero et al. 2024 (p-RoPE)", Claim: "removing RoPE's lowest frequencies (p = 0.75) improves the language model",
		Tasks: "lm", Conditions: "bits per byte at L and 16L"})
}

// poseFinding: Zhu et al. 2023, positional skip-wise training to 4L.
func poseFinding(src Source) Finding {
	c := newChecks(src)
	for _, task := range []string{tasks.LM, tasks.Passkey} {
		n := 4 * TrainLen(src.ByTask[task])
		c.better(task, tasks.Metrics(task)[0], "rope + PoSE 4L", n, "rope", n, false)
	}
	return c.finding(Finding{Paper: "Zhu et al. 2023 (PoSE)", Claim: "training at L with positions skipping up to 4L lets RoPE run at 4L",
		Tasks: "lm, passkey", Conditions: "at 4L: bits per byte (lm), exact match (passkey), PoSE against RoPE"})
}

// jinFinding: Jin et al. 2024 (Self-Extend, "LLM Maybe LongLM"): grouped positions for distant
// keys let a RoPE model read past its context without fine-tuning; compared with the same
// model read plainly, paired by seed.
func jinFinding(src Source) Finding {
	c := newChecks(src)
	label := "rope + " + recipe.SelfExtendVariant
	for _, k := range []int{4, 16} {
		n := k * TrainLen(src.ByTask[tasks.LM])
		c.better(tasks.LM, "bits_per_byte", label, n, "rope", n, true)
	}
	n := 4 * TrainLen(src.ByTask[tasks.Passkey])
	c.better(tasks.Passkey, "exact_match", label, n, "rope", n, true)
	return c.finding(Finding{Paper: "Jin et al. 2024 (Self-Extend)", Claim: "grouped attention for distant tokens lets a RoPE model read past its context without fine-tuning",
		Tasks: "lm, passkey", Conditions: "Self-Extend (W = L/2, the smallest group keeping positions under L) against the same model read plainly, per seed: bits per byte at 4L and 16L (lm), exact match at 4L (passkey)"})
}

// xiaoFinding: Xiao et al. 2023 (StreamingLLM): with a few initial tokens kept as attention
// sinks, a bounded cache reads a long text as well as a sliding window that recomputes every
// window (their Fig. 3 and Table 1), for RoPE and ALiBi models; NoPE is our addition.
func xiaoFinding(src Source) Finding {
	c := newChecks(src)
	for _, s := range []string{"rope", "alibi"} {
		for _, k := range []int{16, 32} {
			c.flatAgainst(tasks.LM, s+" + "+recipe.StreamVariant, s+" + "+recipe.SlidingVariant, k, true)
		}
	}
	L := TrainLen(src.ByTask[tasks.LM])
	c.note(tasks.LM, "none + "+recipe.StreamVariant, "bits_per_byte", 16*L)
	c.note(tasks.LM, "none + "+recipe.SlidingVariant, "bits_per_byte", 16*L)
	return c.finding(Finding{Paper: "Xiao et al. 2023 (StreamingLLM)", Claim: "a cache of L entries with 4 attention sinks reads a long text about as well as a recomputed sliding window (RoPE and ALiBi models)",
		Tasks: "lm", Conditions: fmt.Sprintf("bits per byte at 16L and 32L through the bounded cache minus the same model's sliding-window row, per seed; as good: interval under +%.1f bit; NoPE shown beside, not judged (the paper has no NoPE model)", FlatBits)})
}

// seedValues is one label's value per seed at a length (depths and pairs averaged).
func seedValues(rs []Result, label, metric string, length int) map[int]float64 {
	return PerSeed(rs, label, metric, AllSubs)[length]
}

// sortedValues is a seed map's values in seed order.
func sortedValues(m map[int]float64) []float64 {
	var vals []float64
	for _, seed := range slices.Sorted(maps.Keys(m)) {
		vals = append(vals, m[seed])
	}
	return vals
}

// summaryOf summarizes per-seed values, added in seed order: in a map's order the mean's last
// bit changed from run to run, and with it a rounded cell of RESULTS.md.
func summaryOf(m map[int]float64) stats.Summary { return stats.Summarize(sortedValues(m)) }

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

// baselineAt is the best model-free score of a metric at a length (chance, or the position-blind
// bag), 0 where the results have none: what a seed must clear to count as learned.
func baselineAt(rs []Result, metric string, length int) float64 {
	best := 0.0
	for _, r := range rs {
		if r.Metric == metric && r.Length == length && IsBaseline(r.Label()) && !math.IsNaN(r.Value) {
			best = math.Max(best, r.Value)
		}
	}
	return best
}

// fmtSum prints "label +0.012 [−0.008, +0.032] (n=3)".
func fmtSum(label string, s stats.Summary, signed bool) string {
	if s.N == 0 || math.IsNaN(s.Mean) {
		return label + " not measured"
	}
	num := func(v float64) string {
		if signed && v >= 0 {
			return "+" + Num(v)
		}
		return Num(v)
	}
	if s.HasInterval() {
		return fmt.Sprintf("%s %s [%s, %s] (n=%d)", label, num(s.Mean), num(s.Lo), num(s.Hi), s.N)
	}
	return fmt.Sprintf("%s %s (n=1)", label, num(s.Mean))
}

// PapersSection renders the findings as RESULTS.md's "Against the papers" section.
func PapersSection(fs []Finding) string {
	var b strings.Builder
	n := 0
	for _, f := range fs {
		n += f.Comparisons
	}
	b.WriteString("Computed by `benchmarks/report` from the results below, never written by hand; each paper at its own length\n" +
		"ratio and with its own metric. A claim is **reproduced** when each comparison it makes holds with disjoint 95%\n" +
		"intervals (a row and its own sliding-window row, PI and its control, YaRN and the checkpoint it rescales: the\n" +
		"difference per seed, then its interval; two models scored on the same documents: their difference with the\n" +
		"documents resampled once for both), **not reproduced** when one holds the other way round (\"we disagree\"),\n" +
		"and **inconclusive** otherwise (the seeds cannot tell, or a row was not measured). \"Flat\": the row minus the same\n" +
		fmt.Sprintf("model's sliding-window row at that length has its interval under +%.1f bit per byte, a threshold of ours.\n", FlatBits) +
		"Intervals on lm and mlm are a bootstrap over seeds and the test text's documents where the per-document scores\n" +
		"were kept, else Student t over seeds (each row's conditions say which). Where an accuracy's seeds split between\n" +
		fmt.Sprintf("learning (above the best model-free baseline by %.1f) and not, the cell says how many learned.\n\n", stats.LearnMargin))
	fmt.Fprintf(&b, "%d findings rest on %d comparisons, each at 95%% and not corrected for multiplicity: up to about %.0f of them\n"+
		"could come out \"disjoint\" by chance alone, so a single reversed comparison is a lead, not a refutation.\n\n", len(fs), n, 0.05*float64(n))
	b.WriteString("| finding | paper reports | we measured (mean [95% interval]) | verdict | why |\n| --- | --- | --- | --- | --- |\n")
	esc := func(s string) string { return strings.ReplaceAll(s, "|", "\\|") }
	for _, f := range fs {
		fmt.Fprintf(&b, "| %s (%s; %s; %s) | %s | %s | **%s** | %s |\n", esc(f.Paper), f.Tasks, esc(f.Conditions), plural(f.Comparisons, "comparison"), esc(f.Claim), esc(f.Measured), f.Verdict, esc(f.Reason))
	}
	return b.String()
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func seeds(n int) string {
	if n == 1 {
		return "1 seed"
	}
	return fmt.Sprintf("%d seeds", n)
}
