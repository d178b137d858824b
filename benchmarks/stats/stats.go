// Package stats summarizes a benchmark cell over seeds: the mean, a 95% confidence interval from
// Student's t distribution (the seeds are few, so the normal interval would be too narrow; its
// quantiles come from gonum's incomplete beta function), and the one comparison the reports
// allow themselves: two cells differ only where their intervals do not overlap. Where a cell's scores are kept per document of the
// test text (lm, mlm), Bootstrap resamples seeds and documents together, so that the interval
// includes the text's variance; where an accuracy's seeds split between learning and not,
// SplitLearned says so instead of an interval that would leave [0, 1].
package stats

import (
	"fmt"
	"math"
	"sort"

	"gonum.org/v1/gonum/mathext"
)

// Summary is one cell over its seeds.
type Summary struct {
	N        int     // values that are not NaN
	Mean     float64 // NaN when N == 0
	SD       float64 // sample standard deviation (n-1); 0 when N < 2
	Lo, Hi   float64 // 95% interval of the mean; Lo == Hi == Mean when N < 2 (no interval)
	Min, Max float64
}

// Summarize computes the mean and its 95% Student-t interval, ignoring NaN values (a seed whose
// model refused a length).
func Summarize(xs []float64) Summary {
	var vals []float64
	for _, x := range xs {
		if !math.IsNaN(x) {
			vals = append(vals, x)
		}
	}
	s := Summary{N: len(vals), Mean: math.NaN(), Lo: math.NaN(), Hi: math.NaN(), Min: math.NaN(), Max: math.NaN()}
	if s.N == 0 {
		return s
	}
	sum := 0.0
	s.Min, s.Max = vals[0], vals[0]
	for _, v := range vals {
		sum += v
		s.Min, s.Max = math.Min(s.Min, v), math.Max(s.Max, v)
	}
	s.Mean = sum / float64(s.N)
	s.Lo, s.Hi = s.Mean, s.Mean
	if s.N < 2 {
		return s
	}
	ss := 0.0
	for _, v := range vals {
		ss += (v - s.Mean) * (v - s.Mean)
	}
	s.SD = math.Sqrt(ss / float64(s.N-1))
	half := TQuantile(0.975, float64(s.N-1)) * s.SD / math.Sqrt(float64(s.N))
	s.Lo, s.Hi = s.Mean-half, s.Mean+half
	return s
}

// HasInterval reports whether the summary has an interval at all (two or more seeds).
func (s Summary) HasInterval() bool { return s.N >= 2 }

// HalfWidth is the interval's half width (0 without an interval).
func (s Summary) HalfWidth() float64 {
	if !s.HasInterval() {
		return 0
	}
	return (s.Hi - s.Lo) / 2
}

// Separated reports whether a and b can be ranked: both have intervals and they do not overlap.
// With one seed there is no interval, and nothing is called a difference.
func Separated(a, b Summary) bool {
	return a.HasInterval() && b.HasInterval() && (a.Hi < b.Lo || b.Hi < a.Lo)
}

// Below reports whether a's interval lies entirely below b's (a < b, called with confidence).
func Below(a, b Summary) bool { return Separated(a, b) && a.Hi < b.Lo }

// Tiers orders labelled summaries into ranked groups, best first (higher is better when
// higherBetter). Two entries are in different tiers only if their intervals are disjoint and
// every entry of a tier is separated from every entry of every other tier: the tiers are the
// connected stretches of the union of the intervals. Entries without an interval (one seed) are
// left out and returned as unranked.
func Tiers(labels []string, ss []Summary, higherBetter bool) (tiers [][]string, unranked []string) {
	type item struct {
		label string
		s     Summary
	}
	var items []item
	for i, s := range ss {
		if s.HasInterval() {
			items = append(items, item{labels[i], s})
		} else {
			unranked = append(unranked, labels[i])
		}
	}
	// Sorted by lower end, the intervals' union is a run of disjoint stretches; each stretch is
	// a tier (within it, a chain of overlaps joins everyone).
	sort.SliceStable(items, func(i, j int) bool { return items[i].s.Lo < items[j].s.Lo })
	var groups [][]item
	reach := math.Inf(-1)
	for _, it := range items {
		if len(groups) == 0 || it.s.Lo > reach {
			groups = append(groups, nil)
			reach = it.s.Hi
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], it)
		reach = math.Max(reach, it.s.Hi)
	}
	if higherBetter {
		for i, j := 0, len(groups)-1; i < j; i, j = i+1, j-1 {
			groups[i], groups[j] = groups[j], groups[i]
		}
	}
	for _, g := range groups {
		sort.SliceStable(g, func(i, j int) bool {
			if higherBetter {
				return g[i].s.Mean > g[j].s.Mean
			}
			return g[i].s.Mean < g[j].s.Mean
		})
		var names []string
		for _, it := range g {
			names = append(names, it.label)
		}
		tiers = append(tiers, names)
	}
	return tiers, unranked
}

