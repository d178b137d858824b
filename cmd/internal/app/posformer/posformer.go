// Package posformer is the posformer program's dispatch: one table of subcommands, each the
// Main of a command under cmd/internal/app (cmd/serve/server for serve), so that
// `posformer run` and `go run ./cmd/infer` share flags, output and exit statuses. The dispatch
// is a table, not a CLI library: every command parses its own flag.FlagSet, and the commands'
// shared flags are registered on those (docs/commands.md says why).
package posformer

import (
	"fmt"
	"io"
	"strings"

	"github.com/posformer/posformer/cmd/internal/app/bench"
	"github.com/posformer/posformer/cmd/internal/app/export"
	"github.com/posformer/posformer/cmd/internal/app/infer"
	"github.com/posformer/posformer/cmd/internal/app/list"
	"github.com/posformer/posformer/cmd/internal/app/pe"
	"github.com/posformer/posformer/cmd/internal/app/perplexity"
	"github.com/posformer/posformer/cmd/internal/app/tokenize"
	"github.com/posformer/posformer/cmd/internal/app/train"
	"github.com/posformer/posformer/cmd/internal/version"
	"github.com/posformer/posformer/cmd/serve/server"
	"github.com/posformer/posformer/weights"
)

type command struct {
	name    string
	aliases []string
	what    string
	main    func(args []string) int
}

var commands = []command{
	{"run", []string{"infer"}, "generate from a prompt, or chat with -cnv (llama-cli)", infer.Main},
	{"chat", nil, "talk with a model; the KV cache is kept between turns", infer.ChatMain},
	{"serve", nil, "OpenAI's HTTP API, batched across requests (llama-server)", server.Main},
	{"train", nil, "train a small byte-level model on Go source or your own text", train.Main},
	{"bench", nil, "the extrapolation benchmark (-speed: the speed benchmark)", func(args []string) int {
		bench.ChildPrefix = []string{"bench"} // -speed runs this program again per model
		return bench.Main(args)
	}},
	{"perplexity", nil, "perplexity and bits per byte of a model on a text file (llama-perplexity)", perplexity.Main},
	{"pe", nil, "what a positional scheme does, as JSON, CSV or PNG", pe.Main},
	{"export", nil, "write a model as GGUF or a Hugging Face folder", export.Main},
	{"tokenize", nil, "text to token ids and back (llama-tokenize)", tokenize.Main},
	{"list", []string{"ls"}, "the models in $POSFORMER_HOME", list.Main},
	{"version", nil, "the build: module version, VCS revision, Go version", func([]string) int {
		fmt.Println(version.String())
		return 0
	}},
}

// Main runs the command args[0] names with the rest of args, and returns its exit status.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	name, rest := args[0], args[1:]
	switch name {
	case "-h", "-help", "--help", "help":
		if len(rest) > 0 {
			if c, ok := find(rest[0]); ok {
				return c.main([]string{"-h"})
			}
		}
		usage(stdout)
		return 0
	case "-version", "--version", "-v":
		fmt.Fprintln(stdout, version.String())
		return 0
	}
	c, ok := find(name)
	if !ok {
		fmt.Fprintf(stderr, "posformer: unknown command %q; the commands are %s (posformer -h)\n", name, strings.Join(names(), ", "))
		return 2
	}
	return c.main(rest)
}

func find(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
		for _, a := range c.aliases {
			if a == name {
				return c, true
			}
		}
	}
	return command{}, false
}

func names() []string {
	var out []string
	for _, c := range commands {
		out = append(out, c.name)
	}
	return out
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: posformer COMMAND [flags]   (posformer COMMAND -h: its flags)")
	fmt.Fprintln(w)
	for _, c := range commands {
		name := c.name
		if len(c.aliases) > 0 {
			name += " (" + strings.Join(c.aliases, ", ") + ")"
		}
		fmt.Fprintf(w, "  %-16s %s\n", name, c.what)
	}
	fmt.Fprintln(w, "\n-m takes a path or the name of a model in $POSFORMER_HOME (posformer list); without -m, the built-in "+weights.DefaultName+".")
}
