package cpu

// Float32 transcendental functions over slices: Tanh, Log, Log1p, Sin and Cos for the float32
// elementwise steps and the fused trees, in place of a float64 math.* call per element through a
// closure. Each works in float64 arithmetic (as fast as float32 for scalar code, and with 29
// spare bits, so that cancellations and the polynomials' truncation stay far below a float32
// ulp): a range reduction, a short polynomial, and a rare branch to math.* for the arguments
// the fast path does not cover (NaN, infinities, zero and negatives for Log, huge arguments for
// Sin and Cos). The loops call nothing per element, so the compiler keeps them in registers.
//
// Error bounds are in float32 ulps of the exact result and were measured against math.* in
// float64 (whose own error, below 1 float64 ulp, is 2^-29 of a float32 ulp) by
// TestMathF32Sweep, exhaustively over the ranges the doc comments name (run with
// MATHF32_EXHAUSTIVE=1, about 5 minutes on two cores; the default run sweeps every 97th float32
// of the same ranges, and TestMathF32Huge a log-spaced set of all magnitudes, asserting < 1 ulp).
//
// Where the compiler fuses a multiply and an add (the Go spec allows it; arm64 does, amd64 at
// GOAMD64=v1 does not), the results are at least as accurate: the exact steps (n·pio2Hi/16, the range reductions' subtractions)
// stay exact and the others round once instead of twice.
//
// Like the kernels, the functions work on len(out) elements; a must be at least as long. Each
// converts a chunk to float64, runs its float64 loop on it in place, and rounds it back.

import "math"

const (
	// round is 1.5·2^52: x + round - round rounds |x| < 2^51 to an integer, and the low bits of
	// x + round are that integer in two's complement.
	round = 0x1.8p52

	ln2    = 0x1.62e42fefa39efp-1
	invLn2 = 0x1.71547652b82fep0
	// ln2Hi has 32 significant bits, so n·ln2Hi is exact for |n| < 2^21; ln2Hi + ln2Lo is ln2 to
	// about 2^-85.
	ln2Hi = 6.93147180369123816490e-01
	ln2Lo = 1.90821492927058770002e-10

	// pio2Hi has 33 significant bits, so n·pio2Hi/16 is exact for |n| < 2^20; pio2Hi + pio2Lo
	// is π/2 to about 2^-86 (fdlibm's pio2_1 and pio2_1t).
	pio2Hi = 1.57079632673412561417e+00
	pio2Lo = 6.07710050650619224932e-11
	// trigFast bounds the arguments reduced here: |n| <= 2^16·32/π < 2^20.
	trigFast = 1 << 16
)

// tanh32 sets out[i] = tanh(a[i]) within 0.50001 ulp (measured exhaustively, every float32:
// max 0.500001 ulp; the test asserts < 1 ulp, i.e. the correctly rounded result or, rarely, its
// neighbour); tanh(±0) = ±0, tanh(±Inf) = ±1, NaN stays NaN.
//
// tanh|x| = e/(e+2) with e = expm1(2|x|) (no cancellation near 0), |x| clamped to 9.5, beyond
// which tanh rounds to 1 in float32. expm1(t) = s·expm1(r) + (s - 1) with t = n·ln2/32 + r,
// |r| <= ln2/64, s = 2^(n/32) from exp2Tab and a power of two, and expm1(r) by its Taylor series
// to r^5 (relative truncation below 2e-12).
func tanh32(a, out []float32) {
	var buf [mathChunk]float64
	for lo := 0; lo < len(out); lo += mathChunk {
		b := toF64(buf[:], a, out, lo)
		tanhF64(b)
		fromF64(out[lo:], b)
	}
}

// exp2Tab[j] = 2^(j/32).
var exp2Tab [32]float64

func init() {
	for j := range exp2Tab {
		exp2Tab[j] = math.Exp2(float64(j) / 32)
	}
}

func tanhF64(b []float64) {
	for i, x := range b {
		t := math.Abs(x)
		if t > 9.5 {
			t = 9.5
		}
		t += t
		k := t*(32*invLn2) + round
		n := k - round // 0 <= n <= 32·19/ln2
		r := (t - n*(ln2Hi/32)) - n*(ln2Lo/32)
		kb := math.Float64bits(k)
		s := exp2Tab[kb%32] * math.Float64frombits((kb/32+1023)<<52)
		r2 := r * r
		p := r + r2*((1.0/2+r*(1.0/6))+r2*(1.0/24+r*(1.0/120)))
		e := s*p + (s - 1)
		b[i] = math.Copysign(e/(e+2), x)
	}
}

