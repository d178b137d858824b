package kernels

// SgemmBF16: Sgemm with its operands rounded to bfloat16 (8 bits of mantissa) and the products
// summed in float32. On CPUs with AVX512_BF16 one VDPBF16PS does two k steps of 16 columns
// where VFMADD231PS does one, so the product runs about twice as fast as Sgemm; training
// tolerates the rounding of its operands (mixed-precision training keeps float32 sums too).
//
// The scheme is Sgemm's (sgemm.go): K slices, column blocks of op(B) and row blocks of op(A)
// packed into panels, a register-blocked micro-kernel over every pair of panels. What differs
// is the packing: k goes by pairs, each 32-bit element of a panel holding the bf16 of x[2q]
// (low half) and of x[2q+1] (high half), a zero high half when k is odd. A K slice is
// blockKP pairs, so a packed block takes the bytes of Sgemm's and the same scratch buffers.

import (
	"math"
	"unsafe"
)

const blockKP = blockK // pairs of k per K slice: 2·blockK values in blockK 32-bit words

// HasBF16 reports whether SgemmBF16 runs on the AVX512_BF16 micro-kernel: the CPU has the
// instructions and the AVX-512 kernel set is in use. Otherwise, with AVX2 and FMA, it runs
// assembly that rounds and packs the pairs and widens them back to floats: the same sums
// (subnormals aside) at about Sgemm's speed; on the Generic kernel set, a portable Go kernel,
// correct but tens of times slower.
func HasBF16() bool { return bf16Ready(level.Load()) }

