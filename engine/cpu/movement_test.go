package cpu

// Tests of the data-movement kernels against GoMLX's simplego backend (built through the graph
// API) as the independent reference; Pad, Reverse, DynamicSlice and DynamicUpdateSlice, which
// simplego does not implement, and scatters with out-of-range windows, which simplego does not
// bound-check, are compared with naive index-by-index references written here.

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"unsafe"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

type mvElem interface {
	float32 | float64 | int8 | uint8 | int16 | int32 | int64
}

var (
	mvBackendOnce sync.Once
	mvBackend     backends.Backend
	mvBackendErr  error
)

func mvRefBackend(t *testing.T) backends.Backend {
	t.Helper()
	mvBackendOnce.Do(func() { mvBackend, mvBackendErr = simplego.New("ops_sequential") }) // its parallel op scheduling races
	if mvBackendErr != nil {
		t.Fatalf("simplego backend: %v", mvBackendErr)
	}
	return mvBackend
}

// mvExec runs fn on the reference backend.
func mvExec(t *testing.T, fn func(in []*graph.Node) *graph.Node, args ...*tensors.Tensor) *tensors.Tensor {
	t.Helper()
	anyArgs := make([]any, len(args))
	for i, a := range args {
		anyArgs[i] = a
	}
	res, err := graph.ExecOnce(mvRefBackend(t), fn, anyArgs...)
	if err != nil {
		t.Fatalf("reference: %v", err)
	}
	return res
}

func mvRandom[T mvElem](rng *rand.Rand, n int) []T {
	s := make([]T, n)
	for i := range s {
		s[i] = T(rng.IntN(201) - 100)
	}
	return s
}

func mvBytesOf[T any](s []T) []byte {
	if len(s) == 0 {
		return []byte{}
	}
	var z T
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(z)))
}

func mvSizeOf[T any]() int {
	var z T
	return int(unsafe.Sizeof(z))
}

func mvTensor[T mvElem](data []T, dims []int) *tensors.Tensor {
	return tensors.FromFlatDataAndDimensions(data, dims...)
}

func mvIndexTensor(idx []int, dims []int) *tensors.Tensor {
	s := make([]int32, len(idx))
	for i, v := range idx {
		s[i] = int32(v)
	}
	return tensors.FromFlatDataAndDimensions(s, dims...)
}

func mvRandDims(rng *rand.Rand, rank int) []int {
	choices := []int{1, 2, 3, 4, 5, 7}
	d := make([]int, rank)
	for i := range d {
		d[i] = choices[rng.IntN(len(choices))]
	}
	return d
}

// mvEqual compares got with want element by element.
func mvEqual[T comparable](t *testing.T, what string, got, want []T) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d elements, want %d", what, len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s: element %d is %v, want %v\n got: %v\nwant: %v", what, i, got[i], want[i],
				mvHead(got), mvHead(want))
		}
	}
}

func mvHead[T any](s []T) []T { return s[:min(len(s), 40)] }

// mvCheckRef compares got with the reference tensor (dimensions and elements).
func mvCheckRef[T mvElem](t *testing.T, what string, got []T, gotDims []int, want *tensors.Tensor) {
	t.Helper()
	if gotDims != nil && !slices.Equal(gotDims, want.Shape().Dimensions) {
		t.Fatalf("%s: dims %v, reference %v", what, gotDims, want.Shape().Dimensions)
	}
	mvEqual(t, what, got, tensors.MustCopyFlatData[T](want))
}

// mvUnravel writes the multi-index of flat position i in dims into idx.
func mvUnravel(i int, dims, idx []int) {
	for k := len(dims) - 1; k >= 0; k-- {
		idx[k] = i % dims[k]
		i /= dims[k]
	}
}

func mvRavel(idx, dims []int) int {
	f := 0
	for k, v := range idx {
		f = f*dims[k] + v
	}
	return f
}

// ---- Transpose ----

func mvTransposeCase[T mvElem](t *testing.T, rng *rand.Rand, dims, perm []int) {
	t.Helper()
	in := mvRandom[T](rng, product(dims))
	want := mvExec(t, func(x []*graph.Node) *graph.Node { return graph.TransposeAllDims(x[0], perm...) },
		mvTensor(in, dims))
	outDims := make([]int, len(perm))
	for i, p := range perm {
		outDims[i] = dims[p]
	}
	out := make([]T, product(outDims))
	transposeBytes(mvSizeOf[T](), mvBytesOf(in), dims, perm, mvBytesOf(out))
	mvCheckRef(t, fmt.Sprintf("transpose %v perm %v", dims, perm), out, outDims, want)
}

func mvTransposeCases[T mvElem](t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for range 25 {
		rank := 1 + rng.IntN(4)
		mvTransposeCase[T](t, rng, mvRandDims(rng, rank), rng.Perm(rank))
	}
	mvTransposeCase[T](t, rng, []int{2, 5, 3, 8}, []int{0, 2, 1, 3})   // [b,s,h,d] -> [b,h,s,d]
	mvTransposeCase[T](t, rng, []int{1, 1, 4, 16}, []int{0, 2, 1, 3})  // one token
	mvTransposeCase[T](t, rng, []int{70, 45}, []int{1, 0})             // matrix, tiles with edges
	mvTransposeCase[T](t, rng, []int{3, 64, 33}, []int{0, 2, 1})       // batched matrices
	mvTransposeCase[T](t, rng, []int{4, 1, 5, 1}, []int{3, 2, 1, 0})   // size-1 axes
	mvTransposeCase[T](t, rng, []int{2, 3, 4, 5}, []int{0, 1, 2, 3})   // identity
	mvTransposeCase[T](t, rng, []int{5, 2, 3, 37}, []int{3, 1, 0, 2})  // last axis moves
	mvTransposeCase[T](t, rng, []int{6}, []int{0})                     // rank 1
	mvTransposeCase[T](t, rng, []int{2, 0, 3}, []int{2, 0, 1})         // empty
	mvTransposeCase[T](t, rng, []int{9, 40, 2, 3}, []int{1, 3, 0, 2})  // tiles over a middle axis
	mvTransposeCase[T](t, rng, []int{3, 4, 5}, []int{2, 1, 0})         // full reversal of axes
	mvTransposeCase[T](t, rng, []int{33, 3, 31}, []int{2, 1, 0})       // tiles with a middle axis left
	mvTransposeCase[T](t, rng, []int{2, 3, 4, 5}, []int{1, 0, 3, 2})   // two swaps
	mvTransposeCase[T](t, rng, []int{1, 100, 1, 3}, []int{3, 2, 1, 0}) // thin
}

