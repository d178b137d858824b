package cpu

// DotGeneral. Each operand is seen as a batch of matrices, [B, M, K] or [B, K, M] for the left
// and [B, N, K] or [B, K, N] for the right, without moving data when its axes already come in
// that order (x·Wᵀ with W stored [out, in] is [M, K]·[N, K]: no copy); otherwise it is transposed
// into scratch first. The product then runs as matrix-vector rows (one or a few rows of x, the
// decoding case: every weight is read once, rows of W split over the threads) or as blocked
// GEMM tiles spread over the threads.

import (
	"slices"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/posformer/posformer/engine/cpu/internal/freelist"
	"github.com/posformer/posformer/engine/cpu/kernels"
)

// smallGemmMACs is the most work a product is done in dot products rather than by the
// blocked GEMM, whose packing costs more than it saves on products this small.
const smallGemmMACs = 16 << 10

// maxNTRows is the most rows of x multiplied without packing (prefill chunks, small batches);
// beyond it (training batches) the blocked GEMM, which keeps blocks of x in cache too, wins.
const maxNTRows = 256

// minNTDepth is the shortest rows for which that pays: each output ends in a horizontal sum,
// which short rows (attention heads) do not amortize; the GEMM has none.
const minNTDepth = 128

// maxNTDepth is the longest: the kernel takes 8 rows of x against each row of W, and past 1,024
// values (8 rows of 4 KB, L1's 32 KB) they stream from L2 for every row of W. At K = 2,048 (the
// 110M shape's down projection) that ran at 28-33 GFLOP/s against the packed GEMM's 54-69, for
// 64 to 256 rows of x on one thread; at K ≤ 768 the two are within each other's noise.
const maxNTDepth = 1024

// ntDepth reports whether rows of length K go through the kernel without packing.
func ntDepth(K int) bool { return K >= minNTDepth && K <= maxNTDepth }

// l2Floats is the weight block (floats) that rows of x pass over while it stays in L2.
const l2Floats = 64 << 10

// minParallelMACs is the least work (multiply-adds) worth splitting over threads.
const minParallelMACs = 64 << 10

type matOperand struct {
	perm  []int // non-nil: transpose into scratch with it first
	trans bool  // stored [B, K, X] rather than [B, X, K]
}

// planOperand finds how an operand with the given batch, free and contracting axes is read.
func planOperand(batch, free, contract []int) matOperand {
	ident := func(seq []int) bool {
		for i, a := range seq {
			if a != i {
				return false
			}
		}
		return true
	}
	cat := func(parts ...[]int) []int { return slices.Concat(parts...) }
	switch {
	case ident(cat(batch, free, contract)):
		return matOperand{}
	case ident(cat(batch, contract, free)):
		return matOperand{trans: true}
	}
	return matOperand{perm: cat(batch, free, contract)}
}

func freeAxes(rank int, lists ...[]int) []int {
	var free []int
	for a := range rank {
		used := false
		for _, l := range lists {
			used = used || slices.Contains(l, a)
		}
		if !used {
			free = append(free, a)
		}
	}
	return free
}

// planDot sees product n as a batch of B matrix products [M, K]·[K, N] and finds how each
// operand is read.
func planDot(n *node, attr *dotAttr) (B, M, N, K int, lp, rp matOperand) {
	ls, rs := n.inputs[0].shape, n.inputs[1].shape
	lf := freeAxes(ls.Rank(), attr.lhsBatch, attr.lhsContract)
	rf := freeAxes(rs.Rank(), attr.rhsBatch, attr.rhsContract)
	prod := func(s []int, dims []int) int {
		p := 1
		for _, a := range s {
			p *= dims[a]
		}
		return p
	}
	B = prod(attr.lhsBatch, ls.Dimensions)
	M = prod(lf, ls.Dimensions)
	K = prod(attr.lhsContract, ls.Dimensions)
	N = prod(rf, rs.Dimensions)
	return B, M, N, K, planOperand(attr.lhsBatch, lf, attr.lhsContract), planOperand(attr.rhsBatch, rf, attr.rhsContract)
}

