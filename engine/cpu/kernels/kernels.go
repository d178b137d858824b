// Package kernels holds the float32 compute kernels of posformer's CPU backend: dot products,
// matrix-vector rows, small and blocked matrix products, elementwise arithmetic, exp and
// reductions. Every kernel exists three times: AVX-512 and AVX2+FMA assembly (amd64, generated
// by internal/gen with avo) and portable Go (the only one elsewhere). The best set the CPU has
// is chosen at start-up; $POSFORMER_KERNELS or SetPath can force another. SgemmBF16 (bf16.go)
// is Sgemm with bfloat16 operands, on AVX512_BF16 where the CPU has it. The products with
// quantized weights (quant.go: BF16, Q8_0 and Q4_0 rows against float32 x; vnni.go: against x
// quantized to int8) are hand-written assembly with a portable Go path, chosen by the same
// kernel set.
//
// This file holds the exported API: it checks every length and stride (a bad call panics with
// a message instead of reading or writing out of bounds) and hands the work to the selected set.
// All kernels are single-threaded and safe to call from several goroutines at once.
package kernels

//go:generate go run -C internal/gen . -out ../../kernels_amd64.s -stubs ../../stubs_amd64.go -pkg kernels

import (
	"fmt"
	"os"
	"sync/atomic"
)

// Kernel sets, best first.
const (
	AVX512  = "avx512"
	AVX2    = "avx2"
	Generic = "generic"
)

// Kernel set levels, as stored in level.
const (
	lvGeneric int32 = iota
	lvAVX2
	lvAVX512
)

var names = [...]string{lvGeneric: Generic, lvAVX2: AVX2, lvAVX512: AVX512}

// level is the kernel set in use (read by every call, so atomic: SetPath is race-free).
var level atomic.Int32

func init() {
	level.Store(bestLevel())
	if want := os.Getenv("POSFORMER_KERNELS"); want != "" {
		if err := SetPath(want); err != nil {
			fmt.Fprintf(os.Stderr, "posformer: $POSFORMER_KERNELS: %v; using %s\n", err, Path())
		}
	}
}

func bestLevel() int32 {
	for lv := lvAVX512; lv > lvGeneric; lv-- {
		if supported(lv) {
			return lv
		}
	}
	return lvGeneric
}

// Path is the kernel set in use: "avx512", "avx2" or "generic".
func Path() string { return names[level.Load()] }

// Paths lists the kernel sets this CPU can run, best first.
func Paths() []string {
	var out []string
	for lv := lvAVX512; lv >= lvGeneric; lv-- {
		if supported(lv) {
			out = append(out, names[lv])
		}
	}
	return out
}

// SetPath forces a kernel set ("generic", "avx2", "avx512"); an error if the name is unknown
// or the CPU lacks the instructions. Calls already running finish on the set they started with.
func SetPath(name string) error {
	for lv, n := range names {
		if n != name {
			continue
		}
		if !supported(int32(lv)) {
			return fmt.Errorf("this CPU cannot run the %s kernels (it can: %v)", name, Paths())
		}
		level.Store(int32(lv))
		return nil
	}
	return fmt.Errorf("unknown kernel set %q (valid: avx512, avx2, generic)", name)
}

// fail panics with a message. Callers test their condition first (if !ok { fail(...) }):
// passing the arguments to a checking function would box them on every call.
func fail(format string, args ...any) {
	panic(fmt.Sprintf("kernels: "+format, args...))
}

// span reports whether a matrix of rows rows of cols used elements, ld apart, fits in n
// elements: (rows-1)·ld + cols <= n, ld >= cols when rows > 1, all without overflow.
func span(n, rows, cols, ld int) bool {
	if rows < 0 || cols < 0 || ld < 0 {
		return false
	}
	if rows == 0 || cols == 0 {
		return true
	}
	if rows > 1 && (ld < cols || ld > (n-cols)/(rows-1)) {
		return false
	}
	return cols <= n
}

// DotRows is a matrix-vector product with the matrix stored [rows, k] (PyTorch's weight
// layout [out, in]): y[r] = Σ_j w[r·ldw+j]·x[j] for r < len(y), j < len(x). Several rows go
// through each pass over x (8 on amd64), so x is read once per group of rows.
func DotRows(w []float32, ldw int, x []float32, y []float32) {
	rows, k := len(y), len(x)
	if !(span(len(w), rows, k, ldw)) {
		fail("DotRows: %d rows of %d with stride %d do not fit in %d", rows, k, ldw, len(w))
	}
	if rows == 0 {
		return
	}
	if k == 0 {
		clear(y)
		return
	}
	matMulNT(1, rows, k, x, k, w, ldw, y, rows)
}

