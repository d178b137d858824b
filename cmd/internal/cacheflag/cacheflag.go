// Package cacheflag registers llama.cpp's KV cache type flags, -ctk/--cache-type-k and
// -ctv/--cache-type-v (f32, f16 or bf16; engine.ParseCacheType), and applies them to an
// engine the same way in every command that decodes.
package cacheflag

import (
	"flag"
	"fmt"
	"strings"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/posformer/posformer/engine"
)

// Types are the flags' values: the keys' and the values' element types.
type Types struct {
	K, V dtypes.DType
}

// Register adds both flags (each under its short and long name) to fs, defaulting to float32.
func Register(fs *flag.FlagSet) *Types {
	t := &Types{K: dtypes.Float32, V: dtypes.Float32}
	names := strings.Join(engine.CacheTypeNames(), ", ")
	for _, name := range []string{"ctk", "cache-type-k"} {
		fs.Var((*value)(&t.K), name, "KV cache `type` for the keys: "+names+" (half types halve the cache's memory; keys are rounded once, when written)")
	}
	for _, name := range []string{"ctv", "cache-type-v"} {
		fs.Var((*value)(&t.V), name, "KV cache `type` for the values: "+names)
	}
	return t
}

// Apply keeps e's KV cache as the flags say (nil: as the engine has it, float32).
func (t *Types) Apply(e *engine.Engine) error {
	if t == nil {
		return nil
	}
	if err := e.SetCacheTypes(t.K, t.V); err != nil {
		return fmt.Errorf("--cache-type-k/--cache-type-v: %w", err)
	}
	return nil
}

// value is one flag's flag.Value: a cache type by its llama.cpp name. Both names of a flag
// share it (flaghelp prints them as one).
type value dtypes.DType

func (v *value) String() string {
	if v == nil {
		return ""
	}
	for _, name := range engine.CacheTypeNames() {
		if dt, _ := engine.ParseCacheType(name); dt == dtypes.DType(*v) {
			return name
		}
	}
	return dtypes.DType(*v).String()
}

func (v *value) Set(s string) error {
	dt, err := engine.ParseCacheType(s)
	if err != nil {
		return err
	}
	*v = value(dt)
	return nil
}
