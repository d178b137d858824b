package stats

import "math"

// LearnMargin is how far above its baseline a seed's accuracy must be to count as learned: 0.1
// (ten points of exact match or token accuracy). The baseline is the best model-free score of
// the task at that length (chance, or the position-blind bag where it is better).
const LearnMargin = 0.1

// Split is a cell whose seeds did not all do the same thing: some learned the task at this
// length (above the baseline by LearnMargin) and some did not. A t-interval over such seeds is
// the interval of a mixture, often reaching outside [0, 1]; the honest summary is how many
// learned, and what those reached.
type Split struct {
	Learned, N  int
	LearnedMean float64 // mean of the learned seeds
	FailedMean  float64 // mean of the others
}

// SplitLearned reports whether the seeds' accuracies (NaN ignored) split between learned and
// not, by the rule of LearnMargin above baseline, and if so how.
func SplitLearned(vals []float64, baseline float64) (Split, bool) {
	var sp Split
	lsum, fsum := 0.0, 0.0
	for _, v := range vals {
		if math.IsNaN(v) {
			continue
		}
		sp.N++
		if v > baseline+LearnMargin {
			sp.Learned++
			lsum += v
		} else {
			fsum += v
		}
	}
	if sp.Learned == 0 || sp.Learned == sp.N {
		return sp, false
	}
	sp.LearnedMean, sp.FailedMean = lsum/float64(sp.Learned), fsum/float64(sp.N-sp.Learned)
	return sp, true
}
