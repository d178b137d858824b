// Package export is the export command (cmd/export, posformer export). It writes a model posformer
// can load as a GGUF file that llama.cpp runs, or as a Hugging Face directory that transformers
// reads (an -o that does not end in .gguf):
//
//	go run ./cmd/export -m weights/rope-decoder -o rope.gguf
//	go run ./cmd/export -m stories15M.bin -z tokenizer.bin -o stories15M.gguf --type q8_0
//	go run ./cmd/export -m weights/rope-decoder -o rope-hf --type bf16
//	go run ./cmd/export -m /tmp/run -o weights/go-rope-7m --type f16 --format posformer
//
// -m takes posformer's own checkpoint directories, llama2.c .bin files, Hugging Face
// directories and GGUF files (re-exported, say to another type). RoPE decoders with RMSNorm and
// SwiGLU become architecture llama, decoders with learned positions, LayerNorm and GELU gpt2;
// other models are refused, saying what llama.cpp could not run. The tokenizer goes into the
// file (tokenizer.ggml.*): -z's, else the model's own (its tokenizer.json, the byte tokenizer, a
// GGUF file's vocabulary); a llama2.c model without -z is written without one. A llama2.c
// model's file always says BOS is 1 and starts every prompt (add_bos_token), with or without
// -z or --no-vocab, as run.c does. --format posformer copies one of posformer's own checkpoint
// folders with its weights in another type (f16 to ship a model in half the bytes), keeping
// what the other formats cannot say: the training length, the positional block, train.json.
//
// An -o that exists (a file, or a folder holding an export) is refused unless --force replaces
// it: llama.cpp's converters overwrite silently, but an export may be the only copy of a model
// converted from a file since gone, and a typo in -o should not cost it.
package export

import (
	"flag"
	"fmt"
	"github.com/posformer/posformer/cmd/internal/flaghelp"
	"github.com/posformer/posformer/cmd/internal/modelhome"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/posformer/posformer/engine"
	"github.com/posformer/posformer/layers/quant"
	"github.com/posformer/posformer/models"
	"github.com/posformer/posformer/models/atomicfile"
	"github.com/posformer/posformer/models/gguf"
	"github.com/posformer/posformer/models/hf"
	"github.com/posformer/posformer/models/llama2c"
	"github.com/posformer/posformer/tokenizer"
)

type options struct {
	model, tokenizer, out, typ, name, format string
	noVocab, force                           bool
}

// Output formats (--format).
const (
	formatGGUF      = "gguf"
	formatHF        = "hf"
	formatPosformer = "posformer"
)

// Main runs the command with args (the arguments after its name) and returns its exit
// status: 2 for a bad flag, 1 for a failure.
func Main(args []string) int {
	var o options
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	for _, name := range []string{"m", "model"} {
		fs.StringVar(&o.model, name, "", "model: checkpoint directory, llama2.c .bin, Hugging Face directory or GGUF file")
	}
	fs.StringVar(&o.tokenizer, "z", "", "tokenizer to store (llama2.c tokenizer.bin, tokenizer.json, \"byte\"); default: the model's own")
	for _, name := range []string{"o", "output"} {
		fs.StringVar(&o.out, name, "", "output: a .gguf file, or else a Hugging Face directory")
	}
	fs.StringVar(&o.typ, "type", "f32", "type of the weight matrices: f32, f16, bf16, q8_0 or q4_0 (norms and biases stay f32; a Hugging Face directory holds f32, f16 or bf16)")
	fs.StringVar(&o.format, "format", "", "output format: gguf, hf (a Hugging Face directory) or posformer (a copy of one of posformer's checkpoint folders); default: gguf for an -o ending in .gguf, else hf")
	fs.StringVar(&o.name, "name", "", "general.name (default: the model's file or directory name)")
	fs.BoolVar(&o.noVocab, "no-vocab", false, "write no tokenizer (for tokenizers GGUF cannot describe)")
	fs.BoolVar(&o.force, "force", false, "replace -o if it exists (a .gguf file, or a folder holding a Hugging Face export); without it an existing -o is refused")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: export -m MODEL [-z TOKENIZER] -o OUT.gguf [--type f32|f16|bf16|q8_0|q4_0] [--force]")
		fmt.Fprintln(fs.Output(), "       export -m MODEL [-z tokenizer.json] -o HF_DIR [--type f32|f16|bf16] [--force]")
		fmt.Fprintln(fs.Output(), "       export -m CHECKPOINT_DIR -o DIR --format posformer [--type f32|f16|bf16] [--force]")
		flaghelp.PrintDefaults(fs)
	}
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			fs.SetOutput(os.Stderr)
			fs.Usage()
			return 0
		}
		fmt.Fprintf(os.Stderr, "export: %v (run with -h for the flags)\n", err)
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "export: unexpected argument %q (run with -h for the flags)\n", fs.Arg(0))
		return 2
	}
	if err := run(o, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "export:", err)
		return 1
	}
	return 0
}

