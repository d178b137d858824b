// Package quant holds the number formats in which posformer stores weights: float32, the two
// 16-bit floats (IEEE half and bfloat16) and ggml's block formats Q8_0 and Q4_0, as llama.cpp's
// GGUF files store them.
//
// A block format cuts a row into blocks of 32 values sharing one scale d (a half float):
//
//	Q8_0: 34 bytes = d, then 32 int8 q;              value_j = d·q_j
//	Q4_0: 18 bytes = d, then 16 bytes of nibbles;    value_j = d·(nibble_j − 8)
//
// where byte i of a Q4_0 block holds element i in its low nibble and element i+16 in its high
// one. Quantize rounds as ggml's reference quantizers do, so a file written here and one written
// by llama.cpp hold the same bytes for the same floats.
//
// In memory, posformer keeps a quantized matrix split in two arrays (quantized values, and the
// scales widened to float32) so that kernels read each with aligned loads: Split and the
// QuantizeSplit functions give that layout.
package quant

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
)

// Type is a storage format of weights.
type Type int

// The formats, in order of decreasing size.
const (
	F32 Type = iota
	F16
	BF16
	Q8_0
	Q4_0
)

var names = [...]string{F32: "f32", F16: "f16", BF16: "bf16", Q8_0: "q8_0", Q4_0: "q4_0"}

// String is the lower-case name llama.cpp uses ("f32", "q8_0", ...).
func (t Type) String() string {
	if t >= 0 && int(t) < len(names) {
		return names[t]
	}
	return fmt.Sprintf("quant.Type(%d)", int(t))
}

// Names lists the formats, for messages.
func Names() string { return strings.Join(names[:], ", ") }

// Parse reads a format name, in any case.
func Parse(s string) (Type, error) {
	for t, n := range names {
		if strings.EqualFold(s, n) {
			return Type(t), nil
		}
	}
	return 0, fmt.Errorf("unknown weight type %q (valid: %s)", s, Names())
}

// BlockSize is the number of values that share a scale (1 for the float formats).
func (t Type) BlockSize() int {
	if t == Q8_0 || t == Q4_0 {
		return 32
	}
	return 1
}

// BlockBytes is the size of one block in bytes.
func (t Type) BlockBytes() int {
	switch t {
	case F32:
		return 4
	case F16, BF16:
		return 2
	case Q8_0:
		return 34
	case Q4_0:
		return 18
	}
	return 0
}

// Quantized reports whether t is a block format.
func (t Type) Quantized() bool { return t.BlockSize() > 1 }

// Bytes is the size of n values stored as t; an error when n is not a whole number of blocks.
func (t Type) Bytes(n int) (int, error) {
	bs := t.BlockSize()
	if t.BlockBytes() == 0 {
		return 0, fmt.Errorf("unknown weight type %v", t)
	}
	if n < 0 || n%bs != 0 {
		return 0, fmt.Errorf("%d values are not a whole number of %v blocks of %d", n, t, bs)
	}
	if n/bs > math.MaxInt/t.BlockBytes() {
		return 0, fmt.Errorf("%d values of %v overflow a size", n, t)
	}
	return n / bs * t.BlockBytes(), nil
}

// Dequantize widens src (len(dst) values stored as t) into dst.
func Dequantize(t Type, src []byte, dst []float32) error {
	want, err := t.Bytes(len(dst))
	if err != nil {
		return err
	}
	if len(src) != want {
		return fmt.Errorf("%d values of %v take %d bytes, got %d", len(dst), t, want, len(src))
	}
	switch t {
	case F32:
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
		}
	case F16:
		for i := range dst {
			dst[i] = F16ToF32(binary.LittleEndian.Uint16(src[2*i:]))
		}
	case BF16:
		for i := range dst {
			dst[i] = BF16ToF32(binary.LittleEndian.Uint16(src[2*i:]))
		}
	case Q8_0:
		for b := 0; b < len(dst)/32; b++ {
			blk := src[34*b : 34*b+34]
			d := F16ToF32(binary.LittleEndian.Uint16(blk))
			for j := range 32 {
				dst[32*b+j] = d * float32(int8(blk[2+j]))
			}
		}
	case Q4_0:
		for b := 0; b < len(dst)/32; b++ {
			blk := src[18*b : 18*b+18]
			d := F16ToF32(binary.LittleEndian.Uint16(blk))
			for j := range 16 {
				dst[32*b+j] = d * float32(int(blk[2+j]&15)-8)
				dst[32*b+j+16] = d * float32(int(blk[2+j]>>4)-8)
			}
		}
	}
	return nil
}

// Quantize stores src as t, rounding as ggml's reference quantizers do.
func Quantize(t Type, src []float32) ([]byte, error) {
	n, err := t.Bytes(len(src))
	if err != nil {
		return nil, err
	}
	out := make([]byte, n)
	switch t {
	case F32:
		for i, v := range src {
			binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(v))
		}
	case F16:
		for i, v := range src {
			binary.LittleEndian.PutUint16(out[2*i:], F32ToF16(v))
		}
	case BF16:
		for i, v := range src {
			binary.LittleEndian.PutUint16(out[2*i:], F32ToBF16(v))
		}
	case Q8_0:
		var q [32]int8
		for b := 0; b < len(src)/32; b++ {
			d := quantizeQ8(src[32*b:32*b+32], q[:])
			blk := out[34*b : 34*b+34]
			binary.LittleEndian.PutUint16(blk, d)
			for j := range 32 {
				blk[2+j] = byte(q[j])
			}
		}
	case Q4_0:
		var q [16]uint8
		for b := 0; b < len(src)/32; b++ {
			d := quantizeQ4(src[32*b:32*b+32], q[:])
			blk := out[18*b : 18*b+18]
			binary.LittleEndian.PutUint16(blk, d)
			copy(blk[2:], q[:])
		}
	}
	return out, nil
}

