package kernels

// TransposeAdd8 adds the transpose of an 8×8 block of src to one of dst: dst[j·ldd + i] +=
// src[i·lds + j] for i, j < 8 (a prompt's keys [tokens, dim] written into a cache kept [dim,
// slots]). Each sum is the scalar one, so the result is the element-by-element loop's to the bit.
func TransposeAdd8(dst []float32, ldd int, src []float32, lds int) {
	if ldd < 8 || lds < 8 || len(dst) < 7*ldd+8 || len(src) < 7*lds+8 {
		fail("TransposeAdd8: dst of %d (stride %d) and src of %d (stride %d) do not hold 8×8 blocks", len(dst), ldd, len(src), lds)
	}
	transposeAdd8(dst, ldd, src, lds)
}

func transposeAdd8Go(dst []float32, ldd int, src []float32, lds int) {
	for i := range 8 {
		for j, v := range src[i*lds : i*lds+8] {
			dst[j*ldd+i] += v
		}
	}
}