func run(o options, log io.Writer) error {
	switch {
	case o.model == "":
		return fmt.Errorf("no model: pass -m MODEL")
	case o.out == "":
		return fmt.Errorf("no output: pass -o OUT.gguf")
	case o.noVocab && o.tokenizer != "":
		return fmt.Errorf("-z and --no-vocab contradict each other")
	}
	typ, err := quant.Parse(o.typ)
	if err != nil {
		return fmt.Errorf("--type: %w", err)
	}
	isGGUF := strings.HasSuffix(strings.ToLower(o.out), ".gguf")
	switch o.format {
	case "":
		o.format = formatHF
		if isGGUF {
			o.format = formatGGUF
		}
	case formatGGUF, formatHF, formatPosformer:
		if isGGUF != (o.format == formatGGUF) {
			return fmt.Errorf("--format %s with -o %s: a GGUF file's name ends in .gguf, and only a GGUF file's does", o.format, o.out)
		}
	default:
		return fmt.Errorf("--format %q: valid formats are gguf, hf and posformer", o.format)
	}
	given := o.model
	if o.model, err = modelhome.Resolve(o.model); err != nil {
		return err
	}
	if o.name == "" && o.model != given {
		o.name = given // the name -m used, not the cache folder it names
	}
	if o.format == formatPosformer {
		return copyOwn(o, typ, log)
	}
	if err := checkOverwrite(o.out, o.force); err != nil {
		return err
	}
	if err := removeOrphans(o.out); err != nil {
		return err
	}
	backend, err := engine.NewBackend("")
	if err != nil {
		return err
	}
	m, ctx, kind, err := load(o.model, backend)
	if err != nil {
		return err
	}
	if o.format == formatHF {
		return exportHF(o, typ, m, ctx, kind, log)
	}
	opts := gguf.ExportOptions{Type: typ, Name: o.name}
	if opts.Name == "" {
		opts.Name = strings.TrimSuffix(filepath.Base(filepath.Clean(o.model)), filepath.Ext(o.model))
	}
	switch {
	case !o.noVocab:
		vocab, note, err := vocabulary(o, kind, m.Config)
		if err != nil {
			return err
		}
		if note != "" {
			fmt.Fprintln(log, "export:", note)
		}
		opts.Vocab = vocab.KVs()
	case kind == kindLlama2C:
		// No tokens, but still BOS: without it the file's first token is the prompt's, and the
		// same weights continue differently from the .bin.
		opts.Vocab = llama2cSpecials(gguf.Vocab{}).KVs()
	}
	if err := gguf.Export(o.out, m, ctx, opts); err != nil {
		return err
	}
	info, err := os.Stat(o.out)
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "export: wrote %s (%s, %v weights, %.1f MB)\n", o.out, describe(m.Config), typ, float64(info.Size())/1e6)
	return nil
}

// checkOverwrite refuses an output that exists, unless force: a .gguf file, or a Hugging Face
// folder's config or weights (a folder that holds neither is written into, as it was).
func checkOverwrite(out string, force bool) error {
	if force {
		return nil
	}
	existing := ""
	if strings.HasSuffix(strings.ToLower(out), ".gguf") {
		if _, err := os.Stat(out); err == nil {
			existing = out
		}
	} else {
		for _, name := range []string{hf.ConfigFile, hf.WeightsFile, hf.IndexFile} {
			if _, err := os.Stat(filepath.Join(out, name)); err == nil {
				existing = filepath.Join(out, name)
				break
			}
		}
	}
	if existing != "" {
		return fmt.Errorf("-o: %s exists; pass --force to replace it, or name another output", existing)
	}
	return nil
}

