package kernels

// Sgemm: blocked matrix product. Panels of A (mr rows) and B (nr columns) are packed into
// contiguous, zero-padded scratch so that the micro-kernel (an mr×nr tile of C kept in
// registers: 8×32 with AVX-512, 6×16 with AVX2) reads both with unit stride; the K dimension is
// cut into kc-sized slices that keep a B panel in L1 and an A block in L2.

import "sync"

const (
	blockK = 256
	blockM = 96 // a multiple of every mr
	blockN = 512
)

// microKernel computes C[mr][nr] += Apacked·Bpacked over k (k >= 1); ldc is in elements.
type microKernel func(k int, a, b, c []float32, ldc int)

// scratch holds packing buffers for reuse. Not a sync.Pool: that is emptied at every garbage
// collection, and under a tight memory limit each call would then allocate 600 KB afresh.
var scratch struct {
	sync.Mutex
	free [][]float32
}

func getScratch() []float32 {
	scratch.Lock()
	defer scratch.Unlock()
	if n := len(scratch.free); n > 0 {
		s := scratch.free[n-1]
		scratch.free = scratch.free[:n-1]
		return s
	}
	return make([]float32, blockM*blockK+blockK*blockN)
}

func putScratch(s []float32) {
	scratch.Lock()
	scratch.free = append(scratch.free, s)
	scratch.Unlock()
}

// Sgemm is BLAS sgemm in row-major form: C = alpha·op(A)·op(B) + beta·C with op(A) [m,k] and
// op(B) [k,n]. transA: A is stored [k,m] (a[p·lda+i]), else [m,k] (a[i·lda+p]); transB: B is
// stored [n,k] (b[j·ldb+p]), else [k,n] (b[p·ldb+j]). beta == 0 overwrites C without reading it.
// Safe for concurrent use on disjoint blocks of C.
func Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if m <= 0 || n <= 0 {
		return
	}
	need(ldc >= n && len(c) >= (m-1)*ldc+n, "Sgemm: C too short")
	if k > 0 {
		if transA {
			need(lda >= m && len(a) >= (k-1)*lda+m, "Sgemm: A too short")
		} else {
			need(lda >= k && len(a) >= (m-1)*lda+k, "Sgemm: A too short")
		}
		if transB {
			need(ldb >= k && len(b) >= (n-1)*ldb+k, "Sgemm: B too short")
		} else {
			need(ldb >= n && len(b) >= (k-1)*ldb+n, "Sgemm: B too short")
		}
	}
	for i := range m {
		row := c[i*ldc : i*ldc+n]
		switch beta {
		case 0:
			clear(row)
		case 1:
		default:
			for j := range row {
				row[j] *= beta
			}
		}
	}
	if k == 0 || alpha == 0 {
		return
	}
	mr, nr, kern := micro()
	sp := getScratch()
	defer putScratch(sp)
	ap, bp := sp[:blockM*blockK], sp[blockM*blockK:]
	var edge [8 * 32]float32
	for pc := 0; pc < k; pc += blockK {
		kc := min(blockK, k-pc)
		for jc := 0; jc < n; jc += blockN {
			nc := min(blockN, n-jc)
			packB(bp, b, ldb, transB, pc, kc, jc, nc, nr)
			for ic := 0; ic < m; ic += blockM {
				mc := min(blockM, m-ic)
				packA(ap, a, lda, transA, pc, kc, ic, mc, mr, alpha)
				for jr := 0; jr < nc; jr += nr {
					bpan := bp[(jr/nr)*kc*nr:]
					for ir := 0; ir < mc; ir += mr {
						apan := ap[(ir/mr)*kc*mr:]
						ci := (ic+ir)*ldc + jc + jr
						rows, cols := min(mr, mc-ir), min(nr, nc-jr)
						if rows == mr && cols == nr {
							kern(kc, apan, bpan, c[ci:], ldc)
							continue
						}
						tile := edge[:mr*nr]
						clear(tile)
						kern(kc, apan, bpan, tile, nr)
						for i := range rows {
							dst := c[ci+i*ldc : ci+i*ldc+cols]
							for j := range dst {
								dst[j] += tile[i*nr+j]
							}
						}
					}
				}
			}
		}
	}
}

// packA writes alpha·A[ic:ic+mc, pc:pc+kc] as panels of mr rows: panel q holds, for each p, the
// mr values A[ic+q·mr+r, pc+p] (zero past the last row).
func packA(dst, a []float32, lda int, trans bool, pc, kc, ic, mc, mr int, alpha float32) {
	for q := 0; q*mr < mc; q++ {
		pan := dst[q*kc*mr : (q+1)*kc*mr]
		rows := min(mr, mc-q*mr)
		if rows < mr {
			clear(pan)
		}
		if trans {
			for p := range kc {
				src := a[(pc+p)*lda+ic+q*mr : (pc+p)*lda+ic+q*mr+rows]
				out := pan[p*mr : p*mr+rows]
				for r, v := range src {
					out[r] = alpha * v
				}
			}
			continue
		}
		// Row by row: each source row is read sequentially; the writes stay in the panel (L1).
		for r := range rows {
			src := a[(ic+q*mr+r)*lda+pc : (ic+q*mr+r)*lda+pc+kc]
			for p, v := range src {
				pan[p*mr+r] = alpha * v
			}
		}
	}
}

// packB writes B[pc:pc+kc, jc:jc+nc] as panels of nr columns: panel q holds, for each p, the nr
// values B[pc+p, jc+q·nr+j] (zero past the last column).
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

// kernel4x4Go is the portable micro-kernel.
func kernel4x4Go(k int, a, b, c []float32, ldc int) {
	var acc [4][4]float32
	for p := range k {
		av := a[p*4 : p*4+4]
		bv := b[p*4 : p*4+4]
		for i := range 4 {
			x := av[i]
			acc[i][0] += x * bv[0]
			acc[i][1] += x * bv[1]
			acc[i][2] += x * bv[2]
			acc[i][3] += x * bv[3]
		}
	}
	for i := range 4 {
		row := c[i*ldc : i*ldc+4]
		for j := range 4 {
			row[j] += acc[i][j]
		}
	}
}
