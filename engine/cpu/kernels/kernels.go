// Package kernels holds the float32 compute kernels of posformer's CPU backend: dot products,
// matrix-vector rows, a blocked GEMM and a few vector helpers. Each has a portable Go version
// and, on amd64, assembly versions for AVX-512 and for AVX2+FMA; the best set the CPU supports
// is chosen at start-up (golang.org/x/sys/cpu), $POSFORMER_KERNELS or SetPath can force a
// lower one (the tests run every set the machine has against the portable one).
package kernels

import (
	"fmt"
	"math"
	"os"
	"slices"
)

// Kernel sets, best first.
const (
	AVX512  = "avx512"
	AVX2    = "avx2"
	Generic = "generic"
)

var path = Generic

func init() {
	path = best()
	if want := os.Getenv("POSFORMER_KERNELS"); want != "" {
		if err := SetPath(want); err != nil {
			fmt.Fprintf(os.Stderr, "posformer: $POSFORMER_KERNELS: %v; using %s\n", err, path)
		}
	}
}

// Path is the kernel set in use: "avx512", "avx2" or "generic".
func Path() string { return path }

// Paths lists the kernel sets this CPU can run, best first.
func Paths() []string {
	var out []string
	for _, p := range []string{AVX512, AVX2, Generic} {
		if supported(p) {
			out = append(out, p)
		}
	}
	return out
}

// SetPath forces a kernel set; an error if the name is unknown or the CPU lacks it.
func SetPath(name string) error {
	if !slices.Contains([]string{AVX512, AVX2, Generic}, name) {
		return fmt.Errorf("unknown kernel set %q (valid: avx512, avx2, generic)", name)
	}
	if !supported(name) {
		return fmt.Errorf("this CPU cannot run the %s kernels (it can: %v)", name, Paths())
	}
	path = name
	return nil
}

func need(ok bool, what string) {
	if !ok {
		panic("kernels: " + what)
	}
}

// Dot returns Σ a[i]·b[i].
func Dot(a, b []float32) float32 {
	need(len(a) == len(b), "Dot of slices of different lengths")
	if len(a) == 0 {
		return 0
	}
	return dot(a, b)
}

func dotGo(a, b []float32) float32 {
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// DotRows is a matrix-vector product with the matrix stored [rows, k] (PyTorch's [out, in]):
// y[r] = Σ_j w[r·ldw+j]·x[j] for r < len(y), j < len(x).
func DotRows(w []float32, ldw int, x []float32, y []float32) {
	if len(y) == 0 {
		return
	}
	need(ldw >= len(x) && len(w) >= (len(y)-1)*ldw+len(x), "DotRows: matrix too short")
	if len(x) == 0 {
		clear(y)
		return
	}
	dotRows(w, ldw, x, y)
}

func dotRowsGo(w []float32, ldw int, x []float32, y []float32) {
	k := len(x)
	if k == 8 {
		// Attention heads of 8 (small models): scores of every cached key, unrolled.
		x0, x1, x2, x3, x4, x5, x6, x7 := x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7]
		for r := range y {
			row := w[r*ldw : r*ldw+8 : r*ldw+8]
			y[r] = (row[0]*x0 + row[1]*x1 + row[2]*x2 + row[3]*x3) + (row[4]*x4 + row[5]*x5 + row[6]*x6 + row[7]*x7)
		}
		return
	}
	for r := range y {
		y[r] = dotGo(w[r*ldw:r*ldw+k], x)
	}
}

// MatMulNT is y[i·ldy+j] = Σ_p x[i·ldx+p]·w[j·ldw+p] for i < m, j < n, p < k: a few rows of x
// against a matrix stored [n, k].
func MatMulNT(m, n, k int, x []float32, ldx int, w []float32, ldw int, y []float32, ldy int) {
	if m == 0 || n == 0 {
		return
	}
	need(ldx >= k && ldw >= k && ldy >= n, "MatMulNT: leading dimension too small")
	need(len(x) >= (m-1)*ldx+k && len(w) >= (n-1)*ldw+k && len(y) >= (m-1)*ldy+n, "MatMulNT: slice too short")
	for i := range m {
		DotRows(w, ldw, x[i*ldx:i*ldx+k], y[i*ldy:i*ldy+n])
	}
}

// Add, Sub, Mul, Div: out[i] = a[i] op b[i] (out may alias a or b).
func Add(a, b, out []float32) {
	need(len(a) >= len(out) && len(b) >= len(out), "Add: operand too short")
	for i := range out {
		out[i] = a[i] + b[i]
	}
}

func Sub(a, b, out []float32) {
	need(len(a) >= len(out) && len(b) >= len(out), "Sub: operand too short")
	for i := range out {
		out[i] = a[i] - b[i]
	}
}

func Mul(a, b, out []float32) {
	need(len(a) >= len(out) && len(b) >= len(out), "Mul: operand too short")
	for i := range out {
		out[i] = a[i] * b[i]
	}
}

func Div(a, b, out []float32) {
	need(len(a) >= len(out) && len(b) >= len(out), "Div: operand too short")
	for i := range out {
		out[i] = a[i] / b[i]
	}
}

// AddScalar and MulScalar: out[i] = a[i] op s.
func AddScalar(a []float32, s float32, out []float32) {
	need(len(a) >= len(out), "AddScalar: operand too short")
	for i := range out {
		out[i] = a[i] + s
	}
}

func MulScalar(a []float32, s float32, out []float32) {
	need(len(a) >= len(out), "MulScalar: operand too short")
	for i := range out {
		out[i] = a[i] * s
	}
}

// Exp: out[i] = e^a[i], within 2e-7 relative of the exact value (exp(-Inf) = 0, NaN stays NaN).
func Exp(a, out []float32) {
	need(len(a) >= len(out), "Exp: operand too short")
	exp(a, out)
}

func expGo(a, out []float32) {
	for i := range out {
		out[i] = float32(math.Exp(float64(a[i])))
	}
}

// Sum returns Σ a[i].
func Sum(a []float32) float32 {
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i]
		s1 += a[i+1]
		s2 += a[i+2]
		s3 += a[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// Max returns the largest a[i]; NaN if any is NaN; -Inf for an empty slice.
func Max(a []float32) float32 { return maxOf(a) }

// maxGo uses Go's max, which propagates NaN.
func maxGo(a []float32) float32 {
	m0, m1 := float32(math.Inf(-1)), float32(math.Inf(-1))
	i := 0
	for ; i+2 <= len(a); i += 2 {
		m0 = max(m0, a[i])
		m1 = max(m1, a[i+1])
	}
	for ; i < len(a); i++ {
		m0 = max(m0, a[i])
	}
	return max(m0, m1)
}
