// Package hf loads Hugging Face model directories (config.json, model.safetensors or shards
// listed in model.safetensors.index.json, tokenizer.json) into posformer's one Config and its
// variables, and exports posformer models in that layout.
//
// Four families carry the positional schemes we study (see families.go, phi3.go):
//
//	Llama (llama, mistral, qwen2)  RoPE, half-split pairs   -> scheme "rope", layout "half"
//	Phi-3 (phi3)                   the same, q/k/v and gate/up fused; LongRoPE (read only)
//	GPT-2 (gpt2)                   learned absolute table   -> scheme "learned"
//	BERT (bert)                    learned absolute table   -> scheme "learned", encoder
//
// Each family maps every tensor of ours to a tensor of the checkpoint (its name, the shape
// config.json implies, and how it is laid out: GPT-2's Conv1D stores [in, out] and fuses
// q, k and v into one c_attn), in tables shared with GGUF (models/families). Loading checks every tensor's presence and shape against
// config.json before reading any data, then streams one tensor at a time into the memory it
// will live in (models.NewTensor), so peak memory stays close to the weights' float32 size.
// Format references: huggingface/transformers modeling_llama.py, modeling_gpt2.py,
// modeling_bert.py; the safetensors sharding index of transformers' save_pretrained.
package hf

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/posformer/posformer/models"
	"github.com/posformer/posformer/models/regular"
	"github.com/posformer/posformer/models/safetensors"
)

// Files of a Hugging Face model directory.
const (
	ConfigFile    = "config.json"
	WeightsFile   = "model.safetensors"
	IndexFile     = "model.safetensors.index.json"
	TokenizerFile = "tokenizer.json"
)

// MaxDefaultContext caps the default KV-cache capacity (Config.MaxSeqLen) taken from
// max_position_embeddings: a Llama 3 declares 131072 positions, whose cache would not fit in
// memory; cmd/infer -c asks for more.
const MaxDefaultContext = 4096

func init() {
	models.RegisterFormat(models.Format{Name: "hf", What: "a Hugging Face directory whose config.json names a model_type", Detect: IsDir, Load: LoadInto})
}

// IsDir reports whether dir holds a Hugging Face config.json (one naming a model_type or
// architectures, which posformer's own config.json never does).
func IsDir(dir string) bool {
	data, err := regular.ReadFile(filepath.Join(dir, ConfigFile))
	if err != nil {
		return false
	}
	var raw map[string]json.RawMessage
	if json.Unmarshal(data, &raw) != nil {
		return false
	}
	_, mt := raw["model_type"]
	_, ar := raw["architectures"]
	return mt || ar
}

// ReadConfig translates dir/config.json into a posformer Config.
func ReadConfig(dir string) (*models.Config, error) {
	cfg, _, err := readConfig(dir)
	return cfg, err
}

func readConfig(dir string) (*models.Config, *family, error) {
	path := filepath.Join(dir, ConfigFile)
	data, err := regular.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("reading Hugging Face config: %w", err)
	}
	raw := rawConfig{}
	if err := json.Unmarshal(data, &raw.m); err != nil {
		return nil, nil, fmt.Errorf("parsing %s: %w", path, err)
	}
	fam, err := familyOf(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	cfg, err := fam.config(&raw)
	if err == nil {
		err = raw.err()
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %s: %w", path, fam.name, err)
	}
	cfg.Tokenizer = TokenizerFile
	cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return &cfg, fam, nil
}

// Load reads a Hugging Face model directory. Every tensor our graph needs is found under its
// Hugging Face name and checked against the shape config.json implies before any is read;
// tensors of the checkpoint that the model does not use (the pooler of a BERT pre-training
// checkpoint, GPT-2's stored causal mask) are skipped only when known, anything else is an
// error. Tensors then stream, one at a time, into their final memory and are checked for NaN.
// Edits change the configuration first, as for models.Load (inference-time settings such as
// RoPE scaling).
func Load(dir string, backend backends.Backend, edits ...models.Edit) (*models.Model, *context.Context, error) {
	ctx := context.New()
	m, err := LoadInto(dir, backend, ctx, edits...)
	if err != nil {
		return nil, nil, err
	}
	return m, ctx, nil
}

// LoadInto is Load into the given context: an inference context (layers.SetWeightType)
// receives its matrices in its weight type, converted as they are read.
func LoadInto(dir string, backend backends.Backend, ctx *context.Context, edits ...models.Edit) (*models.Model, error) {
	cfg, fam, err := readConfig(dir)
	if err != nil {
		return nil, err
	}
	for _, edit := range edits {
		if err := edit(cfg); err != nil {
			return nil, err
		}
	}
	// The weights are opened, and their size checked against the config, before the model's
	// graph is built: a config's sizes are not to be trusted.
	ck, err := openCheckpoint(dir)
	if err != nil {
		return nil, err
	}
	defer ck.Close()
	if err := cfg.CheckFits("its safetensors", ck.bytes()); err != nil {
		return nil, fmt.Errorf("loading %s: %w", dir, err)
	}
	m, err := models.New(*cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	params, err := m.Params(backend)
	if err != nil {
		return nil, err
	}
	plan, err := fam.plan(m.Config, ck, params)
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", dir, err)
	}
	for _, p := range params {
		src := plan[p.Name]
		t, err := models.NewTensor(backend, p.Shape, func(dst []float32) error {
			if err := ck.read(src, dst); err != nil {
				return err
			}
			return models.CheckFinite(src.Name, dst)
		})
		if err != nil {
			return nil, fmt.Errorf("loading %s: %w", dir, err)
		}
		if err := models.SetParam(ctx, backend, p.Name, t); err != nil {
			return nil, fmt.Errorf("loading %s: %w", dir, err)
		}
	}
	return m, nil
}