// removeOrphans removes the full-size temporary files that an export killed mid-write left
// beside the files it writes (a Hugging Face folder's shards, named by their count, are
// left to hf.Export).
func removeOrphans(out string) error {
	dir, names := filepath.Dir(out), []string{filepath.Base(out)}
	if !strings.HasSuffix(strings.ToLower(out), ".gguf") {
		dir, names = out, []string{hf.ConfigFile, hf.WeightsFile, hf.IndexFile, hf.TokenizerFile}
	}
	_, err := atomicfile.RemoveOrphans(dir, names...)
	return err
}

// copyOwn writes --format posformer: the checkpoint folder o.model copied to o.out with its
// weights as typ. The copy replaces o.out whole, so an existing -o must be a checkpoint folder
// and --force given: a folder of other files is never removed.
func copyOwn(o options, typ quant.Type, log io.Writer) error {
	dtype, ok := safetensorsTypes[typ]
	if !ok {
		return fmt.Errorf("--type %v: a posformer checkpoint holds f32, f16 or bf16 weights (or write a GGUF file: -o OUT.gguf)", typ)
	}
	if info, err := os.Stat(o.model); err != nil || !info.IsDir() || hf.IsDir(o.model) {
		return fmt.Errorf("--format posformer copies one of posformer's checkpoint folders, and %s is not one: export it as gguf or hf", o.model)
	}
	if same(o.model, o.out) {
		return fmt.Errorf("-o %s is the model's own folder: the copy would drop its optimizer state; name another output", o.out)
	}
	if _, err := os.Stat(o.out); err == nil {
		if _, err := os.Stat(filepath.Join(o.out, models.ConfigFile)); err != nil {
			return fmt.Errorf("-o: %s exists and holds no checkpoint; --format posformer writes a folder of its own: name another output", o.out)
		}
		if !o.force {
			return fmt.Errorf("-o: %s exists; pass --force to replace it, or name another output", o.out)
		}
	}
	if err := models.CopyCheckpoint(o.model, o.out, dtype); err != nil {
		return err
	}
	info, err := os.Stat(filepath.Join(o.out, models.WeightsFile))
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "export: wrote %s (a posformer checkpoint, %v weights, %.1f MB)\n", o.out, typ, float64(info.Size())/1e6)
	return nil
}

// same reports whether paths a and b name one folder.
func same(a, b string) bool {
	ia, errA := os.Stat(a)
	ib, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(ia, ib)
}

// safetensorsTypes are the --type values a safetensors file stores, by its dtype names: the
// folders written here (Hugging Face, posformer) hold no quantized weights.
var safetensorsTypes = map[quant.Type]string{quant.F32: "F32", quant.F16: "F16", quant.BF16: "BF16"}

// Kinds of model -m names.
const (
	kindOwn     = "posformer"
	kindLlama2C = "llama2.c"
	kindHF      = "Hugging Face"
	kindGGUF    = "GGUF"
)

// load opens any model posformer reads, its float32 weights in a checkpoint-layout context.
func load(path string, backend backends.Backend) (*models.Model, *context.Context, string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, nil, "", fmt.Errorf("no model at %s: %w", path, err)
	}
	var m *models.Model
	var ctx *context.Context
	kind := kindOwn
	switch {
	case !info.IsDir() && gguf.IsFile(path):
		kind = kindGGUF
		m, ctx, err = gguf.Load(path, backend)
	case !info.IsDir():
		kind = kindLlama2C
		m, ctx, err = llama2c.Load(path, backend)
	case hf.IsDir(path):
		kind = kindHF
		m, ctx, err = hf.Load(path, backend)
	default:
		m, ctx, err = models.Load(path, backend)
	}
	if err != nil {
		return nil, nil, "", err
	}
	return m, ctx, kind, nil
}

func describe(c models.Config) string {
	return fmt.Sprintf("%d layers, dim %d, vocab %d, %s", c.NumLayers, c.Dim, c.VocabSize, c.SchemeName())
}