func TestMovementTranspose(t *testing.T) {
	t.Run("float32", mvTransposeCases[float32])
	t.Run("int32", mvTransposeCases[int32])
	t.Run("uint8", mvTransposeCases[uint8])
	t.Run("int16", mvTransposeCases[int16])
	t.Run("float64", mvTransposeCases[float64])
}

// ---- BroadcastInDim ----

func mvBroadcastCase[T mvElem](t *testing.T, rng *rand.Rand, inDims, outDims, axes []int) {
	t.Helper()
	in := mvRandom[T](rng, product(inDims))
	var expanded []int
	for a := range outDims {
		if !slices.Contains(axes, a) {
			expanded = append(expanded, a)
		}
	}
	want := mvExec(t, func(x []*graph.Node) *graph.Node { return graph.ExpandAndBroadcast(x[0], outDims, expanded) },
		mvTensor(in, inDims))
	out := make([]T, product(outDims))
	broadcastInDimBytes(mvSizeOf[T](), mvBytesOf(in), inDims, outDims, axes, mvBytesOf(out))
	mvCheckRef(t, fmt.Sprintf("broadcast %v -> %v axes %v", inDims, outDims, axes), out, outDims, want)
}

func mvBroadcastCases[T mvElem](t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	for range 30 {
		outRank := 1 + rng.IntN(4)
		outDims := mvRandDims(rng, outRank)
		inRank := rng.IntN(outRank + 1)
		axes := rng.Perm(outRank)[:inRank]
		slices.Sort(axes)
		inDims := make([]int, inRank)
		for i, a := range axes {
			inDims[i] = outDims[a]
			if rng.IntN(3) == 0 {
				inDims[i] = 1
			}
		}
		mvBroadcastCase[T](t, rng, inDims, outDims, axes)
	}
	mvBroadcastCase[T](t, rng, nil, []int{3, 50}, nil)                            // scalar
	mvBroadcastCase[T](t, rng, []int{64}, []int{2, 7, 64}, []int{2})              // bias over rows
	mvBroadcastCase[T](t, rng, []int{7, 1}, []int{7, 40}, []int{0, 1})            // column over a row
	mvBroadcastCase[T](t, rng, []int{2, 1, 5}, []int{2, 3, 4, 5}, []int{0, 1, 3}) // interleaved
	mvBroadcastCase[T](t, rng, []int{1, 1}, []int{1, 1}, []int{0, 1})             // one element
	mvBroadcastCase[T](t, rng, []int{3, 4}, []int{3, 4}, []int{0, 1})             // identity
	mvBroadcastCase[T](t, rng, []int{3}, []int{3, 5, 2}, []int{0})                // outer axis
}

func TestMovementBroadcastInDim(t *testing.T) {
	t.Run("float32", mvBroadcastCases[float32])
	t.Run("int32", mvBroadcastCases[int32])
	t.Run("uint8", mvBroadcastCases[uint8])
	t.Run("float64", mvBroadcastCases[float64])
}

// Transposes and broadcasts large enough to be split across the pool (a leading axis kept,
// each of its items moved by its own task) give the reference's elements, on one thread and on
// two, for elements of 1, 4 and 8 bytes; those that keep no leading axis stay whole.
func TestMovementAcrossThreads(t *testing.T) {
	t.Run("float32", mvAcrossThreads[float32])
	t.Run("uint8", mvAcrossThreads[uint8])
	t.Run("float64", mvAcrossThreads[float64])
}

func mvAcrossThreads[T mvElem](t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	transposes := []struct{ dims, perm []int }{
		{[]int{32, 128, 4, 32}, []int{0, 2, 1, 3}}, // heads out of a row of the hidden state
		{[]int{32, 4, 128, 32}, []int{0, 2, 1, 3}}, // and back
		{[]int{3, 70, 400}, []int{0, 2, 1}},        // items of odd sizes
		{[]int{70, 3, 400}, []int{1, 0, 2}},        // no leading axis kept
	}
	broadcasts := []struct{ in, out, axes []int }{
		{[]int{32, 128, 1}, []int{32, 128, 128}, []int{0, 1, 2}}, // a norm's per-row scale
		{[]int{7, 300}, []int{7, 20, 300}, []int{0, 2}},
		{[]int{5, 1, 300}, []int{5, 40, 300}, []int{0, 1, 2}},
		{[]int{1, 300}, []int{200, 300}, []int{0, 1}}, // the leading axis broadcast: whole
	}
	for _, threads := range []int{1, 2} {
		be := mustBackend(t, fmt.Sprintf("threads=%d", threads))
		run := func(fn func(in []*graph.Node) *graph.Node, arg *tensors.Tensor) []T {
			res, err := graph.ExecOnce(be, fn, arg)
			if err != nil {
				t.Fatal(err)
			}
			return tensors.MustCopyFlatData[T](res)
		}
		for _, c := range transposes {
			data := mvRandom[T](rng, product(c.dims))
			fn := func(x []*graph.Node) *graph.Node { return graph.TransposeAllAxes(x[0], c.perm...) }
			mvEqual(t, fmt.Sprintf("threads=%d transpose %v by %v", threads, c.dims, c.perm), run(fn, mvTensor(data, c.dims)), tensors.MustCopyFlatData[T](mvExec(t, fn, mvTensor(data, c.dims))))
		}
		for _, c := range broadcasts {
			data := mvRandom[T](rng, product(c.in))
			var expanded []int
			for a := range c.out {
				if !slices.Contains(c.axes, a) {
					expanded = append(expanded, a)
				}
			}
			fn := func(x []*graph.Node) *graph.Node { return graph.ExpandAndBroadcast(x[0], c.out, expanded) }
			mvEqual(t, fmt.Sprintf("threads=%d broadcast %v -> %v", threads, c.in, c.out), run(fn, mvTensor(data, c.in)), tensors.MustCopyFlatData[T](mvExec(t, fn, mvTensor(data, c.in))))
		}
	}
}

