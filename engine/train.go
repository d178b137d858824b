package engine

import (
	"fmt"
	"math"
	"slices"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/gomlx/pkg/ml/train/optimizers"
	"github.com/posformer/posformer/models"
)

// Batch is one training or evaluation batch: a loss term for target[b][s] at weight[b][s]
// (0 skips a position), from inputs at explicit positions.
type Batch struct {
	Inputs, Targets, Positions [][]int32
	Weights                    [][]float32
}

// PassTokens is how many tokens one forward/backward pass takes by default (DefaultMicroBatch):
// on the v2 shapes a step ran 21-27% faster in passes of 512 tokens (8 sequences of 64, 4 of
// 128, 1 of 512) than in one pass, its activations staying in cache, and faster than in passes
// of 256 or 1,024 (benchmarks/SPEED.md).
const PassTokens = 512

// DefaultMicroBatch is the Trainer.MicroBatch cmd/train uses unless told: the largest divisor of
// batch whose pass of seq-token rows holds at most PassTokens (at least 1), or the whole batch
// when the rows share the scheme's positional work (positional.SharedWork: FIRE's step was 27%
// slower in passes of 512 tokens).
func DefaultMicroBatch(batch, seq int, sharedWork bool) int {
	if sharedWork {
		return batch
	}
	best := 1
	for r := 1; r <= batch; r++ {
		if batch%r == 0 && r*seq <= PassTokens {
			best = r
		}
	}
	return best
}

// Trainer runs AdamW steps on a model whose variables live in Ctx.
type Trainer struct {
	Backend backends.Backend
	Model   *models.Model
	Ctx     *context.Context
	// MicroBatch is the rows of a batch one forward and backward pass takes (0, or a value that
	// does not divide the batch: the whole batch in one pass). The passes' gradients are summed,
	// then one AdamW step applies them: the same step as one pass, up to the order of float sums.
	// A pass over fewer rows keeps its activations in cache; on the v2 shapes passes of 512
	// tokens made a step 21-27% faster than one pass over the batch (benchmarks/SPEED.md).
	MicroBatch int

	lr         *context.Variable
	step, eval *context.Exec
	// Micro-batched steps: grad sums one pass's gradients (gradAdd adds them to the sums so far),
	// apply divides by the batch's weight and takes the AdamW step. trainable names the
	// variables the gradients are for, in grad's order, for apply to update the same ones.
	grad, gradAdd, apply *context.Exec
	trainable            []*context.Variable
}

// NewTrainer prepares the training and evaluation graphs (compiled on first use).
func NewTrainer(backend backends.Backend, m *models.Model, ctx *context.Context, weightDecay float64) (*Trainer, error) {
	t := &Trainer{Backend: backend, Model: m, Ctx: ctx.Checked(false)}
	t.lr = optimizers.LearningRateVar(t.Ctx, dtypes.Float32, 1e-3)
	opt := optimizers.Adam().WeightDecay(weightDecay).Done()
	withGrads, ok := opt.(interface {
		UpdateGraphWithGradients(ctx *context.Context, grads []*Node, lossDType dtypes.DType)
	})
	if !ok {
		return nil, fmt.Errorf("trainer: GoMLX's Adam takes no precomputed gradients in this version")
	}
	var err error
	t.step, err = context.NewExec(backend, t.Ctx, func(ctx *context.Context, in []*Node) *Node {
		loss := t.loss(ctx, in)
		opt.UpdateGraph(ctx, loss.Graph(), loss)
		return loss
	})
	if err != nil {
		return nil, fmt.Errorf("trainer: %w", err)
	}
	t.eval, err = context.NewExec(backend, t.Ctx, func(ctx *context.Context, in []*Node) *Node {
		return t.loss(ctx, in)
	})
	if err != nil {
		return nil, fmt.Errorf("trainer: %w", err)
	}
	t.grad, err = context.NewExec(backend, t.Ctx, func(ctx *context.Context, in []*Node) []*Node {
		return t.gradients(ctx, in, nil)
	})
	if err != nil {
		return nil, fmt.Errorf("trainer: %w", err)
	}
	t.gradAdd, err = context.NewExec(backend, t.Ctx, func(ctx *context.Context, in []*Node) []*Node {
		return t.gradients(ctx, in[:4], in[4:])
	})
	if err != nil {
		return nil, fmt.Errorf("trainer: %w", err)
	}
	t.apply, err = context.NewExec(backend, t.Ctx, func(ctx *context.Context, in []*Node) *Node {
		// The optimizer updates the trainable variables this graph uses: the same as grad's.
		for _, v := range t.trainable {
			v.ValueGraph(in[0].Graph())
		}
		grads := make([]*Node, len(in)-1)
		for i, sum := range in[1:] {
			grads[i] = Div(sum, in[0])
		}
		withGrads.UpdateGraphWithGradients(ctx, grads, dtypes.Float32)
		return in[0]
	})
	if err != nil {
		return nil, fmt.Errorf("trainer: %w", err)
	}
	return t, nil
}

// gradients is one pass of a micro-batched step: the weighted sum of the cross-entropy (not
// the mean: the batch's weight divides the sums once, in apply) and its gradient for every
// trainable variable, added to sums when given. It returns [loss sum, gradient sums...].
func (t *Trainer) gradients(ctx *context.Context, in, sums []*Node) []*Node {
	loss := t.lossSum(ctx, in)
	g := loss.Graph()
	grads := ctx.BuildTrainableVariablesGradientsGraph(loss)
	if t.trainable == nil {
		for v := range ctx.IterVariables() {
			if v.Trainable && v.InUseByGraph(g) {
				t.trainable = append(t.trainable, v)
			}
		}
	}
	if sums != nil {
		for i := range grads {
			grads[i] = Add(sums[i], grads[i])
		}
	}
	return append([]*Node{loss}, grads...)
}

