package cpu

import (
	"math"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/posformer/posformer/layers"
	"github.com/posformer/posformer/layers/quant"
)

// fetchRecorder notes which rows of which member each fetch covers.
type fetchRecorder struct {
	ws    *prefetchWork
	rows  map[[2]int]int // (member, row) -> bytes of values and scales fetched
	bytes int
}

func (r *fetchRecorder) fetch(b []byte) {
	if len(b) == 0 {
		return
	}
	p := uintptr(unsafe.Pointer(&b[0]))
	for i := range r.ws.count {
		m := &r.ws.members[i]
		for _, part := range [][]byte{m.q, m.d} {
			base := uintptr(unsafe.Pointer(&part[0]))
			if p >= base && p < base+uintptr(len(part)) {
				per := len(part) / m.n
				first := int(p-base) / per
				for row := first; row < first+len(b)/per; row++ {
					r.rows[[2]int{i, row}] += per
				}
				r.bytes += len(b)
				return
			}
		}
	}
	panic("a fetch outside the weights")
}

// newPrefetchWork is three matrices of n rows cut into tasks of rows, as a Q, K, V group is.
func newPrefetchWork(n, rows, qRow, dRow int) *prefetchWork {
	w := &prefetchWork{}
	tasks := (n + rows - 1) / rows
	for i := range 3 {
		w.members[i] = prefetchMember{q: make([]byte, n*qRow), d: make([]byte, n*dRow), first: i * tasks, tasks: tasks, rows: rows, n: n}
	}
	w.count, w.tasks = 3, 3*tasks
	return w
}

// Each worker fetches the rows of its own run of tasks (as pool.runRanges splits them), then
// those of the calling thread's run, values and scales, nothing else, and no more than the
// budget.
func TestPrefetchFetchesEachThreadsOwnRows(t *testing.T) {
	w := newPrefetchWork(500, 48, 128, 16) // 11 tasks a matrix, 33 in all
	for _, threads := range []int{2, 3} {
		for id := 1; id < threads; id++ {
			rec := &fetchRecorder{ws: w, rows: map[[2]int]int{}}
			w.fetch = rec.fetch
			w.run(id, threads, func() bool { return false })
			lo, hi := w.tasks*id/threads, w.tasks*(id+1)/threads
			hi0 := w.tasks / threads // the caller's run: [0, hi0)
			for i := range 3 {
				for row := range 500 {
					task := i*11 + row/48
					want := 0
					if task >= lo && task < hi || task < hi0 {
						want = 144
					}
					if got := rec.rows[[2]int{i, row}]; got != want {
						t.Fatalf("%d threads, thread %d: matrix %d row %d fetched %d bytes, want %d", threads, id, i, row, got, want)
					}
				}
			}
		}
	}
	// Larger rows: the budget stops the fetch after the first rows of the thread's run.
	w = newPrefetchWork(4096, 256, 1024, 128)
	rec := &fetchRecorder{ws: w, rows: map[[2]int]int{}}
	w.fetch = rec.fetch
	w.run(1, 2, func() bool { return false })
	if rec.bytes > prefetchBudget+prefetchChunk+prefetchChunk/8 || rec.bytes < prefetchBudget {
		t.Errorf("fetched %d bytes, want the budget of %d", rec.bytes, prefetchBudget)
	}
	// Thread 1 of 2 starts at task 24 of 48: matrix 1, row 2048; the caller at matrix 0, row 0.
	// Half the budget each: neither run is fetched to its end.
	if rec.rows[[2]int{1, 2048}] == 0 || rec.rows[[2]int{1, 2047}] != 0 || rec.rows[[2]int{0, 0}] == 0 || rec.rows[[2]int{0, 4095}] != 0 {
		t.Errorf("the fetch did not start at the worker's and the caller's first rows")
	}
	own, caller := 0, 0
	for k, b := range rec.rows {
		if k[0] == 1 && k[1] >= 2048 || k[0] == 2 {
			own += b
		} else {
			caller += b
		}
	}
	if own < prefetchBudget/2 || own > prefetchBudget/2+2*prefetchChunk || caller < prefetchBudget/2-2*prefetchChunk {
		t.Errorf("fetched %d bytes of the worker's run and %d of the caller's, want half the budget each", own, caller)
	}
	// A new job stops it after the chunk in flight.
	rec = &fetchRecorder{ws: w, rows: map[[2]int]int{}}
	w.fetch = rec.fetch
	w.run(1, 2, func() bool { return true })
	if rec.bytes > prefetchChunk+prefetchChunk/8 {
		t.Errorf("stopped at once, but fetched %d bytes", rec.bytes)
	}
}

// A hint keeps a spinning worker fetching until the next job, which the worker then joins: every task of
// the job runs once, and the hint stops.
func TestPoolHintStopsAtTheNextJob(t *testing.T) {
	p := newPool(2)
	defer p.close()
	w := newPrefetchWork(4096, 16, 1024, 128)
	var fetches atomic.Int64
	w.fetch = func(b []byte) {
		fetches.Add(1)
		time.Sleep(200 * time.Microsecond)
	}
	// The worker wakes for a job and spins a while after it: a parked one ignores hints, so a
	// hint that comes too late (a loaded machine) is tried again.
	for try := 0; fetches.Load() == 0; try++ {
		if try == 50 {
			t.Fatal("the hint never ran")
		}
		p.run(2, func(int) {})
		p.hint(&job{prefetch: w})
		time.Sleep(20 * time.Millisecond)
	}
	counts := make([]atomic.Int32, 64)
	p.runRanges(64, func(i int) { counts[i].Add(1) })
	for i := range counts {
		if c := counts[i].Load(); c != 1 {
			t.Fatalf("task %d ran %d times", i, c)
		}
	}
	time.Sleep(5 * time.Millisecond)
	n := fetches.Load()
	time.Sleep(5 * time.Millisecond)
	// The budget in 1,152-byte rows, four rows a chunk, two fetches a chunk: 455 if never
	// stopped, 90 ms at 200 µs each (the hint ran 20 ms before the job).
	if fetches.Load() != n || n >= 2*(prefetchBudget/(4*1152)) {
		t.Errorf("the hint went on after the job: %d fetches, then %d", n, fetches.Load())
	}
}