// ---- Slice ----

func mvSliceCase[T mvElem](t *testing.T, rng *rand.Rand, dims, starts, limits, strides []int) {
	t.Helper()
	in := mvRandom[T](rng, product(dims))
	specs := make([]graph.SliceAxisSpec, len(dims))
	outDims := make([]int, len(dims))
	for i := range dims {
		specs[i] = graph.AxisRange(starts[i], limits[i]).Stride(strides[i])
		outDims[i] = (limits[i] - starts[i] + strides[i] - 1) / strides[i]
	}
	want := mvExec(t, func(x []*graph.Node) *graph.Node { return graph.Slice(x[0], specs...) }, mvTensor(in, dims))
	out := make([]T, product(outDims))
	sliceBytes(mvSizeOf[T](), mvBytesOf(in), dims, starts, limits, strides, mvBytesOf(out))
	mvCheckRef(t, fmt.Sprintf("slice %v [%v:%v:%v]", dims, starts, limits, strides), out, outDims, want)
}

func mvSliceCases[T mvElem](t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	for range 30 {
		rank := 1 + rng.IntN(4)
		dims := mvRandDims(rng, rank)
		starts, limits, strides := make([]int, rank), make([]int, rank), make([]int, rank)
		for i, d := range dims {
			starts[i] = rng.IntN(d)
			limits[i] = starts[i] + 1 + rng.IntN(d-starts[i])
			strides[i] = 1 + rng.IntN(3)
		}
		mvSliceCase[T](t, rng, dims, starts, limits, strides)
	}
	mvSliceCase[T](t, rng, []int{4, 10, 16}, []int{0, 3, 0}, []int{4, 4, 16}, []int{1, 1, 1}) // one row per batch
	mvSliceCase[T](t, rng, []int{6, 50}, []int{1, 5}, []int{6, 45}, []int{2, 1})              // row runs
	mvSliceCase[T](t, rng, []int{3, 40}, []int{0, 1}, []int{3, 40}, []int{1, 3})              // strided inner
	mvSliceCase[T](t, rng, []int{5, 6}, []int{0, 0}, []int{5, 6}, []int{1, 1})                // whole
}

func TestMovementSlice(t *testing.T) {
	t.Run("float32", mvSliceCases[float32])
	t.Run("int32", mvSliceCases[int32])
	t.Run("uint8", mvSliceCases[uint8])
	t.Run("float64", mvSliceCases[float64])
}

// ---- Concatenate ----

func mvConcatCase[T mvElem](t *testing.T, rng *rand.Rand, dims []int, axis int, sizes []int) {
	t.Helper()
	var args []*tensors.Tensor
	var ins [][]byte
	var insDims [][]int
	outDims := slices.Clone(dims)
	outDims[axis] = 0
	for _, s := range sizes {
		d := slices.Clone(dims)
		d[axis] = s
		in := mvRandom[T](rng, product(d))
		args = append(args, mvTensor(in, d))
		ins, insDims = append(ins, mvBytesOf(in)), append(insDims, d)
		outDims[axis] += s
	}
	want := mvExec(t, func(x []*graph.Node) *graph.Node { return graph.Concatenate(x, axis) }, args...)
	out := make([]T, product(outDims))
	concatenateBytes(mvSizeOf[T](), ins, insDims, axis, mvBytesOf(out))
	mvCheckRef(t, fmt.Sprintf("concatenate %v axis %d sizes %v", dims, axis, sizes), out, outDims, want)
}

func mvConcatCases[T mvElem](t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	for range 25 {
		rank := 1 + rng.IntN(4)
		dims := mvRandDims(rng, rank)
		sizes := make([]int, 1+rng.IntN(3))
		for i := range sizes {
			sizes[i] = 1 + rng.IntN(4)
		}
		mvConcatCase[T](t, rng, dims, rng.IntN(rank), sizes)
	}
	mvConcatCase[T](t, rng, []int{2, 4, 1, 8}, 2, []int{15, 1}) // KV cache append
	mvConcatCase[T](t, rng, []int{3, 5}, 1, []int{5, 5, 5})     // last axis
	mvConcatCase[T](t, rng, []int{3, 5}, 0, []int{3, 1})        // first axis
}

func TestMovementConcatenate(t *testing.T) {
	t.Run("float32", mvConcatCases[float32])
	t.Run("int32", mvConcatCases[int32])
	t.Run("uint8", mvConcatCases[uint8])
	t.Run("float64", mvConcatCases[float64])
}

// ---- Pad (naive reference) ----

func mvNaivePad[T mvElem](in []T, inDims []int, fill T, axes []backends.PadAxis) ([]T, []int) {
	outDims := make([]int, len(inDims))
	for k, m := range inDims {
		p := axes[k]
		outDims[k] = p.Start + p.End + m + max(0, m-1)*p.Interior
	}
	out := make([]T, product(outDims))
	idx, src := make([]int, len(outDims)), make([]int, len(outDims))
	for i := range out {
		mvUnravel(i, outDims, idx)
		out[i] = fill
		inside := true
		for k, v := range idx {
			q := v - axes[k].Start
			step := axes[k].Interior + 1
			if q < 0 || q%step != 0 || q/step >= inDims[k] {
				inside = false
				break
			}
			src[k] = q / step
		}
		if inside {
			out[i] = in[mvRavel(src, inDims)]
		}
	}
	return out, outDims
}

