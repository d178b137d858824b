package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/posformer/posformer/layers/quant"
)

// actCase is one product of the int8-activation tests: weights in posformer's split layout,
// one row of x, and what ggml's formats say the product is.
type actCase struct {
	typ  quant.Type
	k    int
	q    []byte    // rows·k int8 values (Q8_0) or rows·k/2 nibble bytes (Q4_0)
	d    []float32 // rows·k/32 scales, followed by NaN (a read past the end poisons a result)
	rows int
	x    []float32
}

// newActCase makes random weights (rawQ8: any byte, −128 included, as a file could hold;
// otherwise quantized from normal values by layers/quant) and a random row of x, scaled by
// xScale (0 gives a row of zeros).
func newActCase(r *rand.Rand, typ quant.Type, k, rows int, rawQ8 bool, xScale float64) actCase {
	c := actCase{typ: typ, k: k, rows: rows}
	nb := k / 32
	c.d = make([]float32, rows*nb, rows*nb+8)
	qb := typ.BlockBytes() - 2
	c.q = make([]byte, rows*nb*qb)
	if rawQ8 {
		for i := range c.q {
			c.q[i] = byte(r.IntN(256))
		}
		for i := range c.d {
			c.d[i] = float32(r.Float64() * 0.01)
		}
	} else {
		w := make([]float32, rows*k)
		for i := range w {
			w[i] = float32(r.NormFloat64() * 0.05)
		}
		if err := quant.QuantizeSplit(typ, w, c.q, c.d); err != nil {
			panic(err)
		}
	}
	for range 8 {
		c.d = append(c.d, float32(math.NaN()))
	}
	c.d = c.d[:rows*nb]
	c.x = make([]float32, k)
	for i := range c.x {
		c.x[i] = float32(r.NormFloat64() * xScale)
	}
	return c
}

// reference is the product the way ggml's formats define it, from layers/quant alone: x stored
// as Q8_0 and read back (d_x·q_x per value), each weight d_w·q_w, summed in float64. It also
// returns Σ|terms| per row, the scale of float32 rounding.
func (c actCase) reference() (want, mag []float64) {
	raw, err := quant.Quantize(quant.Q8_0, c.x)
	if err != nil {
		panic(err)
	}
	xd := make([]float32, c.k)
	if err := quant.Dequantize(quant.Q8_0, raw, xd); err != nil {
		panic(err)
	}
	nb := c.k / 32
	want, mag = make([]float64, c.rows), make([]float64, c.rows)
	for r := range c.rows {
		for b := range nb {
			for j := range 32 {
				var qw float64
				if c.typ == quant.Q8_0 {
					qw = float64(int8(c.q[r*c.k+32*b+j]))
				} else {
					v := c.q[r*c.k/2+16*b+j%16]
					if j >= 16 {
						v >>= 4
					}
					qw = float64(v&15) - 8
				}
				t := float64(xd[32*b+j]) * float64(c.d[r*nb+b]) * qw
				want[r] += t
				mag[r] += math.Abs(t)
			}
		}
	}
	return want, mag
}

// run computes the product with the kernel set in use into y, a slice of canaries (a write past
// either end is caught).
func (c actCase) run(t *testing.T, layout bool) []float32 {
	t.Helper()
	buf := make([]byte, ActRowBytes(c.k))
	a, err := QuantizeAct(c.typ, c.x, buf, layout)
	if err != nil {
		t.Fatal(err)
	}
	const canary = float32(-12345.678)
	back := make([]float32, c.rows+8)
	for i := range back {
		back[i] = canary
	}
	y := back[4 : 4+c.rows]
	ActDotRows(c.typ, c.q, c.d, c.k, &a, y)
	for i, v := range back {
		if (i < 4 || i >= 4+c.rows) && v != canary {
			t.Fatalf("write out of bounds at %d of y[4:%d]", i, 4+c.rows)
		}
	}
	return y
}

