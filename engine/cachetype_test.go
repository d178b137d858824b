package engine

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/posformer/posformer/models"
)

// A cache kept in float16 or bfloat16 decodes across the window edges, in a batch of ragged
// rows, to logits close to recomputing each row in float32: within the rounding of keys and
// values (float16 keeps 11 bits, bfloat16 8), for schemes whose hooks read the keys themselves
// (DeBERTa's position-to-content term) or not; the cache takes half the memory; and a float32
// cache gives the recomputation's logits, as before.
func TestHalfCacheNearRecomputation(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	for _, ct := range []struct {
		name string
		tol  float64
	}{{"f32", 1e-6}, {"f16", 1e-4}, {"bf16", 1e-3}} {
		for i, pe := range []map[string]any{{"name": "rope"}, {"name": "shaw"}, {"name": "deberta"}, {"name": "alibi"}, {"name": "rope"}, {"name": "deberta"}} {
			layout := cacheLayouts[i/4]
			t.Run(fmt.Sprintf("%s/%v/%s", ct.name, pe["name"], layout.name), func(t *testing.T) {
				cfg := layout.of(windowConfig(pe))
				e := newTestEngine(t, cfg)
				// A wider model sums more rounded keys and values into each logit: the
				// tolerance grows with the width.
				tol := ct.tol * float64(cfg.Dim) / 32
				full32 := e.KVBytes(1)
				dt, err := ParseCacheType(ct.name)
				if err != nil {
					t.Fatal(err)
				}
				if err := e.SetCacheTypes(dt, dt); err != nil {
					t.Fatal(err)
				}
				b := e.Model.Config.Block()
				kv := int64(2*e.Model.Config.NumLayers*b.NumKVHeads*b.HeadDim*e.Capacity) * int64(4-dt.Size())
				if got := e.KVBytes(1); got != full32-kv {
					t.Errorf("KV cache of %s: %d bytes, want %d (float32's %d less %d)", ct.name, got, full32-kv, full32, kv)
				}
				rows := [][]int{randomTokens(r, 140), randomTokens(r, 90)}
				lens := []int{40, 5}
				s := e.NewSession(2)
				if _, err := s.AppendLast([][]int{rows[0][:lens[0]], rows[1][:lens[1]]}, [][]int{iota(0, lens[0]), iota(0, lens[1])}); err != nil {
					t.Fatal(err)
				}
				worst := 0.0
				decodeRows(t, s, rows, lens, func(i, n int, logits []float32) {
					if n != 64 && n != 65 && n != 90 && n != 129 && n != 140 {
						return
					}
					full, err := e.Forward([][]int{rows[i][:n]}, [][]int{iota(0, n)})
					if err != nil {
						t.Fatal(err)
					}
					worst = max(worst, maxAbsDiff(logits, full[0][n-1]))
				})
				if worst > tol {
					t.Errorf("cached logits differ from recomputation by up to %g, want at most %g", worst, tol)
				}
				if ct.name != "f32" && worst == 0 {
					t.Errorf("a cache of %s gave the float32 logits exactly: the values were not rounded", ct.name)
				}
			})
		}
	}
}

// A context shift re-rotates keys kept in half precision (widened, rotated, rounded back), and
// decoding after it stays close to the same shift over a float32 cache.
func TestHalfCacheShift(t *testing.T) {
	r := rand.New(rand.NewPCG(33, 34))
	toks, next := randomTokens(r, 48), randomTokens(r, 3)
	for _, wide := range []bool{false, true} {
		testHalfCacheShift(t, toks, next, wide)
	}
}

func testHalfCacheShift(t *testing.T, toks, next []int, wide bool) {
	logits := map[string][][]float32{}
	for _, name := range []string{"f32", "f16"} {
		e := shiftEngine(t, 2, map[string]any{"name": "rope"}, 48, wide)
		dt, _ := ParseCacheType(name)
		if err := e.SetCacheTypes(dt, dt); err != nil {
			t.Fatal(err)
		}
		s, kept := fillAndShift(t, e, toks, 4, 22)
		for _, tok := range next {
			out, err := s.Append([][]int{{tok}}, [][]int{{len(kept)}})
			if err != nil {
				t.Fatal(err)
			}
			kept = append(kept, tok)
			logits[name] = append(logits[name], out[0][0])
		}
	}
	for i := range next {
		if d := maxAbsDiff(logits["f16"][i], logits["f32"][i]); d > 5e-3 {
			t.Errorf("heads wide %v, token %d after the shift: a float16 cache's logits differ from a float32 one's by %g", wide, i, d)
		}
	}
}

// Cache types are named as llama.cpp names them; a backend that cannot hold one says so.
func TestCacheTypeErrors(t *testing.T) {
	if _, err := ParseCacheType("q8_0"); err == nil || !strings.Contains(err.Error(), "bf16, f16, f32") {
		t.Errorf("ParseCacheType(q8_0): %v, want the valid names listed", err)
	}
	if dt, err := ParseCacheType("F16"); err != nil || dt != dtypes.Float16 {
		t.Errorf("ParseCacheType(F16) = %v, %v", dt, err)
	}
	backend, err := NewBackend("go")
	if err != nil {
		t.Fatal(err)
	}
	m, err := models.New(tinyConfig(models.Decoder, 1, map[string]any{"name": "rope"}))
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(backend, m, seededContext(t, 1), 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.SetCacheTypes(dtypes.Float16, dtypes.Float32); err == nil || !strings.Contains(err.Error(), "cannot hold") {
		t.Errorf("float16 cache on %s: %v, want a refusal naming the backend", backend.Name(), err)
	}
	if err := e.SetCacheTypes(dtypes.BFloat16, dtypes.BFloat16); err != nil {
		t.Errorf("bfloat16 cache on %s: %v", backend.Name(), err)
	}
	// After the first step the compiled graphs hold the cache's shapes: too late to change them.
	if _, err := e.NewSession(1).AppendLast([][]int{{1, 2}}, [][]int{{0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := e.SetCacheTypes(dtypes.Float32, dtypes.Float32); err == nil || !strings.Contains(err.Error(), "before the engine's first step") {
		t.Errorf("cache types set after a step: %v", err)
	}
}
