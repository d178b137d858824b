// Package pe is the pe command (cmd/pe, posformer pe). It shows what a positional scheme does: its
// code table, its attention bias, its buckets, its rotary frequencies, and the attention logits it
// gives a constant content vector at every (query, key) pair. Output is JSON, CSV or a PNG figure.
//
//	go run ./cmd/pe -scheme rope -format png             # writes pe-rope.png
//	go run ./cmd/pe -scheme alibi -heads 8 -len 32       # JSON on stdout
//	go run ./cmd/pe -m weights/sinusoidal-encoder -format png -o sin.png
//
// It knows no scheme by name: what it prints follows from the hooks and small introspection
// interfaces that the scheme implements (see inspect.go).
package pe

import (
	"errors"
	"flag"
	"fmt"
	"github.com/posformer/posformer/cmd/internal/flaghelp"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/posformer/posformer/cmd/internal/backendflag"
	"github.com/posformer/posformer/cmd/internal/modelhome"
	"github.com/posformer/posformer/cmd/internal/ropeflags"
	"github.com/posformer/posformer/engine"
	"github.com/posformer/posformer/models"
	"github.com/posformer/posformer/positional"
)

type options struct {
	scheme, model, format, out, kind, backend string
	pe                                        positional.OptionFlag
	length, dim, heads, layer, trainLen       int
	seed                                      int64
	numBuckets, maxDistance                   int
	bidirectional                             bool
	set                                       map[string]bool // flags given on the command line
	rope                                      *ropeflags.Flags
}

// schemeFlags are named flags that stand for scheme options (T5's, and max_distance of any
// scheme that has one); they reach the scheme only when given.
var schemeFlags = map[string]string{"num-buckets": "num_buckets", "max-distance": "max_distance", "bidirectional": "bidirectional"}

func newFlags(o *options) *flag.FlagSet {
	fs := flag.NewFlagSet("pe", flag.ContinueOnError)
	fs.StringVar(&o.scheme, "scheme", "", "positional scheme: "+strings.Join(positional.Names(), ", "))
	fs.Var(o.pe, "pe", "scheme option key=value (repeatable), e.g. -pe base=500 -pe layout=interleaved")
	fs.IntVar(&o.numBuckets, "num-buckets", 0, "scheme option num_buckets (T5), when given")
	fs.IntVar(&o.maxDistance, "max-distance", 0, "scheme option max_distance (T5, Shaw, DeBERTa), when given")
	fs.BoolVar(&o.bidirectional, "bidirectional", false, "scheme option bidirectional (T5), when given")
	fs.StringVar(&o.model, "m", "", "checkpoint directory, or the name of a model in $POSFORMER_HOME (posformer list): show its trained scheme (config gives the scheme, dim and heads)")
	fs.IntVar(&o.length, "len", 64, "positions 0..len-1")
	fs.IntVar(&o.dim, "dim", 64, "model width")
	fs.IntVar(&o.heads, "heads", 4, "attention heads")
	fs.IntVar(&o.layer, "layer", 0, "block whose hooks are shown (per-layer schemes)")
	fs.IntVar(&o.trainLen, "train-len", 0, "training length L (-pe ssmax=true: an untrained s is 1/ln L; default -len)")
	fs.StringVar(&o.kind, "kind", models.Decoder, "decoder (causal) or encoder (bidirectional)")
	fs.Int64Var(&o.seed, "seed", 1, "seed of the random initialization of learned variables")
	fs.StringVar(&o.format, "format", "json", "json, csv or png")
	fs.StringVar(&o.out, "o", "", "output file (json, csv: default stdout; png: default pe-<scheme>.png)")
	backendflag.Var(fs, &o.backend, backendflag.Usage)
	o.rope = ropeflags.Register(fs)
	return fs
}

