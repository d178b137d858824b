package engine

import (
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/posformer/posformer/layers"
	"github.com/posformer/posformer/layers/quant"
	"github.com/posformer/posformer/models"
)

// A model held quantized computes what the float32 model computes with each matrix replaced by
// its dequantized values (quantize, then widen, in Go: an independent path), on every backend,
// for cached decoding and for full recomputation. The shipped decoder has matrices of input
// width 96 (quantized) and 256 (quantized) and a tied embedding table (gathered and multiplied).
func TestQuantizedWeightsMatchDequantized(t *testing.T) {
	dir := filepath.Join("..", "weights", "rope-decoder")
	tokens := [][]int{{10, 40, 101, 32, 117, 110, 99, 116, 105, 111, 110, 40, 41, 32, 123, 10}}
	positions := [][]int{iotaFrom(0, len(tokens[0]))}
	for _, backend := range []string{"cpu:actq8=false", "cpu:optimize=false,actq8=false", "go"} {
		for _, typ := range []quant.Type{quant.BF16, quant.Q8_0, quant.Q4_0} {
			t.Run(fmt.Sprintf("%s/%v", backend, typ), func(t *testing.T) {
				q, err := LoadAs(dir, backend, 64, typ)
				if err != nil {
					t.Fatal(err)
				}
				ref := dequantizedEngine(t, dir, backend, typ)
				want, err := ref.Forward(tokens, positions)
				if err != nil {
					t.Fatal(err)
				}
				got, err := q.Forward(tokens, positions)
				if err != nil {
					t.Fatal(err)
				}
				compareLogits(t, "full", got[0], want[0])
				// Cached decoding, one token at a time, against the same reference.
				s := q.NewSession(1)
				for i := range tokens[0] {
					l, err := s.Append([][]int{{tokens[0][i]}}, [][]int{{i}})
					if err != nil {
						t.Fatal(err)
					}
					compareLogits(t, fmt.Sprintf("cached token %d", i), l[0][:1], want[0][i:i+1])
				}
				// And the type is really held: the embedding table's values variable.
				v := q.Ctx.InAbsPath("/model/tok_embeddings").GetVariable("weight_" + typ.String())
				if v == nil {
					t.Fatalf("no %v variable for the embedding table", typ)
				}
			})
		}
	}
}

// dequantizedEngine loads dir as float32 and replaces every matrix that typ would quantize by
// quant.Dequantize(quant.Quantize(W)).
func dequantizedEngine(t *testing.T, dir, backendName string, typ quant.Type) *Engine {
	t.Helper()
	backend, err := NewBackend(backendName)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.New()
	m, err := models.LoadInto(dir, backend, ctx)
	if err != nil {
		t.Fatal(err)
	}
	probe := context.New()
	if err := layers.SetWeightType(probe, typ); err != nil {
		t.Fatal(err)
	}
	changed := 0
	for v := range ctx.IterVariablesInScope() {
		dims := v.Shape().Dimensions
		if v.Name() != "weight" || layers.MatrixType(probe, dims) == quant.F32 {
			continue
		}
		value, err := v.Value()
		if err != nil {
			t.Fatal(err)
		}
		data, err := tensors.CopyFlatData[float32](value)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := quant.Quantize(typ, data)
		if err != nil {
			t.Fatal(err)
		}
		if err := quant.Dequantize(typ, raw, data); err != nil {
			t.Fatal(err)
		}
		if err := v.SetValue(tensors.FromFlatDataAndDimensions(data, dims...)); err != nil {
			t.Fatal(err)
		}
		changed++
	}
	if changed == 0 {
		t.Fatalf("no matrix of %s is quantizable as %v", dir, typ)
	}
	e, err := New(backend, m, ctx, 64)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func compareLogits(t *testing.T, what string, got, want [][]float32) {
	t.Helper()
	for i := range want {
		for j := range want[i] {
			if d := math.Abs(float64(got[i][j] - want[i][j])); d > 2e-4*(1+math.Abs(float64(want[i][j]))) {
				t.Fatalf("%s: logit [%d][%d] = %g, the dequantized float32 model gives %g", what, i, j, got[i][j], want[i][j])
			}
		}
	}
}
