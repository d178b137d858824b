package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/posformer/posformer/layers/quant"
)

// actGemmCase is a product of the integer GEMM: m rows of x against n weight rows of k.
type actGemmCase struct {
	typ     quant.Type
	m, n, k int
	w       actCase // the weights (its x unused)
	x       []float32
}

func newActGemmCase(r *rand.Rand, typ quant.Type, m, n, k int, raw bool) actGemmCase {
	c := actGemmCase{typ: typ, m: m, n: n, k: k, w: newActCase(r, typ, k, n, raw, 1)}
	c.x = make([]float32, m*k)
	for i := range c.x {
		c.x[i] = float32(r.NormFloat64())
	}
	if m > 1 {
		clear(c.x[k : 2*k]) // a row of zeros: its scales are 0
	}
	return c
}

// assemblyMatchesGo fails the test unless the AVX2 kernels give the Go reference's bits.
func (c actGemmCase) assemblyMatchesGo(t *testing.T, what string) {
	t.Helper()
	want := c.run(t, Generic)
	for _, path := range []string{AVX2, AVX512} {
		got := c.run(t, path)
		if got == nil {
			continue // a kernel set this CPU lacks
		}
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s, %s tiles: y[%d] = %g, Go reference %g", what, tileName(path), i, got[i], want[i])
			}
		}
	}
}

// tileName names the GEMM tiles the kernel set path runs on this CPU.
func tileName(path string) string {
	saved := Path()
	defer SetPath(saved)
	if SetPath(path) == nil && vnniTiles() {
		return "VNNI"
	}
	return path
}

// run computes the product with the kernel set path into y of ldy = n+3, the gaps poisoned;
// nil if the CPU cannot run the set (the Go reference's never fails).
func (c actGemmCase) run(t *testing.T, path string) []float32 {
	t.Helper()
	saved := Path()
	defer SetPath(saved)
	if err := SetPath(path); err != nil {
		if path == AVX2 {
			t.Skipf("kernel set %s: %v", path, err)
		}
		return nil
	}
	buf := make([]byte, ActRowsBytes(c.m, c.k))
	a, err := QuantizeActRows(c.typ, c.x, c.m, c.k, c.k, buf)
	if err != nil {
		t.Fatal(err)
	}
	ldy := c.n + 3
	y := make([]float32, c.m*ldy)
	for i := range y {
		y[i] = 12345
	}
	ActGemm(c.typ, &a, c.w.q, c.w.d, c.n, y, ldy)
	for i, v := range y {
		if i%ldy >= c.n && v != 12345 {
			t.Fatalf("%v %d×%d×%d: y[%d] (past a row's end) written: %g", c.typ, c.m, c.n, c.k, i, v)
		}
	}
	return y
}

func gemmShapes() (out [][3]int) {
	for _, m := range []int{1, 3, 4, 5, 8, 11} {
		for _, n := range []int{1, 2, 7, 8, 33} {
			for _, k := range []int{32, 96, 288} {
				out = append(out, [3]int{m, n, k})
			}
		}
	}
	return out
}

// The AVX2 and VNNI GEMM tiles do the Go reference's operations in its order: the same bits,
// for tiles cut by the last rows of x and the last weight rows too, and across blocks of rows.
func TestActGemmAssemblyMatchesGo(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, typ := range []quant.Type{quant.Q8_0, quant.Q4_0} {
		for _, raw := range []bool{false, true} {
			if raw && typ != quant.Q8_0 {
				continue
			}
			// 37 rows of 4096 span two of ActGemm's blocks of rows (32 at this depth).
			for _, s := range append(gemmShapes(), [3]int{37, 9, 4096}) {
				newActGemmCase(r, typ, s[0], s[1], s[2], raw).assemblyMatchesGo(t, fmt.Sprintf("%v %v", typ, s))
			}
		}
	}
}

