package kernels

import (
	"math"
	"testing"

	"github.com/posformer/posformer/layers/quant"
	"github.com/x448/float16"
)

// Every one of the 65,536 half values widens as layers/quant's scalar conversion does (a NaN
// to a NaN), on every kernel path and from any offset and length, the tails included.
func TestWidenHalfEveryValue(t *testing.T) {
	src := make([]uint16, 1<<16)
	for i := range src {
		src[i] = uint16(i)
	}
	for _, path := range Paths() {
		t.Run(path, func(t *testing.T) {
			defer func(p string) { _ = SetPath(p) }(Path())
			if err := SetPath(path); err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				name  string
				widen func([]float32, []uint16)
				ref   func(uint16) float32
			}{{"f16", WidenF16, quant.F16ToF32}, {"bf16", WidenBF16, quant.BF16ToF32}} {
				for _, span := range [][2]int{{0, 1 << 16}, {3, 3 + 21}, {5, 5 + 7}, {1, 1 + 16}, {9, 9}} {
					s := src[span[0]:span[1]]
					dst := make([]float32, len(s)+1)
					dst[len(s)] = 42
					c.widen(dst, s)
					for i, h := range s {
						want, got := c.ref(h), dst[i]
						if math.Float32bits(got) != math.Float32bits(want) && !(want != want && got != got) {
							t.Fatalf("%s %#04x: got %g (%#08x), want %g", c.name, h, got, math.Float32bits(got), want)
						}
					}
					if dst[len(s)] != 42 {
						t.Fatalf("%s wrote past %d values", c.name, len(s))
					}
				}
			}
		})
	}
}

// Narrowing to float16 rounds as github.com/x448/float16 does, bit for bit, on every kernel
// path: every half value, its neighbours one float32 step away, the midpoints between
// consecutive halves (ties to even) and one step either side, overflow, subnormals, zeros of
// both signs, and NaNs of several payloads among ordinary values (their groups of eight take the
// scalar conversion).
func TestNarrowF16(t *testing.T) {
	var src []float32
	for h := range 1 << 16 {
		f := quant.F16ToF32(uint16(h))
		if f != f {
			continue
		}
		src = append(src, f, math.Nextafter32(f, float32(math.Inf(1))), math.Nextafter32(f, float32(math.Inf(-1))))
		if next := quant.F16ToF32(uint16(h + 1)); h+1 < 1<<16 && next == next && !math.IsInf(float64(f), 0) && !math.IsInf(float64(next), 0) && (f >= 0) == (next >= 0) {
			mid := (f + next) / 2
			src = append(src, mid, math.Nextafter32(mid, f), math.Nextafter32(mid, next))
		}
	}
	src = append(src, 1e6, -1e6, 65520, 65519.99, 1e-8, -1e-8, 6e-8, 3e-8, float32(math.Copysign(0, -1)),
		math.Float32frombits(0x7fc00000), math.Float32frombits(0x7f800001), math.Float32frombits(0xffc12345), math.Float32frombits(0x7fa00000))
	for _, path := range Paths() {
		t.Run(path, func(t *testing.T) {
			defer func(p string) { _ = SetPath(p) }(Path())
			if err := SetPath(path); err != nil {
				t.Fatal(err)
			}
			for _, off := range []int{0, 3} {
				s := src[off:]
				dst := make([]uint16, len(s))
				NarrowF16(dst, s)
				for i, f := range s {
					if want := float16.Fromfloat32(f).Bits(); dst[i] != want {
						t.Fatalf("%g (%#08x): got %#04x, want %#04x", f, math.Float32bits(f), dst[i], want)
					}
				}
			}
		})
	}
}