var actDepths = []int{32, 64, 96, 288, 320, 768} // odd and even block counts, the 15M shape's 288 and 768
var actRows = []int{1, 2, 3, 4, 5, 7, 8, 9, 33}  // groups of four and every remainder

// The portable integer path (the generic kernel set) equals the product ggml's formats define,
// computed independently from layers/quant in float64: the integer sums are exact, so the only
// difference is the float32 rounding of d_x·d_w and of the sum over blocks (1e-5 of Σ|terms|).
func TestActDotRowsPortableMatchesReference(t *testing.T) {
	withKernels(t, Generic)
	r := rand.New(rand.NewPCG(1, 2))
	forEachActCase(t, r, func(t *testing.T, c actCase) {
		got := c.run(t, false)
		want, mag := c.reference()
		for i := range want {
			if d := math.Abs(float64(got[i]) - want[i]); d > 1e-5*mag[i] || math.IsNaN(float64(got[i])) {
				t.Fatalf("row %d: %g, ggml's formats give %g (Σ|terms| %g)", i, got[i], want[i], mag[i])
			}
		}
	})
}

// The assembly equals the portable integer path. Both sum each block's integer products
// exactly; the assembly converts its sixteen lanes' partial sums to float separately and adds
// lanes and blocks in another order, so they agree to float32 rounding of Σ|terms| (1e-5 of it;
// the observed gap is a few ulps), and exactly on rows of x that are all zeros.
func TestActDotRowsAssemblyMatchesPortable(t *testing.T) {
	if !haveVNNIAsm || !vnniCPU || !kernelsHave(AVX512) {
		t.Skip("no AVX-512 VNNI on this CPU")
	}
	withKernels(t, AVX512)
	r := rand.New(rand.NewPCG(3, 4))
	worst := 0.0
	forEachActCase(t, r, func(t *testing.T, c actCase) {
		got := c.run(t, true)
		a, err := QuantizeAct(c.typ, c.x, make([]byte, ActRowBytes(c.k)), false)
		if err != nil {
			t.Fatal(err)
		}
		want := make([]float32, c.rows)
		if c.typ == quant.Q8_0 {
			q8ActDotRowsGo(bytesAs[int8](c.q), c.d, a.q, a.d, want)
		} else {
			q4ActDotRowsGo(c.q, c.d, a.q, a.d, want)
		}
		_, mag := c.reference()
		for i := range want {
			d := math.Abs(float64(got[i] - want[i]))
			if d > 1e-5*mag[i] || math.IsNaN(float64(got[i])) || (mag[i] == 0 && got[i] != 0) {
				t.Fatalf("row %d: assembly %g, Go %g (Σ|terms| %g)", i, got[i], want[i], mag[i])
			}
			if mag[i] > 0 {
				worst = max(worst, d/mag[i])
			}
		}
	})
	t.Logf("largest |assembly − Go| / Σ|terms|: %.2g", worst)
}

// forEachActCase runs f on both weight types, every depth and row count, weights from the
// quantizer and (Q8_0) raw bytes, and rows of x of ordinary size, all zeros and tiny.
func forEachActCase(t *testing.T, r *rand.Rand, f func(t *testing.T, c actCase)) {
	for _, typ := range []quant.Type{quant.Q8_0, quant.Q4_0} {
		for _, k := range actDepths {
			for _, rows := range actRows {
				for _, raw := range []bool{false, true} {
					if raw && typ != quant.Q8_0 {
						continue
					}
					for _, xs := range []float64{1, 0, 1e-30} {
						t.Run(fmt.Sprintf("%v/k=%d/rows=%d/raw=%v/x=%g", typ, k, rows, raw, xs), func(t *testing.T) {
							f(t, newActCase(r, typ, k, rows, raw, xs))
						})
					}
				}
			}
		}
	}
}