// vocabulary is the tokenizer to store, as GGUF metadata, and a note for the user.
func vocabulary(o options, kind string, cfg models.Config) (gguf.Vocab, string, error) {
	var tok tokenizer.Tokenizer
	var err error
	switch {
	case o.tokenizer != "" && strings.HasSuffix(o.tokenizer, ".bin"):
		// run.c reads exactly vocab_size tokens from a tokenizer.bin.
		tok, err = tokenizer.LoadLlama2C(o.tokenizer, cfg.VocabSize)
	case o.tokenizer != "":
		tok, err = tokenizer.Load(o.tokenizer)
	case kind == kindGGUF:
		f, err := gguf.Open(o.model)
		if err != nil {
			return gguf.Vocab{}, "", fmt.Errorf("loading %s: %w", o.model, err)
		}
		defer f.Close()
		v, err := gguf.ReadVocab(f)
		if err != nil {
			return gguf.Vocab{}, "", fmt.Errorf("loading %s: %w", o.model, err)
		}
		return v, "", nil // as the file has it, whatever our tokenizers make of it
	case kind == kindLlama2C:
		return llama2cSpecials(gguf.Vocab{}), "the model has no tokenizer (llama2.c keeps it in a tokenizer.bin): written without one; pass -z tokenizer.bin to include it", nil
	case kind == kindHF:
		tok, err = tokenizer.Load(filepath.Join(o.model, hf.TokenizerFile))
	default:
		tok, err = tokenizer.Load(cfg.TokenizerPath(o.model))
	}
	if err != nil {
		return gguf.Vocab{}, "", fmt.Errorf("storing the tokenizer: %w (pass -z TOKENIZER, or --no-vocab to write the model without one)", err)
	}
	v, err := tokenizer.ToGGUF(tok, cfg.VocabSize)
	if err != nil {
		return gguf.Vocab{}, "", fmt.Errorf("storing the tokenizer: %w (pass --no-vocab to write the model without it)", err)
	}
	if kind == kindLlama2C {
		// The model was trained on sequences that start with BOS, whatever -z's tokenizer says.
		return llama2cSpecials(gguf.Vocab(v)), "", nil
	}
	return gguf.Vocab(v), "", nil
}

// llama2cSpecials sets what llama2.c fixes on v: BOS is 1 and every sequence starts with it
// (run.c prepends it to each prompt), and without tokens EOS is 2. Without add_bos_token a GGUF
// runner feeds the prompt alone, and the same weights continue it differently
// (TestLlama2CKeepsBOS).
func llama2cSpecials(v gguf.Vocab) gguf.Vocab {
	if v.Model == "" {
		v.EOS, v.UNK, v.PAD = 2, -1, -1
	}
	v.BOS, v.AddBOS = 1, true
	return v
}

// exportHF writes m as a Hugging Face directory: config.json and safetensors weights in the
// layout of its family (hf.Export), and tokenizer.json when -z or the model has one.
func exportHF(o options, typ quant.Type, m *models.Model, ctx *context.Context, kind string, log io.Writer) error {
	dtype, ok := safetensorsTypes[typ]
	if !ok {
		return fmt.Errorf("--type %v: a Hugging Face directory holds f32, f16 or bf16 weights (or write a GGUF file: -o OUT.gguf)", typ)
	}
	if info, err := os.Stat(o.out); err == nil && !info.IsDir() {
		return fmt.Errorf("-o %s is a file: a Hugging Face export is a directory (name a .gguf file for GGUF)", o.out)
	}
	if err := hf.Export(o.out, m, ctx, hf.ExportOptions{DType: dtype}); err != nil {
		return err
	}
	tok := o.tokenizer
	switch {
	case o.noVocab:
	case tok == "" && kind == kindHF:
		tok = filepath.Join(o.model, hf.TokenizerFile)
	case tok == "" && kind == kindOwn && strings.HasSuffix(m.Config.Tokenizer, ".json"):
		tok = m.Config.TokenizerPath(o.model)
	}
	switch {
	case o.noVocab:
	case tok == "":
		fmt.Fprintf(log, "export: the model's tokenizer (%s) has no tokenizer.json form: written without one; pass -z tokenizer.json to include one\n", kind)
	case !strings.HasSuffix(tok, ".json"):
		return fmt.Errorf("-z %s: a Hugging Face directory takes a tokenizer.json", tok)
	default:
		if _, err := tokenizer.Load(tok); err != nil {
			return fmt.Errorf("-z: %w", err)
		}
		if err := models.CopyFileAtomic(tok, filepath.Join(o.out, hf.TokenizerFile)); err != nil {
			return fmt.Errorf("storing the tokenizer: %w", err)
		}
	}
	fmt.Fprintf(log, "export: wrote %s (a Hugging Face directory; %s, %v weights)\n", o.out, describe(m.Config), typ)
	return nil
}