// checkpoint is the set of safetensors files of one model directory.
type checkpoint struct {
	dir   string
	files []*safetensors.File
	where map[string]*safetensors.File // tensor name -> the file holding it
}

// openCheckpoint opens model.safetensors, or every shard that model.safetensors.index.json
// lists, and indexes their tensors by name.
func openCheckpoint(dir string) (*checkpoint, error) {
	ck := &checkpoint{dir: dir, where: map[string]*safetensors.File{}}
	single := filepath.Join(dir, WeightsFile)
	index := filepath.Join(dir, IndexFile)
	var shards []string
	var weightMap map[string]string
	if _, err := os.Stat(single); err == nil {
		shards = []string{WeightsFile}
	} else if data, err := regular.ReadFile(index); err == nil {
		var idx struct {
			WeightMap map[string]string `json:"weight_map"`
		}
		if err := json.Unmarshal(data, &idx); err != nil {
			return nil, fmt.Errorf("parsing %s: %w", index, err)
		}
		if len(idx.WeightMap) == 0 {
			return nil, fmt.Errorf("%s: weight_map is empty", index)
		}
		weightMap = idx.WeightMap
		for _, shard := range idx.WeightMap {
			if shard != filepath.Base(shard) || shard == "." || shard == ".." {
				return nil, fmt.Errorf("%s: shard %q must be a file name in the model directory", index, shard)
			}
			if !slices.Contains(shards, shard) {
				shards = append(shards, shard)
			}
		}
		sort.Strings(shards)
	} else if errors.Is(err, os.ErrNotExist) {
		hint := ""
		if _, err := os.Stat(filepath.Join(dir, "pytorch_model.bin")); err == nil {
			hint = "; pytorch_model.bin (a pickle) is not read: convert it to safetensors first"
		}
		return nil, fmt.Errorf("loading %s: no %s or %s%s", dir, WeightsFile, IndexFile, hint)
	} else {
		return nil, fmt.Errorf("loading %s: %w", dir, err)
	}
	for _, shard := range shards {
		f, err := safetensors.Open(filepath.Join(dir, shard))
		if err != nil {
			ck.Close()
			return nil, fmt.Errorf("loading %s: %w", dir, err)
		}
		ck.files = append(ck.files, f)
		for _, info := range f.Infos() {
			if _, dup := ck.where[info.Name]; dup {
				ck.Close()
				return nil, fmt.Errorf("loading %s: tensor %s is stored in two shards", dir, info.Name)
			}
			ck.where[info.Name] = f
		}
	}
	for _, name := range slices.Sorted(maps.Keys(weightMap)) {
		if _, ok := ck.where[name]; !ok {
			ck.Close()
			return nil, fmt.Errorf("loading %s: %s lists tensor %s in %s, which does not hold it", dir, IndexFile, name, weightMap[name])
		}
	}
	return ck, nil
}

// bytes is the size of the files' tensor data.
func (ck *checkpoint) bytes() int64 {
	var n int64
	for _, f := range ck.files {
		for _, info := range f.Infos() {
			n += info.End - info.Begin
		}
	}
	return n
}

// Close closes every file.
func (ck *checkpoint) Close() {
	for _, f := range ck.files {
		f.Close()
	}
}

// info returns a tensor's description, trying its aliases, and the name it was found under.
func (ck *checkpoint) info(s models.Source) (safetensors.Info, bool) {
	for _, name := range append([]string{s.Name}, s.Aliases...) {
		if f, ok := ck.where[name]; ok {
			info, _ := f.Info(name)
			return info, true
		}
	}
	return safetensors.Info{}, false
}

// read fills dst (our layout) from the checkpoint tensor s.Name (already resolved from its
// aliases by plan), undoing a Conv1D transpose and taking a part of a fused tensor.
func (ck *checkpoint) read(s models.Source, dst []float32) error {
	f := ck.where[s.Name]
	parts := max(s.Parts, 1)
	switch {
	case s.Transpose:
		// dst is [out, in]; the stored [in, cols] tensor holds our part in columns
		// [Part·out, (Part+1)·out). Read whole rows a chunk at a time and scatter them.
		in, cols := s.Shape[0], s.Shape[1]
		out := cols / parts
		off := s.Part * out
		rows := max(1, (1<<18)/cols)
		buf := make([]float32, min(rows, in)*cols)
		for i0 := 0; i0 < in; i0 += rows {
			n := min(rows, in-i0)
			if err := f.ReadFloat32Range(s.Name, int64(i0*cols), buf[:n*cols]); err != nil {
				return err
			}
			for r := range n {
				row := buf[r*cols+off : r*cols+off+out]
				for o, v := range row {
					dst[o*in+i0+r] = v
				}
			}
		}
		return nil
	case parts > 1:
		return f.ReadFloat32Range(s.Name, int64(s.Part*len(dst)), dst)
	}
	return f.ReadFloat32Into(s.Name, dst)
}

