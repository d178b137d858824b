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
