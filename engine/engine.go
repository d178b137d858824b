package engine

import (
	"fmt"
	"math/bits"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/posformer/posformer/layers"
	"github.com/posformer/posformer/layers/quant"
	"github.com/posformer/posformer/models"
	_ "github.com/posformer/posformer/models/gguf"  // registers the format
	_ "github.com/posformer/posformer/models/hf"    // registers the format
	"github.com/posformer/posformer/models/llama2c" // registers the format, and IsLlama2C
	"github.com/posformer/posformer/positional"
)

// Engine holds a model's weights on a backend and its compiled graphs.
type Engine struct {
	Backend  backends.Backend
	Model    *models.Model
	Ctx      *context.Context // the model's variables, in the inference layout (layers.SetWeightType)
	Capacity int              // KV-cache slots per sequence (the context size)

	cacheK, cacheV dtypes.DType // the cache's keys and values (SetCacheTypes; unset: float32)

	builds    atomic.Int64  // graphs built (and so compiled): one per new input shape
	compiling atomic.Int64  // nanoseconds spent compiling decoding steps (stepper.go)
	steppers  sync.Map      // stepKey -> *stepper: the compiled decoding steps
	stepMu    sync.Mutex    // held while a stepper is built
	shifters  sync.Map      // [2]int{batch, window} -> *shifter: the compiled K-shifts (streaming.go)
	full      *context.Exec // the whole sequence without a cache (Forward)
}

// Load opens a checkpoint on the named backend (see NewBackend) with a KV cache of capacity
// slots per sequence (0: the model's max_seq_len); edits adjust its configuration first.
// path is a checkpoint of any registered format (models.FormatNames):
//   - a directory with config.json and model.safetensors (our own format);
//   - a Hugging Face directory (config.json naming a model_type), see models/hf;
//   - a GGUF file, see models/gguf;
//   - a llama2.c .bin file (any other regular file, or a path ending in .bin), see models/llama2c.
func Load(path, backendName string, capacity int, edits ...models.Edit) (*Engine, error) {
	return LoadAs(path, backendName, capacity, quant.F32, edits...)
}

// LoadAs is Load with the weight matrices held in memory as weights (f32, bf16, q8_0 or q4_0,
// see layers.SetWeightType), converted as they are read.
func LoadAs(path, backendName string, capacity int, weights quant.Type, edits ...models.Edit) (*Engine, error) {
	backend, err := NewBackend(backendName)
	if err != nil {
		return nil, err
	}
	format, err := models.FormatOf(path)
	if err != nil {
		return nil, err
	}
	ctx := context.New()
	if err := layers.SetWeightType(ctx, weights); err != nil {
		return nil, err
	}
	m, err := format.Load(path, backend, ctx, edits...)
	if err != nil {
		return nil, err
	}
	if err := checkLayout(backend, m, ctx); err != nil {
		return nil, fmt.Errorf("loading %s: internal: %w", path, err)
	}
	return New(backend, m, ctx, capacity)
}

// StoredWeightType is the type a checkpoint holds its matrices in, what --weights defaults to
// (models.StoredWeightType): a GGUF file's matrix type, q8_0 for a llama2.c version-2 file,
// f32 otherwise.
func StoredWeightType(path string) quant.Type { return models.StoredWeightType(path) }

// CheckpointBytes is the size of a checkpoint on disk, about that of its weights: the file, or
// the files of a directory (0 when unreadable).
func CheckpointBytes(path string) int64 {
	info, err := os.Stat(path)
	if err != nil {
		return 0
	}
	if !info.IsDir() {
		return info.Size()
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return 0
	}
	var n int64
	for _, e := range entries {
		if i, err := e.Info(); err == nil && !e.IsDir() {
			n += i.Size()
		}
	}
	return n
}

// checkLayout verifies that the loaders stored every variable where and as the inference
// graph looks for it; a variable it cannot find would otherwise be initialized at random.
func checkLayout(backend backends.Backend, m *models.Model, ctx *context.Context) error {
	params, err := m.Layout(backend, ctx)
	if err != nil {
		return err
	}
	for _, p := range params {
		scope, _ := models.VariablePath(p.Name)
		v := ctx.InAbsPath(scope).GetVariable(p.Var)
		if v == nil || !slices.Equal(v.Shape().Dimensions, p.Store) {
			if name, store, ok := layers.GroupedForm(p.Var, p.Store); ok {
				// The loader chose the matrix's other form, its rows in groups.
				if g := ctx.InAbsPath(scope).GetVariable(name); g != nil && slices.Equal(g.Shape().Dimensions, store) {
					continue
				}
			}
			return fmt.Errorf("tensor %s is not stored as variable %s %v of the inference layout", p.Name, p.Var, p.Store)
		}
	}
	return nil
}

