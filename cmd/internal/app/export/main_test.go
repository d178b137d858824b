package export

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/posformer/posformer/engine"
	"github.com/posformer/posformer/models"
	"github.com/posformer/posformer/models/gguf"
	"github.com/posformer/posformer/models/hf"
	"github.com/posformer/posformer/tokenizer"
)

// The shipped RoPE decoder exports with its byte tokenizer in the file, as Q8_0 too, and a
// GGUF re-exports (keeping its vocabulary).
func TestExport(t *testing.T) {
	dir := t.TempDir()
	var log bytes.Buffer
	f32 := filepath.Join(dir, "rope.gguf")
	if err := run(options{model: "../../../../weights/rope-decoder", out: f32, typ: "f32"}, &log); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "wrote "+f32+" (3 layers") {
		t.Errorf("log %q", log.String())
	}
	f, err := gguf.Open(f32)
	if err != nil {
		t.Fatal(err)
	}
	v, err := gguf.ReadVocab(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.NewGGUF(tokenizer.GGUFVocab(v))
	if err != nil {
		t.Fatal(err)
	}
	if ids, _ := tok.Encode("func"); len(ids) != 4 || ids[0] != 'f' {
		t.Errorf("the stored byte tokenizer encodes %q as %v", "func", ids)
	}
	q8 := filepath.Join(dir, "rope-q8.gguf")
	if err := run(options{model: f32, out: q8, typ: "q8_0"}, &log); err != nil {
		t.Fatal(err)
	}
	g, err := gguf.Open(q8)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if g.MatrixType().String() != "q8_0" {
		t.Errorf("re-export holds %v matrices", g.MatrixType())
	}
	if v2, _ := gguf.ReadVocab(g); len(v2.Tokens) != len(v.Tokens) || v2.Model != v.Model {
		t.Errorf("re-export lost the vocabulary")
	}
}

