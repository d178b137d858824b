package kernels

// SgemmBF16 on AMX: Intel's tile unit (Sapphire Rapids and later) multiplies a 16×32 tile of
// bf16 by a 32×16 one into a 16×16 tile of float32 sums in one TDPBF16PS (8,192 products, where
// an AVX-512 VDPBF16PS does 32). The loop nest is SgemmBF16's (K slices, column blocks of B, row blocks
// of A); what changes is the shape of the packed operands, which the tile loads dictate:
//
//   - B, as for VDPBF16PS: panels of 32 columns, each pair of k one row of 32 words
//     (packBBF16), a tile being 16 such rows and half their width;
//   - A, row by row: the pairs of one row of op(A) side by side (packAAMX), a tile being 16
//     rows of 16 pairs; for A as stored (not transposed) that is the row itself, rounded.
//
// Both are padded with zeros to whole tiles (16 pairs of k, 32 rows, 32 columns), so the
// assembly (amxRows) only ever sees whole 32×32 blocks of C; the edges go through a scratch
// block. The sums are float32 like VDPBF16PS's, but in another order: results differ from the
// AVX-512 kernel's in the last bits (on exactly representable sums they agree to the bit:
// TestSgemmAMX).
//
// Linux gives a process the tile registers only on request (arch_prctl ARCH_REQ_XCOMP_PERM,
// kernel 5.16+): amxReady asks once, and a refusal leaves SgemmBF16 on AVX-512.

import (
	"sync"
	"sync/atomic"

	"golang.org/x/sys/cpu"
)

//go:noescape
func amxRows(cfg *[64]byte, a *uint32, lda int, b *uint32, kq int, c *float32, ldc int, mb int, acc bool)

//go:noescape
func cvtPairsBF16(src *float32, dst *uint32, n16 int)

//go:noescape
func packATAMX(a *float32, lda int, dst *uint32, ldd int, n16 int)

var (
	amxOnce  sync.Once
	amxOK    bool        // the CPU has AMX-BF16 and the kernel granted the tiles
	amxOff   atomic.Bool // SetAMX(false)
	amxCfg   [64]byte    // palette 1; eight tiles of 16 rows × 64 bytes
	amxError string      // why amxOK is false, for SetAMX's error
)

func amxInit() {
	switch {
	case !(cpu.X86.HasAMXTile && cpu.X86.HasAMXBF16):
		amxError = "no AMX-BF16 on this CPU"
		return
	case !hasBF16:
		amxError = "no AVX512_BF16 (the packing uses it)"
		return
	}
	if err := requestTiles(); err != nil {
		amxError = err.Error()
		return
	}
	amxCfg[0] = 1 // palette 1
	for t := range 8 {
		amxCfg[16+2*t] = 64 // bytes per row
		amxCfg[48+t] = 16   // rows
	}
	amxOK = true
}

// amxReady reports whether SgemmBF16 runs on AMX under kernel set lv.
func amxReady(lv int32) bool {
	if lv != lvAVX512 || !hasBF16 || amxOff.Load() {
		return false
	}
	amxOnce.Do(amxInit)
	return amxOK
}

// HasAMX reports whether SgemmBF16 runs on AMX tiles: the CPU has AMX-BF16, the operating
// system granted the tiles, the AVX-512 kernel set is in use and SetAMX(false) was not called.
func HasAMX() bool { return amxReady(level.Load()) }

// SetAMX turns the AMX path of SgemmBF16 on (the default where it runs) or off (the AVX512_BF16
// kernel), for the whole process, as SetPath does the kernel set. Turning it on where it cannot
// run returns the reason.
func SetAMX(on bool) error {
	amxOff.Store(!on)
	if on {
		amxOnce.Do(amxInit)
		if !amxOK {
			return &amxUnavailable{amxError}
		}
	}
	return nil
}

type amxUnavailable struct{ why string }

func (e *amxUnavailable) Error() string { return "AMX: " + e.why }

