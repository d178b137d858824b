package cpu

// The backend option actq8: products with Q8_0 and Q4_0 weights that quantize x to int8
// blocks (kernels/vnni.go), end to end through a compiled graph.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/posformer/posformer/engine/cpu/kernels"
	"github.com/posformer/posformer/layers"
	"github.com/posformer/posformer/layers/quant"
)

// With actq8=true, x·Wᵀ for Q8_0 and Q4_0 weights equals the int8 product ggml's formats define
// (actCase.reference) for every row, with a few rows of x (decoding) and many (prefill, the
// integer GEMM, whose rows go by fours and a rest, quantized by the pool's threads when there
// are many); for bf16 it is the exact product, as without the option. Under every kernel set.
func TestActQ8Product(t *testing.T) {
	be := mustBackend(t, "actq8=true")
	r := rand.New(rand.NewPCG(9, 10))
	for _, p := range kernels.Paths() {
		t.Run(p, func(t *testing.T) {
			withKernels(t, p)
			const N = 37
			for _, K := range []int{96, 128} {
				wf := make([]float32, N*K)
				for i := range wf {
					wf[i] = float32(r.NormFloat64())
				}
				for _, typ := range []quant.Type{quant.BF16, quant.Q8_0, quant.Q4_0} {
					parts, deq := quantParts(t, typ, wf, N, K)
					for _, M := range []int{1, 3, 4, 7, 13, 70} { // 70: x quantized by tasks of 32 rows
						t.Run(fmt.Sprintf("%v/k=%d/m=%d", typ, K, M), func(t *testing.T) {
							xf := make([]float32, M*K)
							for i := range xf {
								xf[i] = float32(r.NormFloat64())
							}
							if M >= 3 {
								clear(xf[(M-1)*K:]) // a row of zeros among others
							}
							exe := MustNewExec(be, func(in []*Node) []*Node {
								return []*Node{layers.QuantizedWeight(typ, N, K, in[1:]...).MulT(in[0])}
							})
							args := append([]any{tensors.FromFlatDataAndDimensions(xf, M, K)}, anySlice(parts)...)
							got := tensors.MustCopyFlatData[float32](exe.MustExec(args...)[0])
							int8Path := typ != quant.BF16
							for i := range M {
								want, mag := make([]float64, N), make([]float64, N)
								if int8Path {
									c := actCase{typ: typ, k: K, rows: N, x: xf[i*K : i*K+K]}
									c.q, c.d = splitParts(t, parts)
									want, mag = c.reference()
								} else {
									for j := range N {
										for p := range K {
											v := float64(xf[i*K+p]) * float64(deq[j*K+p])
											want[j] += v
											mag[j] += math.Abs(v)
										}
									}
								}
								for j := range N {
									if d := math.Abs(float64(got[i*N+j]) - want[j]); d > 1e-5*mag[j] || math.IsNaN(float64(got[i*N+j])) {
										t.Fatalf("y[%d][%d] = %g, want %g (int8 path %v)", i, j, got[i*N+j], want[j], int8Path)
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

// splitParts returns the stored values and scales of a Q8_0 or Q4_0 weight's tensors as bytes.
func splitParts(t *testing.T, parts []*tensors.Tensor) ([]byte, []float32) {
	t.Helper()
	var q []byte
	parts[0].ConstBytes(func(b []byte) { q = append([]byte(nil), b...) })
	return q, tensors.MustCopyFlatData[float32](parts[1])
}

// The option parses and defaults to on exactly where the int8 kernels are assembly; the summary
// says "int8 activations" once a product takes them, not before; a bad value says which values
// are valid.
func TestActQ8Option(t *testing.T) {
	if be := mustBackend(t, ""); be.actq8 != kernels.IntAsm() {
		t.Errorf("default actq8 = %v, want %v (int8 kernels in assembly: %v)", be.actq8, kernels.IntAsm(), kernels.IntAsm())
	}
	be := mustBackend(t, "threads=1,actq8=true")
	if !be.actq8 {
		t.Errorf("actq8=true left the option off")
	}
	if s := be.Summary(); strings.Contains(s, "int8") {
		t.Errorf("Summary() = %q before any quantized product", s)
	}
	// decode runs one Q8_0 product of one row on a backend.
	decode := func(be *Backend) {
		exe := MustNewExec(be, func(in []*Node) []*Node {
			return []*Node{layers.QuantizedWeight(quant.Q8_0, 4, 32, in[1:]...).MulT(in[0])}
		})
		parts, _ := quantParts(t, quant.Q8_0, make([]float32, 4*32), 4, 32)
		exe.MustExec(append([]any{tensors.FromFlatDataAndDimensions(make([]float32, 32), 1, 32)}, anySlice(parts)...)...)
	}
	decode(be)
	if s := be.Summary(); !strings.Contains(s, "int8 activations") {
		t.Errorf("Summary() = %q after a Q8_0 product, want it to say int8 activations", s)
	}
	off := mustBackend(t, "actq8=false")
	decode(off)
	if s := off.Summary(); strings.Contains(s, "int8") {
		t.Errorf("Summary() = %q with actq8=false", s)
	}
	if _, err := New("actq8=maybe"); err == nil || !strings.Contains(err.Error(), "actq8") || !strings.Contains(err.Error(), "true or false") {
		t.Errorf(`New("actq8=maybe") = %v, want an error naming actq8 and its values`, err)
	}
	if _, err := New("act8=true"); err == nil || !strings.Contains(err.Error(), "actq8=true|false") {
		t.Errorf(`New("act8=true") = %v, want the valid options listed`, err)
	}
}

// withKernels selects a kernel set for the rest of the test.
func withKernels(t testing.TB, p string) {
	t.Helper()
	saved := kernels.Path()
	if err := kernels.SetPath(p); err != nil {
		t.Skipf("kernel set %s: %v", p, err)
	}
	t.Cleanup(func() { kernels.SetPath(saved) })
}

// actCase and its reference are kernels/vnni_test.go's, for the products of TestActQ8Product:
// what ggml's formats say x·Wᵀ is, computed from layers/quant alone.
// actCase is one product of the int8-activation tests: weights in posformer's split layout,
// one row of x, and what ggml's formats say the product is.
type actCase struct {
	typ  quant.Type
	k    int
	q    []byte    // rows·k int8 values (Q8_0) or rows·k/2 nibble bytes (Q4_0)
	d    []float32 // rows·k/32 scales, followed by NaN (a read past the end poisons a result)
	rows int
	x    []float32
}

// reference is the product the way ggml's formats define it, from layers/quant alone: x stored
// as Q8_0 and read back (d_x·q_x per value), each weight d_w·q_w, summed in float64. It also
// returns Σ|terms| per row, the scale of float32 rounding.
func (c actCase) reference() (want, mag []float64) {
	raw, err := quant.Quantize(quant.Q8_0, c.x)
	if err != nil {
		panic(err)
	}
	xd := make([]float32, c.k)
	if err := quant.Dequantize(quant.Q8_0, raw, xd); err != nil {
		panic(err)
	}
	nb := c.k / 32
	want, mag = make([]float64, c.rows), make([]float64, c.rows)
	for r := range c.rows {
		for b := range nb {
			for j := range 32 {
				var qw float64
				if c.typ == quant.Q8_0 {
					qw = float64(int8(c.q[r*c.k+32*b+j]))
				} else {
					v := c.q[r*c.k/2+16*b+j%16]
					if j >= 16 {
						v >>= 4
					}
					qw = float64(v&15) - 8
				}
				t := float64(xd[32*b+j]) * float64(c.d[r*nb+b]) * qw
				want[r] += t
				mag[r] += math.Abs(t)
			}
		}
	}
	return want, mag
}

// BenchmarkQuantProductPrefill: x·Wᵀ through a compiled graph at prefill's shapes (the 110M
// shape's attention and feed-forward products), Q8_0 and Q4_0 weights with int8 activations
// (the integer GEMM) and without (actq8=false: float32 panels), and float32 weights; one
// thread unless -cpu says otherwise. GFLOP/s counts a multiply-add as two.
//
//	go test ./engine/cpu -run '^$' -bench QuantProductPrefill -cpu 1,2
func BenchmarkQuantProductPrefill(b *testing.B) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, s := range [][3]int{{128, 768, 768}, {512, 2048, 768}} {
		M, N, K := s[0], s[1], s[2]
		wf := make([]float32, N*K)
		for i := range wf {
			wf[i] = float32(r.NormFloat64())
		}
		xf := make([]float32, M*K)
		for i := range xf {
			xf[i] = float32(r.NormFloat64())
		}
		for _, c := range []struct {
			typ   quant.Type
			actq8 bool
		}{{quant.F32, false}, {quant.Q8_0, false}, {quant.Q8_0, true}, {quant.Q4_0, false}, {quant.Q4_0, true}} {
			b.Run(fmt.Sprintf("%dx%dx%d/%v/actq8=%v", M, N, K, c.typ, c.actq8), func(b *testing.B) {
				be, err := New(fmt.Sprintf("threads=%d,actq8=%v", runtime.GOMAXPROCS(0), c.actq8))
				if err != nil {
					b.Fatal(err)
				}
				defer be.Finalize()
				var args []any
				var exe *Exec
				if c.typ == quant.F32 {
					exe = MustNewExec(be, func(x, w *Node) *Node { return DotGeneral(x, []int{1}, nil, w, []int{1}, nil) })
					args = []any{tensors.FromFlatDataAndDimensions(xf, M, K), tensors.FromFlatDataAndDimensions(wf, N, K)}
				} else {
					parts, _ := quantParts(b, c.typ, wf, N, K)
					exe = MustNewExec(be, func(in []*Node) []*Node {
						return []*Node{layers.QuantizedWeight(c.typ, N, K, in[1:]...).MulT(in[0])}
					})
					args = append([]any{tensors.FromFlatDataAndDimensions(xf, M, K)}, anySlice(parts)...)
				}
				exe.MustExec(args...)
				for b.Loop() {
					exe.MustExec(args...)
				}
				b.ReportMetric(2*float64(M*N*K)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
