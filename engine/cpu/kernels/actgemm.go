package kernels

// Products of many rows of x with Q8_0 or Q4_0 weights on integer arithmetic (prefill with the
// backend option actq8): every row of x is quantized to Q8_0 blocks as ggml does (vnni.go says
// how), each block of a row against a block of a weight row is an exact integer dot product, and
// the blocks are summed in float32 times their two scales. The float32 route (a panel of W
// dequantized, then the float32 GEMM) writes and reads every weight as four bytes and does its
// multiply-adds in float; this one reads the stored bytes and does 32 multiply-adds in a handful
// of integer instructions.
//
// One row of x (decoding) takes the same integer products where the CPU has AVX2 but not
// AVX-512 VNNI (ActDotRows). On amd64 with AVX2 both run in actgemm_avx2_amd64.s, and the GEMM's
// tiles in actgemm_vnni_amd64.s where the CPU has AVX-512 VNNI; with the generic kernel set,
// actGemmGo below does the GEMM's operations in the same order, so all three agree to the bit
// (TestActGemmAssemblyMatchesGo), and actDotLanesGo states the one-row kernel's.

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/posformer/posformer/engine/cpu/internal/freelist"
	"github.com/posformer/posformer/layers/quant"
)

// IntAsm reports whether the products with int8 activations run in assembly: AVX-512 VNNI's
// for decoding's rows where the CPU has it (VNNI), this file's AVX2 kernels for the rest.
func IntAsm() bool { return haveActGemmAsm && quantKernels() != noQuantAsm }

// ActRows is m rows of x of k quantized for ActGemm, padded with rows of zeros to a multiple of
// four: the values row by row, and the scales of each group of four rows interleaved ([block][row
// of the group]), the order the kernel walks them; s, interleaved as d and only for Q4_0
// weights (and Q8_0's on the VNNI tiles), holds 8 times each block's sum of values, from which
// the kernels take off the offset that made the weights unsigned (see blockSum).
type ActRows struct {
	M, K int
	q    []int8
	d    []float32
	s    []int32
	rawD []float32 // the scales row by row, as quantized, before interleaving
	rawS []int32   // the sums likewise
}

// ActRowsBytes is the scratch QuantizeActRows needs for m rows of k (a multiple of 32).
func ActRowsBytes(m, k int) int {
	mp := (m + 3) &^ 3
	return align64(mp*k) + 4*align64(4*mp*k/32)
}

// QuantizeActRows quantizes the m rows of x (k values each, ldx apart) into buf
// (ActRowsBytes(m, k) bytes) with layers/quant's Q8_0 rounding, for ActGemm with typ weights
// (Q4_0's also need the blocks' sums).
func QuantizeActRows(typ quant.Type, x []float32, m, k, ldx int, buf []byte) (ActRows, error) {
	a, err := ActRowsView(typ, m, k, buf)
	if err != nil {
		return a, err
	}
	return a, a.QuantizeGroups(x, ldx, 0, a.Groups())
}

// ActRowsView lays out buf (ActRowsBytes(m, k) bytes) for m rows of k quantized for ActGemm with
// typ weights; QuantizeGroups fills it.
func ActRowsView(typ quant.Type, m, k int, buf []byte) (ActRows, error) {
	if k%32 != 0 || len(buf) < ActRowsBytes(m, k) {
		return ActRows{}, fmt.Errorf("quantizing %d rows of %d: want k a multiple of 32 and %d bytes of scratch, got %d", m, k, ActRowsBytes(m, k), len(buf))
	}
	nb, mp := k/32, (m+3)&^3
	a := ActRows{M: m, K: k, q: bytesAs[int8](buf[:mp*k])}
	off := align64(mp * k)
	area := func(i int) []byte { return buf[off+i*align64(4*mp*nb) : off+i*align64(4*mp*nb)+4*mp*nb] }
	a.d = bytesAs[float32](area(0))
	a.rawD = bytesAs[float32](area(1)) // the scales row by row, as quantized (rawS: the sums)
	if typ == quant.Q4_0 || typ == quant.Q8_0 && vnniTiles() {
		a.s, a.rawS = bytesAs[int32](area(2)), bytesAs[int32](area(3))
	}
	return a, nil
}

