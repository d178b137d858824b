package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/posformer/posformer/engine/cpu/kernels"
	"github.com/posformer/posformer/layers"
	"github.com/posformer/posformer/layers/quant"
	"github.com/x448/float16"
)

// groupedParts stores wf [n, k] as typ in row groups (layers.GroupedVars): the tensors of its
// parts, its parts in rows (quantParts), and the dequantized values.
func groupedParts(t testing.TB, typ quant.Type, wf []float32, n, k int) (grouped, rows []*tensors.Tensor, deq []float32) {
	rows, deq = quantParts(t, typ, wf, n, k)
	vb := typ.BlockBytes() - 2
	q, d := make([]byte, n*k/32*vb), make([]float32, n*k/32)
	rows[0].ConstBytes(func(b []byte) { copy(q, b) })
	copy(d, tensors.MustCopyFlatData[float32](rows[1]))
	gq, gd := make([]byte, len(q)), make([]uint16, len(d))
	if err := quant.Group(typ, q, d, n, k/32, gq, gd); err != nil {
		t.Fatal(err)
	}
	halves := make([]float16.Float16, len(gd))
	for i, h := range gd {
		halves[i] = float16.Float16(h)
	}
	_, _, dims := layers.GroupedVars(typ, n, k)
	var qt *tensors.Tensor
	if typ == quant.Q8_0 {
		q8 := make([]int8, len(gq))
		for i, v := range gq {
			q8[i] = int8(v)
		}
		qt = tensors.FromFlatDataAndDimensions(q8, dims[0]...)
	} else {
		qt = tensors.FromFlatDataAndDimensions(gq, dims[0]...)
	}
	return []*tensors.Tensor{qt, tensors.FromFlatDataAndDimensions(halves, dims[1]...)}, rows, deq
}

// A product with a matrix in row groups is rewritten to read the groups (none of the
// transposes that move them back into rows runs) on every path: with int8 x on the group
// kernels (four rows of x at a time when there are four), with float32 x or under a kernel set
// without them on rows moved out of their groups a task at a time; one row of x and many, on
// one thread and two, under every kernel set.
// With float32 x it equals the float64 product with the dequantized matrix; with int8 x the same
// product with the matrix in rows (both round x alike and sum each block exactly: they differ
// by the order of float additions, bounded by 1e-5 of Σ|terms|).
func TestGroupedProduct(t *testing.T) {
	for _, p := range kernels.Paths() {
		for _, config := range []string{"actq8=false", "actq8=true", "threads=2,actq8=true"} {
			t.Run(p+"/"+config, func(t *testing.T) {
				withKernels(t, p)
				be := mustBackend(t, config)
				r := rand.New(rand.NewPCG(17, 18))
				const N = 96
				for _, K := range []int{96, 288} {
					wf := make([]float32, N*K)
					for i := range wf {
						wf[i] = float32(r.NormFloat64())
					}
					for _, typ := range []quant.Type{quant.Q8_0, quant.Q4_0} {
						grouped, rows, deq := groupedParts(t, typ, wf, N, K)
						for _, M := range []int{1, 3, 4, 7, 40} {
							t.Run(fmt.Sprintf("%v/k=%d/m=%d", typ, K, M), func(t *testing.T) {
								xf := make([]float32, M*K)
								for i := range xf {
									xf[i] = float32(r.NormFloat64())
								}
								product := func(parts []*tensors.Tensor) []float32 {
									exe := MustNewExec(be, func(in []*Node) *Node {
										return layers.QuantizedWeight(typ, N, K, in[1:]...).MulT(in[0])
									})
									x := tensors.FromFlatDataAndDimensions(xf, M, K)
									return tensors.MustCopyFlatData[float32](exe.MustExec(append([]any{x}, anySlice(parts)...)...)[0])
								}
								before := groupedDotsCompiled.Load()
								got := product(grouped)
								if n := groupedDotsCompiled.Load() - before; n != 1 {
									t.Fatalf("%d products rewritten to read row groups, want 1", n)
								}
								inRows := product(rows)
								for i := range M {
									for j := range N {
										var want, mag float64
										for k := range K {
											v := float64(xf[i*K+k]) * float64(deq[j*K+k])
											want, mag = want+v, mag+math.Abs(v)
										}
										g := float64(got[i*N+j])
										if config == "actq8=false" {
											if math.Abs(g-want) > 1e-4*(1+math.Abs(want)) {
												t.Fatalf("y[%d][%d] = %g, want %g", i, j, g, want)
											}
										} else if math.Abs(g-float64(inRows[i*N+j])) > 1e-5*mag {
											t.Fatalf("y[%d][%d] = %g in row groups, %g in rows (Σ|terms| %g)", i, j, g, inRows[i*N+j], mag)
										}
									}
								}
							})
						}
					}
				}
			})
		}
	}
}

