// Package engine runs models: it picks the GoMLX backend, compiles each graph once per shape
// bucket, keeps a fixed-capacity KV cache, and generates text (greedy, temperature, top-k,
// top-p, seed, stop tokens) or fills masks for encoders. It never names a positional scheme.
package engine

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/posformer/posformer/engine/cpu"
)

// DefaultBackend is posformer's own CPU backend (engine/cpu); "go" is GoMLX's pure-Go backend,
// kept as the reference the own backend is tested against.
const DefaultBackend = "cpu"

// xlaBackend is set by backend_xla.go when the binary is built with XLA support.
var xlaBackend func(plugin string) (backends.Backend, error)

// BackendNames lists the accepted --backend values.
func BackendNames() []string { return []string{"cpu", "go", "xla:cpu", "xla:cuda"} }

// smallModelBytes is the size of weights below which the default pure-Go backend runs its
// products on the calling goroutine (parallelism=0): the backend starts a goroutine for every
// product it parallelizes, and for products this small that costs more than it saves
// (measured: stories260K decodes about 30% faster inline; the 15M shape twice as fast in
// parallel).
const smallModelBytes = 8 << 20

// newBackendFor is NewBackend for a model whose weights take weightBytes: the pure-Go backend
// ("go" without options) does not parallelize inside products for a small model.
func newBackendFor(name string, weightBytes int64) (backends.Backend, error) {
	if name == "" {
		name = os.Getenv(backends.ConfigEnvVar)
	}
	if name == "" {
		name = DefaultBackend
	}
	if name == "go" && weightBytes > 0 && weightBytes < smallModelBytes {
		name = "go:ops_sequential,parallelism=0"
	}
	return NewBackend(name)
}

// inline holds the pure-Go backends created to run products on the calling goroutine.
var inline sync.Map

// PacksWeights reports whether the engine stores weight matrices packed (layers.SetPacked) for
// backend: only GoMLX's pure-Go backend running products in parallel gains from it (it spreads a
// product over the cores only across batch axes); for any other backend it adds copies.
func PacksWeights(backend backends.Backend) bool {
	if _, ok := backend.(*simplego.Backend); !ok {
		return false
	}
	_, ok := inline.Load(backend)
	return !ok
}

// quietly runs fn with os.Stdout discarded: simplego.New prints a line on stdout when given
// parallelism=N, and cmd/infer's stdout is the generated text.
func quietly(fn func() (backends.Backend, error)) (backends.Backend, error) {
	null, err := os.Open(os.DevNull)
	if err != nil {
		return fn()
	}
	defer null.Close()
	stdout := os.Stdout
	os.Stdout = null
	defer func() { os.Stdout = stdout }()
	return fn()
}

// NewBackend returns the backend called name: "cpu" (posformer's own; "cpu:threads=N"), "go"
// (GoMLX's pure Go; "go:OPTIONS" passes options such as ops_sequential to it), or "xla:cpu" /
// "xla:cuda" through a PJRT plugin. An empty name means $GOMLX_BACKEND, else DefaultBackend. A
// missing plugin is an error, never a silent fallback.
func NewBackend(name string) (backends.Backend, error) {
	if name == "" {
		name = os.Getenv(backends.ConfigEnvVar)
	}
	if name == "" {
		name = DefaultBackend
	}
	kind, config, _ := strings.Cut(name, ":")
	switch kind {
	case cpu.BackendName:
		b, err := cpu.New(config)
		if err != nil {
			return nil, err
		}
		return b, nil
	case "go", "simplego":
		if config == "" {
			// The backend's default parallel op scheduling was seen to hang on 2 cores;
			// sequential ops (DotGeneral still runs in parallel inside) did not.
			config = "ops_sequential"
		}
		b, err := quietly(func() (backends.Backend, error) { return simplego.New(config) })
		if err != nil {
			return nil, fmt.Errorf("backend %q: %w", name, err)
		}
		if slices.Contains(strings.Split(config, ","), "parallelism=0") {
			inline.Store(b, true)
		}
		return b, nil
	case "xla", "stablehlo":
		if config == "" {
			config = "cpu"
		}
		if xlaBackend == nil {
			return nil, fmt.Errorf("backend %q: this binary was built without XLA (build tag noxla or CGO_ENABLED=0); rebuild with cgo, or use --backend cpu", name)
		}
		return xlaBackend(config)
	}
	return nil, fmt.Errorf("unknown backend %q (valid: %s)", name, strings.Join(BackendNames(), ", "))
}

// BackendSummary names a backend for a summary line: "cpu (avx512 kernels, 2 threads)" for
// posformer's own (which kernel set runs, chosen from the CPU's features), else its name.
func BackendSummary(b backends.Backend) string {
	if c, ok := b.(*cpu.Backend); ok {
		return "backend " + c.Summary()
	}
	return "backend " + b.Name()
}