func lowerDot(lw *lowering) (stepFn, error) {
	n := lw.n
	if qa, ok := n.attr.(*quantDotAttr); ok {
		return lowerQuantDot(lw, qa)
	}
	var attr *dotAttr
	half := dtypes.InvalidDType // the right operand's storage when it is float16 or bfloat16 (halfdot.go)
	switch a := n.attr.(type) {
	case *halfDotAttr:
		attr, half = a.dot, a.half
	default:
		attr = n.attr.(*dotAttr)
	}
	// Not under bf16dot, whose products round their operands to bfloat16: there the selection
	// would change a training step's values (the rotation's products, exact here, rounded there).
	if half == dtypes.InvalidDType && !lw.e.backend.bf16dot {
		if sp := signPermOf(n, attr); sp != nil {
			return lowerSignPerm(lw, sp), nil
		}
	}
	ls, rs := n.inputs[0].shape, n.inputs[1].shape
	B, M, N, K, lp, rp := planDot(n, attr)
	// The right operand's natural layout is [B, N, K] (x·Wᵀ): trans means [B, K, N].
	transB := !rp.trans
	ia, ib, io := lw.in[0], lw.in[1], lw.out
	sa, sb, sw := -1, -1, -1
	if lp.perm != nil {
		sa = lw.scratch(byteSize(ls))
	}
	if rp.perm != nil {
		sb = lw.scratch(byteSize(rs))
	}
	load := func(f *frame, in, scratch int, s shapes.Shape, perm []int) []byte {
		if perm == nil {
			return f.slots[in]
		}
		transposeBytes(s.DType.Size(), f.slots[in], s.Dimensions, perm, f.slots[scratch])
		return f.slots[scratch]
	}
	if ls.DType != dtypes.Float32 {
		return dispatchNumber(ls.DType, naiveDot{lw, B, M, N, K, lp.trans, transB, func(f *frame) ([]byte, []byte) {
			return load(f, ia, sa, ls, lp.perm), load(f, ib, sb, rs, rp.perm)
		}})
	}
	pool := lw.e.backend.pool
	tiny := K <= 4 && N <= 4
	mm := newMatmul(pool, B, M, N, K, lp.trans, transB)
	mm.bf16 = lw.e.backend.bf16dot
	mm.half = half
	if half != dtypes.InvalidDType && (tiny || !mm.widensPerTask()) {
		sw = lw.scratch(4 * rs.Size())
	}
	// loadB is the right operand as float32: widened whole into scratch when stored as halves
	// (the products that do not widen it a batch item at a time).
	loadB := func(f *frame) []float32 {
		b := load(f, ib, sb, rs, rp.perm)
		if half == dtypes.InvalidDType {
			return typed[float32](b)
		}
		w := typed[float32](f.slots[sw])
		widenHalf(half, w, typed[uint16](b)[:rs.Size()])
		return w
	}
	if tiny {
		// Read the left side in place when it is [B, O, K, I] (free axes around the contracted
		// ones, output rows (o, i)); else transposed to [B, M, K] first.
		O, I, inPlace := M, 1, false
		if o, i, ok := aroundContraction(ls.Dimensions, attr.lhsBatch, attr.lhsContract); ok {
			O, I, inPlace = o, i, true
		}
		return func(f *frame) {
			var a []float32
			if inPlace {
				a = typed[float32](f.slots[ia])
			} else {
				a = typed[float32](load(f, ia, sa, ls, lp.perm))
				if lp.trans {
					O, I = 1, M
				}
			}
			b := loadB(f)
			tinyDot(pool, B, O, I, N, K, transB, a, b, typed[float32](f.slots[io]))
		}, nil
	}
	step := lw.step
	var pf *weightPrefetch
	if rp.perm == nil && mm.streamsRows() {
		mm.ranged = true
		pf = lw.e.registerPrefetch([]prefetchSource{{values: ib, scales: -1, tasks: mm.nt, rows: mm.nSize, n: N}})
	}
	return func(f *frame) {
		// The call's operands live in the frame, with the task bound once (see quantCall).
		call := f.stepState(step, newDotCall).(*dotCall)
		call.mm = mm
		call.a = typed[float32](load(f, ia, sa, ls, lp.perm))
		call.b, call.bh = nil, nil
		if half != dtypes.InvalidDType && mm.widensPerTask() {
			call.bh = typed[uint16](load(f, ib, sb, rs, rp.perm))
		} else {
			call.b = loadB(f)
		}
		call.c = typed[float32](f.slots[io])
		mm.run(call)
		pf.hintNext(pool, f)
	}, nil
}

