package kernels

// Products with int8 activations (the backend option actq8=true): x·Wᵀ with W stored as Q8_0
// or Q4_0, where each row of x is first quantized to Q8_0 blocks as llama.cpp does (ggml's
// reference rounding, layers/quant: d = max|x|/127, q = round(x/d)), so that every block of 32
// is an exact integer dot product, scaled once by d_x·d_w:
//
//	y = Σ_b d_x[b]·d_w[b] · Σ_{j in b} q_x[j]·q_w[j]
//
// This changes the numbers (x loses its low bits, as in llama.cpp's Q8_0 path); the
// float32-activation kernels (quant.go) stay available with actq8=false. With AVX-512
// VNNI (vpdpbusd: 64 int8 multiply-adds per instruction) the integer dot runs in
// vnni_amd64.s; with AVX2 in actgemm_avx2_amd64.s (as the products of many rows do); with the
// portable kernels forced, in Go below.
//
// vpdpbusd multiplies unsigned bytes by signed bytes. The kernels make the unsigned operand
// non-negative by an offset whose correction depends on x only, so it is computed once per
// product instead of once per weight row:
//
//	Q8_0: Σ q_x·q_w = Σ q_x·(q_w + 128) − 128·Σ q_x    (q_w + 128 is q_w with its top bit flipped)
//	Q4_0: Σ q_x·(n − 8) = Σ q_x·n − 8·Σ q_x             (n, the stored nibble, is already unsigned)
//
// The other way, |x| against the weight's sign-flipped copy, costs a mask and a masked
// subtraction per weight vector and row, and is wrong for a weight of −128 (its negation does not
// fit in int8); the offset costs one xor (Q8_0) or nothing (Q4_0) and holds for every byte.

import (
	"fmt"
	"unsafe"

	"github.com/posformer/posformer/layers/quant"
	cpuid "golang.org/x/sys/cpu"
)

// vnniCPU reports whether the CPU has the instructions of vnni_amd64.s.
var vnniCPU = cpuid.X86.HasAVX512F && cpuid.X86.HasAVX512BW && cpuid.X86.HasAVX512VNNI

// VNNI reports whether the int8 kernels run in assembly: the CPU has VNNI and the AVX-512
// kernel set is in use (SetPath("generic") or $POSFORMER_KERNELS=generic selects the Go
// integer path, as it selects the portable float32 kernels).
func VNNI() bool { return haveVNNIAsm && vnniCPU && quantKernels() == quantAVX512 }

// ActRow is one row of x quantized to Q8_0, in one of two forms. The plain one: q and d in
// ggml's order, which the portable path and the AVX2 kernel for Q8_0 weights read, and q4 and o,
// the same values paired for the AVX2 kernel for Q4_0 weights (see pairQ4). The VNNI one (when
// its assembly runs): vq, vc and vd, the values laid out for it in pairs of blocks (see
// layoutAct). The form is chosen once, when x is quantized, so a call finishes on the kernels it
// started with even if the kernel set changes meanwhile.
type ActRow struct {
	q  []int8
	d  []float32
	s  []int32 // 8·Σ q over each block, for the row-group kernels (group.go)
	q4 []int8
	o  []int16
	vq []int8
	vc []int32
	vd []float32
}

// actPairs is the number of 64-value pairs of blocks of a row of k (the last one may be half).
func actPairs(k int) int { return (k/32 + 1) / 2 }

// ActRowBytes is the scratch one row of x of k needs (k a multiple of 32), in either form; every
// part keeps the 64-byte alignment of the slot it starts in.
func ActRowBytes(k int) int {
	np := actPairs(k)
	return max(align64(k)+2*align64(4*k/32)+align64(64*np)+align64(32*np), 3*64*np)
}

func align64(n int) int { return (n + 63) &^ 63 }

