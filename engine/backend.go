// Package engine runs models: it picks the GoMLX backend, compiles each graph once per shape
// bucket, keeps a fixed-capacity KV cache, and generates text (greedy, temperature, top-k,
// top-p, seed, stop tokens) or fills masks for encoders. It never names a positional scheme.
package engine

import (
	"fmt"
	"os"
	"strings"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/posformer/posformer/engine/cpu"
)

// DefaultBackend is posformer's own CPU backend (engine/cpu); "go" is GoMLX's pure-Go backend,
// kept as the reference the own backend is tested against.
const DefaultBackend = "cpu"

// xlaBackend is set by the package engine/xla, which a program imports for XLA support.
var xlaBackend func(plugin string) (backends.Backend, error)

// RegisterXLA is how engine/xla makes "xla:PLUGIN" available to NewBackend; it lives in its own
// package because it needs cgo, which engine and its users do not.
func RegisterXLA(open func(plugin string) (backends.Backend, error)) { xlaBackend = open }

// BackendUsage is the help text of a --backend flag: every value BackendNames lists, and what
// each is.
const BackendUsage = "cpu (default, or $GOMLX_BACKEND; cpu:threads=N), go (GoMLX pure Go), xla:cpu or xla:cuda"

// BackendNames lists the accepted --backend values.
func BackendNames() []string { return []string{"cpu", "go", "xla:cpu", "xla:cuda"} }

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
		b, err := simplego.New(config)
		if err != nil {
			return nil, fmt.Errorf("backend %q: %w", name, err)
		}
		return b, nil
	case "xla", "stablehlo":
		if config == "" {
			config = "cpu"
		}
		if xlaBackend == nil {
			return nil, fmt.Errorf("backend %q: this program was built without XLA (it does not import engine/xla, or was built with the tag noxla or CGO_ENABLED=0); rebuild it with cgo, or use --backend cpu", name)
		}
		return xlaBackend(config)
	}
	return nil, fmt.Errorf("unknown backend %q (valid: %s)", name, strings.Join(BackendNames(), ", "))
}

// BackendSummary names a backend for a summary line: "backend cpu (avx512 kernels, 2 threads)"
// for a backend that describes itself (posformer's own says which kernel set runs, chosen from
// the CPU's features), else "backend " and its name.
func BackendSummary(b backends.Backend) string {
	if d, ok := b.(interface{ Summary() string }); ok {
		return "backend " + d.Summary()
	}
	return "backend " + b.Name()
}