// dotCall is one call of a float32 product: its operands, and run, its task method bound once.
type dotCall struct {
	mm                         *matmul
	a, b, c                    []float32
	bh                         []uint16  // B as halves, widened by each task (nil: b)
	part                       []float32 // splitK's partial products
	run, runHalf, runK, runSum func(task int)
}

func newDotCall() any {
	c := &dotCall{}
	c.run, c.runHalf, c.runK, c.runSum = c.task, c.taskHalf, c.taskK, c.sumK
	return c
}

func (c *dotCall) task(t int)     { c.mm.task(t, c.a, c.b, c.c) }
func (c *dotCall) taskHalf(t int) { c.mm.taskHalf(t, c.a, c.bh, c.c) }
func (c *dotCall) taskK(t int)    { c.mm.taskK(t, c.a, c.b, c.c, c.part) }
func (c *dotCall) sumK(t int)     { c.mm.sumK(t, c.c, c.part) }

// aroundContraction reports whether an operand's axes are its batch axes first, then free
// axes (of total size o), the contracted axes together, and free axes again (size i).
func aroundContraction(dims, batch, contract []int) (o, i int, ok bool) {
	for k, a := range batch {
		if a != k {
			return 0, 0, false
		}
	}
	first := contract[0]
	for k, a := range contract {
		if a != first+k {
			return 0, 0, false
		}
	}
	o, i = 1, 1
	for a := len(batch); a < first; a++ {
		o *= dims[a]
	}
	for a := first + len(contract); a < len(dims); a++ {
		i *= dims[a]
	}
	return o, i, true
}

// tinyDot is C[b] = A[b]·op(B[b]) when the contraction and the right side are a few numbers
// (Transformer-XL's 2×2 swap of halves over every query), with A[b] stored [O, K, I] and C[b]
// [O·I, N] (I = 1: A is [M, K]; O = 1: A is [K, M]). The GEMM would pad N to its tile width
// and pack all of A for four multiply-adds a row.
func tinyDot(p *pool, B, O, I, N, K int, transB bool, a, b, c []float32) {
	M := O * I
	for bi := range B {
		ab, bb, cb := a[bi*M*K:(bi+1)*M*K], b[bi*K*N:(bi+1)*K*N], c[bi*M*N:(bi+1)*M*N]
		var w [16]float32 // w[k*N+n]
		for k := range K {
			for n := range N {
				if transB {
					w[k*N+n] = bb[n*K+k]
				} else {
					w[k*N+n] = bb[k*N+n]
				}
			}
		}
		blocks := func(lo, hi int) {
			if K == 2 && N == 2 && I == 1 { // rows [m, 2] by a 2×2, unrolled
				w00, w01, w10, w11 := w[0], w[1], w[2], w[3]
				ar, cr := ab[2*lo:2*hi], cb[2*lo:2*hi]
				for m := 0; m+1 < len(ar); m += 2 {
					x0, x1 := ar[m], ar[m+1]
					cr[m] = x0*w00 + x1*w10
					cr[m+1] = x0*w01 + x1*w11
				}
				return
			}
			for o := lo; o < hi; o++ {
				ao, co := ab[o*K*I:(o+1)*K*I], cb[o*I*N:(o+1)*I*N]
				if K == 2 && N == 2 { // the case above, unrolled (same sums, same order)
					w00, w01, w10, w11 := w[0], w[1], w[2], w[3]
					a0, a1, co := ao[:I], ao[I:2*I], co[:2*I]
					for i, x0 := range a0 {
						x1 := a1[i]
						co[2*i] = x0*w00 + x1*w10
						co[2*i+1] = x0*w01 + x1*w11
					}
					continue
				}
				for n := range N {
					for i := range I {
						var s float32
						for k := range K {
							s += ao[k*I+i] * w[k*N+n]
						}
						co[i*N+n] = s
					}
				}
			}
		}
		if M*N*K < minParallelMACs {
			blocks(0, O)
			continue
		}
		p.parallelFor(O, max(1, minParallelMACs/(I*N*K)), blocks)
	}
}