// ActView is the row of x of k quantized in buf (ActRowBytes(k) bytes), in the form of the
// assembly when layout is set. It only slices buf, so a step can take views without allocating.
func ActView(buf []byte, k int, layout bool) ActRow {
	var a ActRow
	off := 0
	take := func(n int) []byte { b := buf[off : off+n]; off += align64(n); return b }
	if layout {
		np := actPairs(k)
		a.vq = bytesAs[int8](take(64 * np))
		a.vc = bytesAs[int32](take(64 * np))
		a.vd = bytesAs[float32](take(64 * np))
	} else {
		a.q = bytesAs[int8](take(k))
		a.d = bytesAs[float32](take(4 * k / 32))
		a.s = bytesAs[int32](take(4 * k / 32))
		a.q4 = bytesAs[int8](take(64 * actPairs(k)))
		a.o = bytesAs[int16](take(32 * actPairs(k)))
	}
	return a
}

// QuantizeAct quantizes x (one row of k, a multiple of 32) into buf (ActRowBytes(k) bytes) for
// products with typ weights: with layers/quant's rounding in Go, or when layout is set (only
// where VNNI) by the assembly straight into its layout, with the same rounding bit for bit
// (vnni_amd64.s; tested against layoutAct). That holds for finite x: a row holding an
// infinity or NaN gets an infinite scale, and its products are not finite on either path.
func QuantizeAct(typ quant.Type, x []float32, buf []byte, layout bool) (ActRow, error) {
	k := len(x)
	a := ActView(buf, k, layout)
	if layout {
		actQuantize(typ, x, &a)
		return a, nil
	}
	if IntAsm() {
		quantizeRowAsm(x, a.q, a.d, a.s)
		pairQ4Asm(a.q, a.q4, a.o)
		return a, nil
	}
	if err := quant.QuantizeSplit(quant.Q8_0, x, bytesAs[byte](buf[:k]), a.d); err != nil {
		return a, fmt.Errorf("quantizing activations: %w", err)
	}
	pairQ4(a.q, a.q4, a.o)
	blockSums(a.q, a.s)
	return a, nil
}

// pairQ4 arranges a row of x quantized in ggml's order (q) for the AVX2 kernel for Q4_0 weights
// (q4), with its part of Q4_0's offset (o). That kernel takes two blocks A, B of a weight row at
// a time, 32 bytes of nibbles: the low nibbles are elements 0-15 of A then of B, the high ones
// elements 16-31 of A then of B. So q4 holds per pair of blocks A[0:16], B[0:16], A[16:32],
// B[16:32] (layoutAct's order for Q4_0; zeros stand for a missing B), the bytes each nibble
// multiplies. The kernel adds the int16 pair sums of the two halves, so word i of a pair sums
// four elements, at bytes 2i, 2i+1, 32+2i and 33+2i of the pair; a weight is a nibble n with
// w = n − 8, so those four products are Σ n·x − 8·Σ x, and the second term depends on x alone:
// it is computed here once per row of x instead of once per weight row, o[16p+i] = 8·Σ x over
// those four bytes. Every path fills q4 and o, whatever the weights' type: siblings of one step
// (Q8_0 and Q4_0 weights) share a row of x quantized once, and a row quantized by the Go path
// stays right if the kernel set changes before the product.
func pairQ4(q []int8, q4 []int8, o []int16) {
	nb := len(q) / 32
	for p := range actPairs(len(q)) {
		v := q4[64*p : 64*p+64]
		for i := range v {
			v[i] = 0
			if b := 2*p + (i/16)%2; b < nb {
				v[i] = q[32*b+i%16+16*(i/32)]
			}
		}
		for i := range 16 {
			o[16*p+i] = 8*(int16(v[2*i])+int16(v[2*i+1])) + 8*(int16(v[32+2*i])+int16(v[33+2*i]))
		}
	}
}