// Decoding's AVX2 kernel (one row of x, ActDotRows without VNNI's layout) does the operations of
// actDotLanesGo in its order: the same bits. The depths give every count of blocks past the
// kernel's groups of eight (0-7) with none, one and several groups; the extremes (every nibble 15
// or 0, every x ±127) reach the largest int16 pair sums Q4_0's route makes.
func TestActDotRowsAVX2MatchesLanes(t *testing.T) {
	saved := Path()
	defer SetPath(saved)
	if err := SetPath(AVX2); err != nil {
		t.Skipf("kernel set %s: %v", AVX2, err)
	}
	r := rand.New(rand.NewPCG(13, 14))
	check := func(c actCase, what string) {
		t.Helper()
		a, err := QuantizeAct(c.typ, c.x, make([]byte, ActRowBytes(c.k)), false)
		if err != nil {
			t.Fatal(err)
		}
		got, want := make([]float32, c.rows), make([]float32, c.rows)
		ActDotRows(c.typ, c.q, c.d, c.k, &a, got)
		actDotLanesGo(c.typ, c.q, c.d, a.q, a.d, want)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%v k=%d %s: y[%d] = %g, Go %g", c.typ, c.k, what, i, got[i], want[i])
			}
		}
	}
	for _, typ := range []quant.Type{quant.Q8_0, quant.Q4_0} {
		for _, k := range []int{32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 384, 416, 480, 544, 768} {
			for _, rows := range []int{1, 3, 4, 5, 7, 64} {
				check(newActCase(r, typ, k, rows, typ == quant.Q8_0 && rows == 5, 1), "random")
			}
		}
		for _, k := range []int{224, 544} {
			for _, w := range []byte{0xff, 0x00} {
				for _, sign := range []float32{1, -1} {
					c := newActCase(r, typ, k, 3, false, 1)
					for i := range c.q {
						c.q[i] = w // Q8_0: −1 or 0
					}
					for i := range c.x {
						c.x[i] = sign // equal values quantize to ±127
					}
					check(c, fmt.Sprintf("bytes %#x, x %g", w, sign))
				}
			}
		}
	}
}

// x paired for Q4_0's kernel: per pair of blocks A, B the bytes A[0:16], B[0:16], A[16:32],
// B[16:32] (zeros for the B of a last block alone), and the offsets 8·Σ of the four bytes
// 2i, 2i+1, 32+2i, 33+2i of the pair, from the assembly as from Go, for any bytes (−128 and 127
// included); nothing is written past either.
func TestPairQ4(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	for _, nb := range []int{0, 1, 2, 3, 9} {
		q := make([]int8, 32*nb)
		for i := range q {
			q[i] = int8(r.IntN(256) - 128)
		}
		if nb > 1 {
			for i := range 32 {
				q[i], q[32+i] = -128, 127
			}
		}
		np := (nb + 1) / 2
		wantQ, wantO := make([]int8, 64*np), make([]int16, 16*np)
		for b := range nb {
			for e := range 32 {
				wantQ[64*(b/2)+32*(e/16)+16*(b%2)+e%16] = q[32*b+e]
			}
		}
		for i := range wantO {
			p, w := i/16, i%16
			for _, at := range []int{2 * w, 2*w + 1, 32 + 2*w, 33 + 2*w} {
				wantO[i] += 8 * int16(wantQ[64*p+at])
			}
		}
		check := func(what string, pair func(q, q4 []int8, o []int16)) {
			t.Helper()
			q4, o := make([]int8, 64*np+1), make([]int16, 16*np+1)
			for i := range q4 {
				q4[i] = 99 // stale bytes from an earlier row
			}
			for i := range o {
				o[i] = 12345
			}
			pair(q, q4[:64*np], o[:16*np])
			for i, v := range wantQ {
				if q4[i] != v {
					t.Fatalf("%s, %d blocks: q4[%d] = %d, want %d", what, nb, i, q4[i], v)
				}
			}
			for i, v := range wantO {
				if o[i] != v {
					t.Fatalf("%s, %d blocks: o[%d] = %d, want %d", what, nb, i, o[i], v)
				}
			}
			if q4[64*np] != 99 || o[16*np] != 12345 {
				t.Fatalf("%s, %d blocks: written past the end", what, nb)
			}
		}
		check("Go", pairQ4)
		if IntAsm() {
			check("assembly", pairQ4Asm)
		}
	}
}

