package kernels

// Sgemm's blocking (the GotoBLAS scheme). K is cut into slices of blockK; for each, a block of
// op(B) (blockK×blockN, about 512 KB: L2) is packed into panels of nr columns, and a block of
// op(A) (blockM×blockK, 96 KB) into panels of mr rows, alpha applied while packing. The
// micro-kernel then runs over every (A panel, B panel) pair, keeping an mr×nr tile of C in
// registers for the whole slice, with the B panel in L1 (kc·nr floats) and the A panels in L2.
// Packing makes both operands unit-stride and zero-pads the edges, so one micro-kernel serves
// all four transpose combinations; tiles that stick out of C go through a small buffer.

import (
	"unsafe"

	"github.com/posformer/posformer/engine/cpu/internal/freelist"
)

const (
	blockK = 256
	blockM = 96 // a multiple of every mr (4, 6, 8, 12)
	blockN = 512
	maxMR  = 12
	maxNR  = 32
)

// scratch holds the packing buffers for reuse (blockM·blockK + blockK·blockN floats, 64-byte
// aligned, then the edge tile of maxMR·maxNR: see scratchParts). A free list rather than a
// sync.Pool: a pool is emptied by every garbage collection, and under a tight memory limit each
// call would then allocate 600 KB afresh. It holds at most as many buffers as there were
// concurrent calls, up to freelist.PerCPU.
var scratch = freelist.New(freelist.Config[float32]{Max: freelist.PerCPU, Alloc: allocScratch})

const scratchSize = blockM*blockK + blockK*blockN + maxMR*maxNR

func getScratch() []float32 { return scratch.Get(scratchSize) }

func putScratch(s []float32) { scratch.Put(s) }

// allocScratch returns n floats starting on a 64-byte boundary.
func allocScratch(n int) []float32 {
	raw := make([]float32, n+16)
	off := (64 - int(uintptr(unsafe.Pointer(&raw[0]))%64)) % 64 / 4
	return raw[off : off+n : off+n]
}

// scratchParts cuts a scratch buffer into the panels of A and B and the tile the micro-kernel
// writes at the ragged edges of C. The tile lives here rather than in a local array, which
// escapes to the heap (it goes through a generic function): a kilobyte of garbage per call
// that, until the next collection, grows the heap into fresh pages, and faulting fresh pages
// in is slow on virtual machines (benchmarks/SPEED.md, "Memory").
func scratchParts(sp []float32) (ap, bp, edge []float32) {
	const a, b = blockM * blockK, blockK * blockN
	return sp[:a:a], sp[a : a+b : a+b], sp[a+b:]
}

func sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if k == 0 || alpha == 0 { // C = beta·C
		if beta == 0 {
			for i := range m {
				clear(c[i*ldc : i*ldc+n])
			}
		}
		scaleC(c, m, n, ldc, beta)
		return
	}
	scaleC(c, m, n, ldc, beta)
	lv := level.Load()
	mr, _ := tileOf(lv)
	sp := getScratch()
	defer putScratch(sp)
	ap, bp, edge := scratchParts(sp)
	if alpha == 1 && directA(lv, transA, lda) {
		blockedDirect(lv, transA, m, n, k, a, lda, b, ldb, transB, beta, c, ldc, ap, bp, edge)
		return
	}
	panelsOfA := func(pc, kc, ic, mc int) []float32 {
		packA(ap, a, lda, transA, pc, kc, ic, mc, mr, alpha)
		return ap
	}
	blocked(lv, m, n, k, panelsOfA, b, ldb, transB, beta, c, ldc, bp, edge)
}

// scaleC prepares C for the K slices: the first overwrites C when beta == 0 (C is never read)
// and accumulates into it otherwise, after this scaling by beta if that is not 1.
func scaleC(c []float32, m, n, ldc int, beta float32) {
	if beta == 0 || beta == 1 {
		return
	}
	for i := range m {
		row := c[i*ldc : i*ldc+n]
		for j := range row {
			row[j] *= beta
		}
	}
}