func mvPadCase[T mvElem](t *testing.T, rng *rand.Rand, dims []int, axes []backends.PadAxis) {
	t.Helper()
	in := mvRandom[T](rng, product(dims))
	fill := T(111)
	want, outDims := mvNaivePad(in, dims, fill, axes)
	out := make([]T, len(want))
	padBytes(mvSizeOf[T](), mvBytesOf(in), dims, mvBytesOf([]T{fill}), axes, mvBytesOf(out), outDims)
	mvEqual(t, fmt.Sprintf("pad %v %+v", dims, axes), out, want)
}

func mvPadCases[T mvElem](t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for n := 0; n < 60; {
		rank := 1 + rng.IntN(4)
		dims := mvRandDims(rng, rank)
		axes := make([]backends.PadAxis, rank)
		ok := true
		for k, m := range dims {
			axes[k] = backends.PadAxis{Start: rng.IntN(6) - 2, End: rng.IntN(6) - 2, Interior: rng.IntN(3)}
			if axes[k].Start+axes[k].End+m+(m-1)*axes[k].Interior < 0 {
				ok = false
			}
		}
		if ok {
			mvPadCase[T](t, rng, dims, axes)
			n++
		}
	}
	mvPadCase[T](t, rng, []int{3, 4}, []backends.PadAxis{{Start: 1, End: 1}, {Start: 1, End: 1}})        // conv padding
	mvPadCase[T](t, rng, []int{3, 4}, []backends.PadAxis{{}, {Interior: 1}})                             // dilation
	mvPadCase[T](t, rng, []int{3, 4}, []backends.PadAxis{{Start: -3}, {}})                               // cropped away
	mvPadCase[T](t, rng, []int{3, 4}, []backends.PadAxis{{Start: 5, End: -5}, {}})                       // shifted out
	mvPadCase[T](t, rng, []int{5}, []backends.PadAxis{{Start: -1, End: -1, Interior: 2}})                // crop inside
	mvPadCase[T](t, rng, []int{2, 40}, []backends.PadAxis{{Start: 0, End: 0}, {Start: 0, End: 100}})     // long fill
	mvPadCase[T](t, rng, []int{2, 3, 5}, []backends.PadAxis{{Start: 2, End: -1}, {End: 3}, {Start: -2}}) // mixed
}

func TestMovementPad(t *testing.T) {
	t.Run("float32", mvPadCases[float32])
	t.Run("int32", mvPadCases[int32])
	t.Run("uint8", mvPadCases[uint8])
	t.Run("int16", mvPadCases[int16])
	t.Run("float64", mvPadCases[float64])
}

// ---- Reverse (naive reference) ----

func mvReverseCase[T mvElem](t *testing.T, rng *rand.Rand, dims, axes []int) {
	t.Helper()
	in := mvRandom[T](rng, product(dims))
	want := make([]T, len(in))
	idx := make([]int, len(dims))
	for i := range want {
		mvUnravel(i, dims, idx)
		for _, a := range axes {
			idx[a] = dims[a] - 1 - idx[a]
		}
		want[i] = in[mvRavel(idx, dims)]
	}
	out := make([]T, len(in))
	reverseBytes(mvSizeOf[T](), mvBytesOf(in), dims, axes, mvBytesOf(out))
	mvEqual(t, fmt.Sprintf("reverse %v axes %v", dims, axes), out, want)
}

func mvReverseCases[T mvElem](t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 6))
	for range 40 {
		rank := 1 + rng.IntN(4)
		axes := rng.Perm(rank)[:rng.IntN(rank+1)]
		mvReverseCase[T](t, rng, mvRandDims(rng, rank), axes)
	}
	mvReverseCase[T](t, rng, []int{4, 50}, []int{0})
	mvReverseCase[T](t, rng, []int{4, 50}, []int{1})
	mvReverseCase[T](t, rng, []int{3, 4, 5}, []int{0, 1, 2})
	mvReverseCase[T](t, rng, []int{3, 1, 5}, []int{1})
}

func TestMovementReverse(t *testing.T) {
	t.Run("float32", mvReverseCases[float32])
	t.Run("int32", mvReverseCases[int32])
	t.Run("uint8", mvReverseCases[uint8])
	t.Run("float64", mvReverseCases[float64])
}

// ---- DynamicSlice and DynamicUpdateSlice (naive references) ----

func mvClampStarts(starts, dims, sizes []int) []int {
	c := make([]int, len(starts))
	for i := range starts {
		c[i] = min(max(starts[i], 0), dims[i]-sizes[i])
	}
	return c
}

func mvDynamicCase[T mvElem](t *testing.T, rng *rand.Rand, dims, sizes, starts []int) {
	t.Helper()
	in := mvRandom[T](rng, product(dims))
	es := mvSizeOf[T]()
	c := mvClampStarts(starts, dims, sizes)

	// DynamicSlice.
	want := make([]T, product(sizes))
	idx := make([]int, len(dims))
	for i := range want {
		mvUnravel(i, sizes, idx)
		for k := range idx {
			idx[k] += c[k]
		}
		want[i] = in[mvRavel(idx, dims)]
	}
	out := make([]T, len(want))
	dynamicSliceBytes(es, mvBytesOf(in), dims, starts, sizes, mvBytesOf(out))
	mvEqual(t, fmt.Sprintf("dynamic slice %v sizes %v at %v", dims, sizes, starts), out, want)

	// DynamicUpdateSlice, in place.
	update := mvRandom[T](rng, product(sizes))
	wantU := slices.Clone(in)
	for i, v := range update {
		mvUnravel(i, sizes, idx)
		for k := range idx {
			idx[k] += c[k]
		}
		wantU[mvRavel(idx, dims)] = v
	}
	operand := slices.Clone(in)
	dynamicUpdateSliceBytes(es, mvBytesOf(operand), dims, mvBytesOf(update), sizes, starts)
	mvEqual(t, fmt.Sprintf("dynamic update slice %v sizes %v at %v", dims, sizes, starts), operand, wantU)
}