// matmul is C[b] = op(A[b])·op(B[b]) for a batch of float32 matrices, planned once.
type matmul struct {
	pool           *pool
	B, M, N, K     int
	transA, transB bool
	// tiles: the work is cut into mt × nt tiles per batch item.
	mt, nt, mSize, nSize int
	// bf16: the tiles that go to the blocked GEMM use kernels.SgemmBF16 (backend option
	// bf16dot); the paths without packing (tinyDot, MatMulNT, DotRows, Axpy: few rows or a
	// tiny contraction) stay float32.
	bf16 bool
	// kt > 1: the contraction is cut into kt slices of kSize, each task's partial product
	// summed after (splitK).
	kt, kSize int
	// half: B is stored as float16 or bfloat16 (dtypes.InvalidDType: float32), widened a batch
	// item at a time by its tasks (taskHalf) or whole before the product.
	half dtypes.DType
	// ranged: the tasks stream W's rows (streamsRows), each thread its own run of them
	// (pool.runRanges), as the step before fetched them (prefetch.go).
	ranged bool
}

// splitK reports whether a product is a weight's gradient in shape (a long contraction over
// every token, a small result: K at least 1024 and 8 times M and N), which threads share by
// cutting K. Cut over M or N instead, each task packs a whole slice of B (K·N/nt values) for
// a few rows of C, so packing, which memory bounds, costs as much as the multiply and the second
// thread added nothing (BenchmarkTrainStep: [128 128] ← [4096 128]ᵀ·[4096 128], 1.04x). Cut
// over K, every value is packed once; the partial results (M·N each) are added at the end.
func splitK(M, N, K int) bool {
	return K >= 1024 && K >= 8*max(M, N) && M >= 16 && N >= 16
}

func newMatmul(p *pool, B, M, N, K int, transA, transB bool) *matmul {
	mm := &matmul{pool: p, B: B, M: M, N: N, K: K, transA: transA, transB: transB, mt: 1, nt: 1, mSize: M, nSize: N}
	work := B * M * N * K
	if work < minParallelMACs || p.threads() == 1 {
		return mm
	}
	// Aim at about 4 tasks per thread. Split N (the weight rows) first: each task then packs
	// only its own slice of the weights; splitting M would pack the same weights once per task.
	// M is split only when N is too narrow to give every thread work.
	want := 4 * p.threads()
	if B == 1 && splitK(M, N, K) {
		// Slices of whole K blocks, two per thread: the partial sums cost M·N adds each.
		mm.kt = min(2*p.threads(), K/256)
		mm.kSize = (K + mm.kt - 1) / mm.kt
		return mm
	}
	perBatch := (want + B - 1) / B
	if perBatch <= 1 {
		return mm
	}
	if !transA && !transB && M <= 4 && K <= 64 && B >= p.threads() {
		// q·k over cached keys (tile's VecMat path): one task per head, which reads its keys
		// row by row in one pass; split columns, each task would stride over every row.
		return mm
	}
	mm.nt = min(perBatch, max(1, N/64))
	if mm.nt < perBatch && M >= 64 {
		mm.mt = min((perBatch+mm.nt-1)/mm.nt, (M+31)/32)
	}
	mm.mSize = (M + mm.mt - 1) / mm.mt
	mm.nSize = (N + mm.nt - 1) / mm.nt
	if mm.nt > 1 {
		mm.nSize = (mm.nSize + 15) &^ 15 // whole vectors per tile
		mm.nt = (N + mm.nSize - 1) / mm.nSize
	}
	mm.mt = (M + mm.mSize - 1) / mm.mSize
	return mm
}