// loss is the weighted mean cross-entropy in nats.
func (t *Trainer) loss(ctx *context.Context, in []*Node) *Node {
	return Div(t.lossSum(ctx, in), MaxScalar(ReduceAllSum(in[3]), 1))
}

// lossSum is the cross-entropy in nats summed over the positions at their weights.
func (t *Trainer) lossSum(ctx *context.Context, in []*Node) *Node {
	inputs, targets, pos, weights := in[0], in[1], in[2], in[3]
	valid := GreaterOrEqual(inputs, ZerosLike(inputs))
	logits, _ := t.Model.Forward(ctx, inputs, pos, valid, nil)
	logp := LogSoftmax(logits, -1)
	picked := ReduceSum(Mul(logp, OneHot(targets, t.Model.Config.VocabSize, logp.DType())), -1)
	return Neg(ReduceAllSum(Mul(picked, weights)))
}

// sharePositions lets batchTensors and Forward pass one row of positions for a batch whose rows
// all have the same (a test turns it off to compare the two).
var sharePositions = true

// batchTensors is the batch as the loss graph takes it. When every row has the same positions
// (training on fixed-length sequences) the positions go in as one row, [1, seq]: the model then
// computes what depends on positions alone (biases, rotations, position embeddings) once for
// the batch instead of once per row — for FIRE's MLP over every (query, key) pair, half a step.
func batchTensors(b Batch) []any {
	pos := b.Positions
	if sharePositions {
		if shared := sharedRow(pos); shared != nil {
			pos = [][]int32{shared}
		}
	}
	return []any{tensors.FromValue(b.Inputs), tensors.FromValue(b.Targets), tensors.FromValue(pos), tensors.FromValue(b.Weights)}
}

// sharedRow is the row every one of two or more rows equals, or nil.
func sharedRow[T comparable](rows [][]T) []T {
	if len(rows) < 2 {
		return nil
	}
	for _, r := range rows[1:] {
		if !slices.Equal(r, rows[0]) {
			return nil
		}
	}
	return rows[0]
}

// Step runs one optimizer step at learning rate lr and returns the batch loss (nats/token).
func (t *Trainer) Step(b Batch, lr float64) (float64, error) {
	if err := t.lr.SetValue(tensors.FromScalar(float32(lr))); err != nil {
		return 0, fmt.Errorf("setting learning rate: %w", err)
	}
	var loss float64
	if n := len(b.Inputs); t.MicroBatch > 0 && t.MicroBatch < n && n%t.MicroBatch == 0 {
		var err error
		if loss, err = t.microStep(b); err != nil {
			return 0, fmt.Errorf("training step: %w", err)
		}
	} else {
		outs, err := t.step.Exec(batchTensors(b)...)
		if err != nil {
			return 0, fmt.Errorf("training step: %w", err)
		}
		loss = float64(tensors.ToScalar[float32](outs[0]))
	}
	if math.IsNaN(loss) || math.IsInf(loss, 0) {
		return loss, fmt.Errorf("training step: %w", DivergedError{loss})
	}
	return loss, nil
}

// DivergedError is Step's error (wrapped) when the batch loss is NaN or infinite: the weights
// have overflowed, and every later step would train on NaN.
type DivergedError struct{ Loss float64 }

func (e DivergedError) Error() string {
	return fmt.Sprintf("loss is %v; lower the learning rate", e.Loss)
}

// microStep runs the batch MicroBatch rows at a time, then one optimizer step on the summed
// gradients; it returns the batch's mean loss.
func (t *Trainer) microStep(b Batch) (float64, error) {
	var sums []*tensors.Tensor
	lossSum, weight := 0.0, 0.0
	for _, row := range b.Weights {
		for _, w := range row {
			weight += float64(w)
		}
	}
	for lo := 0; lo < len(b.Inputs); lo += t.MicroBatch {
		hi := lo + t.MicroBatch
		part := batchTensors(Batch{Inputs: b.Inputs[lo:hi], Targets: b.Targets[lo:hi], Positions: b.Positions[lo:hi], Weights: b.Weights[lo:hi]})
		var outs []*tensors.Tensor
		var err error
		if sums == nil {
			outs, err = t.grad.Exec(part...)
		} else {
			args := part
			for _, s := range sums {
				args = append(args, s)
			}
			outs, err = t.gradAdd.Exec(args...)
			for _, s := range sums {
				s.FinalizeAll() // the next sums replace them; free their buffers now
			}
		}
		if err != nil {
			return 0, err
		}
		lossSum += float64(tensors.ToScalar[float32](outs[0]))
		sums = outs[1:]
	}
	// As the one-pass loss does: the mean over the weights, at least 1.
	weight = max(weight, 1)
	args := []any{tensors.FromScalar(float32(weight))}
	for _, s := range sums {
		args = append(args, s)
	}
	if _, err := t.apply.Exec(args...); err != nil {
		return 0, err
	}
	for _, s := range sums {
		s.FinalizeAll()
	}
	return lossSum / weight, nil
}

// Eval returns the batch loss without training.
func (t *Trainer) Eval(b Batch) (float64, error) {
	outs, err := t.eval.Exec(batchTensors(b)...)
	if err != nil {
		return 0, fmt.Errorf("evaluating: %w", err)
	}
	return float64(tensors.ToScalar[float32](outs[0])), nil
}

// GlobalStep is the number of optimizer steps taken (restored on resume).
func (t *Trainer) GlobalStep() int { return int(optimizers.GetGlobalStep(t.Ctx)) }
