package train

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/posformer/posformer/models"
)

// Training until the loss flattens (-plateau N). A cosine schedule needs its length in advance;
// a run that stops when the loss stops falling cannot know it. So the learning rate warms up,
// stays at its peak while the held-out loss improves, and once it has not improved for N
// evaluations decays linearly to 10% over a cool-down of a fifth of the steps so far
// ("warmup-stable-decay"; the decay recovers most of what a cosine schedule gains at its end).
// -steps caps the run: without a plateau, the cool-down starts at steps/1.2 and ends at -steps.
//
// The decision depends only on the evaluation losses, which loss.csv records, so a resumed run
// replays them and takes the same decisions as an uninterrupted one.

// plateau is the state of a -plateau run.
type plateau struct {
	window int     // evaluations without improvement that make a plateau
	tol    float64 // relative improvement below which an evaluation does not count as one
	min    int     // -plateau-min: no plateau is declared before this step
	cap    int     // -steps
	every  int     // -eval-every
	evals  []float64
	start  int // first step of the cool-down (-1: not decided)
	end    int // the step the run stops at (cap until decided)
}

func newPlateau(window int, tol float64, cap, every int) *plateau {
	return &plateau{window: window, tol: tol, cap: cap, every: every, start: -1, end: cap}
}

// observe records the evaluation after step done and starts the cool-down when the loss has
// flattened: the best of the last `window` evaluations is not better than the best before them
// by tol (relative) or 0.001 nats, whichever is larger (a loss near zero still counts as flat).
func (p *plateau) observe(done int, evalLoss float64) {
	p.evals = append(p.evals, evalLoss)
	if p.start >= 0 || math.IsNaN(evalLoss) {
		return
	}
	k := len(p.evals)
	if k > p.window && done >= p.min {
		before, recent := math.Inf(1), math.Inf(1)
		for i, e := range p.evals {
			if i < k-p.window {
				before = math.Min(before, e)
			} else {
				recent = math.Min(recent, e)
			}
		}
		if recent > before-math.Max(p.tol*before, 1e-3) {
			p.startCooldown(done)
			return
		}
	}
	if done >= p.latestStart() {
		p.startCooldown(p.latestStart())
	}
}

// latestStart is the step at which the cool-down starts if no plateau came first: its length,
// a fifth of the steps before it, then just fits under the cap.
func (p *plateau) latestStart() int { return int(float64(p.cap) / 1.2) }

func (p *plateau) startCooldown(at int) {
	p.start = at
	p.end = min(p.cap, at+max(p.every, int(math.Round(0.2*float64(at)))))
}

// lr is the learning rate of step (0-based) for peak lr and warmup steps.
func (p *plateau) lr(step int, peak, warmup float64) float64 {
	if p.start < 0 && step >= p.latestStart() {
		// Reached without an evaluation at latestStart (eval-every does not divide it); the
		// same start whenever it is noticed, so that a resumed run agrees.
		p.startCooldown(p.latestStart())
	}
	lr := peak
	if float64(step) < warmup {
		lr = peak * float64(step+1) / warmup
	}
	if p.start < 0 || step < p.start {
		return lr
	}
	// A cap shorter than the warm-up (a pilot) still ends cooled down.
	frac := float64(step-p.start) / float64(max(1, p.end-p.start))
	return math.Min(lr, peak*(1-0.9*math.Min(frac, 1)))
}

// stopReason says why a finished run stopped, for train.json.
func (p *plateau) stopReason() string {
	if p.start >= 0 && p.start < p.latestStart() {
		return fmt.Sprintf("plateau at step %d, cool-down to %d", p.start, p.end)
	}
	return fmt.Sprintf("step cap %d", p.cap)
}

// Plateaued reports whether train.json's stop (stopReason's, or "-steps N" without -plateau)
// says the stopping rule ended the run rather than its step cap.
func Plateaued(stop string) bool { return strings.HasPrefix(stop, "plateau") }

// CurveFile records the loss curve of a run, one line per evaluation.
const CurveFile = "loss.csv"

var curveHeader = []string{"step", "train_loss", "eval_loss", "lr", "seconds"}

// bpbColumn is loss.csv's last column in a run on BPE tokens (tokens.go); a byte run's curve
// has none (its bits per byte are eval_loss / ln 2).
const bpbColumn = "eval_bits_per_byte"

// CurvePoint is one line of loss.csv: train_loss is the mean over the steps since the previous
// line, seconds the training wall time since the run began (over resumptions). The losses are
// in nats per token; BitsPerByte is the eval loss in bits per byte of a run on BPE tokens (0 in
// a byte run's curve).
type CurvePoint struct {
	Step                int
	TrainLoss, EvalLoss float64
	LR, Seconds         float64
	BitsPerByte         float64
}

// ReadCurve reads dir/loss.csv up to step upTo (a resumed run restarts from its checkpoint and
// redoes what came after); a missing file is an empty curve.
func ReadCurve(dir string, upTo int) ([]CurvePoint, error) {
	data, err := os.ReadFile(filepath.Join(dir, CurveFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	recs, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil || len(recs) == 0 || (len(recs[0]) != len(curveHeader) && !(len(recs[0]) == len(curveHeader)+1 && recs[0][len(curveHeader)] == bpbColumn)) {
		return nil, fmt.Errorf("%s is not a loss curve of cmd/train (delete it to start the curve afresh)", filepath.Join(dir, CurveFile))
	}
	var out []CurvePoint
	for _, r := range recs[1:] {
		var c CurvePoint
		var errs [6]error
		c.Step, errs[0] = strconv.Atoi(r[0])
		c.TrainLoss, errs[1] = strconv.ParseFloat(r[1], 64)
		c.EvalLoss, errs[2] = strconv.ParseFloat(r[2], 64)
		c.LR, errs[3] = strconv.ParseFloat(r[3], 64)
		c.Seconds, errs[4] = strconv.ParseFloat(r[4], 64)
		if len(r) > len(curveHeader) {
			c.BitsPerByte, errs[5] = strconv.ParseFloat(r[5], 64)
		}
		if err := errors.Join(errs[:]...); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, CurveFile), err)
		}
		if c.Step <= upTo {
			out = append(out, c)
		}
	}
	return out, nil
}

// writeCurve rewrites dir/loss.csv atomically (it is small; a crash never leaves half a line).
// bpe adds the eval_bits_per_byte column.
func writeCurve(dir string, pts []CurvePoint, bpe bool) error {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	header := curveHeader
	if bpe {
		header = append(slices.Clone(curveHeader), bpbColumn)
	}
	w.Write(header)
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	for _, c := range pts {
		row := []string{strconv.Itoa(c.Step), f(c.TrainLoss), f(c.EvalLoss), f(c.LR), f(math.Round(c.Seconds*10) / 10)}
		if bpe {
			row = append(row, f(c.BitsPerByte))
		}
		w.Write(row)
	}
	w.Flush()
	if err := os.MkdirAll(dir, 0o755); err != nil { // the first evaluation may come before the first save
		return err
	}
	return models.WriteFileAtomic(filepath.Join(dir, CurveFile), buf.Bytes())
}