func mvDynamicCases[T mvElem](t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for range 40 {
		rank := 1 + rng.IntN(4)
		dims := mvRandDims(rng, rank)
		sizes, starts := make([]int, rank), make([]int, rank)
		for i, d := range dims {
			sizes[i] = 1 + rng.IntN(d)
			starts[i] = rng.IntN(d+6) - 3 // some out of range: clamped
		}
		mvDynamicCase[T](t, rng, dims, sizes, starts)
	}
	mvDynamicCase[T](t, rng, []int{2, 4, 16, 8}, []int{2, 4, 1, 8}, []int{0, 0, 9, 0})  // KV cache slot [b,h,t,d]
	mvDynamicCase[T](t, rng, []int{2, 16, 4, 8}, []int{2, 1, 4, 8}, []int{0, 20, 0, 0}) // [b,t,h,d], clamped
	mvDynamicCase[T](t, rng, []int{5, 6}, []int{5, 6}, []int{-4, 3})                    // whole
	mvDynamicCase[T](t, rng, []int{7}, []int{3}, []int{-1})                             // rank 1
}

func TestMovementDynamicSlices(t *testing.T) {
	t.Run("float32", mvDynamicCases[float32])
	t.Run("int32", mvDynamicCases[int32])
	t.Run("uint8", mvDynamicCases[uint8])
	t.Run("float64", mvDynamicCases[float64])
}

// ---- Gather ----

type mvGatherSpec struct {
	name                                                            string
	operandDims, indicesDims                                        []int
	indexVectorAxis                                                 int
	offsetOutputAxes, collapsedSliceAxes, startIndexMap, sliceSizes []int
}

func mvGatherSpecs() []mvGatherSpec {
	return []mvGatherSpec{
		{"embedding", []int{11, 16}, []int{6, 1}, 1, []int{1}, []int{0}, []int{0}, []int{1, 16}},
		{"embedding batch", []int{9, 8}, []int{2, 3, 1}, 2, []int{2}, []int{0}, []int{0}, []int{1, 8}},
		{"one token", []int{50, 32}, []int{1, 1}, 1, []int{1}, []int{0}, []int{0}, []int{1, 32}},
		{"elements", []int{13}, []int{7, 1}, 1, nil, []int{0}, []int{0}, []int{1}},
		{"full index", []int{3, 4, 5}, []int{6, 3}, 1, nil, []int{0, 1, 2}, []int{0, 1, 2}, []int{1, 1, 1}},
		{"full index rows", []int{3, 4, 5}, []int{6, 2}, 1, []int{1}, []int{0, 1}, []int{0, 1}, []int{1, 1, 5}},
		{"windows", []int{4, 5, 6}, []int{2, 3, 2}, 2, []int{2, 3}, []int{0}, []int{0, 2}, []int{1, 5, 3}},
		{"vector axis first", []int{5, 7}, []int{2, 4}, 0, []int{1}, []int{0}, []int{0, 1}, []int{1, 3}},
		{"interleaved offsets", []int{4, 5}, []int{3, 1}, 1, []int{0, 2}, nil, []int{1}, []int{2, 3}},
		{"no collapse", []int{6, 4}, []int{5, 1}, 1, []int{1, 2}, nil, []int{0}, []int{2, 4}},
		{"middle axis", []int{3, 10, 4}, []int{5, 1}, 1, []int{0, 2}, []int{1}, []int{1}, []int{3, 1, 4}},
		{"scalar index", []int{8, 6}, []int{1}, 0, []int{0}, []int{0}, []int{0}, []int{1, 6}},
		{"batch of batch", []int{7, 3, 2}, []int{2, 2, 2, 1}, 3, []int{3, 4}, []int{0}, []int{0}, []int{1, 3, 2}},
	}
}

func mvGatherCase[T mvElem](t *testing.T, rng *rand.Rand, sp mvGatherSpec) {
	t.Helper()
	operand := mvRandom[T](rng, product(sp.operandDims))
	indices := make([]int, product(sp.indicesDims))
	for i := range indices {
		indices[i] = rng.IntN(16) - 3 // in range, negative and beyond: clamped
	}
	want := mvExec(t, func(x []*graph.Node) *graph.Node {
		return graph.BackendGather(x[0], x[1], sp.indexVectorAxis, sp.offsetOutputAxes, sp.collapsedSliceAxes,
			sp.startIndexMap, sp.sliceSizes, false)
	}, mvTensor(operand, sp.operandDims), mvIndexTensor(indices, sp.indicesDims))
	outDims := want.Shape().Dimensions
	out := make([]T, product(outDims))
	gatherBytes(mvSizeOf[T](), mvBytesOf(operand), sp.operandDims, indices, sp.indicesDims, sp.indexVectorAxis,
		sp.offsetOutputAxes, sp.collapsedSliceAxes, sp.startIndexMap, sp.sliceSizes, mvBytesOf(out), outDims)
	mvCheckRef(t, fmt.Sprintf("gather %s, indices %v", sp.name, indices), out, nil, want)
}

func mvGatherCases[T mvElem](t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	for _, sp := range mvGatherSpecs() {
		for range 3 {
			mvGatherCase[T](t, rng, sp)
		}
	}
}

func TestMovementGather(t *testing.T) {
	t.Run("float32", mvGatherCases[float32])
	t.Run("int32", mvGatherCases[int32])
	t.Run("uint8", mvGatherCases[uint8])
	t.Run("float64", mvGatherCases[float64])
}

