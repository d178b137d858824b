package models

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/posformer/posformer/layers/quant"
)

// Format is a kind of checkpoint the engine loads. Each format's package registers itself
// (RegisterFormat, in its init); engine.Load asks FormatOf which one a path holds.
type Format struct {
	Name string // what messages call it: "posformer", "hf", "gguf", "llama2c"
	What string // what a path of this format is, for the message listing the formats
	// Detect reports whether path holds (or, missing, is named as) a checkpoint of the format.
	Detect func(path string) bool
	// Fallback formats claim what the others do not (any regular file is a llama2.c file,
	// having no magic number): they are asked last.
	Fallback bool
	// Load reads the checkpoint at path into ctx (see LoadInto): an inference context
	// (layers.SetWeightType) receives its matrices in its weight type.
	Load func(path string, backend backends.Backend, ctx *context.Context, edits ...Edit) (*Model, error)
	// WeightType is the type the checkpoint at path holds its matrices in, the weight type a
	// load keeps by default; nil means float32.
	WeightType func(path string) quant.Type
}

var formats = map[string]Format{}

// RegisterFormat makes a format known to FormatOf. It panics on a name registered twice.
func RegisterFormat(f Format) {
	if _, dup := formats[f.Name]; dup {
		panic("models: format registered twice: " + f.Name)
	}
	formats[f.Name] = f
}

// FormatNames lists the registered formats, sorted.
func FormatNames() []string {
	names := make([]string, 0, len(formats))
	for n := range formats {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// FormatOf is the format of the checkpoint at path: the first whose detector claims it, the
// fallbacks asked last. A path no format claims (a missing path without a format's suffix) is
// an error listing the formats.
func FormatOf(path string) (Format, error) {
	for _, fallback := range []bool{false, true} {
		for _, name := range FormatNames() {
			if f := formats[name]; f.Fallback == fallback && f.Detect(path) {
				return f, nil
			}
		}
	}
	var known []string
	for _, name := range FormatNames() {
		known = append(known, fmt.Sprintf("%s (%s)", name, formats[name].What))
	}
	problem := "not a checkpoint of a known format"
	if _, err := os.Stat(path); err != nil {
		problem = err.Error()
		var pe *fs.PathError
		if errors.As(err, &pe) {
			problem = pe.Err.Error() // the path is named already
		}
	}
	return Format{}, fmt.Errorf("loading %s: %s; a checkpoint is one of: %s", path, problem, strings.Join(known, ", "))
}

// StoredWeightType is the type the checkpoint at path holds its matrices in (float32 when its
// format does not say, or no format claims it).
func StoredWeightType(path string) quant.Type {
	if f, err := FormatOf(path); err == nil && f.WeightType != nil {
		return f.WeightType(path)
	}
	return quant.F32
}

// Our own checkpoints: a directory of config.json and model.safetensors (Save). Every
// directory that no other format claims is read as one, so that its error names the file
// missing from it.
func init() {
	RegisterFormat(Format{
		Name:     "posformer",
		What:     "a directory with " + ConfigFile + " and " + WeightsFile,
		Detect:   isDir,
		Fallback: true,
		Load:     LoadInto,
	})
}

func isDir(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.IsDir()
}
