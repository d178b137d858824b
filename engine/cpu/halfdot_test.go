package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/posformer/posformer/engine/cpu/kernels"
	"github.com/posformer/posformer/layers/quant"
)

// The attention's products over a cache kept as float16 or bfloat16 (convert(cache) to float32
// read by the product alone) read the halves, and equal the float64 products of the rounded
// values computed in Go: decoding's q·k over keys stored [b, kvh, hd, slots] and p·v over
// values stored alike, a prefill's, and one large enough for the threads to split; where the
// widened cache is also an output nothing is rewritten and the result is the same.
func TestHalfOperandProducts(t *testing.T) {
	be := mustBackend(t, "")
	cases := []struct {
		name                   string
		b, kvh, rows, hd, keys int
		pv                     bool // p·v (contract the slots) rather than q·k (contract hd)
	}{
		{"decode q·k", 1, 2, 3, 16, 40, false},
		{"decode p·v", 1, 2, 3, 16, 40, true},
		{"prefill q·k", 2, 2, 48, 16, 64, false},
		{"prefill p·v", 2, 2, 48, 16, 64, true},
		{"threads q·k", 1, 4, 64, 16, 256, false},
		{"threads p·v", 1, 4, 64, 16, 256, true},
	}
	for _, p := range kernels.Paths() {
		t.Run(p, func(t *testing.T) {
			withKernels(t, p)
			r := rand.New(rand.NewPCG(9, 10))
			for _, half := range []dtypes.DType{dtypes.Float16, dtypes.BFloat16} {
				round := func(x float32) float64 { return float64(quant.F16ToF32(quant.F32ToF16(x))) }
				if half == dtypes.BFloat16 {
					round = func(x float32) float64 { return float64(math.Float32frombits(math.Float32bits(x) &^ 0xffff)) }
				}
				for _, c := range cases {
					for _, alsoOutput := range []bool{false, true} {
						t.Run(fmt.Sprintf("%s/%s/output=%v", half, c.name, alsoOutput), func(t *testing.T) {
							testHalfOperand(t, be, r, half, round, c.b, c.kvh, c.rows, c.hd, c.keys, c.pv, alsoOutput)
						})
					}
				}
			}
		})
	}
}

func testHalfOperand(t *testing.T, be *Backend, r *rand.Rand, half dtypes.DType, round func(float32) float64,
	b, kvh, rows, hd, keys int, pv, alsoOutput bool) {
	K, N := hd, keys // q·k: [rows, hd] · [hd, keys]
	if pv {
		K, N = keys, hd // p·v: [rows, keys] · [hd, keys]ᵀ
	}
	xf := make([]float32, b*kvh*rows*K)
	cf := make([]float32, b*kvh*hd*keys) // the cache, [b, kvh, hd, keys]
	for i := range xf {
		xf[i] = float32(r.NormFloat64())
	}
	for i := range cf {
		cf[i] = float32(r.NormFloat64() * 3)
	}
	x := tensors.FromFlatDataAndDimensions(xf, b, kvh, rows, K)
	cache := tensors.FromFlatDataAndDimensions(cf, b, kvh, hd, keys)
	before := halfDotsCompiled.Load()
	exe := MustNewExec(be, func(x, cache *Node) []*Node {
		wide := ConvertDType(ConvertDType(cache, half), dtypes.Float32)
		contract := 2 // q·k contracts hd, axis 2 of the cache
		if pv {
			contract = 3
		}
		out := DotGeneral(x, []int{3}, []int{0, 1}, wide, []int{contract}, []int{0, 1})
		if alsoOutput {
			return []*Node{out, wide}
		}
		return []*Node{out}
	})
	outs := exe.MustExec(x, cache)
	if got, want := halfDotsCompiled.Load()-before, map[bool]int64{false: 1, true: 0}[alsoOutput]; got != want {
		t.Errorf("rewritten %d products, want %d", got, want)
	}
	got := tensors.MustCopyFlatData[float32](outs[0])
	for bh := range b * kvh {
		for i := range rows {
			for j := range N {
				var want float64
				for k := range K {
					var w float32
					if pv {
						w = cf[(bh*hd+j)*keys+k]
					} else {
						w = cf[(bh*hd+k)*keys+j]
					}
					want += float64(xf[(bh*rows+i)*K+k]) * round(w)
				}
				g := float64(got[(bh*rows+i)*N+j])
				if math.Abs(g-want) > 1e-4*(1+math.Abs(want)) {
					t.Fatalf("head %d row %d col %d: got %g, want %g", bh, i, j, g, want)
				}
			}
		}
	}
}

