package models

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/posformer/posformer/layers"
	"github.com/posformer/posformer/layers/quant"
	"github.com/posformer/posformer/models/atomicfile"
	"github.com/posformer/posformer/models/regular"
	"github.com/posformer/posformer/models/safetensors"
)

// Files of a checkpoint directory.
const (
	ConfigFile  = "config.json"
	WeightsFile = "model.safetensors"
)

// TensorName maps a variable's context scope and name to its checkpoint name:
// scope "/model/layer_0/attn/wq", name "weight" -> "layer_0.attn.wq.weight".
func TensorName(scope, name string) string {
	scope = strings.TrimPrefix(scope, "/"+Scope)
	scope = strings.Trim(scope, "/")
	if scope == "" {
		return name
	}
	return strings.ReplaceAll(scope, "/", ".") + "." + name
}

// CheckpointTensor is the checkpoint name and shape of a model variable (a quantized matrix's
// values are "weight" [out, in]; its scales have no name of their own).
func CheckpointTensor(v *context.Variable) (string, []int) {
	name, shape := layers.CheckpointName(v.Name(), v.Shape().Dimensions)
	return TensorName(v.Scope(), name), shape
}

// Param is one tensor the model expects: its checkpoint name and shape, and the variable that
// holds it in a context (the same, except for quantized matrices of an inference context, see
// layers.SetWeightType).
type Param struct {
	Name  string
	Shape []int
	Var   string // variable name in its scope
	Store []int  // variable shape
}

// Params lists, sorted by name, the tensors that m's graph creates. It is derived by building
// the graph once (without compiling it), so that the list can never disagree with the code.
func (m *Model) Params(backend backends.Backend) ([]Param, error) {
	return m.Layout(backend, nil)
}

// Layout is Params for a context laid out as like (quantized matrices of an inference context,
// see layers.SetWeightType); nil is the training layout. Var and Store name the variable
// holding each tensor (for a quantized matrix, its values).
func (m *Model) Layout(backend backends.Backend, like *context.Context) ([]Param, error) {
	ctx := context.New()
	if like != nil {
		if err := layers.SetWeightType(ctx, layers.WeightType(like)); err != nil {
			return nil, err
		}
	}
	err := Try(func() {
		g := NewGraph(backend, "params")
		tokens := Parameter(g, "tokens", shapes.Make(dtypes.Int32, 1, 1))
		pos := Parameter(g, "pos", shapes.Make(dtypes.Int32, 1, 1))
		valid := Parameter(g, "valid", shapes.Make(dtypes.Bool, 1, 1))
		m.Forward(ctx, tokens, pos, valid, nil)
		g.Finalize()
	})
	if err != nil {
		return nil, fmt.Errorf("building the %s graph: %w", m.Config.Kind, err)
	}
	var params []Param
	for v := range ctx.IterVariablesInScope() {
		store := v.Shape().Dimensions
		name, shape := layers.CheckpointName(v.Name(), store)
		if name == "" {
			continue // a quantized matrix's scales, stored with its values
		}
		params = append(params, Param{Name: TensorName(v.Scope(), name), Shape: shape, Var: v.Name(), Store: store})
	}
	sort.Slice(params, func(i, j int) bool { return params[i].Name < params[j].Name })
	return params, nil
}

// Try runs a graph-building function, turning GoMLX's panics into errors.
func Try(fn func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(error); ok {
				err = e
			} else {
				err = fmt.Errorf("%v", r)
			}
		}
	}()
	fn()
	return nil
}

// Save writes cfg and the model variables of ctx to dir, each file through a temporary file
// and a rename so that a crash never leaves half a checkpoint.
func Save(dir string, cfg Config, ctx *context.Context) error {
	return SaveWithMetadata(dir, cfg, ctx, nil)
}

