// Package list is the list command (posformer list): the models in the models directory
// ($POSFORMER_HOME, cmd/internal/modelhome), each with its format, size on disk, parameter
// count and positional scheme, as `ollama list` shows its own. Any name it prints is what
// -m takes. The built-in model is listed last.
package list

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/posformer/posformer/cmd/internal/flaghelp"
	"github.com/posformer/posformer/cmd/internal/modelhome"
	"github.com/posformer/posformer/models"
	"github.com/posformer/posformer/models/gguf"
	"github.com/posformer/posformer/models/hf"
	_ "github.com/posformer/posformer/models/llama2c" // registers the format
	"github.com/posformer/posformer/models/safetensors"
	"github.com/posformer/posformer/weights"
)

// Main runs the command with args and returns its exit status.
func Main(args []string) int { return Run(args, os.Stdout, os.Stderr) }

// Run is Main writing to stdout and stderr.
func Run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("list", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stderr, "usage: posformer list\nThe models in $%s (default: the user cache directory's posformer/models); -m NAME runs one.\n", modelhome.EnvHome)
			fs.SetOutput(stderr)
			flaghelp.PrintDefaults(fs)
			return 0
		}
		fmt.Fprintf(stderr, "list: %v (run with -h for the flags)\n", err)
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "list: unexpected argument %q; list takes no arguments\n", fs.Arg(0))
		return 2
	}
	home, err := modelhome.Home()
	if err != nil {
		fmt.Fprintln(stderr, "list:", err)
		return 1
	}
	entries, err := os.ReadDir(home)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(stderr, "list: reading %s: %v\n", home, err)
		return 1
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tFORMAT\tSIZE\tPARAMETERS\tSCHEME")
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		path := filepath.Join(home, e.Name())
		row, ok := describe(path)
		if !ok {
			continue // not a model: a note, a tokenizer, a half-copied folder
		}
		name := e.Name()
		for _, ext := range modelhome.Extensions {
			name = strings.TrimSuffix(name, ext)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", name, row.format, size(row.bytes), count(row.params), row.scheme)
	}
	if dir, err := modelhome.Builtin(); err == nil {
		if row, ok := describe(dir); ok {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", weights.DefaultName+" (built in)", row.format, size(row.bytes), count(row.params), row.scheme)
		}
	}
	tw.Flush()
	if len(entries) == 0 {
		fmt.Fprintf(stderr, "list: no models in %s yet: copy a checkpoint folder or a .gguf file there, or set $%s\n", home, modelhome.EnvHome)
	}
	return 0
}

type row struct {
	format, scheme string
	bytes, params  int64 // params < 0: unknown
}

// describe reads what a listing shows from a model's headers, never its weights: a large
// GGUF file is listed as fast as a small one.
func describe(path string) (row, bool) {
	info, err := os.Stat(path)
	if err != nil {
		return row{}, false
	}
	if !info.IsDir() && !slices.Contains(modelhome.Extensions, filepath.Ext(path)) {
		return row{}, false // llama2.c files have no magic number: only a .bin is taken for one
	}
	f, err := models.FormatOf(path)
	if err != nil {
		return row{}, false
	}
	r := row{format: f.Name, bytes: du(path), params: -1, scheme: "?"}
	switch {
	case gguf.IsFile(path):
		g, err := gguf.Open(path)
		if err != nil {
			return row{}, false
		}
		defer g.Close()
		r.params = 0
		for _, t := range g.Tensors {
			r.params += int64(t.Numel())
		}
		if cfg, err := gguf.Config(g); err == nil {
			r.scheme = cfg.SchemeName()
		}
	case hf.IsDir(path):
		r.params = safetensorsParams(path)
		if cfg, err := hf.ReadConfig(path); err == nil {
			r.scheme = cfg.SchemeName()
		}
	case f.Name == "posformer":
		r.params = safetensorsParams(path)
		if cfg, err := models.ReadConfig(path); err == nil {
			r.scheme = cfg.SchemeName()
		}
	case f.Name == "llama2c":
		r.scheme = "rope"
	}
	return r, true
}

// safetensorsParams sums the elements of the tensors of every safetensors file in dir (a
// Hugging Face model may be sharded) but the optimizer's state; -1 when one cannot be read.
func safetensorsParams(dir string) int64 {
	files, _ := filepath.Glob(filepath.Join(dir, "*.safetensors"))
	var n int64
	for _, p := range files {
		if filepath.Base(p) == "train_state.safetensors" {
			continue
		}
		f, err := safetensors.Open(p)
		if err != nil {
			return -1
		}
		for _, info := range f.Infos() {
			k := int64(1)
			for _, d := range info.Shape {
				k *= int64(d)
			}
			n += k
		}
		f.Close()
	}
	return n
}

// du is the bytes of a file, or of a folder's files (the optimizer's state included: it is
// disk the model takes).
func du(path string) int64 {
	var n int64
	filepath.WalkDir(path, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// size writes bytes as ollama does: 1.3 MB, 4.7 GB.
func size(b int64) string {
	switch {
	case b >= 1e9:
		return fmt.Sprintf("%.1f GB", float64(b)/1e9)
	case b >= 1e6:
		return fmt.Sprintf("%.1f MB", float64(b)/1e6)
	default:
		return fmt.Sprintf("%.1f kB", float64(b)/1e3)
	}
}

// count writes a parameter count as model cards do: 330K, 15M, 1.1B.
func count(n int64) string {
	switch {
	case n < 0:
		return "?"
	case n >= 1e9:
		return fmt.Sprintf("%.1fB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.0fK", float64(n)/1e3)
	default:
		return fmt.Sprint(n)
	}
}
