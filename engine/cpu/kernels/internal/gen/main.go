// Command gen writes the amd64 assembly of package kernels with avo: ../../kernels_amd64.s and
// the Go declarations of its functions, ../../stubs_amd64.go. It is a module of its own so that
// avo (and golang.org/x/tools under it) stays out of posformer's dependencies; run it through
// `go generate` in engine/cpu/kernels.
//
// Every kernel is emitted twice, once per instruction set: AVX-512 (zmm registers, 16 floats a
// vector, opmask registers for the last partial vector) and AVX2+FMA (ymm registers, 8 floats,
// scalar loops for the last elements). The Go wrappers in the package check all bounds before
// calling any of them; the assembly trusts its arguments.
package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"regexp"
	"strings"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// isa describes one instruction set the kernels are written for.
type isa struct {
	name  string // suffix of the function names
	lanes int    // float32 lanes in a vector
	bytes int    // bytes in a vector
	masks bool   // AVX-512: opmask registers, 32 vector registers
	regs  int    // vector registers
}

var (
	avx512 = isa{name: "AVX512", lanes: 16, bytes: 64, masks: true, regs: 32}
	avx2   = isa{name: "AVX2", lanes: 8, bytes: 32, masks: false, regs: 16}
)

// vec allocates a vector register of the set's width.
func (s isa) vec() VecVirtual {
	if s.masks {
		return ZMM()
	}
	return YMM()
}

// zeros allocates n vector registers set to zero.
func (s isa) zeros(n int) []VecVirtual {
	v := make([]VecVirtual, n)
	for i := range v {
		v[i] = s.vec()
		VXORPS(v[i], v[i], v[i])
	}
	return v
}

// Read-only data shared by the kernels.
var (
	tailMask Mem // uint16 [17]: tailMask[i] = 1<<i - 1, the opmask for i < 16 trailing floats
	permIdx  Mem // uint32 [16]: gathers the sums of reduceTree512 into lanes 0..7
	f32Const Mem // float32 scalars, see constOff
	vecConst Mem // float32 constants replicated over 8 lanes (AVX2 memory operands), see constOff
)

// Named float32 constants: offset in f32Const (times 4) and in vecConst (times 32).
var constNames = []struct {
	name string
	bits uint32
}{
	{"negInf", 0xff800000},
	{"nan", 0x7fc00000},
	{"log2e", math.Float32bits(math.Log2E)},
	{"ln2hi", 0x3f318000}, // 0.693359375: few mantissa bits, so k·ln2hi is exact
	{"ln2lo", 0xb95e8083}, // ln 2 - ln2hi = -2.12194440e-4
	{"expLo", 0xc2d00000}, // -104: below it e^x is 0 in float32 (and 2^k stays in range)
	{"expHi", 0x42b20000}, // 89: above it e^x is +Inf
	{"c7", 0x39500d01},    // 1/7!
	{"c6", 0x3ab60b61},    // 1/6!
	{"c5", 0x3c088889},    // 1/5!
	{"c4", 0x3d2aaaab},    // 1/4!
	{"c3", 0x3e2aaaab},    // 1/3!
	{"c2", 0x3f000000},    // 1/2
	{"one", 0x3f800000},   // 1
	{"signBit", 0x80000000},
	{"bias", 127}, // the float32 exponent bias, as an int32
}

func constOff(name string) int {
	for i, c := range constNames {
		if c.name == name {
			return i
		}
	}
	panic("no constant " + name)
}

// scalarConst is the float32 constant name in memory (for VBROADCASTSS).
func scalarConst(name string) Mem { return f32Const.Offset(4 * constOff(name)) }

// vectorConst is the constant name replicated over a ymm-sized memory operand.
func vectorConst(name string) Mem { return vecConst.Offset(32 * constOff(name)) }

