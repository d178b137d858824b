package train

import (
	"fmt"
	"strings"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/posformer/posformer/models"
	"github.com/posformer/posformer/models/safetensors"
)

// StateFile holds what resuming needs beyond the weights: optimizer moments, global step.
const StateFile = "train_state.safetensors"

func save(dir string, cfg models.Config, ctx *context.Context) error {
	if err := models.Save(dir, cfg, ctx); err != nil {
		return err
	}
	var ts []safetensors.Tensor
	meta := map[string]string{}
	for v := range ctx.IterVariables() {
		if strings.HasPrefix(v.Scope(), "/"+models.Scope) {
			continue
		}
		value, err := v.Value()
		if err != nil {
			return fmt.Errorf("saving %s: %w", v.ScopeAndName(), err)
		}
		var data []float32
		switch v.DType() {
		case dtypes.Float32:
			data = tensors.MustCopyFlatData[float32](value)
		case dtypes.Int64:
			// Step counters: exact in float32 up to 2^24 steps.
			for _, x := range tensors.MustCopyFlatData[int64](value) {
				data = append(data, float32(x))
			}
		default:
			// The context's random-number state: training draws no in-graph randomness.
			continue
		}
		ts = append(ts, safetensors.Tensor{Name: v.ScopeAndName(), Shape: v.Shape().Dimensions, Data: data})
		meta[v.ScopeAndName()] = v.DType().String()
	}
	if err := safetensors.Write(dir+"/"+StateFile, ts, meta); err != nil {
		return fmt.Errorf("saving training state: %w", err)
	}
	return nil
}

func loadState(path string, ctx *context.Context) error {
	f, err := safetensors.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	meta := f.Metadata()
	for _, info := range f.Infos() {
		data, err := f.ReadFloat32(info.Name)
		if err != nil {
			return err
		}
		var t *tensors.Tensor
		switch meta[info.Name] {
		case dtypes.Int64.String():
			t = tensors.FromShape(shapes.Make(dtypes.Int64, info.Shape...))
			tensors.MustMutableFlatData(t, func(flat []int64) {
				for i, x := range data {
					flat[i] = int64(x)
				}
			})
		default:
			t = tensors.FromFlatDataAndDimensions(data, info.Shape...)
		}
		scope, name := context.SplitScope(info.Name)
		ctx.InAbsPath(scope).Checked(false).VariableWithValue(name, t)
	}
	return nil
}
