package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/posformer/posformer/layers/quant"
)

// groupCase is an actCase's matrix in row groups, its scales rounded to half floats first (a
// raw case's random scales are not).
func groupCase(t testing.TB, c *actCase) ([]byte, []uint16) {
	for i, v := range c.d {
		c.d[i] = quant.F16ToF32(quant.F32ToF16(v))
	}
	gq, gd := make([]byte, len(c.q)), make([]uint16, len(c.d))
	if err := quant.Group(c.typ, c.q, c.d, c.rows, c.k/32, gq, gd); err != nil {
		t.Fatal(err)
	}
	return gq, gd
}

// On every kernel path, rows in groups give what ggml's formats give in float64 (to 1e-5 of
// Σ|terms|: the integer sums are exact, the float ones are not summed in the same order), and
// exact zeros for a row of x of zeros; every byte of every row counts (raw Q8_0 bytes reach
// −128 and 127), odd and even block counts, one group and many.
func TestGroupDotRows(t *testing.T) {
	forEachGroupCase(t, 21, []int{16, 48}, func(t *testing.T, r *rand.Rand, typ quant.Type, k, rows int, raw bool) {
		for _, xs := range []float64{1, 0, 1e-30} {
			c := newActCase(r, typ, k, rows, raw, xs)
			gq, gd := groupCase(t, &c)
			a, err := QuantizeAct(typ, c.x, make([]byte, ActRowBytes(k)), false)
			if err != nil {
				t.Fatal(err)
			}
			got := make([]float32, rows)
			GroupDotRows(typ, gq, gd, k, &a, got)
			want, mag := c.reference()
			for i := range want {
				if d := math.Abs(float64(got[i]) - want[i]); d > 1e-5*mag[i] || math.IsNaN(float64(got[i])) || (mag[i] == 0 && got[i] != 0) {
					t.Fatalf("%v k=%d rows=%d raw=%v x=%g: row %d: %g, ggml's formats give %g (Σ|terms| %g)", typ, k, rows, raw, xs, i, got[i], want[i], mag[i])
				}
			}
		}
	})
}

// forEachGroupCase runs f on every kernel path, for both weight types, every depth and each of
// rowCounts, weights from the quantizer and (Q8_0) raw bytes.
func forEachGroupCase(t *testing.T, seed uint64, rowCounts []int, f func(t *testing.T, r *rand.Rand, typ quant.Type, k, rows int, raw bool)) {
	for _, p := range Paths() {
		t.Run(p, func(t *testing.T) {
			withKernels(t, p)
			r := rand.New(rand.NewPCG(seed, seed+1))
			for _, typ := range []quant.Type{quant.Q8_0, quant.Q4_0} {
				for _, k := range actDepths {
					for _, rows := range rowCounts {
						for _, raw := range []bool{false, true} {
							if !raw || typ == quant.Q8_0 {
								f(t, r, typ, k, rows, raw)
							}
						}
					}
				}
			}
		})
	}
}

// Rows that are not whole groups, or x without its plain form, are refused.
func TestGroupDotRowsRefuses(t *testing.T) {
	c := newActCase(rand.New(rand.NewPCG(1, 1)), quant.Q4_0, 64, 32, false, 1)
	gq, gd := groupCase(t, &c)
	plain, _ := QuantizeAct(quant.Q4_0, c.x, make([]byte, ActRowBytes(64)), false)
	for name, call := range map[string]func(){
		"rows":   func() { GroupDotRows(quant.Q4_0, gq, gd, 64, &plain, make([]float32, 20)) },
		"bytes":  func() { GroupDotRows(quant.Q4_0, gq[:100], gd, 64, &plain, make([]float32, 32)) },
		"x":      func() { GroupDotRows(quant.Q4_0, gq, gd, 64, &ActRow{}, make([]float32, 32)) },
		"format": func() { GroupDotRows(quant.BF16, gq, gd, 64, &plain, make([]float32, 32)) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			call()
		}()
	}
}