// streamsRows reports whether the product is decoding's x·Wᵀ for a few rows of x, its tasks
// runs of W's rows across the pool: a stream of weights from memory that the step before can
// have the workers fetch ahead (prefetch.go), each the rows its own run of tasks will read.
func (mm *matmul) streamsRows() bool {
	return mm.B == 1 && mm.M <= 4 && mm.transB && !mm.transA && mm.mt == 1 && mm.nt > 1 && mm.kt <= 1 &&
		!mm.sharesA() && mm.M*mm.N*mm.K >= minParallelMACs
}

// sharesA reports whether run packs op(A) once for all the tasks (runSharedA).
func (mm *matmul) sharesA() bool {
	// bf16: there is no packed-A form of SgemmBF16; each task packs its own copy.
	lda := mm.K
	if mm.transA {
		lda = mm.M
	}
	return !mm.bf16 && kernels.PacksA(mm.transA, lda) && mm.B == 1 && mm.mt == 1 && mm.nt > 1 && mm.M > 4 && mm.K > 1 && mm.M*mm.nSize*mm.K > smallGemmMACs && (mm.transA || !mm.transB || mm.M > maxNTRows || !ntDepth(mm.K))
}

// widensPerTask reports whether run's tasks take B a batch item at a time (task), so that
// halves can be widened there (taskHalf) rather than whole beforehand.
func (mm *matmul) widensPerTask() bool { return !mm.sharesA() && mm.kt <= 1 }

func (mm *matmul) run(call *dotCall) {
	a, b, c := call.a, call.b, call.c
	if mm.sharesA() {
		mm.runSharedA(a, b, c)
		return
	}
	if mm.kt > 1 {
		mm.runSplitK(call)
		return
	}
	tiles := mm.mt * mm.nt
	run := call.run
	if call.bh != nil {
		run = call.runHalf
	}
	if mm.B*mm.M*mm.N*mm.K < minParallelMACs {
		for task := range mm.B * tiles {
			run(task)
		}
		return
	}
	if mm.ranged {
		mm.pool.runRanges(mm.B*tiles, run)
		return
	}
	mm.pool.run(mm.B*tiles, run)
}

// runSharedA packs op(A) once and lets each task multiply it by its own columns of B: split
// over N, every task would otherwise pack all of A (the rows of x) again. Where Sgemm reads A
// in place (kernels.PacksA false), the tasks read it directly instead.
func (mm *matmul) runSharedA(a, b, c []float32) {
	lda := mm.K
	if mm.transA {
		lda = mm.M
	}
	buf := floats.Get(kernels.PackedASize(mm.M, mm.K))
	defer floats.Put(buf)
	pa := kernels.PackA(mm.transA, mm.M, mm.K, 1, a, lda, buf)
	mm.pool.run(mm.nt, func(t int) {
		n0 := t * mm.nSize
		n1 := min(mm.N, n0+mm.nSize)
		if n0 >= n1 {
			return
		}
		if mm.transB {
			kernels.SgemmPacked(pa, true, n1-n0, b[n0*mm.K:], mm.K, 0, c[n0:], mm.N)
		} else {
			kernels.SgemmPacked(pa, false, n1-n0, b[n0:], mm.N, 0, c[n0:], mm.N)
		}
	})
}

// runSplitK computes C as the sum of kt products over slices of K: slice 0 into C, the others
// into scratch, added to C after, a band of rows per task.
func (mm *matmul) runSplitK(call *dotCall) {
	M, N := mm.M, mm.N
	call.part = floats.Get((mm.kt - 1) * M * N)
	defer func() { floats.Put(call.part); call.part = nil }()
	mm.pool.run(mm.kt, call.runK)
	mm.pool.run(mm.kt, call.runSum)
}