// An implicit index vector axis (indexVectorAxis == rank of the indices) gives the same result as
// an explicit one of size 1 (which is checked against simplego above).
func TestMovementGatherImplicitIndexVector(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	operand := mvRandom[float32](rng, 9*5)
	indices := []int{3, -1, 8, 12, 0, 4}
	want := make([]float32, 6*5)
	gatherBytes(4, mvBytesOf(operand), []int{9, 5}, indices, []int{6, 1}, 1, []int{1}, []int{0}, []int{0},
		[]int{1, 5}, mvBytesOf(want), []int{6, 5})
	got := make([]float32, 6*5)
	gatherBytes(4, mvBytesOf(operand), []int{9, 5}, indices, []int{6}, 1, []int{1}, []int{0}, []int{0},
		[]int{1, 5}, mvBytesOf(got), []int{6, 5})
	mvEqual(t, "gather with an implicit index vector", got, want)
	for i, v := range indices {
		r := min(max(v, 0), 8)
		mvEqual(t, fmt.Sprintf("row %d (index %d)", i, v), got[i*5:i*5+5], operand[r*5:r*5+5])
	}
}

// ---- Scatter ----

type mvScatterSpec struct {
	name                                                           string
	operandDims, indicesDims, updatesDims                          []int
	indexVectorAxis                                                int
	updateWindowAxes, insertedWindowAxes, scatterAxesToOperandAxes []int
	// simplegoWrong: the update window is narrower than the operand along a non-inserted axis that
	// is not the outermost, which simplego (v0.26.0) walks with the operand's extents instead of the
	// window's, so only the naive reference applies.
	simplegoWrong bool
	// prompt: the indices are (row, slot) of tokens written to consecutive slots from a
	// random start, as a prompt's keys are (a gap of two slots within row 1): the transposed
	// 8×8 blocks of the float32 sum (kernels.TransposeAdd8).
	prompt bool
}

func mvScatterSpecs() []mvScatterSpec {
	return []mvScatterSpec{
		{"rows", []int{10, 8}, []int{12, 1}, []int{12, 8}, 1, []int{1}, []int{0}, []int{0}, false, false},
		{"rows batch", []int{6, 5}, []int{2, 3, 1}, []int{2, 3, 5}, 2, []int{2}, []int{0}, []int{0}, false, false},
		{"kv cache row", []int{16, 32}, []int{1, 1}, []int{1, 32}, 1, []int{1}, []int{0}, []int{0}, false, false},
		{"kv cache slot", []int{2, 3, 16, 4}, []int{1}, []int{2, 3, 1, 4}, 0, []int{0, 1, 2, 3}, nil, []int{2}, true, false},
		// A prompt's keys [batch, heads, tokens, dim] into a cache kept [batch, heads, dim,
		// slots] at (batch, slot) indices: the interchanged walk of the float32 sum.
		{"kv cache prompt transposed", []int{2, 3, 16, 20}, []int{2, 10, 2}, []int{2, 3, 10, 16}, 2, []int{1, 3}, []int{0, 3}, []int{0, 3}, false, false},
		{"kv cache prompt in consecutive slots", []int{2, 3, 20, 40}, []int{2, 19, 2}, []int{2, 3, 19, 20}, 2, []int{1, 3}, []int{0, 3}, []int{0, 3}, false, true},
		{"elements", []int{9}, []int{14, 1}, []int{14}, 1, nil, []int{0}, []int{0}, false, false},
		{"elements implicit vector", []int{9}, []int{14}, []int{14}, 1, nil, []int{0}, []int{0}, false, false},
		{"full index", []int{3, 4, 5}, []int{10, 3}, []int{10}, 1, nil, []int{0, 1, 2}, []int{0, 1, 2}, false, false},
		{"windows", []int{4, 7}, []int{5, 1}, []int{5, 4, 2}, 1, []int{1, 2}, nil, []int{1}, true, false},
		{"windows outer", []int{7, 4}, []int{5, 1}, []int{5, 2, 4}, 1, []int{1, 2}, nil, []int{0}, false, false},
		{"windows inserted middle", []int{3, 6, 4}, []int{4, 1}, []int{4, 3, 4}, 1, []int{1, 2}, []int{1}, []int{1}, false, false},
		{"vector axis first", []int{5, 6}, []int{2, 7}, []int{7}, 0, nil, []int{0, 1}, []int{0, 1}, false, false},
		{"swapped map", []int{5, 6}, []int{7, 2}, []int{7}, 1, nil, []int{0, 1}, []int{1, 0}, false, false},
	}
}

// mvNaiveScatter is XLA's Scatter written index by index: an update whose window is not entirely
// inside the operand is skipped.
func mvNaiveScatter[T scatterNumber](kind scatterKind, operand []T, sp mvScatterSpec, indices []int, updates []T) {
	rOp := len(sp.operandDims)
	ext := make([]int, rOp)
	var windowOperandAxes []int
	for a := range rOp {
		ext[a] = 1
		if !slices.Contains(sp.insertedWindowAxes, a) {
			ext[a] = sp.updatesDims[sp.updateWindowAxes[len(windowOperandAxes)]]
			windowOperandAxes = append(windowOperandAxes, a)
		}
	}
	idxDims := slices.Clone(sp.indicesDims)
	if sp.indexVectorAxis == len(idxDims) {
		idxDims = append(idxDims, 1)
	}
	u := make([]int, len(sp.updatesDims))
	ii := make([]int, len(idxDims))
	o := make([]int, rOp)
	for i, v := range updates {
		mvUnravel(i, sp.updatesDims, u)
		// The batch position: the non-window axes of the updates, in order.
		b := 0
		for k := range ii {
			if k == sp.indexVectorAxis {
				continue
			}
			for slices.Contains(sp.updateWindowAxes, b) {
				b++
			}
			ii[k] = u[b]
			b++
		}
		clear(o)
		skip := false
		for k, a := range sp.scatterAxesToOperandAxes {
			ii[sp.indexVectorAxis] = k
			s := indices[mvRavel(ii, idxDims)]
			if s < 0 || s+ext[a] > sp.operandDims[a] {
				skip = true
			}
			o[a] = s
		}
		if skip {
			continue
		}
		for j, a := range windowOperandAxes {
			o[a] += u[sp.updateWindowAxes[j]]
		}
		p := &operand[mvRavel(o, sp.operandDims)]
		switch kind {
		case scatterSum:
			*p += v
		case scatterMax:
			*p = max(*p, v)
		case scatterMin:
			*p = min(*p, v)
		}
	}
}