func data() {
	tailMask = GLOBL("tailmask", RODATA|NOPTR)
	for i := 0; i <= 16; i++ {
		DATA(2*i, U16(uint16(1<<i-1)))
	}
	permIdx = GLOBL("permidx", RODATA|NOPTR)
	for i, v := range []uint32{0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15} {
		DATA(4*i, U32(v))
	}
	f32Const = GLOBL("f32const", RODATA|NOPTR)
	for i, c := range constNames {
		DATA(4*i, U32(c.bits))
	}
	vecConst = GLOBL("vecconst", RODATA|NOPTR)
	for i, c := range constNames {
		for l := 0; l < 8; l++ {
			DATA(32*i+4*l, U32(c.bits))
		}
	}
}

// broadcast loads the named constant into every lane of a new vector register.
func (s isa) broadcast(name string) VecVirtual {
	v := s.vec()
	VBROADCASTSS(scalarConst(name), v)
	return v
}

// hsum adds the lanes of v; the sum is in lane 0 of the returned register.
func (s isa) hsum(v VecVirtual) VecVirtual {
	return s.hreduce(v, func(a, b, dst Op) { VADDPS(a, b, dst) })
}

// hreduce folds the lanes of v with op (op(a, b, dst): dst = b op a).
func (s isa) hreduce(v VecVirtual, op func(a, b, dst Op)) VecVirtual {
	var y VecVirtual
	if s.masks {
		y = YMM()
		VEXTRACTF32X8(U8(1), v, y)
		op(y, v.AsY(), y)
	} else {
		y = v
	}
	x := XMM()
	if s.masks {
		VEXTRACTF32X4(U8(1), y, x)
	} else {
		VEXTRACTF128(U8(1), y, x)
	}
	op(x, y.AsX(), x)
	t := XMM()
	VPERMILPS(U8(0x4e), x, t) // swap the 64-bit halves
	op(t, x, x)
	t2 := XMM()
	VPERMILPS(U8(0xb1), x, t2) // swap neighbours
	op(t2, x, x)
	return x
}

// mem is a pointer argument loaded into a register, as a memory operand.
func mem(param string) Mem { return Mem{Base: Load(Param(param), GP64())} }