// logTab splits [0x1.66p-1, 0x1.66p0) (the reduced argument's range, about [0.699, 1.398)) into
// 128 intervals by the top 7 bits of the bit distance from its start: interval j holds
// invc ≈ 1/c for c its middle (c = 1 exactly in the two intervals next to 1, so that
// log(z) = log1p(z-1) with z-1 exact where the result is small) and logc = log(c).
const (
	logBits = 7
	logOff  = 0x3fe6600000000000 // 0x1.66p-1
)

var logTab [1 << logBits]struct{ invc, logc float64 }

func init() {
	for j := range logTab {
		lo := math.Float64frombits(logOff + uint64(j)<<(52-logBits))
		hi := math.Float64frombits(logOff + uint64(j+1)<<(52-logBits))
		invc, logc := 2/(lo+hi), 0.0
		if lo == 1 || hi == 1 {
			invc = 1
		} else {
			logc = -math.Log(invc)
		}
		logTab[j].invc, logTab[j].logc = invc, logc
	}
}

// log32 sets out[i] = log(a[i]) within 0.5001 ulp (measured exhaustively, every positive
// float32, subnormals included: max 0.500037 ulp; the test asserts < 1 ulp); log(±0) = -Inf,
// log(x < 0) = NaN, log(+Inf) = +Inf, NaN stays NaN.
//
// x = 2^k·z with z in [0.699, 1.398), z = c·(1+r) with c from logTab and |r| <= 2^-7, and
// log(x) = k·ln2 + log(c) + log1p(r), log1p(r) by its Taylor series to r^5.
func log32(a, out []float32) {
	var buf [mathChunk]float64
	for lo := 0; lo < len(out); lo += mathChunk {
		b := toF64(buf[:], a, out, lo)
		logF64(b, 0)
		fromF64(out[lo:], b)
	}
}

// logF64 sets b[i] = log(b[i]) for float32 values (the bound is for them); with plus1,
// b[i] = log1p(b[i]) (see log1p32).
func logF64(b []float64, plus1 float64) {
	for i, x := range b {
		u := x + plus1
		if !(u > 0 && u <= math.MaxFloat64) {
			if plus1 == 0 {
				b[i] = math.Log(x)
			} else {
				b[i] = math.Log1p(x)
			}
			continue
		}
		ix := math.Float64bits(u)
		tmp := ix - logOff
		e := &logTab[(tmp>>(52-logBits))%(1<<logBits)]
		r := math.Float64frombits(ix-tmp&(0xfff<<52))*e.invc - 1
		k := int64(tmp) >> 52
		y := e.logc + float64(k)*ln2
		y = y + r + r*r*(-1.0/2+r*(1.0/3+r*(-1.0/4+r*(1.0/5))))
		if plus1 != 0 {
			// log1p(x) = log(u) + log1p(d/u) ≈ log(u) + d/u with d = x - (u-1) the rounding of u:
			// exact and the only term that matters for |x| < 2^-29 (then u ≈ 1, k = 0); for
			// x >= 2^53, u-1 may round too and d be off by an ulp of u, but d/u stays below
			// 2^-52. 2^-k stands for 1/u (within a factor of 2). And the sign of x, which log1p
			// keeps: log1p(-0) = -0.
			d := (x - (u - 1)) * math.Float64frombits(uint64(1023-k)<<52)
			y = math.Copysign(y+d, x)
		}
		b[i] = y
	}
}

// log1p32 sets out[i] = log(1+a[i]) within 0.5001 ulp (measured exhaustively, every float32
// > -1: max 0.500076 ulp; the test asserts < 1 ulp); log1p(±0) = ±0, log1p(-1) = -Inf,
// log1p(x < -1) = NaN, log1p(+Inf) = +Inf, NaN stays NaN.
//
// u = 1+x in float64 is exact unless |x| < 2^-29 or x > 2^53; log1p(x) = log(u) + d/u with
// d = x-(u-1) the rounding of u (it only matters for tiny x), log(u) as in log32. The result
// takes the sign of x, which log1p keeps, so that log1p(-0) = -0.
func log1p32(a, out []float32) {
	var buf [mathChunk]float64
	for lo := 0; lo < len(out); lo += mathChunk {
		b := toF64(buf[:], a, out, lo)
		logF64(b, 1)
		fromF64(out[lo:], b)
	}
}

