// Package cpu is posformer's own GoMLX backend: a compiler and executor for GoMLX graphs on the
// CPU, with SIMD kernels (package kernels) for the products and a persistent worker pool.
//
// Builder records the graph; Compile plans it once (dead nodes dropped, every intermediate value
// given a slot in one arena reused across calls, reshapes made free, donated inputs such as the
// KV cache updated in place) into a list of steps; Execute runs the steps. Ops it lacks fail when
// the graph is built, with "backend cpu: op X not implemented".
//
// Select it with backends.NewWithConfig("cpu") or GOMLX_BACKEND=cpu; "cpu:threads=N" sets the
// number of threads (default GOMAXPROCS), "cpu:actq8=false" keeps x in float32 in products with
// Q8_0 and Q4_0 weights (by default quantized to int8 where the int8 kernels run in assembly,
// AVX2 or AVX-512 VNNI, as llama.cpp does), "cpu:bf16dot=true" rounds the operands of float32 matrix products to
// bfloat16 (on AMX tiles where the CPU has them, unless "cpu:amx=false"; see New).
package cpu

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/gomlx/gomlx/backends"
	"github.com/posformer/posformer/engine/cpu/internal/freelist"
	"github.com/posformer/posformer/engine/cpu/kernels"
)

// BackendName is the name the backend registers under.
const BackendName = "cpu"

func init() {
	backends.Register(BackendName, func(config string) (backends.Backend, error) { return New(config) })
}

// Backend implements backends.Backend.
type Backend struct {
	threads   int
	optimize  bool        // run Compile's graph passes (compile.go); "optimize=false" turns them off
	actq8     bool        // Q8_0 and Q4_0 products quantize x to int8 blocks (kernels/vnni.go); "actq8=..."
	actUsed   atomic.Bool // some compiled product takes int8 activations (for Summary)
	bf16dot   bool        // float32 products on the blocked GEMM take bf16 operands (dot.go); "bf16dot=true"
	pool      *pool
	bufs      *freelist.List[byte] // finalized buffers' bytes (newBufferPool)
	arenas    *freelist.List[byte] // calls' arenas (newArenaPool)
	finalized bool
}

var _ backends.Backend = (*Backend)(nil)

// New returns a backend; config is a comma-separated list of options: "threads=N" (default
// GOMAXPROCS), "optimize=false" (compile the graph as recorded: no merging of identical nodes,
// no products reading quantized weights' stored bytes, elementwise chains run op by op; to
// measure what the passes give, and as the reference they are tested against),
// "actq8=true|false" (products with Q8_0 or Q4_0 weights take x quantized to int8 blocks, as
// llama.cpp's do, decoding's and prefill's alike: faster, and no longer what the graph says to
// float rounding; see kernels/vnni.go and kernels/actgemm.go. The default is true where the int8
// kernels run in assembly, AVX2 or AVX-512 VNNI, and false with the generic kernel set, where
// the portable integer path is slower than the exact one) and
// "bf16dot=true" (float32 products large enough for the blocked GEMM round their operands to
// bfloat16 and sum in float32, kernels.SgemmBF16: about twice as fast with AVX512_BF16, a
// relative error near 2⁻⁸ per product; without AVX512_BF16 a portable kernel, much slower)
// and "amx=false" (those bf16 products stay on AVX512_BF16 where the CPU has AMX tiles, which
// kernels.SgemmBF16 uses by default: several times faster, the same rounded operands, the
// float32 sums in another order; the setting is the whole process's, as the kernel set is).
func New(config string) (*Backend, error) {
	threads := runtime.GOMAXPROCS(0)
	optimize, actq8, bf16dot := true, kernels.IntAsm(), false
	for _, opt := range strings.Split(config, ",") {
		opt = strings.TrimSpace(opt)
		if opt == "" {
			continue
		}
		key, val, _ := strings.Cut(opt, "=")
		switch key {
		case "threads":
			n, err := strconv.Atoi(val)
			if err != nil || n < 1 {
				return nil, fmt.Errorf("backend %s: threads=%q: want a positive integer", BackendName, val)
			}
			threads = n
		case "optimize":
			v, err := strconv.ParseBool(val)
			if err != nil {
				return nil, fmt.Errorf("backend %s: optimize=%q: want true or false", BackendName, val)
			}
			optimize = v
		case "actq8":
			v, err := strconv.ParseBool(val)
			if err != nil {
				return nil, fmt.Errorf("backend %s: actq8=%q: want true or false", BackendName, val)
			}
			actq8 = v
		case "bf16dot":
			v, err := strconv.ParseBool(val)
			if err != nil {
				return nil, fmt.Errorf("backend %s: bf16dot=%q: want true or false", BackendName, val)
			}
			bf16dot = v
		case "amx":
			v, err := strconv.ParseBool(val)
			if err != nil {
				return nil, fmt.Errorf("backend %s: amx=%q: want true or false", BackendName, val)
			}
			if err := kernels.SetAMX(v); err != nil {
				return nil, fmt.Errorf("backend %s: amx=true: %w; drop the option to use AVX-512", BackendName, err)
			}
		default:
			return nil, fmt.Errorf("backend %s: unknown option %q (valid: threads=N, optimize=true|false, actq8=true|false, bf16dot=true|false, amx=true|false)", BackendName, opt)
		}
	}
	b := &Backend{threads: threads, optimize: optimize, actq8: actq8, bf16dot: bf16dot, pool: newPool(threads),
		bufs: newBufferPool(), arenas: newArenaPool()}
	// The arenas are not the collector's to free (mapArena): a backend dropped without Finalize
	// unmaps them once it is unreachable. Its executables, the only users of its arenas, hold
	// it, so by then no call can be running.
	runtime.AddCleanup(b, (*freelist.List[byte]).Drain, b.arenas)
	return b, nil
}