// quantizeQ8 is ggml's quantize_row_q8_0_ref for one block: d = max|x|/127 and q = round(x/d),
// where the quotient uses d before it is rounded to a half float (as ggml does).
func quantizeQ8(x []float32, q []int8) uint16 {
	var amax float32
	for _, v := range x {
		amax = max(amax, float32(math.Abs(float64(v))))
	}
	d := amax / 127
	var id float32
	if d != 0 {
		id = 1 / d
	}
	for j, v := range x {
		q[j] = int8(math.Round(float64(v * id)))
	}
	return F32ToF16(d)
}

// quantizeQ4 is ggml's quantize_row_q4_0_ref for one block: the value of largest magnitude,
// with its sign, maps to −8, so d = max/−8, and q = min(15, trunc(x/d + 8.5)).
func quantizeQ4(x []float32, q []uint8) uint16 {
	var amax, mx float32
	for _, v := range x {
		if a := float32(math.Abs(float64(v))); a > amax {
			amax, mx = a, v
		}
	}
	d := mx / -8
	var id float32
	if d != 0 {
		id = 1 / d
	}
	nib := func(v float32) uint8 { return uint8(min(15, int8(float32(v*id)+8.5))) }
	for j := range 16 {
		q[j] = nib(x[j]) | nib(x[j+16])<<4
	}
	return F32ToF16(d)
}

// Split converts src (n values stored as Q8_0 or Q4_0, ggml's layout) into posformer's
// in-memory layout: the quantized values q (n int8 for Q8_0 as bytes, n/2 nibble bytes for
// Q4_0, in ggml's order) and one float32 scale per block in d (n/32).
func Split(t Type, src []byte, q []byte, d []float32) error {
	if !t.Quantized() {
		return fmt.Errorf("split: %v is not a block format", t)
	}
	n := 32 * len(d)
	want, err := t.Bytes(n)
	if err != nil {
		return err
	}
	qb := t.BlockBytes() - 2
	if len(src) != want || len(q) != len(d)*qb {
		return fmt.Errorf("split: %d blocks of %v want %d bytes and %d values, got %d and %d", len(d), t, want, len(d)*qb, len(src), len(q))
	}
	for b := range d {
		blk := src[b*(qb+2) : (b+1)*(qb+2)]
		d[b] = F16ToF32(binary.LittleEndian.Uint16(blk))
		copy(q[b*qb:(b+1)*qb], blk[2:])
	}
	return nil
}

// QuantizeSplit quantizes src straight into the split layout (see Split), with the same
// rounding as Quantize.
func QuantizeSplit(t Type, src []float32, q []byte, d []float32) error {
	if !t.Quantized() {
		return fmt.Errorf("split: %v is not a block format", t)
	}
	qb := t.BlockBytes() - 2
	if len(src) != 32*len(d) || len(q) != len(d)*qb {
		return fmt.Errorf("split: %d values as %v want %d scales and %d bytes, got %d and %d", len(src), t, len(src)/32, len(src)/32*qb, len(d), len(q))
	}
	var q8 [32]int8
	for b := range d {
		x := src[32*b : 32*b+32]
		var h uint16
		if t == Q8_0 {
			h = quantizeQ8(x, q8[:])
			for j, v := range q8 {
				q[32*b+j] = byte(v)
			}
		} else {
			h = quantizeQ4(x, q[16*b:16*b+16])
		}
		d[b] = F16ToF32(h)
	}
	return nil
}

// F16ToF32 widens an IEEE 754 half float.
func F16ToF32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	man := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // infinity or NaN
		return math.Float32frombits(sign | 0xff<<23 | man<<13)
	case exp != 0:
		return math.Float32frombits(sign | (exp+127-15)<<23 | man<<13)
	case man == 0:
		return math.Float32frombits(sign)
	}
	// A subnormal half is man·2⁻²⁴, a normal float32.
	f := float32(man) * (1.0 / (1 << 24))
	if sign != 0 {
		f = -f
	}
	return f
}

// F32ToF16 rounds to the nearest half float, ties to even; overflow gives infinity, NaN stays NaN.
func F32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23) & 0xff
	man := b & 0x7fffff
	if exp == 0xff {
		if man != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		// Subnormal half (or zero): shift the mantissa with its implicit bit into place.
		if e < -10 {
			return sign
		}
		m := man | 0x800000
		shift := uint(14 - e)
		h := m >> shift
		rem := m & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || (rem == half && h&1 == 1) {
			h++
		}
		return sign | uint16(h)
	}
	h := uint32(e)<<10 | man>>13
	rem := man & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++ // may carry into the exponent, up to infinity, which is right
	}
	return sign | uint16(h)
}

// BF16ToF32 widens a bfloat16: its bits are a float32's upper half.
func BF16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// F32ToBF16 rounds to the nearest bfloat16, ties to even; NaN stays NaN.
func F32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x40
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}
