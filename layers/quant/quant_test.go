package quant

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"
)

// Every half float widens and narrows back to itself (NaNs to a NaN).
func TestF16RoundTrip(t *testing.T) {
	for h := range 1 << 16 {
		f := F16ToF32(uint16(h))
		got := F32ToF16(f)
		if math.IsNaN(float64(f)) {
			if got&0x7c00 != 0x7c00 || got&0x3ff == 0 {
				t.Fatalf("NaN %#04x narrowed to %#04x", h, got)
			}
			continue
		}
		if got != uint16(h) {
			t.Fatalf("%#04x -> %g -> %#04x", h, f, got)
		}
	}
	// Closed forms: the largest half, the smallest subnormal, one.
	for h, want := range map[uint16]float32{0x7bff: 65504, 0x0001: 1.0 / (1 << 24), 0x3c00: 1, 0xc000: -2} {
		if got := F16ToF32(h); got != want {
			t.Errorf("F16ToF32(%#04x) = %g, want %g", h, got, want)
		}
	}
}

// Narrowing picks the nearest half (ties to even): no neighbour is closer.
func TestF16Nearest(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		f := float32(r.NormFloat64() * math.Pow(2, float64(r.IntN(40)-25)))
		checkNearest(t, "f16", f, F32ToF16(f), F16ToF32)
	}
	if got := F32ToF16(1e6); got != 0x7c00 {
		t.Errorf("F32ToF16(1e6) = %#04x, want infinity", got)
	}
}

func TestBF16Nearest(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 200000 {
		f := float32(r.NormFloat64() * math.Pow(2, float64(r.IntN(80)-40)))
		checkNearest(t, "bf16", f, F32ToBF16(f), BF16ToF32)
	}
	if got := BF16ToF32(F32ToBF16(float32(math.NaN()))); !math.IsNaN(float64(got)) {
		t.Errorf("bf16 NaN became %g", got)
	}
}

func checkNearest(t *testing.T, what string, f float32, h uint16, widen func(uint16) float32) {
	t.Helper()
	err := math.Abs(float64(widen(h)) - float64(f))
	for _, n := range []uint16{h - 1, h + 1} {
		w := widen(n)
		if math.IsNaN(float64(w)) || math.IsInf(float64(w), 0) || (n^h)&0x8000 != 0 {
			continue
		}
		e := math.Abs(float64(w) - float64(f))
		if e < err || (e == err && h&1 == 1) {
			t.Fatalf("%s(%g) = %#04x (%g), but %#04x (%g) is nearer or an even tie", what, f, h, widen(h), n, w)
		}
	}
}

// Q8_0 by the closed form: d = max|x|/127 (as a half), q = round(x/d); the largest value maps
// to ±127 and every value comes back within d/2 (plus the half rounding of d).
func TestQ8_0(t *testing.T) {
	x := make([]float32, 64)
	for j := range x {
		x[j] = float32(j-20) / 8
	}
	raw, err := Quantize(Q8_0, x)
	if err != nil || len(raw) != 68 {
		t.Fatalf("Quantize: %d bytes, %v", len(raw), err)
	}
	for b := range 2 {
		blk := x[32*b : 32*b+32]
		amax := float32(0)
		for _, v := range blk {
			amax = max(amax, float32(math.Abs(float64(v))))
		}
		d := F16ToF32(uint16(raw[34*b]) | uint16(raw[34*b+1])<<8)
		if want := F16ToF32(F32ToF16(amax / 127)); d != want {
			t.Errorf("block %d: d = %g, want %g", b, d, want)
		}
		for j, v := range blk {
			if want := int8(math.Round(float64(v * (127 / amax)))); int8(raw[34*b+2+j]) != want {
				t.Errorf("block %d value %d (%g): q = %d, want %d", b, j, v, int8(raw[34*b+2+j]), want)
			}
		}
	}
	back := make([]float32, 64)
	if err := Dequantize(Q8_0, raw, back); err != nil {
		t.Fatal(err)
	}
	for j := range x {
		if math.Abs(float64(back[j]-x[j])) > float64(43.0/8/127)*0.51+1e-3 {
			t.Errorf("value %d: %g came back as %g", j, x[j], back[j])
		}
	}
}