// SaveWithMetadata is Save with extra entries in the weights file's safetensors metadata (a
// trainer records the step there, to tell the files of one save from another's).
func SaveWithMetadata(dir string, cfg Config, ctx *context.Context, meta map[string]string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("saving checkpoint: %w", err)
	}
	var ts []safetensors.Tensor
	for v := range ctx.In(Scope).IterVariablesInScope() {
		value, err := v.Value()
		if err != nil {
			return fmt.Errorf("saving %s: %w", v.ScopeAndName(), err)
		}
		data, err := tensors.CopyFlatData[float32](value)
		if err != nil {
			return fmt.Errorf("saving %s: %w", v.ScopeAndName(), err)
		}
		name, shape := CheckpointTensor(v)
		ts = append(ts, safetensors.Tensor{Name: name, Shape: shape, Data: data})
	}
	all := map[string]string{"format": "posformer"}
	for k, v := range meta {
		all[k] = v
	}
	if err := safetensors.Write(filepath.Join(dir, WeightsFile), ts, all); err != nil {
		return fmt.Errorf("saving checkpoint: %w", err)
	}
	data, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return fmt.Errorf("saving checkpoint config: %w", err)
	}
	return WriteFileAtomic(filepath.Join(dir, ConfigFile), append(data, '\n'))
}

// WriteFileAtomic writes data to a temporary file beside path, syncs it and renames it over path
// (atomicfile.WriteFile).
func WriteFileAtomic(path string, data []byte) error { return atomicfile.WriteFile(path, data) }

// CopyFileAtomic copies the regular file src to dst (WriteFileAtomic), so that dst is never half
// written.
func CopyFileAtomic(src, dst string) error {
	data, err := regular.ReadFile(src)
	if err != nil {
		return err
	}
	return WriteFileAtomic(dst, data)
}

// Load reads a checkpoint directory: its config, then every tensor the config implies, each
// checked for presence, dtype and shape before it is read. Tensors are streamed one at a time
// into the variables of the returned context.
//
// Edits change the configuration before the model is built, for settings that do not change
// the weights, such as RoPE scaling chosen at inference time.
func Load(dir string, backend backends.Backend, edits ...Edit) (*Model, *context.Context, error) {
	ctx := context.New()
	m, err := LoadInto(dir, backend, ctx, edits...)
	if err != nil {
		return nil, nil, err
	}
	return m, ctx, nil
}

// Edit changes a configuration read from a checkpoint (see Load).
type Edit func(*Config) error

// LoadInto is Load into the given context: an inference context (layers.SetWeightType)
// receives its matrices in its weight type, converted as they are read.
func LoadInto(dir string, backend backends.Backend, ctx *context.Context, edits ...Edit) (*Model, error) {
	cfg, err := ReadConfig(dir)
	if err != nil {
		return nil, err
	}
	for _, edit := range edits {
		if err := edit(cfg); err != nil {
			return nil, err
		}
	}
	if info, err := os.Stat(filepath.Join(dir, WeightsFile)); err == nil {
		// Before the graph is built: a config's sizes are not to be trusted, nor a file's kind
		// (a named pipe has size 0 and would block the open).
		if err := regular.Check(filepath.Join(dir, WeightsFile)); err != nil {
			return nil, fmt.Errorf("loading weights: %w", err)
		}
		if err := cfg.CheckFits(WeightsFile, info.Size()); err != nil {
			return nil, fmt.Errorf("loading %s: %w", dir, err)
		}
	}
	m, err := New(*cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	if err := m.LoadWeights(filepath.Join(dir, WeightsFile), backend, ctx); err != nil {
		return nil, err
	}
	return m, nil
}

// LoadWeights reads a safetensors file into ctx, validating it against m's parameters.
func (m *Model) LoadWeights(path string, backend backends.Backend, ctx *context.Context) error {
	params, err := m.Layout(backend, ctx)
	if err != nil {
		return err
	}
	f, err := safetensors.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("loading weights: %s does not exist (train a model with cmd/train or pass -m DIR)", path)
		}
		return fmt.Errorf("loading weights: %w", err)
	}
	defer f.Close()
	want := map[string]bool{}
	for _, p := range params {
		want[p.Name] = true
		info, ok := f.Info(p.Name)
		if !ok {
			return fmt.Errorf("loading %s: tensor %s is missing (the config wants shape %v)", path, p.Name, p.Shape)
		}
		if !slices.Equal(info.Shape, p.Shape) {
			return fmt.Errorf("loading %s: tensor %s has shape %v in the checkpoint but the config wants %v", path, p.Name, info.Shape, p.Shape)
		}
		switch info.DType {
		case "F32", "F16", "BF16", "F64":
		default:
			return fmt.Errorf("loading %s: tensor %s has dtype %s; want a float type (F32, F16, BF16)", path, p.Name, info.DType)
		}
	}
	for _, info := range f.Infos() {
		if !want[info.Name] {
			return fmt.Errorf("loading %s: unexpected tensor %s %v, not part of this config's %s", path, info.Name, info.Shape, m.Config.Kind)
		}
	}
	for _, p := range params {
		t, err := NewTensor(backend, p.Shape, func(dst []float32) error {
			if err := f.ReadFloat32Into(p.Name, dst); err != nil {
				return err
			}
			return CheckFinite(p.Name, dst)
		})
		if err != nil {
			return fmt.Errorf("loading %s: %w", path, err)
		}
		if err := SetParam(ctx, backend, p.Name, t); err != nil {
			return fmt.Errorf("loading %s: %w", path, err)
		}
	}
	return nil
}