// Groups is how many groups of four rows a holds (the last padded with rows of zeros).
func (a *ActRows) Groups() int { return (a.M + 3) / 4 }

// QuantizeGroups quantizes rows [4·g0, 4·g1) of x (K values each, ldx apart) into a. The groups
// of four rows that ActGemm walks are independent of one another, so threads may quantize
// groups of their own.
func (a *ActRows) QuantizeGroups(x []float32, ldx, g0, g1 int) error {
	k, nb := a.K, a.K/32
	r0, r1 := 4*g0, min(4*g1, a.M)
	if g0 < 0 || g1 > a.Groups() || r1 > r0 && len(x) < (r1-1)*ldx+k {
		return fmt.Errorf("quantizing groups %d to %d of %d rows of %d: %d values, want %d", g0, g1, a.M, k, len(x), (r1-1)*ldx+k)
	}
	raw, rawS := a.rawD, a.rawS
	asm := IntAsm()
	for i := r0; i < r1; i++ {
		xi, qi, di := x[i*ldx:i*ldx+k], a.q[i*k:i*k+k], raw[i*nb:i*nb+nb]
		var si []int32
		if rawS != nil {
			si = rawS[i*nb : i*nb+nb]
		}
		if asm {
			quantizeRowAsm(xi, qi, di, si)
			continue
		}
		if err := quant.QuantizeSplit(quant.Q8_0, xi, unsafe.Slice((*byte)(unsafe.Pointer(&qi[0])), k), di); err != nil {
			return fmt.Errorf("quantizing activations: %w", err)
		}
		for b := range si {
			si[b] = 8 * blockSum(qi[32*b:])
		}
	}
	if pad := max(r1, r0); pad < 4*g1 { // the last group's rows past m
		clear(a.q[pad*k : 4*g1*k])
		clear(raw[pad*nb : 4*g1*nb])
		if rawS != nil {
			clear(rawS[pad*nb : 4*g1*nb])
		}
	}
	for g := 4 * g0; g < 4*g1; g += 4 {
		for b := range nb {
			for r := range 4 {
				a.d[g*nb+4*b+r] = raw[(g+r)*nb+b]
			}
		}
		if rawS != nil {
			for b := range nb {
				for r := range 4 {
					a.s[g*nb+4*b+r] = rawS[(g+r)*nb+b]
				}
			}
		}
	}
	return nil
}

// blockSum is the sum of the 32 values of a block of x. Q4_0's weights are nibbles n with
// w = n − 8, so a block's product is Σ n·x − 8·Σx: its kernel multiplies the unsigned nibbles
// as they are (no sign trick, and eight chunks' pair sums fit int16) and takes 8·Σx off. Eight
// bytes at a time: biased by 128 to be unsigned, their pairs summed into 16-bit lanes, which
// four words cannot overflow (4 · 2 · 255).
func blockSum(q []int8) int32 {
	w := bytesAs[uint64](unsafe.Slice((*byte)(unsafe.Pointer(&q[0])), 32))
	const bias, even = 0x8080808080808080, 0x00ff00ff00ff00ff
	var lanes uint64
	for _, v := range w[:4] {
		v ^= bias
		lanes += v&even + (v>>8)&even
	}
	return int32((lanes*0x0001000100010001)>>48) - 32*128
}