// VecMat is a row vector times a matrix stored row-major [k, n]: y[j] = Σ_p x[p]·b[p·ldb+j]
// for j < len(y), p < len(x). A decoding step's q·k against keys cached transposed
// [headDim, slots] is one VecMat per head: a block of y stays in registers while the rows of b
// go by, where len(x) passes of y += x[p]·b[p] would load and store all of y each time.
func VecMat(x []float32, b []float32, ldb int, y []float32) {
	k, n := len(x), len(y)
	if !(span(len(b), k, n, ldb)) {
		fail("VecMat: %d rows of %d with stride %d do not fit in %d", k, n, ldb, len(b))
	}
	if n == 0 {
		return
	}
	if k == 0 {
		clear(y)
		return
	}
	vecMat(x, b, ldb, y)
}

// MatMulNT is y[i·ldy+j] = Σ_p x[i·ldx+p]·w[j·ldw+p] for i < m, j < n, p < k: a few rows of x
// (batched decoding, short prefill) against a weight matrix stored [n, k]. Rows of x go 8 at a
// time, and each row of w is read once for all of them.
func MatMulNT(m, n, k int, x []float32, ldx int, w []float32, ldw int, y []float32, ldy int) {
	if !(m >= 0 && n >= 0 && k >= 0) {
		fail("MatMulNT: negative size %dx%dx%d", m, n, k)
	}
	if !(span(len(x), m, k, ldx)) {
		fail("MatMulNT: x (%d rows of %d, stride %d) does not fit in %d", m, k, ldx, len(x))
	}
	if !(span(len(w), n, k, ldw)) {
		fail("MatMulNT: w (%d rows of %d, stride %d) does not fit in %d", n, k, ldw, len(w))
	}
	if !(span(len(y), m, n, ldy)) {
		fail("MatMulNT: y (%d rows of %d, stride %d) does not fit in %d", m, n, ldy, len(y))
	}
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		for i := range m {
			clear(y[i*ldy : i*ldy+n])
		}
		return
	}
	matMulNT(m, n, k, x, ldx, w, ldw, y, ldy)
}

// The elementwise operations work on len(out) elements; a and b must be at least that long
// (normally all three have the same length). out may be a or b (the very same slice); other
// overlaps are not supported.

// Add sets out[i] = a[i] + b[i].
func Add(a, b, out []float32) {
	if !(len(a) >= len(out) && len(b) >= len(out)) {
		fail("Add: operands of %d and %d for %d results", len(a), len(b), len(out))
	}
	if len(out) > 0 {
		binary(opAdd, a, b, out)
	}
}

// Sub sets out[i] = a[i] - b[i].
func Sub(a, b, out []float32) {
	if !(len(a) >= len(out) && len(b) >= len(out)) {
		fail("Sub: operands of %d and %d for %d results", len(a), len(b), len(out))
	}
	if len(out) > 0 {
		binary(opSub, a, b, out)
	}
}

// Mul sets out[i] = a[i] · b[i].
func Mul(a, b, out []float32) {
	if !(len(a) >= len(out) && len(b) >= len(out)) {
		fail("Mul: operands of %d and %d for %d results", len(a), len(b), len(out))
	}
	if len(out) > 0 {
		binary(opMul, a, b, out)
	}
}

// Div sets out[i] = a[i] / b[i].
func Div(a, b, out []float32) {
	if !(len(a) >= len(out) && len(b) >= len(out)) {
		fail("Div: operands of %d and %d for %d results", len(a), len(b), len(out))
	}
	if len(out) > 0 {
		binary(opDiv, a, b, out)
	}
}

// AddScalar sets out[i] = a[i] + s.
func AddScalar(a []float32, s float32, out []float32) {
	if !(len(a) >= len(out)) {
		fail("AddScalar: operand of %d for %d results", len(a), len(out))
	}
	if len(out) > 0 {
		scalarOp(opAdd, a, s, out)
	}
}

// MulScalar sets out[i] = a[i] · s.
func MulScalar(a []float32, s float32, out []float32) {
	if !(len(a) >= len(out)) {
		fail("MulScalar: operand of %d for %d results", len(a), len(out))
	}
	if len(out) > 0 {
		scalarOp(opMul, a, s, out)
	}
}

// Maximum sets out[i] = max(a[i], b[i]); NaN if either is (Go's max, XLA's Max).
func Maximum(a, b, out []float32) {
	if !(len(a) >= len(out) && len(b) >= len(out)) {
		fail("Maximum: operands of %d and %d for %d results", len(a), len(b), len(out))
	}
	if len(out) > 0 {
		binary(opMax, a, b, out)
	}
}