// A Hugging Face directory exports with its tokenizer.json, and the GGUF computes the same
// logits as the directory.
func TestExportHF(t *testing.T) {
	backend, err := engine.NewBackend("cpu")
	if err != nil {
		t.Fatal(err)
	}
	cfg := models.Config{Kind: models.Decoder, VocabSize: 32, Dim: 32, NumLayers: 1, NumHeads: 2, HiddenDim: 32,
		FFN: "swiglu", Norm: "rmsnorm", NormEps: 1e-6, MaxSeqLen: 32, Positional: map[string]any{"name": "rope", "base": 1000.0}}
	m, err := models.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.New()
	ctx.SetParam(context.ParamInitialSeed, int64(1)) // the same weights every run
	e, err := engine.New(backend, m, ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	tokens, positions := [][]int{{1, 2, 3, 4}}, [][]int{{0, 1, 2, 3}}
	if _, err := e.Forward(tokens, positions); err != nil {
		t.Fatal(err)
	}
	for v := range e.Ctx.IterVariables() { // away from the initial norms of 1 and zero biases
		data := make([]float32, v.Shape().Size())
		for i := range data {
			data[i] = float32(i%7)*0.05 - 0.1
		}
		v.SetValue(tensors.FromFlatDataAndDimensions(data, v.Shape().Dimensions...))
	}
	dir := filepath.Join(t.TempDir(), "hf")
	if err := hf.Export(dir, e.Model, e.Ctx, hf.ExportOptions{}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile("../../../../tokenizer/testdata/bpe.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, hf.TokenizerFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "hf.gguf")
	if err := run(options{model: dir, out: out, typ: "f32"}, new(bytes.Buffer)); err != nil {
		t.Fatal(err)
	}
	a, err := engine.Load(dir, "cpu", 0)
	if err != nil {
		t.Fatal(err)
	}
	m2, ctx2, err := gguf.Load(out, backend)
	if err != nil {
		t.Fatal(err)
	}
	b, err := engine.New(backend, m2, ctx2, 0)
	if err != nil {
		t.Fatal(err)
	}
	la, _ := a.Forward(tokens, positions)
	lb, _ := b.Forward(tokens, positions)
	for i := range la[0] {
		for j := range la[0][i] {
			if d := la[0][i][j] - lb[0][i][j]; d > 1e-4 || d < -1e-4 {
				t.Fatalf("logit [%d][%d]: %v from the directory, %v from the GGUF", i, j, la[0][i][j], lb[0][i][j])
			}
		}
	}
	f, _ := gguf.Open(out)
	defer f.Close()
	if v, err := gguf.ReadVocab(f); err != nil || v.Model != "gpt2" || len(v.Tokens) != 32 || len(v.Merges) != 5 {
		t.Errorf("vocabulary %+v (%v)", v, err)
	}
	// Back to a Hugging Face directory (bf16): the same model, logits within bf16's rounding,
	// its tokenizer.json copied; a quantized type is refused there.
	again := filepath.Join(t.TempDir(), "again")
	if err := run(options{model: dir, out: again, typ: "bf16"}, new(bytes.Buffer)); err != nil {
		t.Fatal(err)
	}
	c, err := engine.Load(again, "cpu", 0)
	if err != nil {
		t.Fatal(err)
	}
	lc, _ := c.Forward(tokens, positions)
	for i := range la[0] {
		for j := range la[0][i] {
			if d := la[0][i][j] - lc[0][i][j]; d > 0.05 || d < -0.05 {
				t.Fatalf("logit [%d][%d]: %v from the directory, %v from its bf16 export", i, j, la[0][i][j], lc[0][i][j])
			}
		}
	}
	if got, err := os.ReadFile(filepath.Join(again, hf.TokenizerFile)); err != nil || !bytes.Equal(got, data) {
		t.Errorf("tokenizer.json not copied whole (%v)", err)
	}
	if err := run(options{model: dir, out: filepath.Join(t.TempDir(), "q"), typ: "q8_0"}, new(bytes.Buffer)); err == nil || !strings.Contains(err.Error(), "f32, f16 or bf16") {
		t.Errorf("q8_0 into a Hugging Face directory: %v", err)
	}
	// Without its tokenizer.json the directory needs -z or --no-vocab.
	os.Remove(filepath.Join(dir, hf.TokenizerFile))
	if err := run(options{model: dir, out: out, typ: "f32", force: true}, new(bytes.Buffer)); err == nil || !strings.Contains(err.Error(), "--no-vocab") {
		t.Errorf("no tokenizer.json: %v", err)
	}
	if err := run(options{model: dir, out: out, typ: "f32", noVocab: true, force: true}, new(bytes.Buffer)); err != nil {
		t.Error(err)
	}
}

func TestExportRefuses(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		o    options
		want string
	}{
		{options{model: "../../../../weights/sinusoidal-encoder", out: filepath.Join(dir, "x.gguf"), typ: "f32"}, `positional scheme "sinusoidal" has no GGUF architecture llama.cpp runs`},
		{options{model: "../../../../weights/rope-decoder", out: filepath.Join(dir, "x.gguf"), typ: "q5_k"}, `--type: unknown weight type "q5_k"`},
		{options{model: "../../../../weights/rope-decoder", typ: "f32"}, "no output: pass -o"},
		{options{out: "x.gguf", typ: "f32"}, "no model: pass -m"},
		{options{model: filepath.Join(dir, "none"), out: "x.gguf", typ: "f32"}, "no model at"},
		{options{model: "../../../../weights/rope-decoder", out: filepath.Join(dir, "x.gguf"), typ: "f32", tokenizer: "byte", noVocab: true}, "-z and --no-vocab contradict"},
	} {
		err := run(c.o, new(bytes.Buffer))
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("error %v\nwant one line mentioning %q", err, c.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("files left behind: %v", entries)
	}
}

// An existing output is refused, in one line naming --force, and left as it was: a .gguf file,
// or a folder holding a Hugging Face export (a folder without one is written into); --force
// replaces it, and removes the temporary files of an export killed there.
func TestExportRefusesExisting(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "rope.gguf")
	hfDir := filepath.Join(dir, "rope-hf")
	if err := os.Mkdir(hfDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{file, filepath.Join(hfDir, hf.ConfigFile)} {
		if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// What a kill during the write of each leaves: removed by the next export there.
	orphans := []string{filepath.Join(dir, ".rope.gguf.4021.tmp"), filepath.Join(hfDir, "."+hf.WeightsFile+".77.tmp")}
	for _, path := range orphans {
		if err := os.WriteFile(path, []byte("half"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ out, existing string }{{file, file}, {hfDir, filepath.Join(hfDir, hf.ConfigFile)}} {
		o := options{model: "../../../../weights/rope-decoder", out: c.out, typ: "f32"}
		err := run(o, new(bytes.Buffer))
		if err == nil || !strings.Contains(err.Error(), c.existing+" exists; pass --force to replace it") || strings.Contains(err.Error(), "\n") {
			t.Errorf("export onto %s: error %v, want one line naming it and --force", c.out, err)
		}
		if got, _ := os.ReadFile(c.existing); string(got) != "old" {
			t.Errorf("a refused export changed %s", c.existing)
		}
		o.force = true
		if err := run(o, new(bytes.Buffer)); err != nil {
			t.Fatalf("--force onto %s: %v", c.out, err)
		}
		if got, _ := os.ReadFile(c.existing); string(got) == "old" {
			t.Errorf("--force left %s as it was", c.existing)
		}
	}
	for _, path := range orphans {
		if _, err := os.Stat(path); err == nil {
			t.Errorf("%s survived the next export", path)
		}
	}
	empty := filepath.Join(dir, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := run(options{model: "../../../../weights/rope-decoder", out: empty, typ: "f32"}, new(bytes.Buffer)); err != nil {
		t.Errorf("export into an empty folder: %v", err)
	}
}
