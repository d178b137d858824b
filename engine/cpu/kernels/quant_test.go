package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/posformer/posformer/layers/quant"
)

// Each kernel set runs the assembly it should: AVX-512 and AVX2 their own files, generic the Go
// panel path (so the tests below, run under every set, test each of them).
func TestQuantKernelsFollowKernelSet(t *testing.T) {
	want := map[string]quantAsm{AVX512: quantAVX512, AVX2: quantAVX2, Generic: noQuantAsm}
	for _, p := range Paths() {
		t.Run(p, func(t *testing.T) {
			withKernels(t, p)
			w := want[p]
			if !haveQuantAsm {
				w = noQuantAsm
			}
			if got := quantKernels(); got != w {
				t.Errorf("kernel set %s runs quantized assembly %d, want %d", p, got, w)
			}
		})
	}
}

// The float32-x products with stored weights, under every kernel set the CPU has, equal the
// float64 sum of x times the weights read from their bytes by the formats' definitions (Q8_0
// d·q, Q4_0 d·(n−8), bf16 the top half of a float32), to float32 rounding of Σ|terms|: depths of
// odd and even block counts (the kernels take blocks in pairs) and bf16 depths with a tail
// shorter than a vector, row counts of every remainder, weights from the quantizer and raw
// bytes, rows of x of ordinary values and of zeros (exact zeros out). y sits between canaries
// and the scales are followed by NaNs, so a write or read out of bounds shows.
func TestQuantDotRowsMatchReference(t *testing.T) {
	const tol = 2e-6 // float32 sums of at most 768 terms, each rounded once: observed < 2e-7
	for _, p := range Paths() {
		t.Run(p, func(t *testing.T) {
			withKernels(t, p)
			r := rand.New(rand.NewPCG(21, 22))
			worst := 0.0
			check := func(t *testing.T, got []float32, want, mag []float64) {
				for i := range want {
					d := math.Abs(float64(got[i]) - want[i])
					if d > tol*mag[i] || math.IsNaN(float64(got[i])) || (mag[i] == 0 && got[i] != 0) {
						t.Fatalf("row %d: %g, want %g (Σ|terms| %g)", i, got[i], want[i], mag[i])
					}
					if mag[i] > 0 {
						worst = max(worst, d/mag[i])
					}
				}
			}
			for _, typ := range []quant.Type{quant.Q8_0, quant.Q4_0} {
				for _, k := range []int{32, 64, 96, 288, 768} {
					for _, rows := range actRows {
						for _, raw := range []bool{false, true} {
							for _, xs := range []float64{1, 0} {
								t.Run(fmt.Sprintf("%v/k=%d/rows=%d/raw=%v/x=%g", typ, k, rows, raw, xs), func(t *testing.T) {
									c := newActCase(r, typ, k, rows, raw, xs)
									y := withCanaries(t, rows, func(y []float32) {
										if typ == quant.Q8_0 {
											DotRowsQ8_0(bytesAs[int8](c.q), c.d, k, c.x, y)
										} else {
											DotRowsQ4_0(c.q, c.d, k, c.x, y)
										}
									})
									want, mag := blockReference(c)
									check(t, y, want, mag)
								})
							}
						}
					}
				}
			}
			for _, k := range []int{8, 16, 40, 96, 288, 312, 768} {
				for _, rows := range actRows {
					t.Run(fmt.Sprintf("BF16/k=%d/rows=%d", k, rows), func(t *testing.T) {
						w, x := make([]uint16, rows*k), make([]float32, k)
						for i := range w {
							w[i] = uint16(math.Float32bits(float32(r.NormFloat64())) >> 16)
						}
						for i := range x {
							x[i] = float32(r.NormFloat64())
						}
						y := withCanaries(t, rows, func(y []float32) { DotRowsBF16(w, k, x, y) })
						want, mag := make([]float64, rows), make([]float64, rows)
						for i := range rows {
							for p := range k {
								v := float64(math.Float32frombits(uint32(w[i*k+p])<<16)) * float64(x[p])
								want[i] += v
								mag[i] += math.Abs(v)
							}
						}
						check(t, y, want, mag)
					})
				}
			}
			t.Logf("%s: largest |kernel − float64| / Σ|terms|: %.2g", p, worst)
		})
	}
}

// withCanaries runs f on a y of n floats inside a buffer of canaries, fails if any changed, and
// returns y.
func withCanaries(t *testing.T, n int, f func(y []float32)) []float32 {
	t.Helper()
	const canary = float32(-12345.678)
	back := make([]float32, n+8)
	for i := range back {
		back[i] = canary
	}
	y := back[4 : 4+n]
	f(y)
	for i, v := range back {
		if (i < 4 || i >= 4+n) && v != canary {
			t.Fatalf("write out of bounds at %d of y[4:%d]", i, 4+n)
		}
	}
	return y
}