// Products that share x as siblings (one step), some matrices in row groups and some in rows,
// each get the form of x its kernels read, for one row of x and for many: the same values as
// each product alone.
func TestGroupedSiblings(t *testing.T) {
	for _, config := range []string{"actq8=true", "threads=2,actq8=true"} {
		for _, M := range []int{1, 40} {
			t.Run(fmt.Sprintf("%s/m=%d", config, M), func(t *testing.T) {
				testGroupedSiblings(t, mustBackend(t, config), M)
			})
		}
	}
}

func testGroupedSiblings(t *testing.T, be *Backend, M int) {
	r := rand.New(rand.NewPCG(19, 20))
	const N, K = 64, 128
	xf := make([]float32, M*K)
	for i := range xf {
		xf[i] = float32(r.NormFloat64())
	}
	args := []any{tensors.FromFlatDataAndDimensions(xf, M, K)}
	typs := []quant.Type{quant.Q4_0, quant.Q4_0, quant.Q8_0, quant.Q8_0}
	for i, typ := range typs {
		wf := make([]float32, N*K)
		for j := range wf {
			wf[j] = float32(r.NormFloat64())
		}
		grouped, rows, _ := groupedParts(t, typ, wf, N, K)
		if i%2 == 1 {
			grouped = rows // one of each type in rows
		}
		args = append(args, anySlice(grouped)...)
	}
	exe := MustNewExec(be, func(in []*Node) []*Node {
		var outs []*Node
		for i, typ := range typs {
			outs = append(outs, layers.QuantizedWeight(typ, N, K, in[1+2*i:3+2*i]...).MulT(in[0]))
		}
		return outs
	})
	before := siblingDotMembers.Load()
	together := exe.MustExec(args...)
	if n := siblingDotMembers.Load() - before; n != int64(len(typs)) {
		t.Fatalf("%d products lowered as siblings, want %d", n, len(typs))
	}
	for i, typ := range typs {
		alone := MustNewExec(be, func(x, q, d *Node) *Node {
			return layers.QuantizedWeight(typ, N, K, q, d).MulT(x)
		}).MustExec(args[0], args[1+2*i], args[2+2*i])[0]
		a, b := tensors.MustCopyFlatData[float32](together[i]), tensors.MustCopyFlatData[float32](alone)
		for j := range a {
			if math.Float32bits(a[j]) != math.Float32bits(b[j]) {
				t.Fatalf("product %d, y[%d] = %g among siblings, %g alone", i, j, a[j], b[j])
			}
		}
	}
}

// Rows of a matrix in row groups (an embedding lookup) are its dequantized rows, exactly, and so
// is the whole matrix when the graph reads it as such (the ops that move groups back into rows,
// run one by one).
func TestGroupedRows(t *testing.T) {
	be := mustBackend(t, "")
	r := rand.New(rand.NewPCG(23, 24))
	const N, K = 48, 64
	ids := []int32{0, 17, 47, 16, 31, 5}
	for _, typ := range []quant.Type{quant.Q8_0, quant.Q4_0} {
		wf := make([]float32, N*K)
		for i := range wf {
			wf[i] = float32(r.NormFloat64())
		}
		grouped, _, deq := groupedParts(t, typ, wf, N, K)
		outs := MustNewExec(be, func(q, d, at *Node) []*Node {
			w := layers.QuantizedWeight(typ, N, K, q, d)
			return []*Node{w.Rows(at), w.Float()}
		}).MustExec(grouped[0], grouped[1], tensors.FromFlatDataAndDimensions(ids, 2, 3))
		rows, whole := tensors.MustCopyFlatData[float32](outs[0]), tensors.MustCopyFlatData[float32](outs[1])
		for i, id := range ids {
			for k := range K {
				if rows[i*K+k] != deq[int(id)*K+k] {
					t.Fatalf("%v: row %d [%d] = %g, want %g", typ, id, k, rows[i*K+k], deq[int(id)*K+k])
				}
			}
		}
		for i := range deq {
			if whole[i] != deq[i] {
				t.Fatalf("%v: W[%d] = %g, want %g", typ, i, whole[i], deq[i])
			}
		}
	}
}