// SetParam stores t, float32 in the checkpoint's shape, as the model variable that the
// checkpoint calls name: as it is, or quantized when ctx holds its matrices in a narrower
// type (layers.SetWeightType), t being then released.
func SetParam(ctx *context.Context, backend backends.Backend, name string, t *tensors.Tensor) error {
	scope, v := VariablePath(name)
	dims := t.Shape().Dimensions
	if typ := layers.MatrixType(ctx, dims); v == "weight" && typ != quant.F32 {
		var err error
		t.ConstFlatData(func(flat any) {
			err = storeQuantized(ctx.InAbsPath(scope), backend, typ, dims, flat.([]float32), nil)
		})
		t.FinalizeAll()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		return nil
	}
	ctx.InAbsPath(scope).VariableWithValue(v, t)
	return nil
}

// NewTensor allocates a float32 tensor of the given shape and lets fill write its values in
// place, so that a checkpoint streams into its final memory one tensor at a time. On a backend
// with shared buffers (the pure-Go one) that memory is the backend's own buffer: a graph
// reads the weights where they were loaded, without the second copy that a host tensor gets
// on first use.
func NewTensor(backend backends.Backend, shape []int, fill func(dst []float32) error) (*tensors.Tensor, error) {
	s := shapes.Make(DType, shape...)
	if backend != nil && backend.HasSharedBuffers() {
		buf, flat, err := backend.NewSharedBuffer(0, s)
		if err != nil {
			return nil, err
		}
		if err := fill(flat.([]float32)); err != nil {
			backend.BufferFinalize(buf)
			return nil, err
		}
		return tensors.FromBuffer(backend, buf)
	}
	t := tensors.FromShape(s)
	var err error
	t.MustMutableFlatData(func(flat any) { err = fill(flat.([]float32)) })
	return t, err
}

// CheckFinite rejects a tensor holding NaN or infinity, which no trained weight is: the file
// is corrupt, or the run that wrote it diverged.
func CheckFinite(name string, data []float32) error {
	for i, v := range data {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("tensor %s holds %v at element %d (a corrupt or diverged checkpoint)", name, v, i)
		}
	}
	return nil
}

// VariablePath inverts TensorName: "layer_0.attn.wq.weight" -> ("/model/layer_0/attn/wq", "weight").
func VariablePath(tensor string) (scope, name string) {
	parts := strings.Split(tensor, ".")
	return "/" + strings.Join(append([]string{Scope}, parts[:len(parts)-1]...), "/"), parts[len(parts)-1]
}