// ActGemm computes y[i·ldy + j] = x[i]·W[j] for the a.M rows of x and the n rows of W, stored
// as typ (Q8_0: q as int8, Q4_0: nibble bytes) with scales d: in assembly a panel of eight
// weight rows at a time (packPanel) against every four rows of x, in Go (actGemmGo) with the
// same arithmetic.
func ActGemm(typ quant.Type, a *ActRows, q []byte, d []float32, n int, y []float32, ldy int) {
	m, k := a.M, a.K
	nb := k / 32
	if len(q) < n*storedRowBytes(typ, k) || len(d) < n*nb || (m > 0 && n > 0 && len(y) < (m-1)*ldy+n) {
		panic(fmt.Sprintf("ActGemm: %d×%d by %d rows of %d, got %d bytes, %d scales, y of %d", m, k, n, k, len(q), len(d), len(y)))
	}
	if typ == quant.Q4_0 && a.s == nil {
		panic("ActGemm: Q4_0 weights need x quantized for them (QuantizeActRows with quant.Q4_0)")
	}
	if m == 0 || n == 0 {
		return
	}
	if nb == 0 {
		for i := range m {
			clear(y[i*ldy : i*ldy+n])
		}
		return
	}
	if !IntAsm() {
		actGemmGo(typ, a, q, d, n, y, ldy)
		return
	}
	// The weights are packed once, a panel of eight rows at a time; then rows of x go through
	// in blocks of about 128 KB that stay in L2 while every panel (7 KB at k = 768) passes over
	// them from L1: taking all of x per panel would stream it from L3 once per eight weight rows.
	// Q8_0 on the VNNI tile: the panel's values biased to unsigned, 128·Σx taken off per block.
	unsigned := typ == quant.Q8_0 && a.s != nil && vnniTiles()
	panels := (n + 7) / 8
	pb := panelBytes(nb)
	buf := packs.Get(panels * pb)
	defer packs.Put(buf)
	for p := range panels {
		pq, pd := panelParts(buf[p*pb:(p+1)*pb], nb)
		packPanel(typ, q, d, k, 8*p, min(8, n-8*p), pq, pd, unsigned)
	}
	block := max(4, (128<<10)/k&^3)
	var tile [4 * 8]float32 // a tile cut by the last rows or columns
	for r0 := 0; r0 < m; r0 += block {
		r1 := min(m, r0+block)
		for p := range panels {
			pq, pd := panelParts(buf[p*pb:(p+1)*pb], nb)
			p0 := 8 * p
			cols := min(8, n-p0)
			for g := r0; g < r1; g += 4 {
				xq, xd := a.q[g*k:(g+4)*k], a.d[g*nb:(g+4)*nb]
				var xs []int32
				if a.s != nil {
					xs = a.s[g*nb : (g+4)*nb]
				}
				rows := min(4, m-g)
				edge := rows < 4 || cols < 8
				dst, ld := y[g*ldy+p0:], ldy
				if edge {
					dst, ld = tile[:], 8
				}
				switch {
				case typ == quant.Q4_0:
					q4ActGemm4x8(pq, pd, xq, xd, xs, dst, ld, nb)
				case unsigned:
					q8uActGemm4x8(pq, pd, xq, xd, xs, dst, ld, nb)
				default:
					actGemm4x8(pq, pd, xq, xd, dst, ld, nb)
				}
				if edge {
					for r := range rows {
						copy(y[(g+r)*ldy+p0:(g+r)*ldy+p0+cols], tile[8*r:8*r+cols])
					}
				}
			}
		}
	}
}

// biasPanel adds 128 to a panel's signed values, making them the unsigned bytes VPDPBUSD
// multiplies (a bit flip: w + 128 = w XOR 0x80 for int8 w), eight at a time.
func biasPanel(pq []int8) {
	w := unsafe.Slice((*uint64)(unsafe.Pointer(&pq[0])), len(pq)/8)
	for i := range w {
		w[i] ^= 0x8080808080808080
	}
}

// panelParts views a packed panel's bytes as its values and its scales.
func panelParts(b []byte, nb int) ([]int8, []float32) {
	return bytesAs[int8](b[:256*nb]), bytesAs[float32](b[256*nb : 288*nb])
}

