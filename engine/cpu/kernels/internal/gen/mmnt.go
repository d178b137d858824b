package main

// Products of a few rows of x (M = 1..8) with a matrix w stored [n, k]: y[i, j] = x[i, :]·w[j, :].
// One function per M. Rows of w go J at a time (J as large as the registers allow: M·J
// accumulators, J rows of w and one row chunk of x); every chunk of a w row is loaded once and
// used for all M rows of x. The leftover rows of w go one at a time. The accumulators of a
// group are folded into one vector holding the J sums (reduceTree) and stored together.

import (
	"fmt"
	"os"
	"strconv"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// groupRows is J for M rows of x.
func groupRows(s isa, m int) int {
	if m == 1 {
		return m1Rows(s)
	}
	j := min(8, (s.regs-2)/(m+1))
	if !s.masks && j > 4 {
		j = 4 // the AVX2 reductions store 1, 2, 3, 4 or 8 sums
	}
	return j
}

// rows addresses row i (0..7) of a matrix from base0 (row 0) and base4 (row 4) with the row
// stride ld and 3·ld in registers.
type rows struct {
	base0, base4, ld, ld3 GPVirtual
}

func (r rows) row(i int) Mem {
	b := r.base0
	if i >= 5 {
		b, i = r.base4, i-4
	}
	switch i {
	case 0:
		return Mem{Base: b}
	case 3:
		return Mem{Base: b, Index: r.ld3, Scale: 1}
	}
	return Mem{Base: b, Index: r.ld, Scale: uint8(i)}
}

func mmnt(s isa, M int) { mmntRows(s, M, groupRows(s, M), "") }

// mmnt1Stream is mmnt1 reading one row of w at a time: a single stream through memory, which the
// hardware prefetcher follows where the J rows read in turns (J streams, each a row long) leave
// it behind: on Zen 4, a 32000×288 matrix from memory 20-21 GB/s on one thread against 15-17;
// in cache, where J rows share x's loads and one reduction, it is the slower of the two.
func mmnt1Stream(s isa) { mmntRows(s, 1, 1, "Stream") }

func mmntRows(s isa, M, J int, suffix string) {
	name := fmt.Sprintf("mmnt%d%s%s", M, suffix, s.name)
	TEXT(name, NOSPLIT, "func(x *float32, ldx int, w *float32, ldw int, y *float32, ldy int, n, k int)")
	Pragma("noescape")
	Doc(fmt.Sprintf("%s sets y[i·ldy+j] = Σ_p x[i·ldx+p]·w[j·ldw+p] for i < %d, j < n, p < k.", name, M))

	var ldx, ldx3 GPVirtual
	if M > 1 {
		ldx = loadGP("ldx")
		SHLQ(U8(2), ldx)
	}
	if M > 3 {
		ldx3 = GP64()
		LEAQ(Mem{Base: ldx, Index: ldx, Scale: 2}, ldx3)
	}
	ldw := loadGP("ldw")
	SHLQ(U8(2), ldw)
	var ldw3 GPVirtual
	if J > 3 {
		ldw3 = GP64()
		LEAQ(Mem{Base: ldw, Index: ldw, Scale: 2}, ldw3)
	}
	wrow := loadGP("w")
	ybase := loadGP("y")
	n := loadGP("n")

	var ktail OpmaskVirtual
	if s.masks {
		r := loadGP("k")
		ANDQ(U32(15), r)
		ktail = tailOpmask(r)
	}

	group := func(J int, pfx string) {
		var kstore OpmaskVirtual
		if s.masks && J > 1 {
			r := GP32()
			MOVL(U32(1<<J-1), r)
			kstore = K()
			KMOVW(r, kstore)
		}
		Label(pfx + "rows")
		CMPQ(n, U32(J))
		JB(LabelRef(pfx + "end"))

		w := rows{base0: GP64(), ld: ldw, ld3: ldw3}
		MOVQ(wrow, w.base0)
		if J > 5 {
			w.base4 = GP64()
			LEAQ(Mem{Base: w.base0, Index: ldw, Scale: 4}, w.base4)
		}
		x := rows{base0: loadGP("x"), ld: ldx, ld3: ldx3}
		if M > 5 {
			x.base4 = GP64()
			LEAQ(Mem{Base: x.base0, Index: ldx, Scale: 4}, x.base4)
		}
		ptrs := []GPVirtual{w.base0, x.base0}
		if w.base4 != nil {
			ptrs = append(ptrs, w.base4)
		}
		if x.base4 != nil {
			ptrs = append(ptrs, x.base4)
		}
		U, ulog := 1, 0
		if M == 1 {
			U = m1Unroll(s)
			for 1<<ulog < U {
				ulog++
			}
		}
		acc := s.zeros(M * J * U)

		// chunk multiplies one vector of columns; mode "full", "masked" (AVX-512, the lanes
		// of ktail) or "scalar" (AVX2, lane 0 only).
		chunk := func(mode string, u int) {
			load := func(m Mem) VecVirtual {
				v := s.vec()
				switch mode {
				case "full":
					VMOVUPS(m, v)
				case "masked":
					VMOVUPS_Z(m, ktail, v)
				default:
					// Zero the whole register first: VMOVSS writes only its xmm part, and
					// avo's liveness would keep the rest live from the function's entry.
					VXORPS(v, v, v)
					VMOVSS(m, v.AsX())
				}
				return v
			}
			if M == 1 {
				xv := load(x.row(0).Offset(u * s.bytes))
				for j := 0; j < J; j++ {
					a := acc[u*J+j]
					switch mode {
					case "full":
						VFMADD231PS(w.row(j).Offset(u*s.bytes), xv, a)
					case "masked":
						VFMADD231PS(w.row(j), xv, ktail, a)
					default:
						VFMADD231PS(load(w.row(j)), xv, a)
					}
				}
				return
			}
			wv := make([]VecVirtual, J)
			for j := range wv {
				wv[j] = load(w.row(j))
			}
			for i := 0; i < M; i++ {
				xv := load(x.row(i))
				for j := 0; j < J; j++ {
					VFMADD231PS(wv[j], xv, acc[i*J+j])
				}
			}
		}

		// Blocks of U vectors per row, then single vectors, then the tail.
		log := 3
		if s.masks {
			log = 4
		}
		if U > 1 {
			cnt := loadGP("k")
			SHRQ(U8(log+ulog), cnt)
			TESTQ(cnt, cnt)
			JZ(LabelRef(pfx + "k1"))
			Label(pfx + "kU")
			for u := 0; u < U; u++ {
				chunk("full", u)
			}
			for _, p := range ptrs {
				ADDQ(U32(U*s.bytes), p)
			}
			DECQ(cnt)
			JNZ(LabelRef(pfx + "kU"))
		}
		Label(pfx + "k1")
		cnt := loadGP("k")
		SHRQ(U8(log), cnt)
		if U > 1 {
			ANDQ(U32(U-1), cnt)
		}
		TESTQ(cnt, cnt)
		JZ(LabelRef(pfx + "ktail"))
		Label(pfx + "k")
		chunk("full", 0)
		for _, p := range ptrs {
			ADDQ(U32(s.bytes), p)
		}
		DECQ(cnt)
		JNZ(LabelRef(pfx + "k"))

		Label(pfx + "ktail")
		if s.masks {
			KORTESTW(ktail, ktail)
			JZ(LabelRef(pfx + "store"))
			chunk("masked", 0)
		} else {
			c := loadGP("k")
			ANDQ(U32(7), c)
			Label(pfx + "kscalar")
			TESTQ(c, c)
			JZ(LabelRef(pfx + "store"))
			chunk("scalar", 0)
			for _, p := range ptrs {
				ADDQ(U32(4), p)
			}
			DECQ(c)
			JMP(LabelRef(pfx + "kscalar"))
		}

		Label(pfx + "store")
		for u := 1; u < U; u++ {
			for j := 0; j < J; j++ {
				VADDPS(acc[u*J+j], acc[j], acc[j])
			}
		}
		yi := GP64()
		MOVQ(ybase, yi)
		ldy := loadGP("ldy")
		SHLQ(U8(2), ldy)
		for i := 0; i < M; i++ {
			storeSums(s, acc[i*J:(i+1)*J], Mem{Base: yi}, kstore)
			if i < M-1 {
				ADDQ(ldy, yi)
			}
		}
		ADDQ(U32(4*J), ybase)
		left := J
		for _, sc := range []int{8, 4, 2, 1} {
			for left >= sc {
				LEAQ(Mem{Base: wrow, Index: ldw, Scale: uint8(sc)}, wrow)
				left -= sc
			}
		}
		SUBQ(U32(J), n)
		JMP(LabelRef(pfx + "rows"))
		Label(pfx + "end")
	}
	group(J, "g")
	if J > 1 {
		group(1, "s")
	}
	VZEROUPPER()
	RET()
}

// storeSums writes the lane sums of accs (len 1..8) to consecutive floats at dst; kstore
// (AVX-512) masks len(accs) lanes.
func storeSums(s isa, accs []VecVirtual, dst Mem, kstore OpmaskVirtual) {
	J := len(accs)
	if J == 1 {
		VMOVSS(s.hsum(accs[0]), dst)
		return
	}
	if s.masks {
		VMOVUPS(reduceTree512(accs), kstore, dst)
		return
	}
	r := reduceTree256(accs)
	switch J {
	case 8:
		VMOVUPS(r, dst)
	case 4:
		VMOVUPS(r.AsX(), dst)
	case 3:
		VMOVLPS(r.AsX(), dst)
		VEXTRACTPS(U8(2), r.AsX(), dst.Offset(8))
	case 2:
		VMOVLPS(r.AsX(), dst)
	default:
		panic(fmt.Sprintf("AVX2 group of %d rows", J))
	}
}

// pad extends accs to n registers with zeros.
func pad(s isa, accs []VecVirtual, n int) []VecVirtual {
	if len(accs) == n {
		return accs
	}
	z := s.vec()
	VXORPS(z, z, z)
	out := append([]VecVirtual(nil), accs...)
	for len(out) < n {
		out = append(out, z)
	}
	return out
}

// reduceTree512 returns a zmm whose lane j holds the sum of the lanes of accs[j] (2 <= len <= 8).
func reduceTree512(accs []VecVirtual) VecVirtual {
	n := 4
	if len(accs) > 4 {
		n = 8
	}
	v := pad(avx512, accs, n)
	// Halve each pair (a, b) into [a0+a2, a1+a3, b0+b2, b1+b3] (128-bit lanes).
	var h []VecVirtual
	for p := 0; p < n; p += 2 {
		t1, t2 := ZMM(), ZMM()
		VSHUFF32X4(U8(0x44), v[p+1], v[p], t1)
		VSHUFF32X4(U8(0xee), v[p+1], v[p], t2)
		VADDPS(t2, t1, t1)
		h = append(h, t1)
	}
	// Pairs of those into [a, b, c, d]: lane L holds 4 floats adding up to the sum of accs[L].
	var q []VecVirtual
	for p := 0; p < len(h); p += 2 {
		t1, t2 := ZMM(), ZMM()
		VSHUFF32X4(U8(0x88), h[p+1], h[p], t1)
		VSHUFF32X4(U8(0xdd), h[p+1], h[p], t2)
		VADDPS(t2, t1, t1)
		q = append(q, t1)
	}
	v1, v2 := q[0], q[0]
	if len(q) > 1 {
		v2 = q[1]
	}
	// Within lanes: [v1 01, v1 23, v2 01, v2 23], then [v1 sum, v2 sum, v1 sum, v2 sum].
	t1, t2 := ZMM(), ZMM()
	VSHUFPS(U8(0x88), v2, v1, t1)
	VSHUFPS(U8(0xdd), v2, v1, t2)
	VADDPS(t2, t1, t1)
	t3, t4 := ZMM(), ZMM()
	VSHUFPS(U8(0x88), t1, t1, t3)
	VSHUFPS(U8(0xdd), t1, t1, t4)
	VADDPS(t4, t3, t3)
	// Lane L element 0 is the sum of accs[L], element 1 that of accs[L+4]: gather them.
	idx := ZMM()
	VMOVUPS(permIdx, idx)
	VPERMPS(t3, idx, t3)
	return t3
}

// reduceTree256 returns a ymm whose element j holds the sum of the lanes of accs[j]; len(accs)
// is 2, 3, 4 (the sums are in the low xmm) or 8.
func reduceTree256(accs []VecVirtual) VecVirtual {
	// fold pairs (a, b) into [a.lo+a.hi, b.lo+b.hi].
	fold := func(a, b VecVirtual) VecVirtual {
		t1, t2 := YMM(), YMM()
		VPERM2F128(U8(0x20), b, a, t1)
		VPERM2F128(U8(0x31), b, a, t2)
		VADDPS(t2, t1, t1)
		return t1
	}
	if len(accs) == 8 {
		s1, s2 := fold(accs[0], accs[4]), fold(accs[1], accs[5])
		s3, s4 := fold(accs[2], accs[6]), fold(accs[3], accs[7])
		VHADDPS(s2, s1, s1)
		VHADDPS(s4, s3, s3)
		VHADDPS(s3, s1, s1) // [a0 a1 a2 a3 | a4 a5 a6 a7]
		return s1
	}
	v := pad(avx2, accs, 4)
	s1, s2 := fold(v[0], v[2]), fold(v[1], v[3])
	VHADDPS(s2, s1, s1) // [a0 a0 a1 a1 | a2 a2 a3 a3] (partial sums)
	VHADDPS(s1, s1, s1) // [a0 a1 a0 a1 | a2 a3 a2 a3]
	VPERMPD(U8(0x08), s1, s1)
	return s1
}

// m1Rows and m1Unroll shape the M = 1 kernel (DotRows): J rows of w, each read U vectors (a
// power of 2) at a time; w rows are memory operands, so it takes J·U accumulators and U chunks
// of x. Measured on the decode shapes (32000x288, 768x288, 288x768): shapes from 2x4 to 8x2
// are all within noise of the L2 bandwidth on the L2-resident ones, and 8x2 (AVX-512) reads
// the big matrix fastest. $GEN_M1_ROWS_<ISA> and $GEN_M1_UNROLL_<ISA> override, for such
// experiments.
func m1Rows(s isa) int { return envInt("GEN_M1_ROWS_"+s.name, 8) }

func m1Unroll(s isa) int {
	def := 1
	if s.masks {
		def = 2
	}
	return envInt("GEN_M1_UNROLL_"+s.name, def)
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}