// Letters is a compact letter display of the same comparison (as R's multcompView gives after
// a multiple comparison): every entry with an interval gets one or more letters, and two entries
// share a letter exactly when their intervals overlap, so an entry is ranked above another only
// when they share none. Tiers say the same thing only when the overlaps chain into separate
// stretches; one wide interval (two seeds that disagree) joins everything into one tier, where
// the letters still show the pairs it does not touch. Overlapping intervals form an interval
// graph, whose maximal cliques are the sets of intervals holding one point in common, found by a
// sweep; each clique is a letter, 'a' for the one at the better end. Entries come best first (by
// mean), without an interval ones returned as unranked.
func Letters(labels []string, ss []Summary, higherBetter bool) (order, letters, unranked []string) {
	type item struct {
		label  string
		s      Summary
		lo, hi float64 // the interval along "better first": negated when higher is better
		set    []int
	}
	var items []*item
	for i, s := range ss {
		if !s.HasInterval() {
			unranked = append(unranked, labels[i])
			continue
		}
		it := &item{label: labels[i], s: s, lo: s.Lo, hi: s.Hi}
		if higherBetter {
			it.lo, it.hi = -s.Hi, -s.Lo
		}
		items = append(items, it)
	}
	// Sweep the endpoints from the better end; at equal coordinates a start comes before an end
	// (intervals that touch overlap, as Separated has it). When an end follows a start, every
	// interval open then holds that end point, and no other does: a maximal clique.
	type event struct {
		x     float64
		start bool
		it    *item
	}
	var evs []event
	for _, it := range items {
		evs = append(evs, event{it.lo, true, it}, event{it.hi, false, it})
	}
	sort.SliceStable(evs, func(i, j int) bool {
		if evs[i].x != evs[j].x {
			return evs[i].x < evs[j].x
		}
		return evs[i].start && !evs[j].start
	})
	open := map[*item]bool{}
	cliques, grown := 0, false
	for _, e := range evs {
		if e.start {
			open[e.it], grown = true, true
			continue
		}
		if grown {
			for it := range open {
				it.set = append(it.set, cliques)
			}
			cliques++
			grown = false
		}
		delete(open, e.it)
	}
	sort.SliceStable(items, func(i, j int) bool {
		if higherBetter {
			return items[i].s.Mean > items[j].s.Mean
		}
		return items[i].s.Mean < items[j].s.Mean
	})
	for _, it := range items {
		var l []byte
		for _, k := range it.set { // in sweep order: already sorted
			l = append(l, letter(k)...)
		}
		order, letters = append(order, it.label), append(letters, string(l))
	}
	return order, letters, unranked
}

// letter names the k-th clique: a ... z, then A ... Z, then a number.
func letter(k int) string {
	switch {
	case k < 26:
		return string(rune('a' + k))
	case k < 52:
		return string(rune('A' + k - 26))
	}
	return fmt.Sprintf("(%d)", k)
}

// Student's t with ν degrees of freedom through the regularized incomplete beta function I
// (gonum's mathext, which is all of gonum these two need):
//
//	P(|T| > t) = I_x(ν/2, 1/2) with x = ν / (ν + t²)
//
// so the CDF is 1 − I/2 above 0 and I/2 below, and a quantile inverts I.

// TQuantile is the p quantile of Student's t distribution with df degrees of freedom (df > 0,
// 0 < p < 1).
func TQuantile(p, df float64) float64 {
	if p <= 0 || p >= 1 || df <= 0 {
		panic(fmt.Sprintf("stats: TQuantile(%g, %g) is undefined", p, df))
	}
	if p == 0.5 {
		return 0
	}
	tail := min(p, 1-p) // P(T < −t) = P(T > t) = I_x/2
	x := mathext.InvRegIncBeta(df/2, 0.5, 2*tail)
	t := math.Sqrt(df/x - df)
	if p < 0.5 {
		return -t
	}
	return t
}

// TCDF is P(T <= t) for Student's t with df degrees of freedom.
func TCDF(t, df float64) float64 {
	if t == 0 {
		return 0.5
	}
	half := 0.5 * mathext.RegIncBeta(df/2, 0.5, df/(df+t*t))
	if t > 0 {
		return 1 - half
	}
	return half
}