// Keys written into a cache kept as float16 or bfloat16 (ScatterSum at (row, slot), as
// layers.CacheWrite does; Max and Min too): each element is the two halves combined in float32
// and rounded back as ConvertDType rounds; an empty slot (+0) takes the update's bits as they
// are, -0 included only where the sum of +0 and -0 is +0.
func TestHalfScatter(t *testing.T) {
	be := mustBackend(t, "")
	const b, kvh, hd, slots, s = 2, 3, 4, 10, 5
	r := rand.New(rand.NewPCG(11, 12))
	for _, half := range []dtypes.DType{dtypes.Float16, dtypes.BFloat16} {
		round := func(x float32) float32 { return quant.F16ToF32(quant.F32ToF16(x)) }
		if half == dtypes.BFloat16 {
			round = func(x float32) float32 { return math.Float32frombits(math.Float32bits(x) &^ 0xffff) }
		}
		for _, op := range []string{"sum", "max", "min"} {
			opf := make([]float32, b*kvh*hd*slots)
			for i := range opf {
				if i%3 != 0 { // a third of the slots empty
					opf[i] = float32(r.NormFloat64())
				}
			}
			up := make([]float32, b*kvh*s*hd)
			for i := range up {
				up[i] = float32(r.NormFloat64())
			}
			up[7] = float32(math.Copysign(0, -1))
			idx := make([]int32, b*s*2)
			for row := range b {
				for i, slot := range r.Perm(slots)[:s] {
					idx[(row*s+i)*2], idx[(row*s+i)*2+1] = int32(row), int32(slot)
				}
			}
			opf[3*slots+int(idx[3])] = 0 // update 7 (-0: row 0, head 0, token 1, element 3) lands in an empty slot
			exe := MustNewExec(be, func(o, i, u *Node) *Node {
				f := map[string]func(operand, indices, updates *Node, indexVectorAxis int, updateWindowAxes,
					insertedWindowAxes, scatterAxesToOperandAxes []int, indicesAreSorted, uniqueIndices bool) *Node{
					"sum": BackendScatterSum, "max": BackendScatterMax, "min": BackendScatterMin}[op]
				w := f(ConvertDType(o, half), i, ConvertDType(u, half), 2, []int{1, 3}, []int{0, 3}, []int{0, 3}, false, false)
				return ConvertDType(w, dtypes.Float32)
			})
			got := tensors.MustCopyFlatData[float32](exe.MustExec(
				tensors.FromFlatDataAndDimensions(opf, b, kvh, hd, slots),
				tensors.FromFlatDataAndDimensions(idx, b, s, 2),
				tensors.FromFlatDataAndDimensions(up, b, kvh, s, hd))[0])
			want := make([]float32, len(opf))
			for i, v := range opf {
				want[i] = round(v)
			}
			for row := range b {
				for i := range s {
					slot := int(idx[(row*s+i)*2+1])
					for h := range kvh {
						for d := range hd {
							o := ((row*kvh+h)*hd+d)*slots + slot
							a, u := want[o], round(up[((row*kvh+h)*s+i)*hd+d])
							switch op {
							case "sum":
								want[o] = round(a + u)
							case "max":
								want[o] = round(max(a, u))
							case "min":
								want[o] = round(min(a, u))
							}
						}
					}
				}
			}
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s %s: element %d is %g, want %g", half, op, i, got[i], want[i])
				}
			}
		}
	}
}