// Q4_0 by the closed form: the value of largest magnitude maps to nibble 0 (−8·d), d = that
// value / −8, and byte i holds elements i (low) and i+16 (high).
func TestQ4_0(t *testing.T) {
	x := make([]float32, 32)
	for j := range x {
		x[j] = float32(j%7) - 2.5
	}
	x[21] = -7 // largest magnitude, negative: d = 7/8
	raw, err := Quantize(Q4_0, x)
	if err != nil || len(raw) != 18 {
		t.Fatalf("Quantize: %d bytes, %v", len(raw), err)
	}
	d := F16ToF32(uint16(raw[0]) | uint16(raw[1])<<8)
	if d != 0.875 {
		t.Fatalf("d = %g, want 0.875", d)
	}
	if hi := raw[2+5] >> 4; hi != 0 {
		t.Errorf("element 21 (the largest) has nibble %d, want 0", hi)
	}
	for j, v := range x {
		want := uint8(min(15, int8(float32(v/0.875)+8.5)))
		got := raw[2+j%16] & 15
		if j >= 16 {
			got = raw[2+j%16] >> 4
		}
		if got != want {
			t.Errorf("element %d (%g): nibble %d, want %d", j, v, got, want)
		}
	}
	back := make([]float32, 32)
	if err := Dequantize(Q4_0, raw, back); err != nil {
		t.Fatal(err)
	}
	for j := range x {
		if math.Abs(float64(back[j]-x[j])) > 0.875/2+1e-6 {
			t.Errorf("element %d: %g came back as %g", j, x[j], back[j])
		}
	}
}

// The split layout holds the same numbers as ggml's, whichever way it is made.
func TestSplit(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	x := make([]float32, 32*9)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	x[40] = 0 // and a zero block below
	for i := 64; i < 96; i++ {
		x[i] = 0
	}
	for _, typ := range []Type{Q8_0, Q4_0} {
		raw, err := Quantize(typ, x)
		if err != nil {
			t.Fatal(err)
		}
		qb := typ.BlockBytes() - 2
		q1, d1 := make([]byte, 9*qb), make([]float32, 9)
		q2, d2 := make([]byte, 9*qb), make([]float32, 9)
		if err := Split(typ, raw, q1, d1); err != nil {
			t.Fatal(err)
		}
		if err := QuantizeSplit(typ, x, q2, d2); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(q1, q2) || !equal(d1, d2) {
			t.Errorf("%v: Split(Quantize(x)) differs from QuantizeSplit(x)", typ)
		}
		full := make([]float32, len(x))
		if err := Dequantize(typ, raw, full); err != nil {
			t.Fatal(err)
		}
		for i := range x {
			var v float32
			if typ == Q8_0 {
				v = d1[i/32] * float32(int8(q1[i]))
			} else {
				nib := q1[16*(i/32)+i%16]
				if i%32 >= 16 {
					nib >>= 4
				}
				v = d1[i/32] * float32(int(nib&15)-8)
			}
			if v != full[i] {
				t.Fatalf("%v element %d: split layout gives %g, ggml's %g", typ, i, v, full[i])
			}
		}
	}
}

func TestSizesAndErrors(t *testing.T) {
	for _, c := range []struct {
		t    Type
		n, b int
	}{{F32, 10, 40}, {F16, 10, 20}, {BF16, 6, 12}, {Q8_0, 64, 68}, {Q4_0, 96, 54}} {
		if got, err := c.t.Bytes(c.n); err != nil || got != c.b {
			t.Errorf("%v.Bytes(%d) = %d, %v; want %d", c.t, c.n, got, err, c.b)
		}
	}
	if _, err := Q8_0.Bytes(33); err == nil {
		t.Error("33 values of q8_0 accepted")
	}
	if _, err := Q8_0.Bytes(math.MaxInt &^ 31); err == nil {
		t.Error("an overflowing size accepted")
	}
	if err := Dequantize(Q8_0, make([]byte, 33), make([]float32, 32)); err == nil {
		t.Error("a short block accepted")
	}
	if _, err := Parse("Q4_1"); err == nil {
		t.Error("q4_1 parsed")
	}
	if typ, err := Parse("Q8_0"); err != nil || typ != Q8_0 {
		t.Errorf("Parse(Q8_0) = %v, %v", typ, err)
	}
}

func equal(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}
