// Package backendflag registers --backend, the computation backend a command's graphs run on,
// so that every command names the backends the same way (engine.NewBackend parses the value):
//
//	--backend cpu            the project's own engine/cpu (the default, or $GOMLX_BACKEND)
//	--backend cpu:threads=N  the same on N threads
//	--backend go             GoMLX's pure Go simplego, the reference
//	--backend xla:cpu        XLA through PJRT (xla:cuda on a GPU)
//
// A command with a flag.FlagSet calls Register(fs) (or Var to land the value in a field of its
// options); one on the global flag set passes flag.CommandLine.
package backendflag

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/gomlx/gomlx/backends"
	"github.com/posformer/posformer/engine"
)

// Name is the flag's name.
const Name = "backend"

// Usage is the flag's help text: every value engine.BackendNames lists, and what each is.
const Usage = engine.BackendUsage

// ShortUsage is Usage without what go is, for a command whose help is long already (cmd/serve).
const ShortUsage = "cpu (default, or $GOMLX_BACKEND; cpu:threads=N), go, xla:cpu or xla:cuda"

// Register adds --backend to fs with Usage and returns where its value lands ("": the default).
func Register(fs *flag.FlagSet) *string {
	p := new(string)
	Var(fs, p, Usage)
	return p
}

// Var adds --backend to fs with the help text usage ("": Usage), its value landing in p.
func Var(fs *flag.FlagSet, p *string, usage string) {
	if usage == "" {
		usage = Usage
	}
	fs.StringVar(p, Name, "", usage)
}

// WithThreads is the backend value that runs backend (a --backend value; "": $GOMLX_BACKEND or
// the default) on threads worker threads, llama.cpp's -t: "cpu:threads=N". threads 0 leaves
// backend as it is. Only the cpu backend takes a thread count here; a backend that already
// names one, or another backend, is an error saying which flag to drop.
func WithThreads(backend string, threads int) (string, error) {
	if threads == 0 {
		return backend, nil
	}
	if threads < 0 {
		return "", fmt.Errorf("-t must be >= 1 threads, got %d", threads)
	}
	name := backend
	if name == "" {
		name = os.Getenv(backends.ConfigEnvVar)
	}
	if name == "" {
		name = engine.DefaultBackend
	}
	kind, config, _ := strings.Cut(name, ":")
	if kind != "cpu" {
		return "", fmt.Errorf("-t sets the cpu backend's threads, but the backend is %q; drop -t or use --backend cpu", name)
	}
	if strings.Contains(config, "threads=") {
		return "", fmt.Errorf("-t %d and --backend %s both set the threads; give one", threads, name)
	}
	if config != "" {
		config += ","
	}
	return fmt.Sprintf("cpu:%sthreads=%d", config, threads), nil
}