func mvScatterCase[T interface {
	mvElem
	scatterNumber
}](t *testing.T, rng *rand.Rand, kind scatterKind, sp mvScatterSpec, outOfRange bool) {
	t.Helper()
	operand := mvRandom[T](rng, product(sp.operandDims))
	updates := mvRandom[T](rng, product(sp.updatesDims))
	indices := make([]int, product(sp.indicesDims))
	idxDims := slices.Clone(sp.indicesDims)
	if sp.indexVectorAxis == len(idxDims) {
		idxDims = append(idxDims, 1)
	}
	ii := make([]int, len(idxDims))
	for i := range indices {
		mvUnravel(i, idxDims, ii)
		a := sp.scatterAxesToOperandAxes[ii[sp.indexVectorAxis]]
		ext := 1
		if !slices.Contains(sp.insertedWindowAxes, a) {
			j := 0
			for b := range a {
				if !slices.Contains(sp.insertedWindowAxes, b) {
					j++
				}
			}
			ext = sp.updatesDims[sp.updateWindowAxes[j]]
		}
		hi := sp.operandDims[a] - ext
		indices[i] = rng.IntN(hi + 1) // in range; repeats are likely
		if outOfRange && rng.IntN(3) == 0 {
			indices[i] = []int{-1, -5, hi + 1, hi + 7, sp.operandDims[a]}[rng.IntN(5)]
		}
	}
	if sp.prompt {
		tokens := sp.indicesDims[1]
		for row := range sp.indicesDims[0] {
			start := rng.IntN(sp.operandDims[3] - tokens - 2)
			for i := range tokens {
				slot := start + i
				if row == 1 && i >= 11 {
					slot += 2
				}
				x := 2 * (row*tokens + i)
				if !outOfRange || indices[x] >= 0 && indices[x] < sp.operandDims[0] {
					indices[x] = row
				}
				indices[x+1] = slot
			}
		}
	}
	what := fmt.Sprintf("scatter kind %d %s, indices %v", kind, sp.name, indices)
	got := slices.Clone(operand)
	scatterInto(kind, got, sp.operandDims, indices, sp.indicesDims, updates, sp.updatesDims, sp.indexVectorAxis,
		sp.updateWindowAxes, sp.insertedWindowAxes, sp.scatterAxesToOperandAxes)

	want := slices.Clone(operand)
	mvNaiveScatter(kind, want, sp, indices, updates)
	mvEqual(t, what+" (naive)", got, want)
	if outOfRange || sp.simplegoWrong {
		return // simplego does not bound-check scatter windows
	}
	ref := mvExec(t, func(x []*graph.Node) *graph.Node {
		f := map[scatterKind]func(operand, indices, updates *graph.Node, indexVectorAxis int, updateWindowAxes,
			insertedWindowAxes, scatterAxesToOperandAxes []int, indicesAreSorted, uniqueIndices bool) *graph.Node{
			scatterSum: graph.BackendScatterSum, scatterMax: graph.BackendScatterMax, scatterMin: graph.BackendScatterMin,
		}[kind]
		return f(x[0], x[1], x[2], sp.indexVectorAxis, sp.updateWindowAxes, sp.insertedWindowAxes,
			sp.scatterAxesToOperandAxes, false, false)
	}, mvTensor(operand, sp.operandDims), mvIndexTensor(indices, sp.indicesDims), mvTensor(updates, sp.updatesDims))
	mvCheckRef(t, what, got, nil, ref)
}

func mvScatterCases[T interface {
	mvElem
	scatterNumber
}](t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 10))
	for _, sp := range mvScatterSpecs() {
		for _, kind := range []scatterKind{scatterSum, scatterMax, scatterMin} {
			mvScatterCase[T](t, rng, kind, sp, false)
			mvScatterCase[T](t, rng, kind, sp, false)
			mvScatterCase[T](t, rng, kind, sp, true)
			mvScatterCase[T](t, rng, kind, sp, true)
		}
	}
}

func TestMovementScatter(t *testing.T) {
	t.Run("float32", mvScatterCases[float32])
	t.Run("int32", mvScatterCases[int32])
	t.Run("float64", mvScatterCases[float64])
	t.Run("int8", mvScatterCases[int8])
}

// Out-of-range scatter windows are skipped whole, including windows that only partly stick out.
func TestMovementScatterSkipsOutOfRange(t *testing.T) {
	operand := []float32{0, 0, 0, 0, 0, 0}       // [6]
	updates := []float32{1, 2, 3, 4, 5, 6, 7, 8} // [4, 2]: windows of 2
	indices := []int{-1, 4, 5, 2}
	scatterInto(scatterSum, operand, []int{6}, indices, []int{4, 1}, updates, []int{4, 2}, 1, []int{1}, nil, []int{0})
	mvEqual(t, "scatter windows of 2 at -1, 4, 5, 2 into 6", operand, []float32{0, 0, 7, 8, 3, 4})
}

// ---- Benchmarks of the shapes a decoder step and a training step use ----

func BenchmarkMovementTranspose2D(b *testing.B) {
	in, out := make([]float32, 1024*768), make([]float32, 1024*768)
	for b.Loop() {
		transposeBytes(4, mvBytesOf(in), []int{1024, 768}, []int{1, 0}, mvBytesOf(out))
	}
}

func BenchmarkMovementTransposeHeads(b *testing.B) {
	in, out := make([]float32, 4*64*8*64), make([]float32, 4*64*8*64)
	for b.Loop() {
		transposeBytes(4, mvBytesOf(in), []int{4, 64, 8, 64}, []int{0, 2, 1, 3}, mvBytesOf(out))
	}
}