// blockReference is x·W[r] in float64 for a Q8_0 or Q4_0 case, x as it is (float32), and
// Σ|terms|.
func blockReference(c actCase) (want, mag []float64) {
	nb := c.k / 32
	want, mag = make([]float64, c.rows), make([]float64, c.rows)
	for r := range c.rows {
		for j := range c.k {
			b := j / 32
			v := float64(c.d[r*nb+b]) * float64(storedValue(c, r, j)) * float64(c.x[j])
			want[r] += v
			mag[r] += math.Abs(v)
		}
	}
	return want, mag
}

// storedValue is the integer of element j of row r as the format defines it: the int8 (Q8_0),
// or n−8 for n in the low nibble of byte j%16 of the block (j%32 < 16) or its high one.
func storedValue(c actCase, r, j int) int {
	if c.typ == quant.Q8_0 {
		return int(int8(c.q[r*c.k+j]))
	}
	v := c.q[r*c.k/2+16*(j/32)+j%16]
	if j%32 >= 16 {
		v >>= 4
	}
	return int(v&15) - 8
}

// Dequantizing a panel (the prefill path) gives exactly d·q or d·(n−8) rounded once, under every
// kernel set, for odd and even block counts, writing nothing past the panel and reading no scale
// past the last block.
func TestDequantMatchesFormat(t *testing.T) {
	for _, p := range Paths() {
		t.Run(p, func(t *testing.T) {
			withKernels(t, p)
			r := rand.New(rand.NewPCG(23, 24))
			for _, typ := range []quant.Type{quant.Q8_0, quant.Q4_0} {
				for _, k := range []int{32, 96, 288} {
					for _, rows := range []int{1, 3} {
						c := newActCase(r, typ, k, rows, true, 1)
						n := rows * k
						back := make([]float32, n+8)
						for i := range back {
							back[i] = -1
						}
						dst := back[:n]
						if typ == quant.Q8_0 {
							DequantQ8_0(bytesAs[int8](c.q), c.d, dst)
						} else {
							DequantQ4_0(c.q, c.d, dst)
						}
						for i, v := range back[n:] {
							if v != -1 {
								t.Fatalf("%v k=%d rows=%d: wrote %g past the panel at %d", typ, k, rows, v, i)
							}
						}
						for i, v := range dst {
							row, j := i/k, i%k
							want := c.d[row*k/32+j/32] * float32(storedValue(c, row, j))
							if math.Float32bits(v) != math.Float32bits(want) {
								t.Fatalf("%v k=%d rows=%d: value %d = %g, want %g", typ, k, rows, i, v, want)
							}
						}
					}
				}
			}
		})
	}
}

// The float32-x kernels on one thread under each kernel set, bytes of stored weights (values
// and scales) per second: the 15M model's output head, 32000 rows of 288 (9 MB as Q8_0: in L3
// here), and a 768×288 matrix (the feed-forward's W2 shape transposed: in L2).
//
//	go test ./engine/cpu/kernels -run XXX -bench QuantDotRows
func BenchmarkQuantDotRows(b *testing.B) {
	r := rand.New(rand.NewPCG(25, 26))
	for _, p := range Paths() {
		for _, typ := range []quant.Type{quant.Q8_0, quant.Q4_0, quant.BF16} {
			for _, shape := range [][2]int{{32000, 288}, {768, 288}} {
				rows, k := shape[0], shape[1]
				y := make([]float32, rows)
				var c actCase
				var w []uint16
				if typ == quant.BF16 {
					c = newActCase(r, quant.Q8_0, k, 1, false, 1) // only its x
					raw, _ := quant.Quantize(quant.BF16, normals(r, rows*k))
					w = make([]uint16, rows*k)
					for i := range w {
						w[i] = uint16(raw[2*i]) | uint16(raw[2*i+1])<<8 // little-endian
					}
				} else {
					c = newActCase(r, typ, k, rows, false, 1)
				}
				b.Run(fmt.Sprintf("%s/%v/%dx%d", p, typ, rows, k), func(b *testing.B) {
					withKernels(b, p)
					if typ == quant.BF16 {
						b.SetBytes(int64(2 * len(w)))
					} else {
						b.SetBytes(int64(len(c.q) + 4*len(c.d)))
					}
					for b.Loop() {
						switch typ {
						case quant.Q8_0:
							DotRowsQ8_0(bytesAs[int8](c.q), c.d, k, c.x, y)
						case quant.Q4_0:
							DotRowsQ4_0(c.q, c.d, k, c.x, y)
						default:
							DotRowsBF16(w, k, c.x, y)
						}
					}
				})
			}
		}
	}
}

func normals(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}