// IsLlama2C reports whether path names a llama2.c checkpoint rather than a checkpoint
// directory (llama2c.IsFile).
func IsLlama2C(path string) bool { return llama2c.IsFile(path) }

// New wraps a model whose variables are in ctx; they must not change while the engine is in
// use (decoding steps hold on to their buffers, see stepper.go). A context that holds no model
// variables yet gets them with random values when a graph is first built.
func New(backend backends.Backend, m *models.Model, ctx *context.Context, capacity int) (*Engine, error) {
	if capacity <= 0 {
		capacity = m.Config.MaxSeqLen
	}
	e := &Engine{Backend: backend, Model: m, Ctx: ctx.Checked(false), Capacity: capacity}
	var err error
	e.full, err = context.NewExec(backend, e.Ctx, e.fullGraph)
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	// Lengths are bucketed (powers of two), so a few dozen graphs cover every input in use;
	// the default cache of 32 could evict and recompile.
	e.full.SetMaxCache(128)
	return e, nil
}

// Compilations counts the graphs built so far; after warm-up it must stop growing.
func (e *Engine) Compilations() int { return int(e.builds.Load()) }

// CompileTime is the time spent compiling the decoding steps so far (Warmup included).
func (e *Engine) CompileTime() time.Duration { return time.Duration(e.compiling.Load()) }

func (e *Engine) fullGraph(ctx *context.Context, tokens, pos, valid *Node) *Node {
	e.builds.Add(1)
	logits, _ := e.Model.Forward(ctx, tokens, pos, valid, nil)
	return logits
}

// cachedGraph is a decoding step's graph. Its inputs are stepArgs': tokens, pos, valid, slots
// [b, s]; cache pos, cache valid [b, c]; then K and V of every layer; with pick, last, the
// index [b] of each row's token whose logits are returned. Outputs: logits, then the new cache
// in the same order.
func (e *Engine) cachedGraph(ctx *context.Context, in []*Node, pick bool) []*Node {
	e.builds.Add(1)
	n := e.Model.Config.NumLayers
	cache := &models.Cache{Slots: in[3], Pos: in[4], Valid: in[5]}
	for i := 0; i < n; i++ {
		cache.Layers = append(cache.Layers, layers.LayerCache{K: in[6+2*i], V: in[7+2*i]})
	}
	var last *Node
	if pick {
		last = in[6+2*n]
	}
	logits, out := e.Model.ForwardPick(ctx, in[0], in[1], in[2], cache, last)
	outs := []*Node{logits, out.Pos, out.Valid}
	for _, l := range out.Layers {
		outs = append(outs, l.K, l.V)
	}
	return outs
}

// Bucket rounds a sequence length up to a power of two, so that a handful of compiled graphs
// serve every length.
func Bucket(n int) int {
	if n <= 1 {
		return 1
	}
	return 1 << bits.Len(uint(n-1))
}

// checkPositions rejects positions the scheme cannot encode (past a learned table, say).
func (e *Engine) checkPositions(positions [][]int) error {
	limit := e.positionLimit()
	if limit == 0 {
		return nil
	}
	for _, row := range positions {
		for _, p := range row {
			if p >= limit {
				return fmt.Errorf("position %d is past what %s can encode: %s", p, e.Model.Scheme.Name(), e.limitFix())
			}
		}
	}
	return nil
}

// limitFix explains the scheme's position limit, for error messages.
func (e *Engine) limitFix() string {
	if lim, ok := e.Model.Scheme.(positional.Limited); ok {
		return lim.LimitFix()
	}
	return ""
}

// positionLimit is the number of positions the scheme can encode, or 0 for no bound.
func (e *Engine) positionLimit() int {
	if lim, ok := e.Model.Scheme.(positional.Limited); ok {
		return lim.Limit()
	}
	return 0
}