// blocked is the loop nest of Sgemm over K slices, column blocks of B and row blocks of A;
// panelsOfA gives the packed panels of A's block (ic, mc) in K slice (pc, kc), packing them
// or reading them from a PackedA.
func blocked(lv int32, m, n, k int, panelsOfA func(pc, kc, ic, mc int) []float32, b []float32, ldb int, transB bool, beta float32, c []float32, ldc int, bp, edge []float32) {
	mr, nr := tileOf(lv)
	kern := func(kc int, a, b, c []float32, ldc int, accumulate bool) {
		microKernel(lv, kc, a, b, c, ldc, accumulate)
	}
	for pc := 0; pc < k; pc += blockK {
		kc := min(blockK, k-pc)
		accumulate := pc > 0 || beta != 0
		for jc := 0; jc < n; jc += blockN {
			nc := min(blockN, n-jc)
			packB(bp, b, ldb, transB, pc, kc, jc, nc, nr)
			for ic := 0; ic < m; ic += blockM {
				mc := min(blockM, m-ic)
				ap := panelsOfA(pc, kc, ic, mc)
				macroKernel(kern, mr, nr, kc, mc, nc, ap, bp, c[ic*ldc+jc:], ldc, accumulate, edge[:mr*nr])
			}
		}
	}
}

// blockedDirect is blocked with A read in place by the micro-kernel (microKernelDirect) rather
// than packed: the same loops, B still packed (each of its panels serves every row of A from
// L1), and only the rows below the last whole panel of mr packed, into ap, for the ordinary
// micro-kernel. The block of A a K slice covers (blockM rows of blockK) stays in L2 as a packed
// one would; what is saved is the pass that copies it, which costs as much as the multiply
// when n is small.
func blockedDirect(lv int32, transA bool, m, n, k int, a []float32, lda int, b []float32, ldb int, transB bool, beta float32, c []float32, ldc int, ap, bp, edge []float32) {
	mr, nr := tileOf(lv)
	rs, cs := lda, 1 // element (i, p) of op(A) at a[i·rs+p·cs]
	if transA {
		rs, cs = 1, lda
	}
	edge = edge[:mr*nr]
	for pc := 0; pc < k; pc += blockK {
		kc := min(blockK, k-pc)
		accumulate := pc > 0 || beta != 0
		for jc := 0; jc < n; jc += blockN {
			nc := min(blockN, n-jc)
			packB(bp, b, ldb, transB, pc, kc, jc, nc, nr)
			for ic := 0; ic < m; ic += blockM {
				mc := min(blockM, m-ic)
				whole := mc / mr * mr
				if whole < mc {
					packA(ap, a, lda, transA, pc, kc, ic+whole, mc-whole, mr, 1)
				}
				for jr := 0; jr < nc; jr += nr {
					bpan := bp[(jr/nr)*kc*nr : (jr/nr+1)*kc*nr]
					cols := min(nr, nc-jr)
					for ir := 0; ir < whole; ir += mr {
						ai := (ic+ir)*rs + pc*cs
						ci := (ic+ir)*ldc + jc + jr
						if cols == nr {
							microKernelDirect(lv, kc, a[ai:], rs, cs, bpan, c[ci:], ldc, accumulate)
							continue
						}
						microKernelDirect(lv, kc, a[ai:], rs, cs, bpan, edge, nr, false)
						storeEdge(c[ci:], ldc, edge, nr, mr, cols, accumulate)
					}
					if whole < mc {
						microKernel(lv, kc, ap[:kc*mr], bpan, edge, nr, false)
						storeEdge(c[(ic+whole)*ldc+jc+jr:], ldc, edge, nr, mc-whole, cols, accumulate)
					}
				}
			}
		}
	}
}

