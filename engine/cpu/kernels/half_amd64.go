package kernels

import "unsafe"

// widenF16 widens the whole vectors of src with F16C's VCVTPH2PS (every AVX2 CPU has F16C) and
// returns how many it did; the caller does the rest.
func widenF16(dst []float32, src []uint16) int {
	n := len(src) &^ 7
	if n == 0 || level.Load() == lvGeneric {
		return 0
	}
	widenF16AVX2(unsafe.SliceData(dst), unsafe.SliceData(src), n)
	return n
}

// widenBF16 is widenF16 for bfloat16 (zero-extend, shift left by 16).
func widenBF16(dst []float32, src []uint16) int {
	n := len(src) &^ 7
	if n == 0 || level.Load() == lvGeneric {
		return 0
	}
	widenBF16AVX2(unsafe.SliceData(dst), unsafe.SliceData(src), n)
	return n
}

// widenF16AVX2 converts n float16 values (n a multiple of 8) at src to float32 at dst.
//
//go:noescape
func widenF16AVX2(dst *float32, src *uint16, n int)

// widenBF16AVX2 converts n bfloat16 values (n a multiple of 8) at src to float32 at dst.
//
//go:noescape
func widenBF16AVX2(dst *float32, src *uint16, n int)

// narrowF16 narrows whole groups of eight of src with F16C's VCVTPS2PH until a group holds a
// NaN, and returns how many it did.
func narrowF16(dst []uint16, src []float32) int {
	n := len(src) &^ 7
	if n == 0 || level.Load() == lvGeneric {
		return 0
	}
	return narrowF16AVX2(unsafe.SliceData(dst), unsafe.SliceData(src), n)
}

// narrowF16AVX2 converts float32 values at src to float16 at dst, eight at a time (n a multiple
// of 8), stopping before the first group of eight that holds a NaN; it returns how many it
// converted.
//
//go:noescape
func narrowF16AVX2(dst *uint16, src *float32, n int) int
