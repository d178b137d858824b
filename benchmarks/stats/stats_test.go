package stats

import (
	"math"
	"reflect"
	"testing"
)

// Student's t quantiles against printed tables (two-sided 95%: the 0.975 quantile).
func TestTQuantileMatchesTables(t *testing.T) {
	for df, want := range map[float64]float64{1: 12.7062, 2: 4.3027, 3: 3.1824, 4: 2.7764, 9: 2.2622, 29: 2.0452, 1000: 1.9623} {
		if got := TQuantile(0.975, df); math.Abs(got-want) > 1e-4 {
			t.Errorf("t(0.975, %g) = %.5f, want %.4f", df, got, want)
		}
	}
	if got := TQuantile(0.025, 4); math.Abs(got+2.7764) > 1e-4 {
		t.Errorf("lower quantile %v", got)
	}
	if got := TCDF(0, 5); got != 0.5 {
		t.Errorf("TCDF(0) = %v", got)
	}
}

// Three seeds 1, 2, 3: mean 2, sd 1, interval 2 ± 4.3027/sqrt(3).
func TestSummarizeByHand(t *testing.T) {
	s := Summarize([]float64{3, 1, math.NaN(), 2})
	half := 4.302653 / math.Sqrt(3)
	if s.N != 3 || s.Mean != 2 || math.Abs(s.SD-1) > 1e-12 || math.Abs(s.Lo-(2-half)) > 1e-5 || math.Abs(s.Hi-(2+half)) > 1e-5 || s.Min != 1 || s.Max != 3 {
		t.Errorf("%+v, want mean 2, sd 1, interval 2 ± %.4f", s, half)
	}
	one := Summarize([]float64{0.7})
	if one.HasInterval() || one.Mean != 0.7 || one.HalfWidth() != 0 {
		t.Errorf("one seed: %+v", one)
	}
	if Separated(one, Summarize([]float64{5, 6})) {
		t.Error("one seed was called separated")
	}
	if !math.IsNaN(Summarize(nil).Mean) {
		t.Error("no values: mean not NaN")
	}
}

// Tiers split only where intervals do not overlap; a chain of overlaps is one tier.
func TestTiers(t *testing.T) {
	mk := func(lo, hi float64) Summary { return Summary{N: 3, Mean: (lo + hi) / 2, Lo: lo, Hi: hi} }
	labels := []string{"a", "b", "c", "d", "e"}
	ss := []Summary{mk(0.9, 1.0), mk(0.1, 0.3), mk(0.25, 0.5), mk(0.45, 0.6), {N: 1, Mean: 0.95, Lo: 0.95, Hi: 0.95}}
	tiers, unranked := Tiers(labels, ss, true)
	want := [][]string{{"a"}, {"d", "c", "b"}}
	if !reflect.DeepEqual(tiers, want) || !reflect.DeepEqual(unranked, []string{"e"}) {
		t.Errorf("tiers %v unranked %v; want %v and [e]", tiers, unranked, want)
	}
	low, _ := Tiers(labels[:4], ss[:4], false)
	if !reflect.DeepEqual(low, [][]string{{"b", "c", "d"}, {"a"}}) {
		t.Errorf("lower is better: %v", low)
	}
	if !Below(ss[1], ss[0]) || Below(ss[1], ss[2]) {
		t.Error("Below")
	}
}