// A row of x that is all zeros quantizes to d = 0 (no division by it) and gives exact zeros.
func TestActZeroRow(t *testing.T) {
	for _, p := range Paths() {
		t.Run(p, func(t *testing.T) {
			withKernels(t, p)
			c := newActCase(rand.New(rand.NewPCG(5, 6)), quant.Q8_0, 96, 5, false, 0)
			for i, v := range c.run(t, VNNI()) {
				if v != 0 {
					t.Fatalf("y[%d] = %g, want 0", i, v)
				}
			}
		})
	}
}

// A row of x holding a NaN or an infinity gives products that are not finite, on both paths
// (a NaN must not be quantized into a plausible number).
func TestActNonFiniteRow(t *testing.T) {
	for _, p := range Paths() {
		for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
			t.Run(fmt.Sprintf("%s/%g", p, bad), func(t *testing.T) {
				withKernels(t, p)
				c := newActCase(rand.New(rand.NewPCG(15, 16)), quant.Q8_0, 96, 5, false, 1)
				c.x[40] = bad
				for i, v := range c.run(t, VNNI()) {
					if !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0) {
						t.Fatalf("y[%d] = %g with %g in x, want a NaN or an infinity", i, v, bad)
					}
				}
			})
		}
	}
}

// The laid-out form holds every quantized value once, where the kernels expect it, with the
// offset correction of its lane and the scale of its block (layoutAct, checked against that
// definition), and the assembly quantizer writes exactly layoutAct's bytes from layers/quant's
// rounding: rows of ordinary values, of exact halves (ties round away from zero), of values whose
// scale is a subnormal half float or rounds to zero, of zeros, and large ones.
func TestLayoutAct(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	asm := haveVNNIAsm && vnniCPU
	for _, typ := range []quant.Type{quant.Q8_0, quant.Q4_0} {
		for _, k := range []int{32, 64, 96, 288} {
			for _, xs := range []float64{1, 0.5, 1e-5, 1e-7, 1e-30, 0, 1e4} {
				x := make([]float32, k)
				for i := range x {
					x[i] = float32(r.NormFloat64() * xs)
				}
				if xs == 0.5 { // d = 1 and every value an exact half: 127, ±0.5, ±1.5, ...
					for i := range x {
						x[i] = float32(r.IntN(254)-127) + 0.5
					}
					x[0] = 127
				}
				name := fmt.Sprintf("%v/k=%d/x=%g", typ, k, xs)
				plain, err := QuantizeAct(typ, x, make([]byte, ActRowBytes(k)), false)
				if err != nil {
					t.Fatal(err)
				}
				np := actPairs(k)
				vq, vc, vd := make([]int8, 64*np), make([]int32, 16*np), make([]float32, 16*np)
				layoutAct(typ, plain.q, plain.d, vq, vc, vd)
				checkLayout(t, name, typ, k, plain, vq, vc, vd)
				if !asm {
					continue
				}
				got, err := QuantizeAct(typ, x, make([]byte, ActRowBytes(k)), true)
				if err != nil {
					t.Fatal(err)
				}
				for i := range vq {
					if got.vq[i] != vq[i] {
						t.Fatalf("%s: assembly byte %d = %d, layoutAct %d", name, i, got.vq[i], vq[i])
					}
				}
				for l := range vc {
					if got.vc[l] != vc[l] || math.Float32bits(got.vd[l]) != math.Float32bits(vd[l]) {
						t.Fatalf("%s: assembly lane %d = (%d, %g), layoutAct (%d, %g)", name, l, got.vc[l], got.vd[l], vc[l], vd[l])
					}
				}
			}
		}
	}
}