// parse reads the command line; with -h it prints the usage to help and returns flag.ErrHelp.
func parse(args []string, help io.Writer) (options, []string, error) {
	o := options{pe: positional.OptionFlag{}, set: map[string]bool{}}
	fs := newFlags(&o)
	fs.Usage = func() { // the flag package calls it on errors too, while output is discarded
		fmt.Fprintln(fs.Output(), "usage: pe -scheme NAME [-len N] [-dim D] [-heads H] [-pe key=value]... [-format json|csv|png] [-o FILE]")
		fmt.Fprintln(fs.Output(), "       pe -m CHECKPOINT_DIR [-len N] [-layer L] [-format json|csv|png] [-o FILE]")
		flaghelp.PrintDefaults(fs)
	}
	fs.SetOutput(io.Discard) // one-line errors instead of the usage dump
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(help)
			fs.Usage()
		}
		return o, nil, err
	}
	fs.Visit(func(f *flag.Flag) { o.set[f.Name] = true })
	return o, fs.Args(), nil
}

// Main runs the command with args (the arguments after its name) and returns its exit
// status: 2 for a bad flag, 1 for a failure.
func Main(args []string) int {
	o, args, err := parse(args, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "pe: %v (run with -h for the flags)\n", err)
		return 2
	}
	if err := run(o, args, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "pe:", firstLine(err))
		return 1
	}
	return 0
}

// firstLine keeps an error to one line: some library errors carry a stack trace after it.
func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

func run(o options, args []string, stdout, stderr io.Writer) error {
	switch {
	case len(args) > 0:
		return fmt.Errorf("unexpected argument %q; flags only (see -h)", args[0])
	case o.format != "json" && o.format != "csv" && o.format != "png":
		return fmt.Errorf("-format is %q (valid: json, csv, png)", o.format)
	case o.length < 1:
		return fmt.Errorf("-len must be >= 1, got %d", o.length)
	case o.layer < 0:
		return fmt.Errorf("-layer must be >= 0, got %d", o.layer)
	case o.trainLen < 0 || o.trainLen == 1:
		return fmt.Errorf("-train-len must be >= 2, got %d", o.trainLen)
	}
	backend, err := engine.NewBackend(o.backend)
	if err != nil {
		return err
	}
	var st *setup
	if o.model != "" {
		if o.model, err = modelhome.Resolve(o.model); err != nil {
			return err
		}
		st, err = fromCheckpoint(o, backend)
	} else {
		st, err = fromFlags(o)
	}
	if err != nil {
		return err
	}
	if l, ok := st.scheme.(positional.Limited); ok && l.Limit() > 0 && o.length > l.Limit() {
		return fmt.Errorf("-len %d: %s encodes positions below %d only (%s); use -len <= %d", o.length, st.name, l.Limit(), l.LimitFix(), l.Limit())
	}
	rep, err := inspect(backend, st, o.length, o.layer)
	if err != nil {
		return err
	}
	switch o.format {
	case "json":
		return writeJSON(rep, o.out, stdout)
	case "csv":
		return writeCSV(rep, o.out, stdout)
	}
	out := o.out
	if out == "" {
		out = "pe-" + st.name + ".png"
	}
	if err := writePNG(rep, out); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "pe: wrote %s\n", out)
	return nil
}

// setup is a scheme ready to inspect: its variables live under ctx's /model/positional scope.
type setup struct {
	name    string
	options map[string]any
	scheme  positional.Scheme
	arch    positional.Arch
	ctx     *context.Context  // root context (random or loaded variables)
	model   string            // checkpoint directory, if any
	ssmax   *positional.SSMax // scalable softmax ("ssmax": true), or nil
}

// schemeOptions merges -pe with the named scheme flags that were given.
func schemeOptions(o options) (map[string]any, error) {
	opts := map[string]any{}
	for k, v := range o.pe {
		opts[k] = v
	}
	flagNames := make([]string, 0, len(schemeFlags))
	for f := range schemeFlags {
		flagNames = append(flagNames, f)
	}
	sort.Strings(flagNames)
	for _, f := range flagNames {
		if !o.set[f] {
			continue
		}
		key := schemeFlags[f]
		if _, dup := opts[key]; dup {
			return nil, fmt.Errorf("scheme option %s given twice (-%s and -pe %s=...)", key, f, key)
		}
		switch f {
		case "num-buckets":
			opts[key] = float64(o.numBuckets)
		case "max-distance":
			opts[key] = float64(o.maxDistance)
		case "bidirectional":
			opts[key] = o.bidirectional
		}
	}
	return opts, nil
}

