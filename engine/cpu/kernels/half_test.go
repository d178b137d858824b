package kernels

import (
	"math"
	"testing"

	"github.com/posformer/posformer/layers/quant"
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