// sgemmAMX is sgemmBF16 on tiles (the checks and the k == 0 and alpha == 0 cases done).
func sgemmAMX(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	scaleC(c, m, n, ldc, beta)
	sp := getScratch()
	defer putScratch(sp)
	fa, fb, _ := scratchParts(sp)
	ap, bp := words(fa), words(fb)
	var edge [32 * 32]float32
	kp := (k + 1) / 2
	for pq := 0; pq < kp; pq += blockKP {
		kc := min(blockKP, kp-pq)
		kc16 := (kc + 15) &^ 15
		p0 := 2 * pq
		accumulate := pq > 0 || beta != 0
		for jc := 0; jc < n; jc += blockN {
			nc := min(blockN, n-jc)
			for q := 0; q*32 < nc; q++ {
				pan := bp[q*kc16*32 : (q+1)*kc16*32]
				packBBF16(pan, b, ldb, transB, p0, kc, k, jc+q*32, min(32, nc-q*32), 32, packAVX512BF16)
				clear(pan[kc*32:])
			}
			for ic := 0; ic < m; ic += blockM {
				mc := min(blockM, m-ic)
				packAAMX(ap, a, lda, transA, p0, kc, kc16, k, ic, mc, alpha)
				whole := mc / 32 // groups of 32 rows inside C
				groups := (mc + 31) / 32
				for q := 0; q*32 < nc; q++ {
					cols := min(32, nc-q*32)
					pan := &bp[q*kc16*32]
					ci := ic*ldc + jc + q*32
					g0 := 0
					if cols == 32 && whole > 0 {
						amxRows(&amxCfg, &ap[0], kc16*4, pan, kc16/16, &c[ci], ldc*4, whole, accumulate)
						g0 = whole
					}
					for g := g0; g < groups; g++ {
						amxRows(&amxCfg, &ap[g*32*kc16], kc16*4, pan, kc16/16, &edge[0], 32*4, 1, false)
						storeEdge(c[ci+g*32*ldc:], ldc, edge[:], 32, min(32, mc-g*32), cols, accumulate)
					}
				}
			}
		}
	}
}

// packAAMX writes alpha·op(A)[ic:ic+mc, p0:p0+2·kc] as rows of pairs: row r holds the pairs
// (op(A)[ic+r, p0+2t], op(A)[ic+r, p0+2t+1]) for t < kc, zeros up to kc16 pairs, and rows past
// mc are zero up to a multiple of 32.
func packAAMX(dst []uint32, a []float32, lda int, trans bool, p0, kc, kc16, k, ic, mc int, alpha float32) {
	mc32 := (mc + 31) &^ 31
	full := min(kc, (k-p0)/2) // pairs with both halves inside op(A)
	clear(dst[mc*kc16 : mc32*kc16])
	if trans {
		// op(A) rows are columns of the stored [k, m] matrix: blocks of 16 rows × 16 pairs
		// transposed in registers, the rest here, two stored rows at a time.
		r16, t16 := 0, 0
		if alpha == 1 && full >= 16 && mc >= 16 {
			r16, t16 = mc&^15, full&^15
			for r := 0; r < r16; r += 16 {
				_ = a[(p0+2*t16-1)*lda+ic+r+15] // the last float read
				_ = dst[(r+15)*kc16+t16-1]      // the last pair written
				packATAMX(&a[p0*lda+ic+r], lda*4, &dst[r*kc16], kc16*4, t16/16)
			}
		}
		for t := range full {
			r0 := 0
			if t < t16 {
				r0 = r16
			}
			lo := a[(p0+2*t)*lda+ic:][:mc]
			hi := a[(p0+2*t+1)*lda+ic:][:mc]
			for r := r0; r < mc; r++ {
				dst[r*kc16+t] = pairBF16(alpha*lo[r], alpha*hi[r])
			}
		}
		if full < kc {
			lo := a[(p0+2*full)*lda+ic:][:mc]
			for r := range mc {
				dst[r*kc16+full] = toBF16(alpha * lo[r])
			}
		}
		for r := range mc {
			clear(dst[r*kc16+kc : (r+1)*kc16])
		}
		return
	}
	for r := range mc {
		row := dst[r*kc16 : (r+1)*kc16]
		src := a[(ic+r)*lda+p0:][:min(2*kc, k-p0)]
		t := 0
		if alpha == 1 && full >= 16 {
			cvtPairsBF16(&src[0], &row[0], full/16)
			t = full / 16 * 16
		}
		for ; t < full; t++ {
			row[t] = pairBF16(alpha*src[2*t], alpha*src[2*t+1])
		}
		if full < kc {
			row[full] = toBF16(alpha * src[2*full])
		}
		clear(row[kc:])
	}
}
