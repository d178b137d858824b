package stats

import (
	"math"
	"math/rand/v2"
	"slices"
)

// Resamples and BootstrapSeed are the bootstrap's size and its fixed random seed: the same
// results give the same interval on every run.
const (
	Resamples     = 2000
	BootstrapSeed = 20230601
)

// Docs is one seed's scores of one cell, summed per document of the test text: Bits[d] over
// N[d] scored bytes. Every seed of a cell reads the same documents in the same order.
type Docs struct {
	Bits, N []float64
}

// ratio is the bits per byte of the documents idx (every document when idx is nil).
func (d Docs) ratio(idx []int) float64 {
	bits, n := 0.0, 0.0
	if idx == nil {
		for i := range d.Bits {
			bits, n = bits+d.Bits[i], n+d.N[i]
		}
	} else {
		for _, i := range idx {
			bits, n = bits+d.Bits[i], n+d.N[i]
		}
	}
	return bits / n
}

// Interval is a point estimate and its 95% percentile interval.
type Interval struct {
	Mean, Lo, Hi float64
	Seeds, Docs  int
}

// Bootstrap is the 95% percentile interval of a statistic of one or more arms' bits per byte,
// resampling seeds and documents together. arms[k][s] is arm k's seed s; the arms share seeds
// (arms[k][s] and arms[j][s] come from the same seed, or from models that share a base seed)
// and documents, so one draw of seed indices and one of document indices serve every arm: a
// paired comparison keeps its pairing, and a hard document weighs on every arm at once.
// Documents are resampled jointly across seeds for the same reason: every seed reads the same
// text, so the text's variance is shared, not independent per seed. Each resample's arm value is
// the mean over the drawn seeds of each seed's bits per byte on the drawn documents; combine
// turns the arms' values into the statistic (nil: the first arm's value). The point estimate is
// combine of the arms' means over every seed and document (each seed's value as the results
// report it).
func Bootstrap(arms [][]Docs, combine func([]float64) float64) Interval {
	return bootstrap(arms, combine, true)
}

// BootstrapSharedText is Bootstrap for arms that are different models (their seeds not paired,
// their numbers of seeds free) scored on the same text: each resample draws every arm's seeds
// on its own and the documents once for all. The text's variance is common to the arms and
// cancels from a difference, as it does in the models' scores; the seeds' does not.
func BootstrapSharedText(arms [][]Docs, combine func([]float64) float64) Interval {
	return bootstrap(arms, combine, false)
}

func bootstrap(arms [][]Docs, combine func([]float64) float64, pairedSeeds bool) Interval {
	if combine == nil {
		combine = func(v []float64) float64 { return v[0] }
	}
	nan := Interval{Mean: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}
	if len(arms) == 0 || len(arms[0]) == 0 {
		return nan
	}
	seeds, docs := len(arms[0]), len(arms[0][0].Bits)
	for _, arm := range arms {
		if len(arm) == 0 || pairedSeeds && len(arm) != seeds {
			return nan
		}
		for _, d := range arm {
			if len(d.Bits) != docs || len(d.N) != docs {
				return nan
			}
		}
	}
	vals := make([]float64, len(arms))
	for k, arm := range arms {
		sum := 0.0
		for _, d := range arm {
			sum += d.ratio(nil)
		}
		vals[k] = sum / float64(len(arm))
	}
	out := Interval{Mean: combine(vals), Seeds: seeds, Docs: docs}
	rng := rand.New(rand.NewPCG(BootstrapSeed, BootstrapSeed))
	stat := make([]float64, Resamples)
	draw := func(idx []int, n int) {
		for i := range idx {
			idx[i] = rng.IntN(n)
		}
	}
	seedIdx, docIdx := make([][]int, len(arms)), make([]int, docs)
	for k, arm := range arms {
		seedIdx[k] = make([]int, len(arm))
	}
	for b := range stat {
		// Paired arms share the first arm's draw of seeds; the documents are always shared.
		draw(seedIdx[0], seeds)
		for k := 1; k < len(arms); k++ {
			if pairedSeeds {
				copy(seedIdx[k], seedIdx[0])
			} else {
				draw(seedIdx[k], len(arms[k]))
			}
		}
		draw(docIdx, docs)
		for k, arm := range arms {
			sum := 0.0
			for _, s := range seedIdx[k] {
				sum += arm[s].ratio(docIdx)
			}
			vals[k] = sum / float64(len(arm))
		}
		stat[b] = combine(vals)
	}
	out.Lo, out.Hi = Percentile(stat, 0.025), Percentile(stat, 0.975)
	return out
}

// Percentile is the p quantile of xs by the nearest-rank rule on the sorted values (no
// interpolation: with few distinct values, as a bootstrap over three seeds has, the interval's
// ends are values the statistic takes).
func Percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(math.Ceil(p*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// Summary turns the interval into a Summary (N seeds, SD unknown and left 0), so that tables and
// comparisons read a bootstrap interval as they read a t-interval. One seed gives no interval,
// as with the t-interval: its documents alone say nothing of the training's variance.
func (iv Interval) Summary() Summary {
	s := Summary{N: iv.Seeds, Mean: iv.Mean, Lo: iv.Lo, Hi: iv.Hi, Min: math.NaN(), Max: math.NaN()}
	if iv.Seeds < 2 {
		s.Lo, s.Hi = iv.Mean, iv.Mean
	}
	return s
}