// SgemmBF16 is Sgemm (same arguments, layouts and bounds checks) with alpha·op(A) and op(B)
// rounded to bfloat16 (round to nearest even) before they are multiplied; the products are
// exact in float32 and are summed in float32, so C differs from Sgemm's by the rounding of the
// operands (about 2⁻⁹ relative per product). The AVX512_BF16 kernel treats bf16 subnormals as
// zero and flushes float32 subnormal results to zero, as VDPBF16PS does; the Go kernel does not.
func SgemmBF16(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if !(m >= 0 && n >= 0 && k >= 0) {
		fail("SgemmBF16: negative size %dx%dx%d", m, n, k)
	}
	if !(span(len(c), m, n, ldc)) {
		fail("SgemmBF16: C (%d rows of %d, stride %d) does not fit in %d", m, n, ldc, len(c))
	}
	if transA {
		if !(span(len(a), k, m, lda)) {
			fail("SgemmBF16: A^T (%d rows of %d, stride %d) does not fit in %d", k, m, lda, len(a))
		}
	} else {
		if !(span(len(a), m, k, lda)) {
			fail("SgemmBF16: A (%d rows of %d, stride %d) does not fit in %d", m, k, lda, len(a))
		}
	}
	if transB {
		if !(span(len(b), n, k, ldb)) {
			fail("SgemmBF16: B^T (%d rows of %d, stride %d) does not fit in %d", n, k, ldb, len(b))
		}
	} else {
		if !(span(len(b), k, n, ldb)) {
			fail("SgemmBF16: B (%d rows of %d, stride %d) does not fit in %d", k, n, ldb, len(b))
		}
	}
	if m == 0 || n == 0 {
		return
	}
	if k == 0 || alpha == 0 {
		sgemm(transA, transB, m, n, 0, 0, nil, 1, nil, 1, beta, c, ldc) // C = beta·C
		return
	}
	if amxReady(level.Load()) {
		sgemmAMX(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	sgemmBF16(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

func sgemmBF16(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	scaleC(c, m, n, ldc, beta)
	lv := level.Load()
	mr, nr := tileBF16(lv)
	sp := getScratch()
	defer putScratch(sp)
	fa, fb, edge := scratchParts(sp)
	ap, bp := words(fa), words(fb)
	kern := func(kp int, a, b []uint32, c []float32, ldc int, accumulate bool) {
		microKernelBF16(lv, kp, a, b, c, ldc, accumulate)
	}
	kp := (k + 1) / 2
	for pq := 0; pq < kp; pq += blockKP {
		kc := min(blockKP, kp-pq)
		p0 := 2 * pq
		accumulate := pq > 0 || beta != 0
		for jc := 0; jc < n; jc += blockN {
			nc := min(blockN, n-jc)
			packBBF16(bp, b, ldb, transB, p0, kc, k, jc, nc, nr, packingBF16(lv))
			for ic := 0; ic < m; ic += blockM {
				mc := min(blockM, m-ic)
				packABF16(ap, a, lda, transA, p0, kc, k, ic, mc, mr, alpha, packingBF16(lv))
				macroKernel(kern, mr, nr, kc, mc, nc, ap, bp, c[ic*ldc+jc:], ldc, accumulate, edge[:mr*nr])
			}
		}
	}
}

// words is float32 scratch reused as 32-bit words: bf16 panels hold bit patterns, never floats.
func words(f []float32) []uint32 {
	return unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(f))), len(f))
}

// toBF16 rounds x to the nearest bfloat16, ties to even, and returns its 16 bits. A NaN stays
// a NaN (made quiet): adding the rounding bias to its mantissa could carry it into Inf.
func toBF16(x float32) uint32 {
	b := math.Float32bits(x)
	if b&0x7fffffff > 0x7f800000 {
		return b>>16 | 0x40
	}
	return (b + 0x7fff + b>>16&1) >> 16
}

// pairBF16 is the packed pair (lo, hi): lo in the low 16 bits, the lane order of VDPBF16PS.
func pairBF16(lo, hi float32) uint32 { return toBF16(lo) | toBF16(hi)<<16 }

// fromBF16 is the float32 of the bf16 in the low 16 bits of h.
func fromBF16(h uint32) float32 { return math.Float32frombits(h << 16) }

// RoundBF16 returns x rounded to the nearest bfloat16 (ties to even), as a float32: the value
// SgemmBF16 multiplies in place of x.
func RoundBF16(x float32) float32 { return fromBF16(toBF16(x)) }

// Which assembly rounds and packs SgemmBF16's panels (packingBF16): none (Go), the
// AVX512_BF16 packers (8×32 tiles) or the AVX2 ones (8×32 or 4×16 tiles).
const (
	packGo = iota
	packAVX512BF16
	packAVX2
)

// packABF16 writes alpha·op(A)[ic:ic+mc, p0:p0+2·kc] as panels of mr rows of pairs: panel q
// holds, for each pair t, the mr pairs (op(A)[i, p0+2t], op(A)[i, p0+2t+1]) of rows
// i = ic+q·mr+r (zero past the last row, and a zero high half at p0+2t+1 == k). pk: the
// assembly packing that may be used (whole panels: 8 rows for AVX512_BF16, 4 or 8 for AVX2;
// alpha 1).
func packABF16(dst []uint32, a []float32, lda int, trans bool, p0, kc, k, ic, mc, mr int, alpha float32, pk int) {
	full := min(kc, (k-p0)/2) // pairs with both halves inside op(A)
	pairedNext := false       // the last panel's packing did this one's full pairs too
	for q := 0; q*mr < mc; q++ {
		pan := dst[q*kc*mr : (q+1)*kc*mr]
		rows := min(mr, mc-q*mr)
		if rows < mr {
			clear(pan)
		}
		r0 := ic + q*mr
		fast := pk == packAVX512BF16 && alpha == 1 && mr == 8 && rows == 8
		avx2 := pk == packAVX2 && alpha == 1 && (mr == 4 || mr == 8) && rows == mr
		if trans {
			// op(A) rows are columns of the stored [k, m] matrix: a pair joins two stored rows.
			done := 0
			switch {
			case avx2 && full > 0:
				packPairsAVX2(a[p0*lda+r0:], lda, pan, mr, full)
				done = full
			case fast && pairedNext:
				done, pairedNext = full, false
			case fast && full > 0 && q*mr+16 <= mc:
				packPairs2x8BF16(a[p0*lda+r0:], lda, dst[q*kc*mr:], kc*mr, full)
				done, pairedNext = full, true
			case fast && full > 0:
				packPairsBF16(a[p0*lda+r0:], lda, pan, 8, full)
				done = full
			}
			for t := done; t < full; t++ {
				lo := a[(p0+2*t)*lda+r0:][:rows]
				hi := a[(p0+2*t+1)*lda+r0:][:rows]
				out := pan[t*mr:][:rows]
				for r := range out {
					out[r] = pairBF16(alpha*lo[r], alpha*hi[r])
				}
			}
			if full < kc {
				lo := a[(p0+2*full)*lda+r0:][:rows]
				out := pan[full*mr:][:rows]
				for r := range out {
					out[r] = toBF16(alpha * lo[r])
				}
			}
			continue
		}
		// A pair is two adjacent values of a stored row.
		done := 0
		switch {
		case fast && full >= 16:
			packRowsBF16(a[r0*lda+p0:], lda, pan, 8, full/16)
			done = full / 16 * 16
		case avx2 && full >= 8:
			for g := 0; g < mr; g += 4 {
				packRows4AVX2(a[(r0+g)*lda+p0:], lda, pan[g:], mr, full/8)
			}
			done = full / 8 * 8
		}
		for r := range rows {
			src := a[(r0+r)*lda+p0:][:min(2*kc, k-p0)]
			for t := done; t < full; t++ {
				pan[t*mr+r] = pairBF16(alpha*src[2*t], alpha*src[2*t+1])
			}
			if full < kc {
				pan[full*mr+r] = toBF16(alpha * src[2*full])
			}
		}
	}
}

// packBBF16 writes op(B)[p0:p0+2·kc, jc:jc+nc] as panels of nr columns of pairs: panel q
// holds, for each pair t, the nr pairs (op(B)[p0+2t, j], op(B)[p0+2t+1, j]) of columns
// j = jc+q·nr+c (zero past the last column, and a zero high half at p0+2t+1 == k). pk: the
// assembly packing that may be used (whole panels: 32 columns for AVX512_BF16, 16 or 32 for
// AVX2).
func packBBF16(dst []uint32, b []float32, ldb int, trans bool, p0, kc, k, jc, nc, nr int, pk int) {
	full := min(kc, (k-p0)/2)
	for q := 0; q*nr < nc; q++ {
		pan := dst[q*kc*nr : (q+1)*kc*nr]
		cols := min(nr, nc-q*nr)
		if cols < nr {
			clear(pan)
		}
		j0 := jc + q*nr
		fast := pk == packAVX512BF16 && nr == 32 && cols == 32
		avx2 := pk == packAVX2 && (nr == 16 || nr == 32) && cols == nr
		if !trans {
			// A pair joins two stored rows of the [k, n] matrix.
			done := 0
			switch {
			case fast && full > 0:
				packPairsBF16(b[p0*ldb+j0:], ldb, pan, 32, full)
				done = full
			case avx2 && full > 0:
				packPairsAVX2(b[p0*ldb+j0:], ldb, pan, nr, full)
				done = full
			}
			for t := done; t < full; t++ {
				lo := b[(p0+2*t)*ldb+j0:][:cols]
				hi := b[(p0+2*t+1)*ldb+j0:][:cols]
				out := pan[t*nr:][:cols]
				for j := range out {
					out[j] = pairBF16(lo[j], hi[j])
				}
			}
			if full < kc {
				lo := b[(p0+2*full)*ldb+j0:][:cols]
				out := pan[full*nr:][:cols]
				for j := range out {
					out[j] = toBF16(lo[j])
				}
			}
			continue
		}
		// Stored [n, k]: a pair is two adjacent values of a stored row.
		done := 0
		switch {
		case fast && full >= 16:
			for j := 0; j < 32; j += 8 {
				packRowsBF16(b[(j0+j)*ldb+p0:], ldb, pan[j:], 32, full/16)
			}
			done = full / 16 * 16
		case avx2 && full >= 8:
			for j := 0; j < nr; j += 4 {
				packRows4AVX2(b[(j0+j)*ldb+p0:], ldb, pan[j:], nr, full/8)
			}
			done = full / 8 * 8
		}
		for j := range cols {
			src := b[(j0+j)*ldb+p0:][:min(2*kc, k-p0)]
			for t := done; t < full; t++ {
				pan[t*nr+j] = pairBF16(src[2*t], src[2*t+1])
			}
			if full < kc {
				pan[full*nr+j] = toBF16(src[2*full])
			}
		}
	}
}

// gemmBF16Go is the portable micro-kernel: the 4×4 tile of packed pair panels a and b over kp
// pairs, both products of a pair added to the float32 sum (exact products, as in VDPBF16PS).
func gemmBF16Go(kp int, a, b []uint32, c []float32, ldc int, accumulate bool) {
	var t [4][4]float32
	a, b = a[:4*kp], b[:4*kp]
	for q := range kp {
		ap, bq := a[q*4:][:4], b[q*4:][:4]
		var blo, bhi [4]float32
		for j := range 4 {
			blo[j], bhi[j] = fromBF16(bq[j]), fromBF16(bq[j]>>16)
		}
		for i := range 4 {
			alo, ahi := fromBF16(ap[i]), fromBF16(ap[i]>>16)
			for j := range 4 {
				t[i][j] += ahi*bhi[j] + alo*blo[j]
			}
		}
	}
	for i := range 4 {
		row := c[i*ldc:][:4]
		for j := range 4 {
			if accumulate {
				row[j] += t[i][j]
			} else {
				row[j] = t[i][j]
			}
		}
	}
}