func main() {
	data()
	for _, s := range []isa{avx512, avx2} {
		sum(s)
		maxf(s)
		for _, op := range binaryOps {
			binary(s, op)
		}
		for _, op := range scalarOps {
			scalarOp(s, op)
		}
		for _, op := range extremumOps {
			extremum(s, op)
			extremumScalar(s, op)
		}
		sign(s)
		exp(s)
		logistic(s)
		vecMat(s)
		for m := 1; m <= 8; m++ {
			mmnt(s, m)
		}
		if s.masks {
			mmnt1Stream(s)
		}
	}
	pack8("pack8AVX512", 8)
	pack8("pack8x32AVX512", 32)
	gemm(avx512, 8, 2) // 16 accumulators, 2 B vectors, broadcasts of A
	gemm(avx2, 6, 2)   // 12 accumulators, 2 B vectors, 2 broadcasts: all 16 registers
	gemmDirect(avx2, 6, 2)
	gemmDirect(avx512, 8, 2)
	pairData()
	// bf16: an 8×32 tile (12×32 and 6×64 ran the kernel alone at the same rate, and 8 rows
	// share pack8's transpose), and the packing into its panels.
	gemmBF16(8, 2)
	packRowsBF16("packA8BF16", 4*8)   // A [m, k] into panels of 8 rows
	packRowsBF16("packBT8BF16", 4*32) // 8 of the 32 columns of a B panel, B stored [n, k]
	packPairsBF16("packAT8BF16", 8)   // A stored [k, m]
	packPairs2x8BF16("packAT16BF16")  // the same, two panels at once
	packPairsBF16("packB32BF16", 32)  // B [k, n] into panels of 32 columns
	// bf16 without AVX512_BF16: on AVX-512F the same 8×32 tile (16 accumulators, 2×2 widened B
	// vectors, a widened A pair and the mask: 23 registers), on AVX2 and FMA a 4×16 one (8, 4,
	// 2 and 1: 15 registers); their panels are packed with AVX2 (ymm) on both.
	gemmBF16Emu(avx512, 8, 2)
	gemmBF16Emu(avx2, 4, 2)
	bf16RoundData()
	packPairsBF16AVX2("packPairs4BF16AVX2", 4)   // A stored [k, m] into panels of 4 rows
	packPairsBF16AVX2("packPairs8BF16AVX2", 8)   // ... of 8 rows
	packPairsBF16AVX2("packPairs16BF16AVX2", 16) // B stored [k, n] into panels of 16 columns
	packPairsBF16AVX2("packPairs32BF16AVX2", 32) // ... of 32 columns
	packRows4BF16AVX2("packRows4BF16AVX2")       // A [m, k]; B stored [n, k]: 4 rows at a time
	Generate()
	out, stubs := flag.Lookup("out").Value.String(), flag.Lookup("stubs").Value.String()
	if err := bf16Patch(out); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := checkAVX2(out); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, f := range []struct{ path, text string }{
		{out, "// The AVX-512 and AVX2+FMA kernels of package kernels, written by internal/gen (avo)."},
		{stubs, "// Go declarations of the assembly in kernels_amd64.s."},
	} {
		if err := explain(f.path, f.text); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}

// explain adds a comment under the "Code generated" line of a generated file.
func explain(path, text string) error {
	src, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	first, rest, _ := strings.Cut(string(src), "\n")
	return os.WriteFile(path, []byte(first+"\n"+text+"\n"+rest), 0o644)
}

// checkAVX2 verifies that the AVX2 functions of the generated assembly use only what AVX2
// machines have. avo allocates from all 32 vector registers, and the Go assembler silently
// encodes X16-X31/Y16-Y31 with EVEX (an AVX-512 instruction), which would fault on an AVX2-only
// CPU; this machine could not tell, since it has AVX-512.
func checkAVX2(path string) error {
	src, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	badReg := regexp.MustCompile(`\b([XY](1[6-9]|2[0-9]|3[01])|Z[0-9]+|K[0-7])\b`)
	badOp := regexp.MustCompile(`^(V\w*(32X4|32X8|64X2|64X4)|VRNDSCALE\w*|VSCALEF\w*|VRANGE\w*|VPERM[TI]2\w*|VPTERNLOG\w*|VFPCLASS\w*|VGETEXP\w*|VGETMANT\w*|VREDUCE\w*|VCOMPRESS\w*|VEXPAND\w*|VBLENDM\w*|VPRO[LR]\w*|K[A-Z]+[BWDQ]|\S+\.(Z|BCST|SAE|RN_SAE|RZ_SAE|RU_SAE|RD_SAE))$`)
	fn := ""
	for i, line := range strings.Split(string(src), "\n") {
		if strings.HasPrefix(line, "TEXT ") {
			fn = line
			continue
		}
		if !strings.Contains(fn, "AVX2(SB)") {
			continue
		}
		f := strings.Fields(line)
		if len(f) > 0 && (badReg.MatchString(line) || badOp.MatchString(f[0])) {
			return fmt.Errorf("%s:%d: AVX-512 register or instruction in an AVX2 function (%s): %s", path, i+1, fn, strings.TrimSpace(line))
		}
	}
	return nil
}

// loadGP loads an integer or pointer argument into a new general-purpose register.
func loadGP(param string) GPVirtual { return Load(Param(param), GP64()).(GPVirtual) }

// tailOpmask returns an opmask with the low n bits set (n < 16).
func tailOpmask(n GPVirtual) OpmaskVirtual {
	t := GP64()
	LEAQ(tailMask, t)
	k := K()
	KMOVW(Mem{Base: t, Index: n, Scale: 2}, k)
	return k
}