// batchInputs pads ragged rows to [len(rows), Bucket(longest)] tensors. With share, rows that all
// have the same positions get them as one row [1, seq]: the model then computes what depends on
// positions alone once for the batch (as in training, batchTensors).
func (e *Engine) batchInputs(tokens, positions [][]int, share bool) (tok, pos, valid *tensors.Tensor, seq int, err error) {
	longest, err := checkRows(tokens, positions)
	if err != nil {
		return nil, nil, nil, 0, err
	}
	seq = Bucket(longest)
	b := len(tokens)
	if tok, err = e.deviceTensor(shapes.Make(dtypes.Int32, b, seq)); err != nil {
		return nil, nil, nil, 0, err
	}
	posRows := positions
	if share {
		if shared := sharedRow(positions); shared != nil {
			posRows = [][]int{shared}
		}
	}
	if pos, err = e.deviceTensor(shapes.Make(dtypes.Int32, len(posRows), seq)); err != nil {
		return nil, nil, nil, 0, err
	}
	if valid, err = e.deviceTensor(shapes.Make(dtypes.Bool, b, seq)); err != nil {
		return nil, nil, nil, 0, err
	}
	tensors.MustMutableFlatData(tok, func(t []int32) {
		tensors.MustMutableFlatData(valid, func(v []bool) {
			for i, row := range tokens {
				for j, id := range row {
					t[i*seq+j] = int32(id)
					v[i*seq+j] = true
				}
			}
		})
	})
	tensors.MustMutableFlatData(pos, func(p []int32) {
		for i, row := range posRows {
			for j, v := range row {
				p[i*seq+j] = int32(v)
			}
		}
	})
	return tok, pos, valid, seq, nil
}

// checkRows validates rows of tokens and their positions and returns the longest row's length.
func checkRows(tokens, positions [][]int) (int, error) {
	if len(tokens) == 0 || len(tokens) != len(positions) {
		return 0, fmt.Errorf("need one positions row per tokens row (got %d and %d)", len(tokens), len(positions))
	}
	longest := 0
	for i, row := range tokens {
		if len(row) != len(positions[i]) {
			return 0, fmt.Errorf("row %d has %d tokens but %d positions", i, len(row), len(positions[i]))
		}
		longest = max(longest, len(row))
	}
	if longest == 0 {
		return 0, fmt.Errorf("empty input: give at least one token")
	}
	return longest, nil
}

// deviceTensor is a zeroed tensor of shape sh made in the backend's memory when the backend
// shares it with the host: given a host-only tensor, GoMLX's Exec first builds an error with a
// stack trace (Tensor.Device) before transferring it.
func (e *Engine) deviceTensor(sh shapes.Shape) (*tensors.Tensor, error) {
	if !e.Backend.HasSharedBuffers() {
		return tensors.FromShape(sh), nil
	}
	buf, err := e.zeroBuffer(sh)
	if err != nil {
		return nil, err
	}
	return tensors.FromBuffer(e.Backend, buf)
}

// unpackLogits returns, for each row, the logits of its real (unpadded) tokens.
func unpackLogits(t *tensors.Tensor, tokens [][]int) [][][]float32 {
	dims := t.Shape().Dimensions
	seq, vocab := dims[1], dims[2]
	out := make([][][]float32, len(tokens))
	tensors.MustConstFlatData(t, func(flat []float32) {
		for i, row := range tokens {
			out[i] = make([][]float32, len(row))
			for j := range row {
				start := (i*seq + j) * vocab
				out[i][j] = append([]float32(nil), flat[start:start+vocab]...)
			}
		}
	})
	// Freed now rather than by the garbage collector: the backend reuses the buffer at the
	// next step (under cmd/infer's memory limit, garbage of this size triggers collections).
	t.FinalizeAll()
	return out
}

// Forward runs the model without a cache on ragged rows of tokens at explicit positions and
// returns logits [row][token][vocab]. Encoders use it; so do tests, as the reference that
// cached decoding must match.
func (e *Engine) Forward(tokens, positions [][]int) ([][][]float32, error) {
	if err := e.checkPositions(positions); err != nil {
		return nil, err
	}
	tok, pos, valid, _, err := e.batchInputs(tokens, positions, sharePositions)
	if err != nil {
		return nil, err
	}
	outs, err := e.full.Exec(tok, pos, valid)
	if err != nil {
		return nil, fmt.Errorf("forward: %w", err)
	}
	return unpackLogits(outs[0], tokens), nil
}