// macroKernel multiplies the packed panels of an mc×kc block of A and a kc×nc block of B into
// the block of C at c (row stride ldc), one mr×nr tile at a time: whole tiles in place, the
// partial ones at the right and bottom edges through the scratch tile edge. The panels are
// float32 (Sgemm) or pairs of bfloat16 (SgemmBF16); kc counts what a panel holds per row.
func macroKernel[P any](kern func(kc int, a, b []P, c []float32, ldc int, accumulate bool), mr, nr, kc, mc, nc int, ap, bp []P, c []float32, ldc int, accumulate bool, edge []float32) {
	for jr := 0; jr < nc; jr += nr {
		bpan := bp[(jr/nr)*kc*nr : (jr/nr+1)*kc*nr]
		cols := min(nr, nc-jr)
		for ir := 0; ir < mc; ir += mr {
			apan := ap[(ir/mr)*kc*mr : (ir/mr+1)*kc*mr]
			rows := min(mr, mc-ir)
			ci := ir*ldc + jr
			if rows == mr && cols == nr {
				kern(kc, apan, bpan, c[ci:], ldc, accumulate)
				continue
			}
			kern(kc, apan, bpan, edge, nr, false)
			storeEdge(c[ci:], ldc, edge, nr, rows, cols, accumulate)
		}
	}
}

// storeEdge writes (or, accumulating, adds) the rows × cols corner of a tile computed into
// scratch (row stride lde) to C at c (row stride ldc): the partial tiles at C's edges.
func storeEdge(c []float32, ldc int, edge []float32, lde, rows, cols int, accumulate bool) {
	for i := range rows {
		dst := c[i*ldc : i*ldc+cols]
		src := edge[i*lde : i*lde+cols]
		if accumulate {
			for j := range dst {
				dst[j] += src[j]
			}
		} else {
			copy(dst, src)
		}
	}
}

// PackedA is op(A) [m, k] packed once, in the layout Sgemm packs it into block by block, for
// several products with different B: the rows of x against column slices of a weight matrix,
// one slice per thread, would otherwise each pack all of x again.
type PackedA struct {
	lv   int32
	m, k int
	data []float32
}

// PackedASize is the number of floats PackA needs for op(A) [m, k] with the kernel set in use.
func PackedASize(m, k int) int {
	mr, _ := tileOf(level.Load())
	return (m + mr - 1) / mr * mr * k
}

// PackA packs alpha·op(A) ([m, k]; A stored [k, m] when transA) into dst (PackedASize floats).
func PackA(transA bool, m, k int, alpha float32, a []float32, lda int, dst []float32) PackedA {
	lv := level.Load()
	mr, _ := tileOf(lv)
	rows := (m + mr - 1) / mr * mr
	if !(m >= 0 && k >= 0 && len(dst) >= rows*k) {
		fail("PackA: %d×%d needs %d floats, got %d", m, k, rows*k, len(dst))
	}
	if transA && !span(len(a), k, m, lda) || !transA && !span(len(a), m, k, lda) {
		fail("PackA: A (%d×%d, stride %d, transposed %v) does not fit in %d", m, k, lda, transA, len(a))
	}
	for pc := 0; pc < k; pc += blockK {
		kc := min(blockK, k-pc)
		for ic := 0; ic < m; ic += blockM {
			off := pc*rows + ic*kc
			packA(dst[off:], a, lda, transA, pc, kc, ic, min(blockM, m-ic), mr, alpha)
		}
	}
	return PackedA{lv: lv, m: m, k: k, data: dst[:rows*k]}
}