// plan matches our parameters with the checkpoint's tensors and checks them, before any data
// is read: every parameter must have its tensor, of the shape config.json implies and a float
// dtype, and every tensor of the checkpoint must be used or known to be unused.
func (fam *family) plan(cfg models.Config, ck *checkpoint, params []models.Param) (map[string]models.Source, error) {
	prefix := fam.prefix(ck)
	table := fam.tensors.HF(cfg, prefix)
	if err := models.MatchParams(fam.name+" in package hf", params, table); err != nil {
		return nil, err
	}
	plan := map[string]models.Source{}
	used := map[string]bool{}
	for _, p := range params {
		src := table[p.Name]
		info, ok := ck.info(src)
		if !ok {
			return nil, fmt.Errorf("tensor %s is missing (config.json implies shape %v)", src.Name, src.Shape)
		}
		src.Name = info.Name
		if !slices.Equal(info.Shape, src.Shape) {
			return nil, fmt.Errorf("tensor %s has shape %v in the checkpoint but config.json implies %v", info.Name, info.Shape, src.Shape)
		}
		switch info.DType {
		case "F32", "F16", "BF16", "F64":
		default:
			return nil, fmt.Errorf("tensor %s has dtype %s; want a float type (F32, F16, BF16)", info.Name, info.DType)
		}
		plan[p.Name] = src
		used[info.Name] = true
	}
	var extra []string
	for _, name := range slices.Sorted(maps.Keys(ck.where)) {
		if !used[name] && !fam.unused(cfg, strings.TrimPrefix(name, prefix)) {
			extra = append(extra, name)
		}
	}
	if len(extra) > 0 {
		more := ""
		if len(extra) > 3 {
			more = fmt.Sprintf(" and %d more", len(extra)-3)
			extra = extra[:3]
		}
		return nil, fmt.Errorf("unexpected tensor %s%s: not part of a %s with this config.json (check num_hidden_layers and tie_word_embeddings)", strings.Join(extra, ", "), more, fam.name)
	}
	return plan, nil
}

// rawConfig reads fields of a Hugging Face config.json, remembering the first problem.
type rawConfig struct {
	m    map[string]any
	errs []string
}

func (r *rawConfig) err() error {
	if len(r.errs) == 0 {
		return nil
	}
	return errors.New(strings.Join(r.errs, "; "))
}

// has reports whether key is present and not null.
func (r *rawConfig) has(key string) bool { return r.m[key] != nil }

// Int returns an integer field; def < 0 makes it required.
func (r *rawConfig) Int(key string, def int) int {
	v, ok := r.m[key]
	if !ok || v == nil {
		if def < 0 {
			r.errs = append(r.errs, fmt.Sprintf("%s is missing", key))
		}
		return def
	}
	f, isNum := v.(float64)
	if !isNum || f != float64(int(f)) || f < 0 {
		r.errs = append(r.errs, fmt.Sprintf("%s must be a non-negative integer, got %v", key, v))
		return def
	}
	return int(f)
}

// Float returns a number field, or def when absent.
func (r *rawConfig) Float(key string, def float64) float64 {
	v, ok := r.m[key]
	if !ok || v == nil {
		return def
	}
	f, isNum := v.(float64)
	if !isNum {
		r.errs = append(r.errs, fmt.Sprintf("%s must be a number, got %v", key, v))
		return def
	}
	return f
}

// NormEps returns a norm epsilon field, or def when absent, recording a value
// models.CheckNormEps refuses under the field's own name.
func (r *rawConfig) NormEps(key string, def float64) float64 {
	if !r.has(key) {
		return def
	}
	eps := r.Float(key, def)
	if err := models.CheckNormEps(key, eps); err != nil {
		r.errs = append(r.errs, err.Error())
	}
	return eps
}

// Bool returns a boolean field, or def when absent.
func (r *rawConfig) Bool(key string, def bool) bool {
	v, ok := r.m[key]
	if !ok || v == nil {
		return def
	}
	b, isBool := v.(bool)
	if !isBool {
		r.errs = append(r.errs, fmt.Sprintf("%s must be true or false, got %v", key, v))
		return def
	}
	return b
}

// String returns a string field, or def when absent.
func (r *rawConfig) String(key, def string) string {
	v, ok := r.m[key]
	if !ok || v == nil {
		return def
	}
	s, isString := v.(string)
	if !isString {
		r.errs = append(r.errs, fmt.Sprintf("%s must be a string, got %v", key, v))
		return def
	}
	return s
}

// Errorf records a problem found while translating.
func (r *rawConfig) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
