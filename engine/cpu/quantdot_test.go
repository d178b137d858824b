package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/dtypes/bfloat16"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/posformer/posformer/engine/cpu/kernels"
	"github.com/posformer/posformer/layers"
	"github.com/posformer/posformer/layers/quant"
)

// x·Wᵀ with W held as bf16, Q8_0 or Q4_0 (the layers' dequantizing graph) is rewritten into one
// product over the stored bytes, and equals the float64 product with the dequantized matrix
// computed in Go, for decoding-sized and prefill-sized x, with and without leading axes; when
// the dequantized matrix is also an output, nothing is rewritten and the result is the same.
// Under every kernel set the CPU has (each runs its own quantized kernels).
func TestQuantizedProduct(t *testing.T) {
	be := mustBackend(t, "actq8=false")
	for _, p := range kernels.Paths() {
		t.Run(p, func(t *testing.T) {
			withKernels(t, p)
			r := rand.New(rand.NewPCG(7, 8))
			const N = 100
			for _, K := range []int{96, 160, 40} { // rows shorter and longer than the no-packing path's minimum; bf16 with a tail
				testQuantizedProduct(t, be, r, N, K)
			}
		})
	}
}

func testQuantizedProduct(t *testing.T, be *Backend, r *rand.Rand, N, K int) {
	wf := make([]float32, N*K)
	for i := range wf {
		wf[i] = float32(r.NormFloat64())
	}
	for _, typ := range []quant.Type{quant.BF16, quant.Q8_0, quant.Q4_0} {
		if K%typ.BlockSize() != 0 {
			continue
		}
		parts, deq := quantParts(t, typ, wf, N, K)
		for _, lead := range [][]int{{1}, {3}, {7}, {40}, {2, 5}} {
			for _, alsoOutput := range []bool{false, true} {
				name := fmt.Sprintf("%v/k=%d/x%v/output=%v", typ, K, lead, alsoOutput)
				t.Run(name, func(t *testing.T) {
					M := 1
					for _, d := range lead {
						M *= d
					}
					xf := make([]float32, M*K)
					for i := range xf {
						xf[i] = float32(r.NormFloat64())
					}
					x := tensors.FromFlatDataAndDimensions(xf, append(append([]int(nil), lead...), K)...)
					before := quantDotsCompiled.Load()
					exe := MustNewExec(be, func(in []*Node) []*Node {
						x, w := in[0], layers.QuantizedWeight(typ, N, K, in[1:]...)
						if alsoOutput {
							wf := w.Float()
							return []*Node{DotGeneral(x, []int{x.Rank() - 1}, nil, wf, []int{1}, nil), wf}
						}
						return []*Node{w.MulT(x)}
					})
					args := append([]any{x}, anySlice(parts)...)
					outs := exe.MustExec(args...)
					rewritten := quantDotsCompiled.Load() - before
					if want := int64(1); alsoOutput {
						if rewritten != 0 {
							t.Errorf("rewritten %d products although W is an output", rewritten)
						}
					} else if rewritten != want {
						t.Errorf("rewritten %d products, want %d", rewritten, want)
					}
					got := tensors.MustCopyFlatData[float32](outs[0])
					for i := range M {
						for j := range N {
							var want float64
							for p := range K {
								want += float64(xf[i*K+p]) * float64(deq[j*K+p])
							}
							if d := math.Abs(float64(got[i*N+j]) - want); d > 1e-4*(1+math.Abs(want)) {
								t.Fatalf("y[%d][%d] = %g, want %g", i, j, got[i*N+j], want)
							}
						}
					}
				})
			}
		}
	}
}

// quantParts stores wf [n, k] as typ: the tensors of its parts, and the dequantized values.
func quantParts(t testing.TB, typ quant.Type, wf []float32, n, k int) ([]*tensors.Tensor, []float32) {
	raw, err := quant.Quantize(typ, wf)
	if err != nil {
		t.Fatal(err)
	}
	deq := make([]float32, len(wf))
	if err := quant.Dequantize(typ, raw, deq); err != nil {
		t.Fatal(err)
	}
	switch typ {
	case quant.BF16:
		w := make([]bfloat16.BFloat16, len(wf))
		for i := range w {
			w[i] = bfloat16.BFloat16(uint16(raw[2*i]) | uint16(raw[2*i+1])<<8)
		}
		return []*tensors.Tensor{tensors.FromFlatDataAndDimensions(w, n, k)}, deq
	}
	qb := typ.BlockBytes() - 2
	q, d := make([]byte, n*k/32*qb), make([]float32, n*k/32)
	if err := quant.Split(typ, raw, q, d); err != nil {
		t.Fatal(err)
	}
	dt := tensors.FromFlatDataAndDimensions(d, n, k/32)
	if typ == quant.Q8_0 {
		q8 := make([]int8, len(q))
		for i, v := range q {
			q8[i] = int8(v)
		}
		return []*tensors.Tensor{tensors.FromFlatDataAndDimensions(q8, n, k), dt}, deq
	}
	qt := tensors.FromShape(shapes.Make(dtypes.Uint8, n, k/2))
	qt.MutableBytes(func(b []byte) { copy(b, q) })
	return []*tensors.Tensor{qt, dt}, deq
}

func anySlice(ts []*tensors.Tensor) []any {
	out := make([]any, len(ts))
	for i, t := range ts {
		out[i] = t
	}
	return out
}