// taskK computes slice t of K's product into C (t = 0) or its part of the scratch.
func (mm *matmul) taskK(t int, a, b, c, part []float32) {
	M, N, K := mm.M, mm.N, mm.K
	k0 := t * mm.kSize
	k1 := min(K, k0+mm.kSize)
	dst := c
	if t > 0 {
		dst = part[(t-1)*M*N : t*M*N]
	}
	if k0 >= k1 {
		clear(dst)
		return
	}
	var aa, bb []float32
	var lda, ldb int
	if mm.transA {
		aa, lda = a[k0*M:], M
	} else {
		aa, lda = a[k0:], K
	}
	if mm.transB {
		bb, ldb = b[k0:], K
	} else {
		bb, ldb = b[k0*N:], N
	}
	if mm.bf16 {
		kernels.SgemmBF16(mm.transA, mm.transB, M, N, k1-k0, 1, aa, lda, bb, ldb, 0, dst, N)
		return
	}
	kernels.Sgemm(mm.transA, mm.transB, M, N, k1-k0, 1, aa, lda, bb, ldb, 0, dst, N)
}

// sumK adds the scratch's partial products to band t of C's rows (kt bands).
func (mm *matmul) sumK(t int, c, part []float32) {
	M, N := mm.M, mm.N
	rows := (M + mm.kt - 1) / mm.kt
	lo, hi := t*rows*N, min(M, (t+1)*rows)*N
	if lo >= hi {
		return
	}
	for s := range mm.kt - 1 {
		kernels.Add(c[lo:hi], part[s*M*N+lo:s*M*N+hi], c[lo:hi])
	}
}

// floats are scratch buffers (packed operands), reused across calls and kept across garbage
// collections, like the GEMM's own packing buffers.
var floats = freelist.New(freelist.Config[float32]{Max: 8})

// task computes tile task%tiles of batch item task/tiles.
func (mm *matmul) task(task int, a, b, c []float32) {
	tiles := mm.mt * mm.nt
	bi, t := task/tiles, task%tiles
	m0 := (t / mm.nt) * mm.mSize
	n0 := (t % mm.nt) * mm.nSize
	mm.tile(a[bi*mm.M*mm.K:(bi+1)*mm.M*mm.K], b[bi*mm.N*mm.K:(bi+1)*mm.N*mm.K], c[bi*mm.M*mm.N:(bi+1)*mm.M*mm.N],
		m0, min(m0+mm.mSize, mm.M), n0, min(n0+mm.nSize, mm.N))
}

