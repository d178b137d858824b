package stats

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
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
	// The closed forms: ν = 1 is Cauchy's, ν = 2 is 1/2 + t / (2 sqrt(2 + t²)).
	for _, x := range []float64{-30, -2.5, -0.3, 0.01, 1, 4.3} {
		if got, want := TCDF(x, 1), 0.5+math.Atan(x)/math.Pi; math.Abs(got-want) > 1e-12 {
			t.Errorf("TCDF(%g, 1) = %.15f, want %.15f", x, got, want)
		}
		if got, want := TCDF(x, 2), 0.5+x/(2*math.Sqrt(2+x*x)); math.Abs(got-want) > 1e-12 {
			t.Errorf("TCDF(%g, 2) = %.15f, want %.15f", x, got, want)
		}
		for _, df := range []float64{1, 3, 17} {
			if p := TCDF(x, df); math.Abs(TQuantile(p, df)-x) > 1e-8*max(1, math.Abs(x)) {
				t.Errorf("TQuantile(TCDF(%g, %g)) = %g", x, df, TQuantile(p, df))
			}
		}
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

// Letters: a hand case (A [0,1], B [0.5,3], C [2,4], D [5,6], lower is better: cliques {A,B},
// {B,C}, {D}), and on random intervals two entries share a letter exactly when their intervals
// overlap (not Separated), whichever direction is better.
func TestLetters(t *testing.T) {
	mk := func(lo, hi float64) Summary { return Summary{N: 3, Mean: (lo + hi) / 2, Lo: lo, Hi: hi} }
	one := Summary{N: 1, Mean: 2, Lo: 2, Hi: 2}
	order, letters, unranked := Letters([]string{"C", "A", "D", "B", "E"}, []Summary{mk(2, 4), mk(0, 1), mk(5, 6), mk(0.5, 3), one}, false)
	if !reflect.DeepEqual(order, []string{"A", "B", "C", "D"}) || !reflect.DeepEqual(letters, []string{"a", "ab", "b", "c"}) || !reflect.DeepEqual(unranked, []string{"E"}) {
		t.Errorf("lower is better: %v %v %v; want [A B C D] [a ab b c] [E]", order, letters, unranked)
	}
	order, letters, _ = Letters([]string{"C", "A", "D", "B"}, []Summary{mk(2, 4), mk(0, 1), mk(5, 6), mk(0.5, 3)}, true)
	if !reflect.DeepEqual(order, []string{"D", "C", "B", "A"}) || !reflect.DeepEqual(letters, []string{"a", "b", "bc", "c"}) {
		t.Errorf("higher is better: %v %v; want [D C B A] [a b bc c]", order, letters)
	}
	r := rand.New(rand.NewPCG(3, 4))
	for trial := range 300 {
		n := 2 + r.IntN(12)
		labels, ss := make([]string, n), make([]Summary, n)
		for i := range n {
			lo := float64(r.IntN(20)) / 4 // coarse, so that endpoints often coincide
			labels[i], ss[i] = fmt.Sprint(i), mk(lo, lo+float64(r.IntN(12))/4)
		}
		higher := trial%2 == 1
		order, letters, _ := Letters(labels, ss, higher)
		of := map[string]string{}
		for i, l := range order {
			of[l] = letters[i]
		}
		for i := range n {
			for j := range i {
				share := strings.ContainsAny(of[labels[i]], of[labels[j]])
				if share == Separated(ss[i], ss[j]) {
					t.Fatalf("trial %d: %v and %v share a letter: %v (%q, %q)", trial, ss[i], ss[j], share, of[labels[i]], of[labels[j]])
				}
			}
		}
		for i := 1; i < len(order); i++ {
			a, b := ss[atoi(order[i-1])], ss[atoi(order[i])]
			if (higher && a.Mean < b.Mean) || (!higher && a.Mean > b.Mean) {
				t.Fatalf("trial %d: not best first: %v", trial, order)
			}
		}
	}
}

func atoi(s string) int {
	n := 0
	fmt.Sscan(s, &n)
	return n
}