// SgemmPacked is Sgemm with op(A) packed by PackA: C = pa·op(B) + beta·C, C [m, n].
func SgemmPacked(pa PackedA, transB bool, n int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	m, k := pa.m, pa.k
	if !(n >= 0 && span(len(c), m, n, ldc)) {
		fail("SgemmPacked: C (%d rows of %d, stride %d) does not fit in %d", m, n, ldc, len(c))
	}
	if transB && !span(len(b), n, k, ldb) || !transB && !span(len(b), k, n, ldb) {
		fail("SgemmPacked: B (%d×%d, stride %d, transposed %v) does not fit in %d", k, n, ldb, transB, len(b))
	}
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		sgemm(false, transB, m, n, 0, 1, nil, 1, b, ldb, beta, c, ldc)
		return
	}
	scaleC(c, m, n, ldc, beta)
	mr, _ := tileOf(pa.lv)
	rows := (m + mr - 1) / mr * mr
	sp := getScratch()
	defer putScratch(sp)
	panelsOfA := func(pc, kc, ic, mc int) []float32 {
		return pa.data[pc*rows+ic*kc:]
	}
	_, bp, edge := scratchParts(sp)
	blocked(pa.lv, m, n, k, panelsOfA, b, ldb, transB, beta, c, ldc, bp, edge)
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
			if alpha == 1 && rows == 8 && mr == 8 {
				for p := range kc {
					o, s := pan[p*8:][:8], a[(pc+p)*lda+r0:][:8]
					o[0], o[1], o[2], o[3], o[4], o[5], o[6], o[7] = s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]
				}
				continue
			}
			for p := range kc {
				src := a[(pc+p)*lda+r0 : (pc+p)*lda+r0+rows]
				out := pan[p*mr : p*mr+rows]
				for r, v := range src {
					out[r] = alpha * v
				}
			}
			continue
		}
		// Eight rows at a time (a whole AVX-512 panel row), else four: sequential reads, and
		// each p writes adjacent floats.
		r := 0
		for ; mr == 8 && r+8 <= rows; r += 8 {
			base := (r0+r)*lda + pc
			s0 := a[base:][:kc]
			s1 := a[base+lda:][:kc]
			s2 := a[base+2*lda:][:kc]
			s3 := a[base+3*lda:][:kc]
			s4 := a[base+4*lda:][:kc]
			s5 := a[base+5*lda:][:kc]
			s6 := a[base+6*lda:][:kc]
			s7 := a[base+7*lda:][:kc]
			if alpha == 1 {
				done := 0
				if pack8(a[base:], lda, pan, 8, kc/16) {
					done = kc / 16 * 16
				}
				for p := done; p < kc; p++ {
					o := pan[p*8:][:8]
					o[0], o[1], o[2], o[3], o[4], o[5], o[6], o[7] = s0[p], s1[p], s2[p], s3[p], s4[p], s5[p], s6[p], s7[p]
				}
				continue
			}
			for p := range kc {
				o := pan[p*8:][:8]
				o[0], o[1], o[2], o[3] = alpha*s0[p], alpha*s1[p], alpha*s2[p], alpha*s3[p]
				o[4], o[5], o[6], o[7] = alpha*s4[p], alpha*s5[p], alpha*s6[p], alpha*s7[p]
			}
		}
		for ; r+4 <= rows; r += 4 {
			s0 := a[(r0+r)*lda+pc:][:kc]
			s1 := a[(r0+r+1)*lda+pc:][:kc]
			s2 := a[(r0+r+2)*lda+pc:][:kc]
			s3 := a[(r0+r+3)*lda+pc:][:kc]
			for p := range kc {
				o := pan[p*mr+r:][:4]
				o[0], o[1], o[2], o[3] = alpha*s0[p], alpha*s1[p], alpha*s2[p], alpha*s3[p]
			}
		}
		for ; r < rows; r++ {
			src := a[(r0+r)*lda+pc : (r0+r)*lda+pc+kc]
			for p, v := range src {
				pan[p*mr+r] = alpha * v
			}
		}
	}
}

