package engine

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
)

// A KV cache may be kept in half precision, as llama.cpp keeps it by default (its
// --cache-type-k and --cache-type-v): half the memory, and half the bytes a decoding step reads
// from a long cache. Keys and values are rounded once, when written; the attention's products
// widen them back to float32 and compute as before. float16 keeps 11 significant bits over a
// range of ±65,504 (keys and values of these models sit far inside it); bfloat16 keeps 8 over
// float32's range, and is what GoMLX's reference backend can hold. The default stays float32:
// this engine's tests compare cached decoding with full recomputation to the last bit.

// cacheTypeNames are the cache types, by llama.cpp's names.
var cacheTypeNames = map[string]dtypes.DType{"f32": dtypes.Float32, "f16": dtypes.Float16, "bf16": dtypes.BFloat16}

// CacheTypeNames lists the accepted names, for flags' help and errors.
func CacheTypeNames() []string {
	names := make([]string, 0, len(cacheTypeNames))
	for n := range cacheTypeNames {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// ParseCacheType reads a cache type by its llama.cpp name: f32, f16 or bf16.
func ParseCacheType(name string) (dtypes.DType, error) {
	if dt, ok := cacheTypeNames[strings.ToLower(name)]; ok {
		return dt, nil
	}
	return dtypes.InvalidDType, fmt.Errorf("unknown KV cache type %q; use one of %s", name, strings.Join(CacheTypeNames(), ", "))
}

// SetCacheTypes keeps the keys and the values of the engine's sessions as k and v
// (dtypes.Float32, Float16 or BFloat16). It fails where the backend cannot hold the type, and
// once a graph has been built (the compiled steps are kept by shape, not by cache type): set it
// right after loading.
func (e *Engine) SetCacheTypes(k, v dtypes.DType) error {
	if e.builds.Load() > 0 {
		return fmt.Errorf("the KV cache types are set before the engine's first step (it has built %d graphs)", e.builds.Load())
	}
	for _, dt := range []dtypes.DType{k, v} {
		if dt != dtypes.Float32 && dt != dtypes.Float16 && dt != dtypes.BFloat16 {
			return fmt.Errorf("a KV cache of %s is not supported; use one of %s", dt, strings.Join(CacheTypeNames(), ", "))
		}
		if !e.Backend.Capabilities().DTypes[dt] {
			return fmt.Errorf("backend %s cannot hold a KV cache of %s; use another cache type (%s) or backend",
				e.Backend.Name(), dt, strings.Join(CacheTypeNames(), ", "))
		}
	}
	e.cacheK, e.cacheV = k, v
	return nil
}

// CacheTypes are the element types of the keys and the values of a session's cache.
func (e *Engine) CacheTypes() (k, v dtypes.DType) {
	k, v = e.cacheK, e.cacheV
	if k == dtypes.InvalidDType {
		k = dtypes.Float32
	}
	if v == dtypes.InvalidDType {
		v = dtypes.Float32
	}
	return k, v
}
