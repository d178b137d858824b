package kernels

// Half-precision storage widened to float32 for the products that read it: a KV cache kept in
// float16 (IEEE 754 binary16, llama.cpp's default cache type) or bfloat16 (the top half of a
// float32) costs half the memory and half the bytes read per decoding step, and is widened a
// head at a time into cache-sized scratch just before the product, which stays float32.

import (
	"github.com/posformer/posformer/layers/quant"
	"github.com/x448/float16"
)

// WidenF16 sets dst[i] to the float16 src[i] as float32, for i < len(src); every half value is
// exactly a float32, so this rounds nothing.
func WidenF16(dst []float32, src []uint16) {
	if len(dst) < len(src) {
		fail("WidenF16: %d values into %d", len(src), len(dst))
	}
	n := widenF16(dst, src)
	for i := n; i < len(src); i++ {
		dst[i] = quant.F16ToF32(src[i])
	}
}

// WidenBF16 sets dst[i] to the bfloat16 src[i] as float32 (its bits shifted up by 16), for
// i < len(src).
func WidenBF16(dst []float32, src []uint16) {
	if len(dst) < len(src) {
		fail("WidenBF16: %d values into %d", len(src), len(dst))
	}
	n := widenBF16(dst, src)
	for i := n; i < len(src); i++ {
		dst[i] = quant.BF16ToF32(src[i])
	}
}

// NarrowF16 sets dst[i] to src[i] rounded to the nearest float16 (ties to even), for
// i < len(src), as github.com/x448/float16's Fromfloat32 rounds (GoMLX's float16 conversion):
// eight at a time with F16C's VCVTPS2PH, a group holding a NaN by the scalar conversion (its
// payload as that package keeps it).
func NarrowF16(dst []uint16, src []float32) {
	if len(dst) < len(src) {
		fail("NarrowF16: %d values into %d", len(src), len(dst))
	}
	for i := 0; i < len(src); {
		i += narrowF16(dst[i:], src[i:])
		end := min(len(src), i+8) // a group with a NaN, or the tail
		for ; i < end; i++ {
			dst[i] = float16.Fromfloat32(src[i]).Bits()
		}
	}
}