// Name implements backends.Backend.
func (b *Backend) Name() string { return BackendName }

// String implements backends.Backend.
func (b *Backend) String() string { return BackendName }

// Description implements backends.Backend: the name, the kernel set and the threads.
func (b *Backend) Description() string {
	return "posformer " + b.Summary()
}

// Summary is "cpu (avx512 kernels, 2 threads)": which kernel set runs and on how many threads,
// and ", int8 activations" once a compiled product takes them (actq8 and Q8_0 or Q4_0 weights),
// ", bf16 products" with bf16dot=true: the numbers differ from the exact path's.
func (b *Backend) Summary() string {
	path := kernels.Path() // read once: the kernel set may change meanwhile
	act := ""
	if b.actUsed.Load() {
		act = ", int8 activations"
	}
	if b.bf16dot {
		act += ", bf16 products"
		switch {
		case kernels.HasAMX():
			act += " on AMX tiles"
		case kernels.HasBF16():
		case path == kernels.Generic:
			act += " (no AVX512_BF16 or AVX2 here: a portable kernel, far slower than float32)"
		default:
			act += " (no AVX512_BF16 here: pairs widened to floats, " + path + ")"
		}
	}
	return fmt.Sprintf("%s (%s kernels, %d threads%s)", BackendName, path, b.threads, act)
}

// PrefersRowGroups reports that Q8_0 and Q4_0 matrices are faster here held in row groups
// (layers.GroupedVars; models.RowGroupsPreferrer): where the row-group kernels run and products
// take int8 x. Anywhere else a matrix in row groups is moved back into rows a task at a time, at
// every call: correct, and several times slower.
func (b *Backend) PrefersRowGroups() bool { return b.actq8 && kernels.GroupKernels() }

// NumDevices implements backends.Backend.
func (b *Backend) NumDevices() int { return 1 }

// DeviceDescription implements backends.Backend.
func (b *Backend) DeviceDescription(backends.DeviceNum) string { return b.Description() }

// Capabilities implements backends.Backend.
func (b *Backend) Capabilities() backends.Capabilities { return capabilities.Clone() }

// Builder implements backends.Backend.
func (b *Backend) Builder(name string) backends.Builder { return newBuilder(b, name) }

// Finalize implements backends.Backend.
func (b *Backend) Finalize() {
	if !b.finalized {
		b.finalized = true
		b.pool.close()
		b.arenas.Drain()
	}
}

// IsFinalized implements backends.Backend.
func (b *Backend) IsFinalized() bool { return b.finalized }