// packs are the panels' scratch buffers, reused across calls and threads.
var packs = freelist.New(freelist.Config[byte]{Max: freelist.PerCPU})

// panelBytes is the size of a packed panel of eight weight rows of nb blocks: the values, then
// the scales.
func panelBytes(nb int) int { return 256*nb + 32*nb }

// storedRowBytes is the bytes of one stored weight row of k values.
func storedRowBytes(typ quant.Type, k int) int {
	if typ == quant.Q4_0 {
		return k / 2
	}
	return k
}

// packPanel lays out weight rows p0..p0+cols-1 (up to eight; the rest of the panel zeros) for
// actGemm4x8: per block, chunk c (32 bytes) holds elements 4c..4c+3 of each row as signed
// bytes (Q8_0) or as Q4_0's nibbles n, unsigned bytes for q4ActGemm4x8, row r at bytes
// 4r..4r+3; pd holds the eight rows' scales per block. biased adds 128 to Q8_0's values, the
// unsigned bytes of the VNNI tile.
func packPanel(typ quant.Type, q []byte, d []float32, k, p0, cols int, pq []int8, pd []float32, biased bool) {
	nb := k / 32
	dst := chunksOf(pq)
	if cols < 8 {
		clear(dst)
		clear(pd)
	}
	for r := range cols {
		for b := range nb {
			pd[8*b+r] = d[(p0+r)*nb+b]
		}
	}
	rowBytes := storedRowBytes(typ, k)
	if cols == 8 && IntAsm() {
		packValuesAsm(typ, q[p0*rowBytes:], rowBytes, pq, nb, biased)
		return
	}
	if biased {
		defer biasPanel(pq)
	}
	var w [32]int8
	for r := range cols {
		j := p0 + r
		for b := range nb {
			var src []uint32
			if typ == quant.Q8_0 {
				src = bytesAs[uint32](q[j*k+32*b : j*k+32*b+32])
			} else {
				unpackBlock(typ, q, j*nb+b, &w)
				for e := range w {
					w[e] += 8 // the nibble
				}
				src = chunksOf(w[:])
			}
			for c := range 8 {
				dst[64*b+8*c+r] = src[c]
			}
		}
	}
}

// chunksOf views signed bytes as chunks of four.
func chunksOf(b []int8) []uint32 {
	return unsafe.Slice((*uint32)(unsafe.Pointer(&b[0])), len(b)/4)
}

// actGemmGo is ActGemm's arithmetic in Go: per block of a row of x and a weight row the exact
// int32 sum, converted to float32 and fused-multiply-added into the product with d_x·d_w.
func actGemmGo(typ quant.Type, a *ActRows, q []byte, d []float32, n int, y []float32, ldy int) {
	k := a.K
	nb := k / 32
	var w [32]int8
	for i := range a.M {
		g, r := i&^3, i&3
		for j := range n {
			var acc float32
			for b := range nb {
				unpackBlock(typ, q, j*nb+b, &w)
				var sum int32
				for e, v := range a.q[i*k+32*b : i*k+32*b+32] {
					sum += int32(w[e]) * int32(v)
				}
				acc = fma32(float32(sum), a.d[g*nb+4*b+r]*d[j*nb+b], acc)
			}
			y[i*ldy+j] = acc
		}
	}
}

