package kernels

// Sgemm's blocking (the GotoBLAS scheme). K is cut into slices of blockK; for each, a block of
// op(B) (blockK×blockN, about 512 KB: L2) is packed into panels of nr columns, and a block of
// op(A) (blockM×blockK, 96 KB) into panels of mr rows, alpha applied while packing. The
// micro-kernel then runs over every (A panel, B panel) pair, keeping an mr×nr tile of C in
// registers for the whole slice, with the B panel in L1 (kc·nr floats) and the A panels in L2.
// Packing makes both operands unit-stride and zero-pads the edges, so one micro-kernel serves
// all four transpose combinations; tiles that stick out of C go through a small buffer.

import (
	"sync"
	"unsafe"
)

const (
	blockK = 256
	blockM = 96 // a multiple of every mr (4, 6, 8, 12)
	blockN = 512
	maxMR  = 12
	maxNR  = 32
)

// scratch holds the packing buffers for reuse (blockM·blockK + blockK·blockN floats, 64-byte
// aligned). A mutex-guarded free list rather than a sync.Pool: a pool is emptied by every
// garbage collection, and under a tight memory limit each call would then allocate 600 KB
// afresh. It holds at most as many buffers as there were concurrent calls.
var scratch struct {
	sync.Mutex
	free [][]float32
}

func getScratch() []float32 {
	scratch.Lock()
	if n := len(scratch.free); n > 0 {
		s := scratch.free[n-1]
		scratch.free = scratch.free[:n-1]
		scratch.Unlock()
		return s
	}
	scratch.Unlock()
	const size = blockM*blockK + blockK*blockN
	raw := make([]float32, size+16)
	off := (64 - int(uintptr(unsafe.Pointer(&raw[0]))%64)) % 64 / 4
	return raw[off : off+size : off+size]
}

func putScratch(s []float32) {
	scratch.Lock()
	scratch.free = append(scratch.free, s)
	scratch.Unlock()
}

func sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if k == 0 || alpha == 0 {
		for i := range m {
			row := c[i*ldc : i*ldc+n]
			if beta == 0 {
				clear(row)
			} else if beta != 1 {
				for j := range row {
					row[j] *= beta
				}
			}
		}
		return
	}
	// The first K slice overwrites C when beta == 0 (C is never read) and accumulates into it
	// otherwise, after scaling by beta if that is not 1.
	if beta != 0 && beta != 1 {
		for i := range m {
			row := c[i*ldc : i*ldc+n]
			for j := range row {
				row[j] *= beta
			}
		}
	}
	lv := level.Load()
	mr, nr := tileOf(lv)
	sp := getScratch()
	defer putScratch(sp)
	ap, bp := sp[:blockM*blockK], sp[blockM*blockK:]
	var edge [maxMR * maxNR]float32
	for pc := 0; pc < k; pc += blockK {
		kc := min(blockK, k-pc)
		accumulate := pc > 0 || beta != 0
		for jc := 0; jc < n; jc += blockN {
			nc := min(blockN, n-jc)
			packB(bp, b, ldb, transB, pc, kc, jc, nc, nr)
			for ic := 0; ic < m; ic += blockM {
				mc := min(blockM, m-ic)
				packA(ap, a, lda, transA, pc, kc, ic, mc, mr, alpha)
				for jr := 0; jr < nc; jr += nr {
					bpan := bp[(jr/nr)*kc*nr : (jr/nr+1)*kc*nr]
					cols := min(nr, nc-jr)
					for ir := 0; ir < mc; ir += mr {
						apan := ap[(ir/mr)*kc*mr : (ir/mr+1)*kc*mr]
						rows := min(mr, mc-ir)
						ci := (ic+ir)*ldc + jc + jr
						if rows == mr && cols == nr {
							microKernel(lv, kc, apan, bpan, c[ci:], ldc, accumulate)
							continue
						}
						tile := edge[:mr*nr]
						microKernel(lv, kc, apan, bpan, tile, nr, false)
						for i := range rows {
							dst := c[ci+i*ldc : ci+i*ldc+cols]
							src := tile[i*nr : i*nr+cols]
							if accumulate {
								for j := range dst {
									dst[j] += src[j]
								}
							} else {
								copy(dst, src)
							}
						}
					}
				}
			}
		}
	}
}

// packA writes alpha·op(A)[ic:ic+mc, pc:pc+kc] as panels of mr rows: panel q holds, for each
// p, the mr values op(A)[ic+q·mr+r, pc+p] (zero past the last row).
func packA(dst, a []float32, lda int, trans bool, pc, kc, ic, mc, mr int, alpha float32) {
	for q := 0; q*mr < mc; q++ {
		pan := dst[q*kc*mr : (q+1)*kc*mr]
		rows := min(mr, mc-q*mr)
		if rows < mr {
			clear(pan)
		}
		r0 := ic + q*mr
		if trans {
			// op(A) rows are columns of the stored [k, m] matrix: mr consecutive values per p.
			for p := range kc {
				src := a[(pc+p)*lda+r0 : (pc+p)*lda+r0+rows]
				out := pan[p*mr : p*mr+rows]
				for r, v := range src {
					out[r] = alpha * v
				}
			}
			continue
		}
		// Row by row: each source row is read sequentially; the writes stay in the panel.
		for r := range rows {
			src := a[(r0+r)*lda+pc : (r0+r)*lda+pc+kc]
			for p, v := range src {
				pan[p*mr+r] = alpha * v
			}
		}
	}
}

// packB writes op(B)[pc:pc+kc, jc:jc+nc] as panels of nr columns: panel q holds, for each p,
// the nr values op(B)[pc+p, jc+q·nr+j] (zero past the last column).
func packB(dst, b []float32, ldb int, trans bool, pc, kc, jc, nc, nr int) {
	for q := 0; q*nr < nc; q++ {
		pan := dst[q*kc*nr : (q+1)*kc*nr]
		cols := min(nr, nc-q*nr)
		j0 := jc + q*nr
		if !trans {
			for p := range kc {
				out := pan[p*nr : p*nr+nr]
				copy(out[:cols], b[(pc+p)*ldb+j0:(pc+p)*ldb+j0+cols])
				clear(out[cols:])
			}
			continue
		}
		if cols < nr {
			clear(pan)
		}
		// Row by row of the stored [n, k] matrix: sequential reads, writes within the panel.
		for j := range cols {
			src := b[(j0+j)*ldb+pc : (j0+j)*ldb+pc+kc]
			for p, v := range src {
				pan[p*nr+j] = v
			}
		}
	}
}