// layoutAct arranges a row quantized in ggml's order (q, d) for the kernels (vq, vc, vd), one
// 64-byte vector per pair of blocks A, B (zeros stand for a missing B). It states in Go what the
// assembly quantizer writes. The sixteen int32 lanes of vpdpbusd each sum four adjacent bytes,
// so the bytes are placed where the weight bytes they multiply land in the register:
//
//	Q8_0: q_x of A, then of B (the weights' order);
//	Q4_0: A[0:16], B[0:16], A[16:32], B[16:32] (the kernel puts the low nibbles of A and B,
//	      then their high nibbles: element j of a block is in byte j's low nibble, j+16 in its
//	      high one).
//
// vc holds each lane's offset correction (−128 or −8 times the lane's four q_x) and vd each
// lane's d_x, so the kernel starts every lane's sum at vc and scales it by vd·d_w.
func layoutAct(typ quant.Type, q []int8, d []float32, vq []int8, vc []int32, vd []float32) {
	nb := len(d)
	// Byte i of a pair's vector holds element pos[i] of block blk[i] of the pair.
	var blk, pos [64]int
	for i := range 64 {
		if typ == quant.Q8_0 {
			blk[i], pos[i] = i/32, i%32
		} else {
			blk[i], pos[i] = (i/16)%2, i%16+16*(i/32)
		}
	}
	corr := int32(-128)
	if typ == quant.Q4_0 {
		corr = -8
	}
	for p := range actPairs(32 * nb) {
		v := vq[64*p : 64*p+64]
		for i := range 64 {
			v[i] = 0
			if b := 2*p + blk[i]; b < nb {
				v[i] = q[32*b+pos[i]]
			}
		}
		for l := range 16 {
			s := int32(v[4*l]) + int32(v[4*l+1]) + int32(v[4*l+2]) + int32(v[4*l+3])
			vc[16*p+l] = corr * s
			vd[16*p+l] = 0
			if b := 2*p + blk[4*l]; b < nb {
				vd[16*p+l] = d[b]
			}
		}
	}
}

// ActDotRows computes y[r] = x·W[r] for the rows of y, x quantized (a), W a stored Q8_0 (q as
// int8) or Q4_0 (q as nibble bytes) matrix with rows of k and scales d.
func ActDotRows(typ quant.Type, q []byte, d []float32, k int, a *ActRow, y []float32) {
	if len(y) == 0 {
		return
	}
	if a.vq != nil {
		if typ == quant.Q8_0 {
			q8ActDotRows(bytesAs[int8](q), d, a, y, k/32)
		} else {
			q4ActDotRows(q, d, a, y, k/32)
		}
		return
	}
	if IntAsm() {
		actGemm1(typ, q, d, a, y, k/32)
		return
	}
	if typ == quant.Q8_0 {
		q8ActDotRowsGo(bytesAs[int8](q), d, a.q, a.d, y)
	} else {
		q4ActDotRowsGo(q, d, a.q, a.d, y)
	}
}

// q8ActDotRowsGo is the portable integer path: per block an exact int32 sum, then scaled.
func q8ActDotRowsGo(q []int8, d []float32, xq []int8, xd []float32, y []float32) {
	nb := len(xd)
	k := 32 * nb
	for r := range y {
		w := q[r*k : r*k+k]
		var s float32
		for b := range nb {
			wb, xb := w[32*b:32*b+32], xq[32*b:32*b+32]
			var sum int32
			for j := range 32 {
				sum += int32(wb[j]) * int32(xb[j])
			}
			s += float32(sum) * (xd[b] * d[r*nb+b])
		}
		y[r] = s
	}
}

// q4ActDotRowsGo is q8ActDotRowsGo for Q4_0: byte j of a block holds elements j and j+16.
func q4ActDotRowsGo(q []uint8, d []float32, xq []int8, xd []float32, y []float32) {
	nb := len(xd)
	for r := range y {
		w := q[r*16*nb : (r+1)*16*nb]
		var s float32
		for b := range nb {
			wb, xb := w[16*b:16*b+16], xq[32*b:32*b+32]
			var sum int32
			for j, v := range wb {
				sum += (int32(v&15)-8)*int32(xb[j]) + (int32(v>>4)-8)*int32(xb[j+16])
			}
			s += float32(sum) * (xd[b] * d[r*nb+b])
		}
		y[r] = s
	}
}

// bytesAs views a byte buffer as a slice of T (the scratch a row of x is quantized into).
func bytesAs[T any](data []byte) []T {
	if len(data) == 0 {
		return nil
	}
	var z T
	return unsafe.Slice((*T)(unsafe.Pointer(&data[0])), len(data)/int(unsafe.Sizeof(z)))
}
