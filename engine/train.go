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

// Trainer runs AdamW steps on a model whose variables live in Ctx.
type Trainer struct {
	Backend backends.Backend
	Model   *models.Model
	Ctx     *context.Context

	lr         *context.Variable
	step, eval *context.Exec
}

// NewTrainer prepares the training and evaluation graphs (compiled on first use).
func NewTrainer(backend backends.Backend, m *models.Model, ctx *context.Context, weightDecay float64) (*Trainer, error) {
	t := &Trainer{Backend: backend, Model: m, Ctx: ctx.Checked(false)}
	t.lr = optimizers.LearningRateVar(t.Ctx, dtypes.Float32, 1e-3)
	opt := optimizers.Adam().WeightDecay(weightDecay).Done()
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
	return t, nil
}

// loss is the weighted mean cross-entropy in nats.
func (t *Trainer) loss(ctx *context.Context, in []*Node) *Node {
	inputs, targets, pos, weights := in[0], in[1], in[2], in[3]
	valid := GreaterOrEqual(inputs, ZerosLike(inputs))
	logits, _ := t.Model.Forward(ctx, inputs, pos, valid, nil)
	logp := LogSoftmax(logits, -1)
	picked := ReduceSum(Mul(logp, OneHot(targets, t.Model.Config.VocabSize, logp.DType())), -1)
	total := ReduceAllSum(Mul(picked, weights))
	return Neg(Div(total, MaxScalar(ReduceAllSum(weights), 1)))
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
	outs, err := t.step.Exec(batchTensors(b)...)
	if err != nil {
		return 0, fmt.Errorf("training step: %w", err)
	}
	loss := float64(tensors.ToScalar[float32](outs[0]))
	if math.IsNaN(loss) || math.IsInf(loss, 0) {
		return loss, fmt.Errorf("training step: loss is %v; lower the learning rate", loss)
	}
	return loss, nil
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