// actDotLanesGo is the one-row kernels' arithmetic (decoding without VNNI, ActDotRows) in Go.
// For Q8_0 weights: per block eight int32 lanes, lane l the sum of the products of elements
// 4l..4l+3; each lane converted to float32 and fused-multiply-added with d_x·d_w into an
// accumulator, even blocks into one and odd blocks into another (two chains of FMAs, so the
// kernel does not wait on one); the two added lane by lane, then the lanes summed at the end as
// the assembly's HSUM does. Q4_0's kernel takes two blocks at a time (q4DotLanesGo).
func actDotLanesGo(typ quant.Type, q []byte, d []float32, xq []int8, xd []float32, y []float32) {
	if typ == quant.Q4_0 {
		q4DotLanesGo(q, d, xq, xd, y)
		return
	}
	nb := len(xd)
	var w [32]int8
	for j := range y {
		var acc [2][8]float32
		for b := range nb {
			unpackBlock(typ, q, j*nb+b, &w)
			s := xd[b] * d[j*nb+b]
			x := xq[32*b : 32*b+32]
			for l := range 8 {
				var lane int32
				for e := 4 * l; e < 4*l+4; e++ {
					lane += int32(w[e]) * int32(x[e])
				}
				acc[b%2][l] = fma32(float32(lane), s, acc[b%2][l])
			}
		}
		var v [8]float32
		for l := range v {
			v[l] = acc[0][l] + acc[1][l]
		}
		y[j] = hsum8(v)
	}
}

// q4DotLanesGo is the arithmetic of the AVX2 kernel for Q4_0 weights: blocks go in pairs A, B
// (blocks 2p and 2p+1) as one vector of eight int32 lanes, lanes 0-3 A's and 4-7 B's, lane l
// of a block the sum of the products of elements 4l..4l+3 and 16+4l..16+4l+3. Each lane is
// converted to float32 and fused-multiply-added with its block's d_x·d_w into accumulator p%4
// (four chains of FMAs). A last block without its B has lanes of zeros there, scaled by A's
// product. Then (acc0 + acc2) + (acc1 + acc3) lane by lane, and the lanes summed as for Q8_0.
func q4DotLanesGo(q []byte, d []float32, xq []int8, xd []float32, y []float32) {
	nb := len(xd)
	var w [32]int8
	for j := range y {
		var acc [4][8]float32
		for p := 0; 2*p < nb; p++ {
			for l := range 8 {
				b, first := 2*p+l/4, 4*(l%4)
				s := xd[2*p] * d[j*nb+2*p]
				var lane int32
				if b < nb {
					s = xd[b] * d[j*nb+b]
					unpackBlock(quant.Q4_0, q, j*nb+b, &w)
					x := xq[32*b : 32*b+32]
					for e := first; e < first+4; e++ {
						lane += int32(w[e])*int32(x[e]) + int32(w[e+16])*int32(x[e+16])
					}
				}
				acc[p%4][l] = fma32(float32(lane), s, acc[p%4][l])
			}
		}
		var v [8]float32
		for l := range v {
			v[l] = (acc[0][l] + acc[2][l]) + (acc[1][l] + acc[3][l])
		}
		y[j] = hsum8(v)
	}
}

// hsum8 sums eight lanes as the assembly's HSUM does: (l0+l4)+(l2+l6) + (l1+l5)+(l3+l7).
func hsum8(v [8]float32) float32 {
	return ((v[0] + v[4]) + (v[2] + v[6])) + ((v[1] + v[5]) + (v[3] + v[7]))
}

// unpackBlock writes block i of a stored matrix as signed bytes in element order.
func unpackBlock(typ quant.Type, q []byte, i int, w *[32]int8) {
	if typ == quant.Q8_0 {
		for e, v := range q[32*i : 32*i+32] {
			w[e] = int8(v)
		}
		return
	}
	for e, v := range q[16*i : 16*i+16] {
		w[e] = int8(v&15) - 8
		w[e+16] = int8(v>>4) - 8
	}
}

// fma32 is a·b + c rounded once to float32, as VFMADD231PS does. a·b is exact in float64 (24+24
// bits), so only the final sum is rounded twice (to float64, then float32); that can differ
// from one rounding only when the float64 sum lies within 2⁻⁵³ of a float32 tie, which the tests'
// data never hits.
func fma32(a, b, c float32) float32 {
	return float32(math.FMA(float64(a), float64(b), float64(c)))
}