// tile computes C[m0:m1, n0:n1] of one batch item.
func (mm *matmul) tile(a, b, c []float32, m0, m1, n0, n1 int) {
	M, N, K := mm.M, mm.N, mm.K
	m, n := m1-m0, n1-n0
	if m <= 0 || n <= 0 {
		return
	}
	if K == 0 {
		for i := m0; i < m1; i++ {
			clear(c[i*N+n0 : i*N+n1])
		}
		return
	}
	// A matrix times a vector (SoftmaxValues' row sum, a product with ones) and an outer
	// product (that sum's gradient): the blocked GEMM would pad the one column or the one
	// step of k to a whole tile and pack every row for it (2.3% of an lm training step).
	// Both stay float32, as the other paths without packing do under bf16dot.
	if N == 1 {
		vec := b[:K] // B's one column, contiguous in either layout
		if mm.transA {
			kernels.VecMat(vec, a[m0:], M, c[m0:m1])
		} else {
			kernels.DotRows(a[m0*K:], K, vec, c[m0:m1])
		}
		return
	}
	if K == 1 {
		// a and b are vectors in either layout: C[i, j] = a[i]·b[j].
		for i := m0; i < m1; i++ {
			kernels.MulScalar(b[n0:n1], a[i], c[i*N+n0:i*N+n1])
		}
		return
	}
	if mm.transB && !mm.transA && (m <= 4 || m*n*K <= smallGemmMACs || m <= maxNTRows && ntDepth(K)) {
		// Rows of x against rows of W (x·Wᵀ, W stored [n, k]): no packing at all. The
		// kernel takes 8 rows of x at a time against every row of W it is given, so W goes
		// in blocks that stay in L2 while all rows of x pass over them.
		if m == 1 {
			kernels.DotRows(b[n0*K:], K, a[m0*K:(m0+1)*K], c[m0*N+n0:m0*N+n1])
			return
		}
		step := n
		if m > 8 {
			step = max(16, l2Floats/K)
		}
		for j := n0; j < n1; j += step {
			kernels.MatMulNT(m, min(step, n1-j), K, a[m0*K:], K, b[j*K:], K, c[m0*N+j:], N)
		}
		return
	}
	if !mm.transA && !mm.transB && m <= 4 && K <= 64 {
		// A few rows of x times a short, wide B (decoding's q·k over the cached keys, stored
		// [headDim, slots]): each row of C is a sum of K scaled rows of B, where packing B
		// would cost more than the product.
		for i := m0; i < m1; i++ {
			kernels.VecMat(a[i*K:(i+1)*K], b[n0:], N, c[i*N+n0:i*N+n1])
		}
		return
	}
	var aa, bb []float32
	var lda, ldb int
	if mm.transA {
		aa, lda = a[m0:], M
	} else {
		aa, lda = a[m0*K:], K
	}
	if mm.transB {
		bb, ldb = b[n0*K:], K
	} else {
		bb, ldb = b[n0:], N
	}
	if mm.bf16 {
		kernels.SgemmBF16(mm.transA, mm.transB, m, n, K, 1, aa, lda, bb, ldb, 0, c[m0*N+n0:], N)
		return
	}
	kernels.Sgemm(mm.transA, mm.transB, m, n, K, 1, aa, lda, bb, ldb, 0, c[m0*N+n0:], N)
}

// naiveDot is DotGeneral for the dtypes other than float32 (rarely used; plain loops).
type naiveDot struct {
	lw             *lowering
	B, M, N, K     int
	transA, transB bool
	operands       func(f *frame) ([]byte, []byte)
}

func naiveDotT[T number](d naiveDot) (stepFn, error) {
	io := d.lw.out
	return func(f *frame) {
		ab, bb := d.operands(f)
		a, b, c := typed[T](ab), typed[T](bb), typed[T](f.slots[io])
		M, N, K := d.M, d.N, d.K
		for bi := range d.B {
			ao, bo, co := bi*M*K, bi*N*K, bi*M*N
			for i := range M {
				for j := range N {
					var acc T
					for p := range K {
						var x, y T
						if d.transA {
							x = a[ao+p*M+i]
						} else {
							x = a[ao+i*K+p]
						}
						if d.transB {
							y = b[bo+j*K+p]
						} else {
							y = b[bo+p*N+j]
						}
						acc += x * y
					}
					c[co+i*N+j] = acc
				}
			}
		}
	}, nil
}

func (d naiveDot) f32() (stepFn, error) { return naiveDotT[float32](d) }
func (d naiveDot) f64() (stepFn, error) { return naiveDotT[float64](d) }
func (d naiveDot) i8() (stepFn, error)  { return naiveDotT[int8](d) }
func (d naiveDot) i16() (stepFn, error) { return naiveDotT[int16](d) }
func (d naiveDot) i32() (stepFn, error) { return naiveDotT[int32](d) }
func (d naiveDot) i64() (stepFn, error) { return naiveDotT[int64](d) }
func (d naiveDot) u8() (stepFn, error)  { return naiveDotT[uint8](d) }
func (d naiveDot) u16() (stepFn, error) { return naiveDotT[uint16](d) }
func (d naiveDot) u32() (stepFn, error) { return naiveDotT[uint32](d) }
func (d naiveDot) u64() (stepFn, error) { return naiveDotT[uint64](d) }