func checkLayout(t *testing.T, name string, typ quant.Type, k int, a ActRow, vq []int8, vc []int32, vd []float32) {
	t.Helper()
	nb := k / 32
	seen := make([]int, k)
	off := int32(128)
	if typ == quant.Q4_0 {
		off = 8
	}
	for p := range actPairs(k) {
		for i := range 64 {
			// Where the kernel's register holds element e of block b (vnni_amd64.s).
			b, e := 2*p+i/32, i%32
			if typ == quant.Q4_0 {
				b, e = 2*p+(i/16)%2, i%16+16*(i/32)
			}
			v := vq[64*p+i]
			if b >= nb {
				if v != 0 || vd[16*p+i/4] != 0 {
					t.Fatalf("%s: padding byte %d of pair %d is %d, scale %g", name, i, p, v, vd[16*p+i/4])
				}
				continue
			}
			seen[32*b+e]++
			if v != a.q[32*b+e] {
				t.Fatalf("%s: byte %d of pair %d is %d, want q[%d] = %d", name, i, p, v, 32*b+e, a.q[32*b+e])
			}
			if l := i / 4; vd[16*p+l] != a.d[b] {
				t.Fatalf("%s: lane %d of pair %d has scale %g, want d[%d] = %g", name, l, p, vd[16*p+l], b, a.d[b])
			}
		}
		for l := range 16 {
			var s int32
			for j := range 4 {
				s += int32(vq[64*p+4*l+j])
			}
			if vc[16*p+l] != -off*s {
				t.Fatalf("%s: lane %d of pair %d corrects by %d, want %d", name, l, p, vc[16*p+l], -off*s)
			}
		}
	}
	for e, n := range seen {
		if n != 1 {
			t.Fatalf("%s: value %d laid out %d times", name, e, n)
		}
	}
}

// The kernels on one thread: float32 x (quant.go) against int8 x (this file's), bytes of
// weights per second, over 2048 weight rows (in L2: the compute), the 15M model's output head,
// 32000 rows of 288 (9 MB as Q8_0: in L3), and 200000 rows (65 MB: streamed from memory).
//
//	go test ./engine/cpu/kernels -run XXX -bench 'ActDotRows|QuantizeAct'
func BenchmarkActDotRows(b *testing.B) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, typ := range []quant.Type{quant.Q8_0, quant.Q4_0} {
		for _, shape := range [][2]int{{2048, 288}, {2048, 768}, {32000, 288}, {200000, 288}} {
			rows, k := shape[0], shape[1]
			c := newActCase(r, typ, k, rows, false, 1)
			y := make([]float32, rows)
			b.Run(fmt.Sprintf("%v/%dx%d/float32-x", typ, rows, k), func(b *testing.B) {
				b.SetBytes(int64(len(c.q) + 4*len(c.d)))
				for b.Loop() {
					if typ == quant.Q8_0 {
						DotRowsQ8_0(bytesAs[int8](c.q), c.d, k, c.x, y)
					} else {
						DotRowsQ4_0(c.q, c.d, k, c.x, y)
					}
				}
			})
			b.Run(fmt.Sprintf("%v/%dx%d/int8-x", typ, rows, k), func(b *testing.B) {
				buf := make([]byte, ActRowBytes(k))
				b.SetBytes(int64(len(c.q) + 4*len(c.d)))
				for b.Loop() {
					a, _ := QuantizeAct(typ, c.x, buf, VNNI())
					ActDotRows(typ, c.q, c.d, k, &a, y)
				}
			})
		}
	}
}

// Quantizing one row of x (layers/quant's rounding, then the layout of the kernels this CPU
// runs).
func BenchmarkQuantizeAct(b *testing.B) {
	r := rand.New(rand.NewPCG(13, 14))
	for _, k := range []int{288, 768} {
		x := make([]float32, k)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		buf := make([]byte, ActRowBytes(k))
		b.Run(fmt.Sprintf("k=%d", k), func(b *testing.B) {
			for b.Loop() {
				QuantizeAct(quant.Q8_0, x, buf, VNNI()) // the layout only where its kernels run
			}
		})
	}
}

// withKernels selects a kernel set for the rest of the test.
func withKernels(t testing.TB, p string) {
	t.Helper()
	saved := Path()
	if err := SetPath(p); err != nil {
		t.Skipf("kernel set %s: %v", p, err)
	}
	t.Cleanup(func() { SetPath(saved) })
}

func kernelsHave(p string) bool {
	for _, q := range Paths() {
		if q == p {
			return true
		}
	}
	return false
}
