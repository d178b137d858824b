package cpu

// Products with a signed permutation. RoPE's rotation needs x with the two values of every
// rotated pair swapped and one of them negated; positional.RoPE forms it, as any backend can,
// as x times a constant matrix with one ±1 a row. As a product that is K multiply-adds an
// element (a 15M-shaped 512-token prefill's twelve such products took 0.18 ms each, 4% of it;
// decoding, 7 µs a call, 24 calls a token at the 110M shape); as what it is, each output element
// is one input element, negated or not: a pass over x.
//
// The results are the product's for finite x: the product adds zeros (±0) to ±x_p, and only
// the sign of a zero result can differ (-0 here where the sum gives +0); an infinite x_j makes
// the product's other terms NaN (0·∞), where here only the element that reads x_j sees it.

import (
	"sync/atomic"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
)

// signPermsCompiled counts the products lowered as signed permutations (for tests).
var signPermsCompiled atomic.Int64

// signPerm is a product x·W with W a signed permutation: output i of a row is sign[i] · x[src[i]]
// (sign 0: the output is 0, a pass-through dimension of a partial rotation). pairs: the
// rotation of adjacent pairs over whole rows (out[2k] = −x[2k+1], out[2k+1] = x[2k]), done over
// the whole array at once. Otherwise a row is copied a run at a time: the rotation of halves
// (out[:h] = −x[h:], out[h:] = x[:h], Hugging Face's rotate_half) is two runs.
type signPerm struct {
	M, K  int
	src   []int
	sign  []float32
	pairs bool
	runs  []permRun
}

// permRun is n consecutive outputs from dst on, sign · the inputs from src on.
type permRun struct {
	dst, src, n int
	sign        float32
}

// signPermOf returns the signed permutation n multiplies its left operand by, or nil: a float32
// product without batch axes whose left operand is read in place and whose right operand is a
// constant [N, K] (or [K, N], trans) with at most one nonzero a row of the result, ±1.
func signPermOf(n *node, attr *dotAttr) *signPerm {
	B, M, N, K, lp, rp := planDot(n, attr)
	if B != 1 || N != K || lp.perm != nil || lp.trans || rp.perm != nil || n.inputs[0].shape.DType != dtypes.Float32 {
		return nil
	}
	w := base(n.inputs[1])
	data, ok := w.attr.([]byte)
	if w.op != backends.OpTypeConstant || !ok || w.shape.DType != dtypes.Float32 || w.shape.Size() != N*K {
		return nil
	}
	c := typed[float32](data)
	at := func(i, k int) float32 { // W's element for output i and input k
		if rp.trans {
			return c[k*N+i]
		}
		return c[i*K+k]
	}
	sp := &signPerm{M: M, K: K, src: make([]int, N), sign: make([]float32, N), pairs: K%2 == 0}
	for i := range N {
		for k := range K {
			switch v := at(i, k); {
			case v == 0:
			case (v == 1 || v == -1) && sp.sign[i] == 0:
				sp.src[i], sp.sign[i] = k, v
			default:
				return nil // not ±1, or a second nonzero
			}
		}
		want, sign := i+1, float32(-1)
		if i%2 == 1 {
			want, sign = i-1, 1
		}
		sp.pairs = sp.pairs && sp.src[i] == want && sp.sign[i] == sign
	}
	for i := range N {
		if r := len(sp.runs) - 1; r >= 0 && sp.runs[r].sign == sp.sign[i] && (sp.sign[i] == 0 || sp.src[i] == sp.src[i-1]+1) {
			sp.runs[r].n++
			continue
		}
		sp.runs = append(sp.runs, permRun{dst: i, src: sp.src[i], n: 1, sign: sp.sign[i]})
	}
	return sp
}

func lowerSignPerm(lw *lowering, sp *signPerm) stepFn {
	signPermsCompiled.Add(1)
	ia, io := lw.in[0], lw.out
	pool := lw.e.backend.pool
	M, K := sp.M, sp.K
	return func(f *frame) {
		x, out := typed[float32](f.slots[ia])[:M*K], typed[float32](f.slots[io])[:M*K]
		if M*K < 2*elementwiseGrain {
			// On the caller's thread, with no closure made (decoding: two calls a layer).
			sp.apply(x, out, 0, M)
			return
		}
		if sp.pairs {
			pool.parallelFor(M*K/2, elementwiseGrain, func(lo, hi int) { swapPairs(x[2*lo:2*hi], out[2*lo:2*hi]) })
			return
		}
		pool.parallelFor(M, max(1, elementwiseGrain/K), func(lo, hi int) { sp.apply(x, out, lo, hi) })
	}
}

// apply computes rows [lo, hi) of out from those of x.
func (sp *signPerm) apply(x, out []float32, lo, hi int) {
	K := sp.K
	if sp.pairs {
		swapPairs(x[lo*K:hi*K], out[lo*K:hi*K])
		return
	}
	for m := lo; m < hi; m++ {
		row, o := x[m*K:(m+1)*K], out[m*K:(m+1)*K]
		for _, r := range sp.runs {
			dst := o[r.dst : r.dst+r.n]
			switch r.sign {
			case 1:
				copy(dst, row[r.src:r.src+r.n])
			case -1:
				for j, v := range row[r.src : r.src+r.n] {
					dst[j] = -v
				}
			default:
				clear(dst)
			}
		}
	}
}

// swapPairs sets out[2k] = −x[2k+1] and out[2k+1] = x[2k].
func swapPairs(x, out []float32) {
	out = out[:len(x)]
	for j := 0; j+1 < len(x); j += 2 {
		a, b := x[j], x[j+1]
		out[j], out[j+1] = -b, a
	}
}