// Minimum sets out[i] = min(a[i], b[i]); NaN if either is.
func Minimum(a, b, out []float32) {
	if !(len(a) >= len(out) && len(b) >= len(out)) {
		fail("Minimum: operands of %d and %d for %d results", len(a), len(b), len(out))
	}
	if len(out) > 0 {
		binary(opMin, a, b, out)
	}
}

// MaximumScalar sets out[i] = max(a[i], s) (ReLU is MaximumScalar(a, 0, out)).
func MaximumScalar(a []float32, s float32, out []float32) {
	if !(len(a) >= len(out)) {
		fail("MaximumScalar: operand of %d for %d results", len(a), len(out))
	}
	if len(out) > 0 {
		scalarOp(opMax, a, s, out)
	}
}

// MinimumScalar sets out[i] = min(a[i], s).
func MinimumScalar(a []float32, s float32, out []float32) {
	if !(len(a) >= len(out)) {
		fail("MinimumScalar: operand of %d for %d results", len(a), len(out))
	}
	if len(out) > 0 {
		scalarOp(opMin, a, s, out)
	}
}

// RDivScalar sets out[i] = s / a[i].
func RDivScalar(a []float32, s float32, out []float32) {
	if !(len(a) >= len(out)) {
		fail("RDivScalar: operand of %d for %d results", len(a), len(out))
	}
	if len(out) > 0 {
		scalarOp(opRDiv, a, s, out)
	}
}

// Sign sets out[i] to 1 for a[i] > 0, -1 for a[i] < 0, and a[i] itself for ±0 and NaN.
func Sign(a, out []float32) {
	if !(len(a) >= len(out)) {
		fail("Sign: operand of %d for %d results", len(a), len(out))
	}
	if len(out) > 0 {
		sign(a[:len(out)], out)
	}
}

// Exp sets out[i] = e^a[i] within 2e-7 relative error over [-87, 88] (exp(-Inf) = 0, NaN stays
// NaN, overflow gives +Inf, results below the normal range are subnormal or 0), by range
// reduction and a polynomial. Like the elementwise operations it works on len(out) elements.
func Exp(a, out []float32) {
	if !(len(a) >= len(out)) {
		fail("Exp: operand of %d for %d results", len(a), len(out))
	}
	if len(out) > 0 {
		exp(a[:len(out)], out)
	}
}

// Logistic sets out[i] = 1/(1 + e^−a[i]) in one pass, with the roundings of
// RDivScalar(AddScalar(Exp(MulScalar(a, −1)), 1), 1): the same results as those four passes.
// e^−x overflows to +Inf for x < −88 and the result is then 0, as it should be; NaN stays NaN.
func Logistic(a, out []float32) {
	if !(len(a) >= len(out)) {
		fail("Logistic: operand of %d for %d results", len(a), len(out))
	}
	if len(out) > 0 {
		logistic(a[:len(out)], out)
	}
}

// Sum returns Σ a[i] (several partial sums, so the rounding differs from a sequential loop).
func Sum(a []float32) float32 {
	if len(a) == 0 {
		return 0
	}
	return sum(a)
}

// Max returns the largest a[i]: NaN if any element is NaN, -Inf for an empty slice.
func Max(a []float32) float32 {
	return maxOf(a)
}

// Sgemm is BLAS sgemm in row-major form: C = alpha·op(A)·op(B) + beta·C with op(A) [m,k] and
// op(B) [k,n]. transA: A is stored [k,m] (element (i,p) at a[p·lda+i]), else [m,k] (a[i·lda+p]);
// transB: B is stored [n,k] (b[j·ldb+p]), else [k,n] (b[p·ldb+j]). beta == 0 overwrites C
// without reading it. Safe for concurrent use on disjoint blocks of C (see sgemm.go).
func Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if !(m >= 0 && n >= 0 && k >= 0) {
		fail("Sgemm: negative size %dx%dx%d", m, n, k)
	}
	if !(span(len(c), m, n, ldc)) {
		fail("Sgemm: C (%d rows of %d, stride %d) does not fit in %d", m, n, ldc, len(c))
	}
	if transA {
		if !(span(len(a), k, m, lda)) {
			fail("Sgemm: A^T (%d rows of %d, stride %d) does not fit in %d", k, m, lda, len(a))
		}
	} else {
		if !(span(len(a), m, k, lda)) {
			fail("Sgemm: A (%d rows of %d, stride %d) does not fit in %d", m, k, lda, len(a))
		}
	}
	if transB {
		if !(span(len(b), n, k, ldb)) {
			fail("Sgemm: B^T (%d rows of %d, stride %d) does not fit in %d", n, k, ldb, len(b))
		}
	} else {
		if !(span(len(b), k, n, ldb)) {
			fail("Sgemm: B (%d rows of %d, stride %d) does not fit in %d", k, n, ldb, len(b))
		}
	}
	if m == 0 || n == 0 {
		return
	}
	sgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}