// The row-group kernels against ActDotRows on Split's layout, one thread, both with x quantized
// to int8 (the bytes counted are the file's for both, though rows keep float32 scales), weights in
// L2, in L3 and streamed from memory.
//
//	go test ./engine/cpu/kernels -run XXX -bench GroupDotRows -cpu 1
func BenchmarkGroupDotRows(b *testing.B) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, typ := range []quant.Type{quant.Q8_0, quant.Q4_0} {
		for _, shape := range [][2]int{{2048, 768}, {32000, 288}, {200000, 288}} {
			rows, k := shape[0], shape[1]
			c := newActCase(r, typ, k, rows, false, 1)
			gq, gd := groupCase(b, &c)
			y := make([]float32, rows)
			bytes := int64(len(c.q) + 2*len(c.d)) // the file's bytes (half-float scales)
			b.Run(fmt.Sprintf("%v/%dx%d/split", typ, rows, k), func(b *testing.B) {
				buf := make([]byte, ActRowBytes(k))
				b.SetBytes(bytes)
				for b.Loop() {
					a, _ := QuantizeAct(typ, c.x, buf, VNNI())
					ActDotRows(typ, c.q, c.d, k, &a, y)
				}
			})
			b.Run(fmt.Sprintf("%v/%dx%d/grouped", typ, rows, k), func(b *testing.B) {
				buf := make([]byte, ActRowBytes(k))
				b.SetBytes(bytes)
				for b.Loop() {
					a, _ := QuantizeAct(typ, c.x, buf, false)
					GroupDotRows(typ, gq, gd, k, &a, y)
				}
			})
		}
	}
}

// Four rows of x at once give each row's GroupDotRows exactly (the same sums in the same
// order), for rows of x spaced as a product's scratch spaces them, on every kernel path.
func TestGroupDotRows4(t *testing.T) {
	const ldy = 53
	forEachGroupCase(t, 25, []int{48}, func(t *testing.T, r *rand.Rand, typ quant.Type, k, rows int, raw bool) {
		c := newActCase(r, typ, k, rows, raw, 1)
		gq, gd := groupCase(t, &c)
		xa, stride, pack := fourRowsOfX(t, r, typ, k)
		one := make([]float32, 4*rows)
		for i := range 4 {
			a := ActView(xa[i*stride:], k, false)
			GroupDotRows(typ, gq, gd, k, &a, one[i*rows:(i+1)*rows])
		}
		y := make([]float32, 3*ldy+rows)
		GroupDotRows4(typ, gq, gd, k, xa, stride, pack, y, ldy, rows)
		for i := range 4 {
			for j := range rows {
				if math.Float32bits(y[i*ldy+j]) != math.Float32bits(one[i*rows+j]) {
					t.Fatalf("%v k=%d raw=%v: x row %d, y[%d] = %g, one row at a time %g", typ, k, raw, i, j, y[i*ldy+j], one[i*rows+j])
				}
			}
		}
	})
}

// The VNNI kernels and AVX2's give the same bits, one row of x and four: the same exact integer
// sums, scaled by the same float operations in the same order.
func TestGroupKernelSetsAgree(t *testing.T) {
	if !VNNI() || !kernelsHave(AVX2) {
		t.Skip("needs both the VNNI and the AVX2 kernels")
	}
	r := rand.New(rand.NewPCG(27, 28))
	for _, typ := range []quant.Type{quant.Q8_0, quant.Q4_0} {
		for _, k := range actDepths {
			const rows = 48
			c := newActCase(r, typ, k, rows, typ == quant.Q8_0, 1)
			gq, gd := groupCase(t, &c)
			xa, stride, pack := fourRowsOfX(t, r, typ, k)
			run := func(p string) (one, four []float32) {
				withKernels(t, p)
				a := ActView(xa, k, false)
				one, four = make([]float32, rows), make([]float32, 4*rows)
				GroupDotRows(typ, gq, gd, k, &a, one)
				GroupDotRows4(typ, gq, gd, k, xa, stride, pack, four, rows, rows)
				return one, four
			}
			vOne, vFour := run(AVX512)
			aOne, aFour := run(AVX2)
			for i := range vFour {
				if i < rows && math.Float32bits(vOne[i]) != math.Float32bits(aOne[i]) || math.Float32bits(vFour[i]) != math.Float32bits(aFour[i]) {
					t.Fatalf("%v k=%d: result %d differs between the VNNI and the AVX2 kernels", typ, k, i)
				}
			}
		}
	}
}

// fourRowsOfX is four random rows of x of k quantized in their plain forms, stride bytes apart
// in xa (as a product's scratch spaces them), and their sums and scales packed (Pack4).
func fourRowsOfX(t *testing.T, r *rand.Rand, typ quant.Type, k int) (xa []byte, stride int, pack []byte) {
	stride = ActRowBytes(k)
	xa = make([]byte, 4*stride)
	for i := range 4 {
		x := make([]float32, k)
		for j := range x {
			x[j] = float32(r.NormFloat64())
		}
		if _, err := QuantizeAct(typ, x, xa[i*stride:], false); err != nil {
			t.Fatal(err)
		}
	}
	pack = make([]byte, Pack4Bytes(k))
	Pack4(xa, stride, k, pack)
	return xa, stride, pack
}