// The integer GEMM is the product of x stored as Q8_0 and read back with the weights (from
// layers/quant alone, in float64) to float32's rounding, and within the quantization of x of
// the exact float32 path: |Δ| ≤ Σ_b d_x[b]/2 · Σ_{j in b} |w_j| (rounding moves each q_x by at most
// ½, the scale's half-float rounding is inside ggml's format).
func TestActGemmMatchesFloat(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, typ := range []quant.Type{quant.Q8_0, quant.Q4_0} {
		for _, s := range gemmShapes() {
			c := newActGemmCase(r, typ, s[0], s[1], s[2], false)
			got := c.run(t, Path())
			m, n, k := c.m, c.n, c.k
			nb := k / 32
			w := make([]float32, n*k)
			if err := dequantSplit(typ, c.w.q, c.w.d, w); err != nil {
				t.Fatal(err)
			}
			for i := range m {
				xi := c.x[i*k : i*k+k]
				raw, err := quant.Quantize(quant.Q8_0, xi)
				if err != nil {
					t.Fatal(err)
				}
				xr := make([]float32, k)
				if err := quant.Dequantize(quant.Q8_0, raw, xr); err != nil {
					t.Fatal(err)
				}
				for j := range n {
					var ref, exact, mag, bound float64
					for b := range nb {
						var wabs, dx float64
						for e := 32 * b; e < 32*b+32; e++ {
							wv := float64(w[j*k+e])
							ref += float64(xr[e]) * wv
							exact += float64(xi[e]) * wv
							mag += math.Abs(float64(xr[e]) * wv)
							wabs += math.Abs(wv)
							dx = max(dx, math.Abs(float64(xi[e]))/127)
						}
						bound += dx * 0.5 * 1.001 * wabs
					}
					v := float64(got[i*(n+3)+j])
					if d := math.Abs(v - ref); d > 1e-5*mag+1e-30 {
						t.Fatalf("%v %v: y[%d,%d] = %g, x as Q8_0 gives %g (Σ|terms| %g)", typ, s, i, j, v, ref, mag)
					}
					if d := math.Abs(v - exact); d > bound+1e-5*mag+1e-30 {
						t.Fatalf("%v %v: y[%d,%d] = %g, float x gives %g: off by %g, more than x's rounding allows (%g)", typ, s, i, j, v, exact, d, bound)
					}
				}
			}
		}
	}
}

// dequantSplit widens weights in the split layout (values, then scales) to float32.
func dequantSplit(typ quant.Type, q []byte, d []float32, dst []float32) error {
	if typ == quant.Q8_0 {
		DequantQ8_0(bytesAs[int8](q), d, dst)
	} else {
		DequantQ4_0(q, d, dst)
	}
	return nil
}