// packBRows is packB for B stored [k, n]: row by row of B, each row read once from start to
// end and dealt out nr floats to a panel. Panel by panel instead, every nr floats read come
// from a new row, a stride the prefetcher serves poorly: 3.6 times slower out of L2.
func packBRows(dst, b []float32, ldb int, pc, kc, jc, nc, nr int) {
	whole := nc / nr
	for p := range kc {
		row := b[(pc+p)*ldb+jc:][:nc]
		switch nr {
		case 16:
			for q := range whole {
				*(*[16]float32)(dst[q*kc*16+p*16:]) = *(*[16]float32)(row[q*16:])
			}
		case 32:
			for q := range whole {
				*(*[32]float32)(dst[q*kc*32+p*32:]) = *(*[32]float32)(row[q*32:])
			}
		default:
			for q := range whole {
				copy(dst[q*kc*nr+p*nr:][:nr], row[q*nr:])
			}
		}
		if cols := nc - whole*nr; cols > 0 {
			out := dst[whole*kc*nr+p*nr:][:nr]
			copy(out, row[whole*nr:])
			clear(out[cols:])
		}
	}
}

// packB writes op(B)[pc:pc+kc, jc:jc+nc] as panels of nr columns: panel q holds, for each p,
// the nr values op(B)[pc+p, jc+q·nr+j] (zero past the last column).
func packB(dst, b []float32, ldb int, trans bool, pc, kc, jc, nc, nr int) {
	if !trans {
		packBRows(dst, b, ldb, pc, kc, jc, nc, nr)
		return
	}
	for q := 0; q*nr < nc; q++ {
		pan := dst[q*kc*nr : (q+1)*kc*nr]
		cols := min(nr, nc-q*nr)
		j0 := jc + q*nr
		if cols < nr {
			clear(pan)
		}
		// Blocks of 8 rows × 8 values of the stored [n, k] matrix, transposed in registers:
		// each row is read 32 bytes at a time and each panel row written 32 bytes at a time.
		// With AVX-512, 8 rows × 16 values at a time (pack8), the rest as here.
		j := 0
		p8 := kc &^ 7
		for ; j+8 <= cols; j += 8 {
			done := 0
			if nr == 32 && pack8(b[(j0+j)*ldb+pc:], ldb, pan[j:], 32, kc/16) {
				done = kc / 16 * 16
			}
			for p := done; p < p8; p += 8 {
				base := (j0+j)*ldb + pc + p
				s0 := b[base:][:8]
				s1 := b[base+ldb:][:8]
				s2 := b[base+2*ldb:][:8]
				s3 := b[base+3*ldb:][:8]
				s4 := b[base+4*ldb:][:8]
				s5 := b[base+5*ldb:][:8]
				s6 := b[base+6*ldb:][:8]
				s7 := b[base+7*ldb:][:8]
				for t := range 8 {
					o := pan[(p+t)*nr+j:][:8]
					o[0], o[1], o[2], o[3], o[4], o[5], o[6], o[7] = s0[t], s1[t], s2[t], s3[t], s4[t], s5[t], s6[t], s7[t]
				}
			}
			for p := p8; p < kc; p++ {
				for u := range 8 {
					pan[p*nr+j+u] = b[(j0+j+u)*ldb+pc+p]
				}
			}
		}
		for ; j+4 <= cols; j += 4 {
			s0 := b[(j0+j)*ldb+pc:][:kc]
			s1 := b[(j0+j+1)*ldb+pc:][:kc]
			s2 := b[(j0+j+2)*ldb+pc:][:kc]
			s3 := b[(j0+j+3)*ldb+pc:][:kc]
			for p := range kc {
				o := pan[p*nr+j:][:4]
				o[0], o[1], o[2], o[3] = s0[p], s1[p], s2[p], s3[p]
			}
		}
		for ; j < cols; j++ {
			src := b[(j0+j)*ldb+pc : (j0+j)*ldb+pc+kc]
			for p, v := range src {
				pan[p*nr+j] = v
			}
		}
	}
}