// Compile links each decoding-sized quantized product to the next, so that it hands the pool's
// workers the next one's weights; the products' values are those computed on one thread.
func TestPrefetchLinksDecodingProducts(t *testing.T) {
	const N, K = 768, 512 // above minParallelQuantMACs for one row of x
	x, ws := randomChain(rand.New(rand.NewPCG(31, 32)), N, K, 1)
	args := func() []any { // tensors for one backend
		a := []any{tensors.FromFlatDataAndDimensions(x, 1, K)}
		for _, wf := range ws {
			ps, _ := quantParts(t, quant.Q4_0, wf, N, K)
			a = append(a, anySlice(ps)...)
		}
		return a
	}
	graph := func(in []*Node) *Node {
		h := MulScalar(in[0], 1)
		for i := range 3 {
			h = layers.QuantizedWeight(quant.Q4_0, N, K, in[1+2*i:3+2*i]...).MulT(h)
			h = Slice(h, AxisRange(), AxisRange(0, K))
		}
		return h
	}
	runLinked(t, "actq8=true", graph, args)
}

// randomChain is a row of x of k normal values and three matrices [n, k] of normal values times
// scale.
func randomChain(r *rand.Rand, n, k int, scale float64) ([]float32, [][]float32) {
	x := make([]float32, k)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	ws := make([][]float32, 3)
	for i := range ws {
		ws[i] = make([]float32, n*k)
		for j := range ws[i] {
			ws[i][j] = float32(r.NormFloat64() * scale)
		}
	}
	return x, ws
}

// runLinked runs three products in a row on one thread and on two (extra, a backend option
// for both): two hints a call on two threads, none on one, the same bits. It returns the output.
func runLinked(t *testing.T, extra string, graph func([]*Node) *Node, args func() []any) []float32 {
	var outs [2][]float32
	for i, config := range []string{"threads=1," + extra, "threads=2," + extra} {
		before := prefetchHints.Load()
		be := mustBackend(t, config)
		outs[i] = tensors.MustCopyFlatData[float32](MustNewExec(be, graph).MustExec(args()...)[0])
		if n, want := prefetchHints.Load()-before, int64(2*i); n != want {
			t.Errorf("%s: %d hints, want %d (three products in a row; none without workers)", config, n, want)
		}
	}
	for k := range outs[0] {
		if math.Float32bits(outs[0][k]) != math.Float32bits(outs[1][k]) {
			t.Fatalf("y[%d] = %g on two threads, %g on one", k, outs[1][k], outs[0][k])
		}
	}
	return outs[1]
}

// Float32 products of one row of x are linked into the same chain as quantized ones, each
// member its own runs of rows: a chain of float32, Q4_0 and float32 products hands the workers
// two hints a call, and every product's rows are computed whole on one thread or two alike, and
// as a float64 product gives them.
func TestPrefetchLinksFloat32Products(t *testing.T) {
	const N, K = 768, 512 // above minParallelMACs for one row of x
	x, ws := randomChain(rand.New(rand.NewPCG(33, 34)), N, K, 1.0/16)
	_, deq := quantParts(t, quant.Q4_0, ws[1], N, K)
	args := func() []any { // tensors for one backend
		qparts, _ := quantParts(t, quant.Q4_0, ws[1], N, K)
		a := []any{tensors.FromFlatDataAndDimensions(x, 1, K), tensors.FromFlatDataAndDimensions(ws[0], N, K)}
		a = append(a, anySlice(qparts)...)
		return append(a, tensors.FromFlatDataAndDimensions(ws[2], N, K))
	}
	graph := func(in []*Node) *Node {
		h := MulScalar(in[0], 1)
		h = layers.QuantizedWeight(quant.F32, N, K, in[1]).MulT(h)
		h = Slice(h, AxisRange(), AxisRange(0, K))
		h = layers.QuantizedWeight(quant.Q4_0, N, K, in[2:4]...).MulT(h)
		h = Slice(h, AxisRange(), AxisRange(0, K))
		return layers.QuantizedWeight(quant.F32, N, K, in[4]).MulT(h)
	}
	// The float64 reference, through the Q4_0 weights as dequantized.
	h := make([]float64, K)
	for i, v := range x {
		h[i] = float64(v)
	}
	var want []float64
	for i, w := range [][]float32{ws[0], deq, ws[2]} {
		y := make([]float64, N)
		for n := range N {
			for k := range K {
				y[n] += float64(w[n*K+k]) * h[k]
			}
		}
		if i < 2 {
			h = y[:K]
		}
		want = y
	}
	got := runLinked(t, "actq8=false", graph, args)
	for k := range got {
		if d := math.Abs(float64(got[k]) - want[k]); d > 1e-4*(1+math.Abs(want[k])) {
			t.Fatalf("y[%d] = %g, want %g", k, got[k], want[k])
		}
	}
}