// BenchmarkActGemm: the integer GEMM of a prefill's product (128 rows of x, weights of the
// 110M shape's attention; 512 rows against the 15M shape's feed-forward matrices), GMAC/s
// reported as GFLOP/s of 2 flops each; quantizing x included.
func BenchmarkActGemm(b *testing.B) {
	for _, typ := range []quant.Type{quant.Q8_0, quant.Q4_0} {
		for _, s := range [][3]int{{128, 256, 768}, {512, 768, 288}, {512, 288, 768}, {4, 256, 768}, {1, 2048, 768}} {
			m, n, k := s[0], s[1], s[2]
			c := newActGemmCase(rand.New(rand.NewPCG(5, 6)), typ, m, n, k, false)
			buf := make([]byte, ActRowsBytes(m, k))
			y := make([]float32, m*n)
			b.Run(fmt.Sprintf("%v/%dx%dx%d", typ, m, n, k), func(b *testing.B) {
				for b.Loop() {
					a, _ := QuantizeActRows(typ, c.x, m, k, k, buf)
					ActGemm(typ, &a, c.w.q, c.w.d, n, y, n)
				}
				b.ReportMetric(2*float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// BenchmarkActGemmFloat is the float32 GEMM of BenchmarkActGemm's prefill shape (weights already
// float32), for comparison.
func BenchmarkActGemmFloat(b *testing.B) {
	m, n, k := 128, 256, 768
	r := rand.New(rand.NewPCG(5, 6))
	x, w, y := make([]float32, m*k), make([]float32, n*k), make([]float32, m*n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	for i := range w {
		w[i] = float32(r.NormFloat64())
	}
	for b.Loop() {
		Sgemm(false, true, m, n, k, 1, x, k, w, k, 0, y, n)
	}
	b.ReportMetric(2*float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

// The AVX2 quantizer rounds as layers/quant does, bit for bit: random rows, a row of zeros,
// halves exactly between two integers (either sign), values just below a half, and scales that
// fall among half floats' subnormals.
func TestQuantizeActRowsAssemblyMatchesGo(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	const k = 32 * 9
	x := make([]float32, 3*k)
	for i := range x {
		x[i] = float32(r.NormFloat64() * 3)
	}
	clear(x[32:64])
	// Block 2: max 127, so id = 1 and every value is its own quotient.
	for j := range 32 {
		x[64+j] = float32(j-16) + 0.5
	}
	x[64] = 127
	x[65] = -2.5
	x[66] = 0.49999997
	x[67] = -0.49999997
	for j := range 32 { // block 3: a scale of about 1e-7, below half floats' normal range
		x[96+j] = float32(r.NormFloat64() * 1e-5)
	}
	for j := range 32 { // block 4: large values
		x[128+j] = float32(r.NormFloat64() * 1e4)
	}
	got, want := quantizeWith(t, AVX2, x, 3, k), quantizeWith(t, Generic, x, 3, k)
	for i := range want.q {
		if got.q[i] != want.q[i] {
			t.Fatalf("q[%d] = %d, Go %d (x %g)", i, got.q[i], want.q[i], x[i])
		}
	}
	for i := range want.d {
		if math.Float32bits(got.d[i]) != math.Float32bits(want.d[i]) {
			t.Fatalf("d[%d] = %g, Go %g", i, got.d[i], want.d[i])
		}
	}
}

func quantizeWith(t *testing.T, path string, x []float32, m, k int) ActRows {
	t.Helper()
	saved := Path()
	defer SetPath(saved)
	if err := SetPath(path); err != nil {
		t.Skipf("kernel set %s: %v", path, err)
	}
	a, err := QuantizeActRows(quant.Q8_0, x, m, k, k, make([]byte, ActRowsBytes(m, k)))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// The tiles at the extremes, every x ±127 (equal values quantize to ±127) against: Q8_0 weights
// all −128 (whose magnitude, 128, is a byte only unsigned) or 127, the largest pair sums
// VPMADDUBSW makes (32,512); Q4_0 nibbles all 15 or 0, where the AVX2 tile's int16 lanes reach
// ±30,480 and must not wrap. The sums match the Go reference's bits there.
func TestActGemmExtremes(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct {
		typ   quant.Type
		bytes []byte
	}{{quant.Q8_0, []byte{0x80, 0x7f}}, {quant.Q4_0, []byte{0xff, 0x00}}} {
		for _, w := range c.bytes {
			for _, sign := range []float32{1, -1} {
				g := newActGemmCase(r, c.typ, 8, 16, 256, false)
				for i := range g.w.q {
					g.w.q[i] = w
				}
				for i := range g.x {
					g.x[i] = sign
				}
				g.assemblyMatchesGo(t, fmt.Sprintf("%v bytes %#x, x %g", c.typ, w, sign))
			}
		}
	}
}

// blockSum adds a block's 32 values, the extremes included.
func TestBlockSum(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for trial := range 200 {
		var q [32]int8
		for i := range q {
			switch trial {
			case 0:
				q[i] = -128
			case 1:
				q[i] = 127
			default:
				q[i] = int8(r.IntN(256) - 128)
			}
		}
		var want int32
		for _, v := range q {
			want += int32(v)
		}
		if got := blockSum(q[:]); got != want {
			t.Fatalf("blockSum(%v) = %d, want %d", q, got, want)
		}
	}
}

// Rows quantized a few groups at a time, in any order (as threads take them), are the rows
// quantized at once, padding rows included, on every kernel path and for both weight types.
func TestQuantizeGroupsInPieces(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	const m, k = 19, 96 // five groups, the last with one real row
	x := make([]float32, m*k)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	saved := Path()
	defer SetPath(saved)
	for _, p := range Paths() {
		if SetPath(p) != nil {
			continue
		}
		for _, typ := range []quant.Type{quant.Q8_0, quant.Q4_0} {
			whole := make([]byte, ActRowsBytes(m, k))
			want, err := QuantizeActRows(typ, x, m, k, k, whole)
			if err != nil {
				t.Fatal(err)
			}
			pieces := make([]byte, ActRowsBytes(m, k))
			for i := range pieces {
				pieces[i] = 0xa5 // what a reused scratch holds
			}
			got, err := ActRowsView(typ, m, k, pieces)
			if err != nil {
				t.Fatal(err)
			}
			for _, g := range [][2]int{{3, 5}, {0, 1}, {1, 3}} {
				if err := got.QuantizeGroups(x, k, g[0], g[1]); err != nil {
					t.Fatal(err)
				}
			}
			if !slices.Equal(got.q, want.q) || !slices.Equal(got.d, want.d) || !slices.Equal(got.s, want.s) {
				t.Errorf("%s, %v: the rows quantized in pieces differ from the rows at once", p, typ)
			}
		}
	}
}
