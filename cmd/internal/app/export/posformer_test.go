package export

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/posformer/posformer/engine"
	"github.com/posformer/posformer/models"
	"github.com/posformer/posformer/models/safetensors"
	"github.com/x448/float16"
)

// copyFiles copies the named files of folder src into dst.
func copyFiles(t *testing.T, src, dst string, names ...string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		data, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// --format posformer copies a checkpoint folder with its weights rounded to float16 (each value
// as x448/float16 rounds it), its config and training record unchanged, the optimizer state left
// behind; the copy loads and predicts as the original within float16's rounding.
func TestExportPosformer(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "run")
	copyFiles(t, "../../../../weights/rope-decoder", src, models.ConfigFile, models.WeightsFile, "train.json")
	if err := os.WriteFile(filepath.Join(src, "train_state.safetensors"), []byte("optimizer"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "shipped")
	var log bytes.Buffer
	if err := run(options{model: src, out: out, typ: "f16", format: formatPosformer}, &log); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "wrote "+out+" (a posformer checkpoint, f16 weights") {
		t.Errorf("log %q", log.String())
	}
	for _, name := range []string{models.ConfigFile, "train.json"} {
		a, _ := os.ReadFile(filepath.Join(src, name))
		b, err := os.ReadFile(filepath.Join(out, name))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s not copied as it was (%v)", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "train_state.safetensors")); err == nil {
		t.Error("the optimizer state was copied")
	}

	from, err := safetensors.Open(filepath.Join(src, models.WeightsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer from.Close()
	to, err := safetensors.Open(filepath.Join(out, models.WeightsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer to.Close()
	if len(to.Infos()) != len(from.Infos()) {
		t.Fatalf("%d tensors copied of %d", len(to.Infos()), len(from.Infos()))
	}
	for _, info := range from.Infos() {
		want, err := from.ReadFloat32(info.Name)
		if err != nil {
			t.Fatal(err)
		}
		got, err := to.ReadFloat32(info.Name)
		if err != nil {
			t.Fatalf("%s: %v", info.Name, err)
		}
		for _, i := range to.Infos() {
			if i.Name == info.Name && i.DType != "F16" {
				t.Errorf("%s stored as %s", i.Name, i.DType)
			}
		}
		for j := range want {
			if r := float16.Fromfloat32(want[j]).Float32(); got[j] != r {
				t.Fatalf("%s[%d] = %g, want %g rounded to float16 (%g)", info.Name, j, got[j], want[j], r)
			}
		}
	}

	ids := [][]int{byte2ints("func main() {\n\tfmt.Println(")}
	positions := [][]int{make([]int, len(ids[0]))}
	for i := range positions[0] {
		positions[0][i] = i
	}
	var logits [2][][][]float32
	for k, path := range []string{src, out} {
		e, err := engine.Load(path, "cpu", 64)
		if err != nil {
			t.Fatal(err)
		}
		if logits[k], err = e.Forward(ids, positions); err != nil {
			t.Fatal(err)
		}
	}
	worst := 0.0
	for i, row := range logits[0][0] {
		for j, x := range row {
			worst = max(worst, float64(abs32(x-logits[1][0][i][j])))
		}
	}
	if worst > 0.05 || worst == 0 {
		t.Errorf("logits of the float16 copy differ from the original's by up to %g; want a rounding's worth (0 < d ≤ 0.05)", worst)
	}
}

func byte2ints(s string) []int {
	ids := make([]int, len(s))
	for i := range s {
		ids[i] = int(s[i])
	}
	return ids
}

func abs32(x float32) float32 {
	if x < 0 {
		return -x
	}
	return x
}

// --format posformer refuses, in one line, what it cannot copy or where it would lose files:
// another kind of model, a quantized type, a -o that is no checkpoint, an existing checkpoint
// without --force (replaced with it), a format that contradicts -o's name, an unknown format.
func TestExportPosformerRefuses(t *testing.T) {
	dir := t.TempDir()
	hfDir := filepath.Join(dir, "hf")
	if err := run(options{model: "../../../../weights/rope-decoder", out: hfDir, typ: "f32"}, new(bytes.Buffer)); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "notes")
	copyFiles(t, "../../../../weights", other, "README.md")
	ckpt := filepath.Join(dir, "ckpt")
	copyFiles(t, "../../../../weights/rope-decoder", ckpt, models.ConfigFile, models.WeightsFile)
	const rope = "../../../../weights/rope-decoder"
	for _, c := range []struct {
		o    options
		want string
	}{
		{options{model: hfDir, out: filepath.Join(dir, "x"), typ: "f16", format: formatPosformer}, "is not one: export it as gguf or hf"},
		{options{model: rope, out: filepath.Join(dir, "x"), typ: "q8_0", format: formatPosformer}, "--type q8_0: a posformer checkpoint holds f32, f16 or bf16"},
		{options{model: rope, out: other, typ: "f16", format: formatPosformer}, "holds no checkpoint"},
		{options{model: rope, out: ckpt, typ: "f16", format: formatPosformer}, ckpt + " exists; pass --force"},
		{options{model: ckpt, out: ckpt + "/.", typ: "f16", format: formatPosformer, force: true}, "is the model's own folder"},
		{options{model: rope, out: filepath.Join(dir, "x.gguf"), typ: "f16", format: formatPosformer}, "a GGUF file's name ends in .gguf"},
		{options{model: rope, out: filepath.Join(dir, "x"), typ: "f16", format: formatGGUF}, "a GGUF file's name ends in .gguf"},
		{options{model: rope, out: filepath.Join(dir, "x"), typ: "f16", format: "onnx"}, "valid formats are gguf, hf and posformer"},
	} {
		err := run(c.o, new(bytes.Buffer))
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: error %v\nwant one line mentioning %q", c.o, err, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "x")); err == nil {
		t.Error("a refused export wrote -o")
	}
	if _, err := os.Stat(filepath.Join(other, "README.md")); err != nil {
		t.Error("a refused export removed a folder's files")
	}
	if err := run(options{model: rope, out: ckpt, typ: "f16", format: formatPosformer, force: true}, new(bytes.Buffer)); err != nil {
		t.Fatalf("--force onto a checkpoint: %v", err)
	}
	if _, err := os.Stat(filepath.Join(ckpt, "train.json")); err != nil {
		t.Errorf("--force did not replace the checkpoint: %v", err)
	}
}