func fromFlags(o options) (*setup, error) {
	switch {
	case o.scheme == "":
		return nil, fmt.Errorf("-scheme NAME or -m DIR is required (schemes: %s)", strings.Join(positional.Names(), ", "))
	case o.kind != models.Decoder && o.kind != models.Encoder:
		return nil, fmt.Errorf("-kind is %q (valid: decoder, encoder)", o.kind)
	case o.heads < 1:
		return nil, fmt.Errorf("-heads must be >= 1, got %d", o.heads)
	case o.dim < 1 || o.dim%o.heads != 0:
		return nil, fmt.Errorf("-dim must be a positive multiple of -heads (%d), got %d", o.heads, o.dim)
	}
	opts, err := schemeOptions(o)
	if err != nil {
		return nil, err
	}
	if o.rope.Given() {
		pe := map[string]any{"name": o.scheme}
		for k, v := range opts {
			pe[k] = v
		}
		if err := o.rope.Apply(pe); err != nil {
			return nil, err
		}
		delete(pe, "name")
		opts = pe
	}
	arch := positional.Arch{
		Dim: o.dim, NumHeads: o.heads, NumKVHeads: o.heads, HeadDim: o.dim / o.heads,
		NumLayers: o.layer + 1, Causal: o.kind == models.Decoder, TrainLen: o.trainLen,
	}
	s, err := positional.New(o.scheme, opts, arch)
	if err != nil {
		return nil, err
	}
	// SSMax needs L; without -train-len it is -len, so that s·ln len starts at 1. The scheme
	// itself keeps L unknown (a RoPE scaling then asks for --yarn-orig-ctx, as before).
	ssArch := arch
	if ssArch.TrainLen == 0 {
		ssArch.TrainLen = max(o.length, 2)
	}
	ss, err := positional.NewSSMax(opts, ssArch)
	if err != nil {
		return nil, err
	}
	ctx := context.New()
	if err := ctx.SetRNGStateFromSeed(o.seed); err != nil {
		return nil, fmt.Errorf("-seed: %w", err)
	}
	return &setup{name: o.scheme, options: opts, scheme: s, arch: arch, ctx: ctx, ssmax: ss}, nil
}

// checkpointDecides are flags whose value a checkpoint's config fixes.
var checkpointDecides = []string{"pe", "num-buckets", "max-distance", "bidirectional", "dim", "heads", "kind", "seed", "train-len"}

func fromCheckpoint(o options, backend backends.Backend) (*setup, error) {
	for _, f := range checkpointDecides {
		if o.set[f] {
			return nil, fmt.Errorf("-%s cannot be combined with -m: the checkpoint's config.json decides it", f)
		}
	}
	m, ctx, err := models.Load(o.model, backend, o.rope.Edit())
	if err != nil {
		return nil, err
	}
	cfg := m.Config
	if o.scheme != "" && o.scheme != cfg.SchemeName() {
		return nil, fmt.Errorf("-scheme %s but the checkpoint in %s uses %s; drop -scheme", o.scheme, o.model, cfg.SchemeName())
	}
	if o.layer >= cfg.NumLayers {
		return nil, fmt.Errorf("-layer %d: the checkpoint has %d layers", o.layer, cfg.NumLayers)
	}
	if !cfg.UsesPositions(o.layer) {
		return nil, fmt.Errorf("-layer %d has no positional hooks in this checkpoint (nope_layers %v); pick another layer", o.layer, cfg.NoPELayers)
	}
	opts := map[string]any{}
	for k, v := range cfg.Positional {
		if k != "name" {
			opts[k] = v
		}
	}
	return &setup{name: cfg.SchemeName(), options: opts, scheme: m.Scheme, arch: cfg.Arch(), ctx: ctx, model: o.model, ssmax: m.SSMax}, nil
}