func BenchmarkMovementTransposeHeadsOneToken(b *testing.B) {
	in, out := make([]float32, 1*1*8*64), make([]float32, 1*1*8*64)
	for b.Loop() {
		transposeBytes(4, mvBytesOf(in), []int{1, 1, 8, 64}, []int{0, 2, 1, 3}, mvBytesOf(out))
	}
}

func BenchmarkMovementBroadcastBias(b *testing.B) {
	in, out := make([]float32, 512), make([]float32, 64*512)
	for b.Loop() {
		broadcastInDimBytes(4, mvBytesOf(in), []int{512}, []int{64, 512}, []int{1}, mvBytesOf(out))
	}
}

func BenchmarkMovementBroadcastColumn(b *testing.B) {
	in, out := make([]float32, 256), make([]float32, 256*256)
	for b.Loop() {
		broadcastInDimBytes(4, mvBytesOf(in), []int{256, 1}, []int{256, 256}, []int{0, 1}, mvBytesOf(out))
	}
}

func BenchmarkMovementGatherEmbedding(b *testing.B) {
	op, out := make([]float32, 32000*64), make([]float32, 256*64)
	idx := make([]int, 256)
	for i := range idx {
		idx[i] = (i * 7919) % 32000
	}
	for b.Loop() {
		gatherBytes(4, mvBytesOf(op), []int{32000, 64}, idx, []int{256, 1}, 1, []int{1}, []int{0}, []int{0}, []int{1, 64}, mvBytesOf(out), []int{256, 64})
	}
}

func BenchmarkMovementGatherOneToken(b *testing.B) {
	op, out := make([]float32, 32000*64), make([]float32, 64)
	idx := []int{1234}
	for b.Loop() {
		gatherBytes(4, mvBytesOf(op), []int{32000, 64}, idx, []int{1, 1}, 1, []int{1}, []int{0}, []int{0}, []int{1, 64}, mvBytesOf(out), []int{1, 64})
	}
}

func BenchmarkMovementScatterAddRows(b *testing.B) {
	op, up := make([]float32, 32000*64), make([]float32, 256*64)
	idx := make([]int, 256)
	for i := range idx {
		idx[i] = (i * 7919) % 32000
	}
	for b.Loop() {
		scatterInto(scatterSum, op, []int{32000, 64}, idx, []int{256, 1}, up, []int{256, 64}, 1, []int{1}, []int{0}, []int{0})
	}
}

func BenchmarkMovementScatterKVSlot(b *testing.B) {
	op, up := make([]float32, 8*256*64), make([]float32, 8*1*64)
	idx := []int{17}
	for b.Loop() {
		scatterInto(scatterSum, op, []int{8, 256, 64}, idx, []int{1}, up, []int{8, 1, 64}, 0, []int{0, 1, 2}, nil, []int{1})
	}
}

func BenchmarkMovementDynamicUpdateKV(b *testing.B) {
	op, up := make([]float32, 8*256*64), make([]float32, 8*1*64)
	for b.Loop() {
		dynamicUpdateSliceBytes(4, mvBytesOf(op), []int{8, 256, 64}, mvBytesOf(up), []int{8, 1, 64}, []int{0, 17, 0})
	}
}

func BenchmarkMovementSliceRows(b *testing.B) {
	in, out := make([]float32, 8*256*64), make([]float32, 8*100*64)
	for b.Loop() {
		sliceBytes(4, mvBytesOf(in), []int{8, 256, 64}, []int{0, 10, 0}, []int{8, 110, 64}, []int{1, 1, 1}, mvBytesOf(out))
	}
}

// 16-byte elements (complex128) move like pairs of 8-byte elements along an extra innermost axis
// of 2 (the 8-byte paths being checked against simplego above).
func TestMovementSixteenByteElements(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 11))
	in := mvRandom[float64](rng, 2*3*5*2)
	inB := mvBytesOf(in)
	check := func(what string, f16, f8 func(out []byte), n int) {
		t.Helper()
		got, want := make([]float64, n), make([]float64, n)
		f16(mvBytesOf(got))
		f8(mvBytesOf(want))
		mvEqual(t, what, got, want)
	}
	check("transpose", func(out []byte) { transposeBytes(16, inB, []int{2, 3, 5}, []int{2, 0, 1}, out) },
		func(out []byte) { transposeBytes(8, inB, []int{2, 3, 5, 2}, []int{2, 0, 1, 3}, out) }, len(in))
	check("slice", func(out []byte) {
		sliceBytes(16, inB, []int{2, 3, 5}, []int{0, 1, 1}, []int{2, 3, 5}, []int{1, 1, 2}, out)
	}, func(out []byte) {
		sliceBytes(8, inB, []int{2, 3, 5, 2}, []int{0, 1, 1, 0}, []int{2, 3, 5, 2}, []int{1, 1, 2, 1}, out)
	}, 2*2*2*2)
	check("broadcast", func(out []byte) {
		broadcastInDimBytes(16, inB[:5*16], []int{5}, []int{4, 5}, []int{1}, out)
	}, func(out []byte) {
		broadcastInDimBytes(8, inB[:5*16], []int{5, 2}, []int{4, 5, 2}, []int{1, 2}, out)
	}, 4*5*2)
	indices := []int{1, 0, 7, -2}
	check("gather", func(out []byte) {
		gatherBytes(16, inB, []int{2, 3, 5}, indices, []int{2, 2}, 1, []int{1}, []int{0, 1}, []int{0, 1},
			[]int{1, 1, 5}, out, []int{2, 5})
	}, func(out []byte) {
		gatherBytes(8, inB, []int{2, 3, 5, 2}, indices, []int{2, 2}, 1, []int{1, 2}, []int{0, 1}, []int{0, 1},
			[]int{1, 1, 5, 2}, out, []int{2, 5, 2})
	}, 2*5*2)
}
