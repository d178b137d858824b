package kernels

// The amd64 kernels: Go wrappers that pick the assembly for the selected set and finish the
// tails (elements past the last full vector block) in Go.

import (
	"math"
	"unsafe"

	"golang.org/x/sys/cpu"
)

var (
	hasAVX512 = cpu.X86.HasAVX512F && cpu.X86.HasAVX512DQ && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VL
	hasAVX2   = cpu.X86.HasAVX2 && cpu.X86.HasFMA
)

func best() string {
	switch {
	case hasAVX512:
		return AVX512
	case hasAVX2:
		return AVX2
	}
	return Generic
}

func supported(p string) bool {
	switch p {
	case AVX512:
		return hasAVX512
	case AVX2:
		return hasAVX2
	}
	return p == Generic
}

// Assembly (kernels_amd64.s). n counts floats; the dot kernels need n to be a multiple of their
// block (32 for AVX-512, 16 for AVX2) and at least one block.
//
//go:noescape
func dotAVX512(a, b *float32, n int) float32

//go:noescape
func dot4AVX512(w *float32, ldw int, x *float32, n int, out *float32)

//go:noescape
func dotAVX2(a, b *float32, n int) float32

//go:noescape
func dot4AVX2(w *float32, ldw int, x *float32, n int, out *float32)

//go:noescape
func expAVX512(a, out *float32, n int)

//go:noescape
func dot8RowsAVX512(w *float32, ldw int, x *float32, y *float32, rows int)

//go:noescape
func maxAVX512(a *float32, n int) (m float32, nan bool)

//go:noescape
func sgemm8x32AVX512(k int, a, b, c *float32, ldc int)

//go:noescape
func sgemm6x16AVX2(k int, a, b, c *float32, ldc int)

// block is the unit the vector dot kernels work in.
func block() int {
	if path == AVX512 {
		return 32
	}
	return 16
}

func dot(a, b []float32) float32 {
	if path == Generic {
		return dotGo(a, b)
	}
	n := len(a)
	full := n &^ (block() - 1)
	var s float32
	if full > 0 {
		if path == AVX512 {
			s = dotAVX512(unsafe.SliceData(a), unsafe.SliceData(b), full)
		} else {
			s = dotAVX2(unsafe.SliceData(a), unsafe.SliceData(b), full)
		}
	}
	for i := full; i < n; i++ {
		s += a[i] * b[i]
	}
	return s
}

func dotRows(w []float32, ldw int, x, y []float32) {
	if path == Generic {
		dotRowsGo(w, ldw, x, y)
		return
	}
	k := len(x)
	if k == 8 && path == AVX512 && len(y) >= 2 {
		even := len(y) &^ 1
		dot8RowsAVX512(unsafe.SliceData(w), ldw, unsafe.SliceData(x), unsafe.SliceData(y), even)
		if even < len(y) {
			dotRowsGo(w[even*ldw:], ldw, x, y[even:])
		}
		return
	}
	full := k &^ (block() - 1)
	if full == 0 {
		dotRowsGo(w, ldw, x, y)
		return
	}
	rows := len(y)
	r := 0
	var out [4]float32
	for ; r+4 <= rows; r += 4 {
		if path == AVX512 {
			dot4AVX512(&w[r*ldw], ldw, unsafe.SliceData(x), full, &out[0])
		} else {
			dot4AVX2(&w[r*ldw], ldw, unsafe.SliceData(x), full, &out[0])
		}
		for i := range 4 {
			row := w[(r+i)*ldw : (r+i)*ldw+k]
			s := out[i]
			for j := full; j < k; j++ {
				s += row[j] * x[j]
			}
			y[r+i] = s
		}
	}
	for ; r < rows; r++ {
		y[r] = dot(w[r*ldw:r*ldw+k], x)
	}
}

func micro() (int, int, microKernel) {
	switch path {
	case AVX512:
		return 8, 32, func(k int, a, b, c []float32, ldc int) {
			_ = a[8*k-1]
			_ = b[32*k-1]
			_ = c[7*ldc+31]
			sgemm8x32AVX512(k, &a[0], &b[0], &c[0], ldc)
		}
	case AVX2:
		return 6, 16, func(k int, a, b, c []float32, ldc int) {
			_ = a[6*k-1]
			_ = b[16*k-1]
			_ = c[5*ldc+15]
			sgemm6x16AVX2(k, &a[0], &b[0], &c[0], ldc)
		}
	}
	return 4, 4, kernel4x4Go
}

// exp uses the AVX-512 kernel for whole blocks of 16; the rest (and other sets) go through Go.
func exp(a, out []float32) {
	full := 0
	if path == AVX512 {
		full = len(out) &^ 15
		if full > 0 {
			expAVX512(unsafe.SliceData(a), unsafe.SliceData(out), full)
		}
	}
	expGo(a[full:len(out)], out[full:])
}

func maxOf(a []float32) float32 {
	full := 0
	m := float32(math.Inf(-1))
	if path == AVX512 {
		full = len(a) &^ 31
		if full > 0 {
			var nan bool
			m, nan = maxAVX512(unsafe.SliceData(a), full)
			if nan {
				return float32(math.NaN())
			}
		}
	}
	return max(m, maxGo(a[full:]))
}
