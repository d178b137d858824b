package hf

// Export writes a posformer model as a Hugging Face directory, the inverse of Load through the
// same tensor table: a model whose architecture is one of the three families (say, a RoPE
// decoder trained by cmd/train with rmsnorm and swiglu) can then be read by transformers.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/posformer/posformer/models"
	"github.com/posformer/posformer/models/safetensors"
)

// ExportOptions choose how the weights are stored.
type ExportOptions struct {
	DType string // "F32" (default), "F16" or "BF16", rounded to nearest-even
	// ShardBytes > 0 splits the weights into files of at most about this many bytes,
	// model-0000i-of-0000n.safetensors, listed in model.safetensors.index.json.
	ShardBytes int64
}

// torchDTypes names the stored dtype as config.json's torch_dtype does.
var torchDTypes = map[string]string{"F32": "float32", "F16": "float16", "BF16": "bfloat16"}

// Export writes m, whose variables are in ctx, to dir as config.json and safetensors weights
// in the layout of the Hugging Face family m's architecture belongs to.
func Export(dir string, m *models.Model, ctx *context.Context, opts ExportOptions) error {
	if opts.DType == "" {
		opts.DType = "F32"
	}
	if torchDTypes[opts.DType] == "" {
		return fmt.Errorf("exporting: dtype %q (valid: F32, F16, BF16)", opts.DType)
	}
	cfg := m.Config
	fam, prefix := llama, ""
	switch {
	case cfg.Kind == models.Encoder:
		fam, prefix = bert, "bert."
	case cfg.SchemeName() == "learned":
		fam, prefix = gpt2, "transformer."
	case cfg.SchemeName() != "rope":
		return fmt.Errorf("exporting: no Hugging Face family here uses positional scheme %q (exportable: rope as Llama, learned as GPT-2 or BERT)", cfg.SchemeName())
	}
	hfConfig, err := fam.export(cfg)
	if err != nil {
		return fmt.Errorf("exporting: %w", err)
	}
	hfConfig["torch_dtype"] = torchDTypes[opts.DType]

	// Gather our variables into the checkpoint's tensors, undoing what Load's read does.
	table := fam.tensors.HF(cfg, prefix)
	out := map[string][]float32{}
	shapes := map[string][]int{}
	filled, parts := map[string]int{}, map[string]int{}
	for v := range ctx.In(models.Scope).IterVariablesInScope() {
		name, shape := models.CheckpointTensor(v)
		src, ok := table[name]
		if !ok {
			return fmt.Errorf("exporting: %s has no place in a %s checkpoint", name, fam.name)
		}
		value, err := v.Value()
		if err != nil {
			return fmt.Errorf("exporting %s: %w", name, err)
		}
		data, err := tensors.CopyFlatData[float32](value)
		if err != nil {
			return fmt.Errorf("exporting %s: %w", name, err)
		}
		if !slices.Equal(shape, src.OurShape()) {
			return fmt.Errorf("exporting: %s has shape %v, want %v", name, shape, src.OurShape())
		}
		if out[src.Name] == nil {
			n := 1
			for _, d := range src.Shape {
				n *= d
			}
			out[src.Name] = make([]float32, n)
			shapes[src.Name] = src.Shape
		}
		place(src, data, out[src.Name])
		filled[src.Name]++
		parts[src.Name] = max(src.Parts, 1)
	}
	if len(out) == 0 {
		return fmt.Errorf("exporting: the model has no variables (run it once, or load it, first)")
	}
	var ts []safetensors.Tensor
	for name, data := range out {
		if filled[name] != parts[name] {
			return fmt.Errorf("exporting: %s got %d of its %d parts", name, filled[name], parts[name])
		}
		ts = append(ts, safetensors.Tensor{Name: name, Shape: shapes[name], Data: data, DType: opts.DType})
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].Name < ts[j].Name })

	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("exporting: %w", err)
	}
	if err := writeWeights(dir, ts, opts); err != nil {
		return fmt.Errorf("exporting: %w", err)
	}
	data, err := json.MarshalIndent(hfConfig, "", "  ")
	if err != nil {
		return fmt.Errorf("exporting: %w", err)
	}
	return models.WriteFileAtomic(filepath.Join(dir, ConfigFile), append(data, '\n'))
}

// place writes our tensor data into its part of the checkpoint tensor dst.
func place(s models.Source, data, dst []float32) {
	parts := max(s.Parts, 1)
	switch {
	case s.Transpose:
		in, cols := s.Shape[0], s.Shape[1]
		out := cols / parts
		for o := range out {
			for i := range in {
				dst[i*cols+s.Part*out+o] = data[o*in+i]
			}
		}
	case parts > 1:
		copy(dst[s.Part*len(data):], data)
	default:
		copy(dst, data)
	}
}

// writeWeights writes model.safetensors, or shards and their index, removing the other form
// so that a directory never holds both.
func writeWeights(dir string, ts []safetensors.Tensor, opts ExportOptions) error {
	meta := map[string]string{"format": "pt"} // transformers refuses safetensors without it
	elem := int64(4)
	if opts.DType != "F32" {
		elem = 2
	}
	var shards [][]safetensors.Tensor
	var size, total int64
	for _, t := range ts {
		n := elem * int64(len(t.Data))
		total += n
		if len(shards) == 0 || (opts.ShardBytes > 0 && size+n > opts.ShardBytes && size > 0) {
			shards = append(shards, nil)
			size = 0
		}
		shards[len(shards)-1] = append(shards[len(shards)-1], t)
		size += n
	}
	if opts.ShardBytes <= 0 || len(shards) == 1 {
		if err := safetensors.Write(filepath.Join(dir, WeightsFile), ts, meta); err != nil {
			return err
		}
		return removeIfExists(filepath.Join(dir, IndexFile))
	}
	weightMap := map[string]string{}
	for i, shard := range shards {
		file := fmt.Sprintf("model-%05d-of-%05d.safetensors", i+1, len(shards))
		if err := safetensors.Write(filepath.Join(dir, file), shard, meta); err != nil {
			return err
		}
		for _, t := range shard {
			weightMap[t.Name] = file
		}
	}
	index, err := json.MarshalIndent(map[string]any{"metadata": map[string]any{"total_size": total}, "weight_map": weightMap}, "", "  ")
	if err != nil {
		return err
	}
	if err := models.WriteFileAtomic(filepath.Join(dir, IndexFile), append(index, '\n')); err != nil {
		return err
	}
	return removeIfExists(filepath.Join(dir, WeightsFile))
}

func removeIfExists(path string) error {
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}
