package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

// docsOf is a seed's per-document scores: bits[d] over n[d] bytes.
func docsOf(bits, n []float64) Docs { return Docs{Bits: bits, N: n} }

// With one document the documents cannot vary: the interval is the seeds' alone. Over three
// seeds, every draw of three equal seeds has probability 1/27 > 2.5%, so the 2.5% and 97.5%
// percentiles are the lowest and highest seed; with two seeds (1/4 each) likewise.
func TestBootstrapOneDocumentIsTheSeeds(t *testing.T) {
	arm := []Docs{docsOf([]float64{300}, []float64{100}), docsOf([]float64{330}, []float64{100}), docsOf([]float64{280}, []float64{100})}
	iv := Bootstrap([][]Docs{arm}, nil)
	if math.Abs(iv.Mean-3.0333333333) > 1e-9 || math.Abs(iv.Lo-2.8) > 1e-12 || math.Abs(iv.Hi-3.3) > 1e-12 || iv.Seeds != 3 || iv.Docs != 1 {
		t.Errorf("%+v, want mean 3.0333, interval [2.8, 3.3]", iv)
	}
	two := Bootstrap([][]Docs{arm[:2]}, nil)
	if math.Abs(two.Lo-3) > 1e-12 || math.Abs(two.Hi-3.3) > 1e-12 {
		t.Errorf("two seeds: %+v, want [3, 3.3]", two)
	}
	if s := Bootstrap([][]Docs{arm[:1]}, nil).Summary(); s.HasInterval() || s.Mean != 3 {
		t.Errorf("one seed, one document: %+v", s)
	}
}

// With identical seeds only the documents vary: the interval matches an independent
// computation, the normal approximation to the ratio estimator's sampling distribution
// (mean ± 1.96 sd/√D over D = 400 documents of equal length), to Monte Carlo precision.
func TestBootstrapIdenticalSeedsIsTheDocuments(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const D = 400
	bits, n := make([]float64, D), make([]float64, D)
	sum, sq := 0.0, 0.0
	for i := range bits {
		bpb := 2 + r.NormFloat64()*0.5
		bits[i], n[i] = bpb*1000, 1000
		sum, sq = sum+bpb, sq+bpb*bpb
	}
	mean := sum / D
	sd := math.Sqrt((sq - D*mean*mean) / (D - 1))
	half := 1.96 * sd / math.Sqrt(D)
	d := docsOf(bits, n)
	iv := Bootstrap([][]Docs{{d, d, d}}, nil)
	if math.Abs(iv.Mean-mean) > 1e-12 {
		t.Errorf("mean %v, want %v", iv.Mean, mean)
	}
	if math.Abs(iv.Lo-(mean-half)) > 0.1*half || math.Abs(iv.Hi-(mean+half)) > 0.1*half {
		t.Errorf("interval [%v, %v], want about %v ± %v", iv.Lo, iv.Hi, mean, half)
	}
}

// A paired difference: arm b is arm a plus 0.5 bit on every document of every seed, so every
// resample's difference is exactly 0.5 however seeds and documents vary (which would widen an
// unpaired interval).
func TestBootstrapPairedDifference(t *testing.T) {
	var a, b []Docs
	for s := range 3 {
		var ba, bb, n []float64
		for d := range 20 {
			x := float64(100 + 37*((s*7+d*13)%11))
			ba, bb, n = append(ba, x), append(bb, x+50), append(n, 100)
		}
		a, b = append(a, docsOf(ba, n)), append(b, docsOf(bb, n))
	}
	iv := Bootstrap([][]Docs{b, a}, func(v []float64) float64 { return v[0] - v[1] })
	if math.Abs(iv.Mean-0.5) > 1e-12 || math.Abs(iv.Lo-0.5) > 1e-12 || math.Abs(iv.Hi-0.5) > 1e-12 {
		t.Errorf("paired: %+v, want exactly 0.5", iv)
	}
	alone := Bootstrap([][]Docs{a}, nil)
	if !(alone.Hi-alone.Lo > 0.1) {
		t.Errorf("one arm's own interval should be wide: %+v", alone)
	}
	if again := Bootstrap([][]Docs{a}, nil); again != alone {
		t.Errorf("not reproducible: %+v then %+v", alone, again)
	}
	if bad := Bootstrap([][]Docs{a, b[:2]}, nil); !math.IsNaN(bad.Mean) {
		t.Errorf("arms with different seeds: %+v", bad)
	}
}

func TestPercentile(t *testing.T) {
	xs := []float64{5, 1, 4, 2, 3}
	if Percentile(xs, 0.5) != 3 || Percentile(xs, 0.025) != 1 || Percentile(xs, 0.975) != 5 || Percentile(xs, 0.4) != 2 {
		t.Error("percentile of 1..5")
	}
}

// Two of three seeds above chance + 0.1 learned; all or none is no split.
func TestSplitLearned(t *testing.T) {
	sp, ok := SplitLearned([]float64{0.9, 0.02, math.NaN(), 0.8}, 0.04)
	if !ok || sp.Learned != 2 || sp.N != 3 || math.Abs(sp.LearnedMean-0.85) > 1e-12 || sp.FailedMean != 0.02 {
		t.Errorf("%+v %v", sp, ok)
	}
	// The t-interval of these seeds leaves [0, 1], which is what the split replaces.
	if s := Summarize([]float64{0.9, 0.02, 0.8}); s.Lo >= 0 {
		t.Errorf("expected the t-interval below 0: %+v", s)
	}
	if _, ok := SplitLearned([]float64{0.9, 0.8}, 0.04); ok {
		t.Error("all learned is no split")
	}
	if _, ok := SplitLearned([]float64{0.1, 0.12}, 0.04); ok {
		t.Error("none above 0.14 is no split")
	}
}

// Two models on one text: b is a plus 0.5 bit on every document, each with its own seeds (a's
// two seeds differ by 0.2, b's three by 0.1). Shared documents cancel the text's variance from the
// difference, so its interval is the seeds' alone: within [0.5 - 0.2, 0.5 + 0.1], while each arm's own interval is wider than that, the text's variance
// included.
func TestBootstrapSharedText(t *testing.T) {
	mk := func(offset float64) Docs {
		var bits, n []float64
		for d := range 30 {
			bits, n = append(bits, (2+offset+0.8*math.Sin(float64(d)))*100), append(n, 100)
		}
		return docsOf(bits, n)
	}
	a := []Docs{mk(0), mk(0.2)}
	b := []Docs{mk(0.5), mk(0.55), mk(0.6)}
	iv := BootstrapSharedText([][]Docs{b, a}, func(v []float64) float64 { return v[0] - v[1] })
	if math.Abs(iv.Mean-0.45) > 1e-12 || iv.Lo < 0.3-1e-9 || iv.Hi > 0.6+1e-9 || iv.Lo > 0.35 || iv.Hi < 0.5 {
		t.Errorf("difference %+v, want mean 0.45 within [0.3, 0.6]", iv)
	}
	alone := BootstrapSharedText([][]Docs{a}, nil)
	if alone.Hi-alone.Lo < 0.3 {
		t.Errorf("a alone should carry the text's variance: %+v", alone)
	}
}
