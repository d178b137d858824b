package engine

import (
	"math"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/posformer/posformer/models"
)

// A micro-batched step (gradients summed over passes of MicroBatch rows, one AdamW step) gives
// the loss and, after two steps, the model of one pass over the whole batch, for every scheme,
// decoder and encoder: the same step up to the order of float sums. The rows' weights differ
// (one is padded, one counts double), so a pass that took its own mean instead of the batch's
// would be caught.
func TestMicroBatchSameStep(t *testing.T) {
	backend, err := NewBackend("")
	if err != nil {
		t.Fatal(err)
	}
	const batch, seq = 4, 10
	b := testBatch(batch, seq, func(r int) float32 { return float32(1 + r%2) })
	b.Inputs[3][seq-1], b.Weights[3][seq-1] = -1, 0 // padding
	for _, kind := range []string{models.Decoder, models.Encoder} {
		for _, cfg := range testSchemes(t, kind) {
			name := kind + "/" + cfg.Positional["name"].(string)
			var losses [2][3]float64
			var ctxs [2]*context.Context
			for i, micro := range []int{0, 2} {
				m, err := models.New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				ctxs[i] = seededContext(t, 11)
				tr, err := NewTrainer(backend, m, ctxs[i], 0.1)
				if err != nil {
					t.Fatal(err)
				}
				tr.MicroBatch = micro
				for k := range 2 {
					if losses[i][k], err = tr.Step(b, 1e-2); err != nil {
						t.Fatalf("%s (micro-batch %d): %v", name, micro, err)
					}
				}
				if losses[i][2], err = tr.Eval(b); err != nil {
					t.Fatal(err)
				}
			}
			for k, what := range []string{"first step's loss", "second step's loss", "loss after two steps"} {
				if d := math.Abs(losses[0][k] - losses[1][k]); !(d <= 1e-4*math.Max(1, math.Abs(losses[0][k]))) {
					t.Errorf("%s: %s %.6f in one pass, %.6f in passes of 2 rows", name, what, losses[0][k], losses[1][k])
				}
			}
			// AdamW moves a weight by about lr·m/√v whatever its gradient's size, so where a
			// gradient is near zero the order of float sums decides a few percent of lr (1e-2):
			// up to 1e-4 here. Summing the passes wrongly moves weights by a sizeable part of
			// lr (counting only the last pass: 0.04).
			if d := maxVariableDiff(t, ctxs[0], ctxs[1]); !(d <= 2e-4) {
				t.Errorf("%s: after two steps the variables differ by up to %g", name, d)
			}
		}
	}
}

// maxVariableDiff is the largest difference between the float32 variables of two contexts
// that hold the same names.
func maxVariableDiff(t *testing.T, a, b *context.Context) float64 {
	t.Helper()
	worst, n := 0.0, 0
	for v := range a.IterVariables() {
		w := b.GetVariableByScopeAndName(v.Scope(), v.Name())
		if w == nil {
			t.Fatalf("variable %s/%s only in one context", v.Scope(), v.Name())
		}
		x, y := v.MustValue(), w.MustValue()
		if x.DType() != dtypes.Float32 {
			continue
		}
		xs, ys := tensors.MustCopyFlatData[float32](x), tensors.MustCopyFlatData[float32](y)
		for i := range xs {
			worst = math.Max(worst, math.Abs(float64(xs[i])-float64(ys[i])))
		}
		n++
	}
	if n == 0 {
		t.Fatal("no float32 variables compared")
	}
	return worst
}
