package safetensors

// Tests of the F16/BF16 writers and of ranged reads. The expected rounding is
// derived independently: the nearest representable value is found by search
// over the (already exhaustively tested) decoders, with ties to even.

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
)

// nearestHalf rounds x to a half by binary search over the positive halves,
// whose bit patterns 0..0x7c00 increase with their values.
func nearestHalf(x float32) uint16 {
	var sign uint16
	if math.Signbit(float64(x)) {
		sign = 0x8000
	}
	a := math.Abs(float64(x))
	if a >= 65520 { // halfway between 65504 and 2^16, the next step: rounds to inf
		return sign | 0x7c00
	}
	lo, hi := 0, 0x7bff // invariant: value(lo) <= a
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if float64(float16ToFloat32(uint16(mid))) <= a {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	if lo == 0x7bff {
		return sign | uint16(lo)
	}
	dLo := a - float64(float16ToFloat32(uint16(lo)))
	dHi := float64(float16ToFloat32(uint16(lo+1))) - a
	if dHi < dLo || (dHi == dLo && lo%2 == 1) {
		lo++
	}
	return sign | uint16(lo)
}

// nearestBFloat rounds x to a bfloat16 from its two truncation neighbours.
func nearestBFloat(x float32) uint16 {
	b := math.Float32bits(x)
	lo := uint16(b >> 16)
	vLo := float64(bfloat16ToFloat32(lo))
	vHi := float64(bfloat16ToFloat32(lo + 1))
	a := float64(x)
	dLo, dHi := math.Abs(a-vLo), math.Abs(vHi-a)
	if lo&0x7fff == 0x7f7f && dHi >= dLo && a != vLo {
		// Past the largest finite bfloat16 the upper neighbour is infinity;
		// IEEE rounding still picks it when x is at least halfway there.
		vHi = math.Copysign(math.Ldexp(1, 128), a)
		dHi = math.Abs(vHi - a)
	}
	if dHi < dLo || (dHi == dLo && lo&1 == 1) {
		return lo + 1
	}
	return lo
}

func TestFloat16EncodeAllHalves(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		v := float16ToFloat32(uint16(h))
		got := float32ToFloat16(v)
		if v != v {
			if float16ToFloat32(got) == float16ToFloat32(got) {
				t.Fatalf("NaN %#04x encoded as non-NaN %#04x", h, got)
			}
			continue
		}
		if got != uint16(h) {
			t.Fatalf("half %#04x (%v) re-encoded as %#04x", h, v, got)
		}
	}
}

func TestFloat16EncodeRounding(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var xs []float32
	// Midpoints and their neighbours between consecutive halves: the ties.
	for h := 0; h < 0x7c00; h++ {
		a := float64(float16ToFloat32(uint16(h)))
		b := float64(float16ToFloat32(uint16(h + 1)))
		m := float32((a + b) / 2)
		xs = append(xs, m, math.Nextafter32(m, 0), math.Nextafter32(m, 1e9), -m)
	}
	for range 200000 {
		// Random magnitudes from far below the smallest subnormal to past 65504.
		x := float32(math.Ldexp(rng.Float64(), rng.IntN(48)-34))
		if rng.IntN(2) == 0 {
			x = -x
		}
		xs = append(xs, x)
	}
	xs = append(xs, 65504, 65519.99, 65520, 1e10, float32(math.Inf(1)), 0, float32(math.Copysign(0, -1)))
	for _, x := range xs {
		if got, want := float32ToFloat16(x), nearestHalf(x); got != want {
			t.Fatalf("float32ToFloat16(%v) = %#04x, want %#04x", x, got, want)
		}
	}
}

func TestBFloat16Encode(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		v := bfloat16ToFloat32(uint16(h))
		got := float32ToBFloat16(v)
		if v != v {
			if g := bfloat16ToFloat32(got); g == g {
				t.Fatalf("NaN %#04x encoded as non-NaN %#04x", h, got)
			}
			continue
		}
		if got != uint16(h) {
			t.Fatalf("bfloat16 %#04x re-encoded as %#04x", h, got)
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 500000 {
		x := math.Float32frombits(rng.Uint32())
		if i%2 == 0 { // exact ties: low 16 bits 0x8000
			x = math.Float32frombits(rng.Uint32()&0xffff0000 | 0x8000)
		}
		if x != x || math.IsInf(float64(x), 0) {
			continue
		}
		if got, want := float32ToBFloat16(x), nearestBFloat(x); got != want {
			t.Fatalf("float32ToBFloat16(%v = %#08x) = %#04x, want %#04x", x, math.Float32bits(x), got, want)
		}
	}
}

func TestWriteHalfTypes(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.safetensors")
	data := []float32{1, -2.5, 1.0 / 3, 70000, 1e-6, 0.1}
	in := []Tensor{
		{Name: "h", Shape: []int{2, 3}, Data: data, DType: "F16"},
		{Name: "b", Shape: []int{6}, Data: data, DType: "BF16"},
		{Name: "f", Shape: []int{3, 2}, Data: data},
	}
	if err := Write(path, in, nil); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, c := range []struct {
		name, dtype string
		round       func(float32) float32
	}{
		{"h", "F16", func(x float32) float32 { return float16ToFloat32(nearestHalf(x)) }},
		{"b", "BF16", func(x float32) float32 { return bfloat16ToFloat32(nearestBFloat(x)) }},
		{"f", "F32", func(x float32) float32 { return x }},
	} {
		info, _ := f.Info(c.name)
		if info.DType != c.dtype {
			t.Errorf("%s stored as %s, want %s", c.name, info.DType, c.dtype)
		}
		got, err := f.ReadFloat32(c.name)
		if err != nil {
			t.Fatal(err)
		}
		for i, x := range data {
			if want := c.round(x); math.Float32bits(got[i]) != math.Float32bits(want) {
				t.Errorf("%s[%d] = %v, want %v", c.name, i, got[i], want)
			}
		}
	}
	if err := Write(path, []Tensor{{Name: "x", Shape: []int{1}, Data: []float32{1}, DType: "I8"}}, nil); err == nil || !strings.Contains(err.Error(), "I8") {
		t.Errorf("writing dtype I8: err = %v, want an error naming it", err)
	}
}

func TestReadFloat32Range(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.safetensors")
	data := make([]float32, 12)
	for i := range data {
		data[i] = float32(i) * 0.5
	}
	if err := Write(path, []Tensor{{Name: "w", Shape: []int{3, 4}, Data: data, DType: "BF16"}}, nil); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := make([]float32, 4)
	if err := f.ReadFloat32Range("w", 5, got); err != nil {
		t.Fatal(err)
	}
	if !sameFloats(got, data[5:9]) {
		t.Errorf("range [5, 9) = %v, want %v", got, data[5:9])
	}
	if err := f.ReadFloat32Range("w", 0, make([]float32, 12)); err != nil {
		t.Errorf("whole tensor as a range: %v", err)
	}
	for _, c := range []struct {
		off int64
		n   int
	}{{9, 4}, {-1, 1}, {13, 0}} {
		err := f.ReadFloat32Range("w", c.off, make([]float32, c.n))
		if err == nil || !strings.Contains(err.Error(), `"w"`) {
			t.Errorf("range at %d of %d: err = %v, want an out-of-range error naming the tensor", c.off, c.n, err)
		}
	}
}
