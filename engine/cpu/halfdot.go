package cpu

// Products with a half-precision right operand. A KV cache kept in float16 or bfloat16 reaches
// the attention's products as convert(cache) to float32: run op by op, that writes the whole
// cache in float32 at every step, more bytes than the float32 cache it replaces. When the
// conversion is read by the product alone, Compile makes the product read the halves
// (fuseHalfOperands), and each task widens its batch item (one key/value head: hd × slots) into
// scratch that stays in cache just before multiplying it. The products are then those of the
// widened values, the same numbers as op by op.

import (
	"sync/atomic"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/posformer/posformer/engine/cpu/internal/freelist"
	"github.com/posformer/posformer/engine/cpu/kernels"
)

// halfDotAttr replaces the dotAttr of a DotGeneral whose right operand is stored as half, a
// float16 or bfloat16 node (the conversion's input).
type halfDotAttr struct {
	dot  *dotAttr
	half dtypes.DType
}

// halfDotsCompiled counts the products rewritten so far (for tests).
var halfDotsCompiled atomic.Int64

// fuseHalfOperands finds the float32 products whose right operand is a conversion from float16
// or bfloat16 read by nothing else, and makes them read the halves.
func fuseHalfOperands(nodes []*node, outs []*node) int {
	uses := useCounts(nodes, outs)
	rewritten := 0
	for _, n := range nodes {
		attr, ok := n.attr.(*dotAttr)
		if !ok || n.op != backends.OpTypeDotGeneral || n.shape.DType != dtypes.Float32 {
			continue
		}
		c := n.inputs[1]
		if c.op != backends.OpTypeConvertDType || c.shape.DType != dtypes.Float32 || uses[c.id] != 1 {
			continue
		}
		if src := c.inputs[0]; src.shape.DType == dtypes.Float16 || src.shape.DType == dtypes.BFloat16 {
			n.inputs[1] = src
			n.attr = &halfDotAttr{dot: attr, half: src.shape.DType}
			rewritten++
			halfDotsCompiled.Add(1)
		}
	}
	return rewritten
}

// widenHalf widens the halves src (float16 or bfloat16) into dst.
func widenHalf(half dtypes.DType, dst []float32, src []uint16) {
	if half == dtypes.Float16 {
		kernels.WidenF16(dst, src)
	} else {
		kernels.WidenBF16(dst, src)
	}
}

// halfScratch holds the widened batch items, one per running task: a list of their own, so
// that the other products' buffers do not crowd them out (a buffer dropped and made again at
// every task was 74 MB of garbage a token at 1,000 tokens of the 110M shape, and the collector
// ran every 15 ms).
var halfScratch = freelist.New(freelist.Config[float32]{Max: 16, KeepLargest: true})

// taskHalf is task with B stored as halves: the batch item's B is widened into scratch first.
func (mm *matmul) taskHalf(task int, a []float32, bh []uint16, c []float32) {
	tiles := mm.mt * mm.nt
	bi := task / tiles
	n := mm.N * mm.K
	buf := halfScratch.Get(n)
	defer halfScratch.Put(buf)
	widenHalf(mm.half, buf[:n], bh[bi*n:(bi+1)*n])
	t := task % tiles
	m0 := (t / mm.nt) * mm.mSize
	n0 := (t % mm.nt) * mm.nSize
	mm.tile(a[bi*mm.M*mm.K:(bi+1)*mm.M*mm.K], buf[:n], c[bi*mm.M*mm.N:(bi+1)*mm.M*mm.N],
		m0, min(m0+mm.mSize, mm.M), n0, min(n0+mm.nSize, mm.N))
}