// sin32 sets out[i] = sin(a[i]) within 0.50001 ulp (measured exhaustively, every float32 with
// |x| <= 2^20: max 0.500000 ulp to six digits; the test asserts < 1 ulp; arguments beyond ±2^16
// go to math.Sin); sin(±0) = ±0, sin(±Inf) = NaN, NaN stays NaN.
func sin32(a, out []float32) { sincos32(a, out, 0) }

// cos32 sets out[i] = cos(a[i]) within 0.50001 ulp, measured as sin32 (max 0.500000 ulp;
// arguments beyond ±2^16 go to math.Cos); cos(±Inf) = NaN, NaN stays NaN.
func cos32(a, out []float32) { sincos32(a, out, 16) }

// sinTab[j] = sin(j·π/32), exact at multiples of π/2 (sin 0 as -0).
var sinTab [64]float64

func init() {
	for j := range sinTab {
		switch j % 16 {
		case 0:
			// sin(0) as -0: sin(±0) = -0·1 + 1·±0 = ±0.
			sinTab[j] = [4]float64{math.Copysign(0, -1), 1, 0, -1}[j/16]
		default:
			sinTab[j] = math.Sin(float64(j) * math.Pi / 32)
		}
	}
}

// sincos32 computes sin(x + shift·π/32): x = n·π/32 + r with |r| <= π/64 (Cody-Waite with a
// 33-bit head, exact for |x| <= trigFast), a = (n+shift)·π/32, and
// sin(x) = sin(a)·cos(r) + cos(a)·sin(r), sin(a) and cos(a) = sin(a + π/2) from sinTab, sin(r)
// and cos(r) by their Taylor series to r^7 and r^6 (truncation below 3e-14 and 3e-12). Where
// sin(x) is near 0 (x near a multiple of π), sin(a) is 0 exactly and the result is ±sin(r).
func sincos32(a, out []float32, shift uint64) {
	var buf [mathChunk]float64
	for lo := 0; lo < len(out); lo += mathChunk {
		b := toF64(buf[:], a, out, lo)
		sincosF64(b, shift)
		fromF64(out[lo:], b)
	}
}

func sincosF64(b []float64, shift uint64) {
	for i, x := range b {
		if math.Abs(x) > trigFast { // not NaN: it flows through the fast path
			if shift == 0 {
				b[i] = math.Sin(x)
			} else {
				b[i] = math.Cos(x)
			}
			continue
		}
		k := x*(32/math.Pi) + round
		n := k - round
		r := (x - n*(pio2Hi/16)) - n*(pio2Lo/16)
		z := r * r
		s := r * (1 + z*(-1.0/6+z*(1.0/120+z*(-1.0/5040))))
		c := 1 + z*(-1.0/2+z*(1.0/24+z*(-1.0/720)))
		j := math.Float64bits(k) + shift
		b[i] = sinTab[j%64]*c + sinTab[(j+16)%64]*s
	}
}

// mathChunk is how many elements the functions above convert to float64 at a time. Converting
// in a loop of its own, rather than as each element is computed, matters: CVTSS2SD writes only
// the low half of its register, and in the computing loop the compiler gives it a register
// written late in the previous iteration, which chains the iterations (measured: twice slower).
const mathChunk = 256

// toF64 converts a[lo:lo+n] to float64 in buf, n = min(mathChunk, len(out)-lo).
func toF64(buf []float64, a, out []float32, lo int) []float64 {
	n := min(len(buf), len(out)-lo)
	b := buf[:n]
	for i, x := range a[lo : lo+n] {
		b[i] = float64(x)
	}
	return b
}

// fromF64 rounds b to float32 into out.
func fromF64(out []float32, b []float64) {
	out = out[:len(b)]
	for i, y := range b {
		out[i] = float32(y)
	}
}
