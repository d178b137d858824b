package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/posformer/posformer/layers/quant"
	"github.com/posformer/posformer/models"
)

// TestFormatOf checks which registered format claims each kind of path, and that a path none
// claims is a one-line error naming every format.
func TestFormatOf(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	own := filepath.Dir(write("own/config.json", `{"kind": "decoder"}`))
	hfDir := filepath.Dir(write("hf/config.json", `{"model_type": "llama"}`))
	ggufFile := write("m.gguf", "GGUF\x03\x00\x00\x00")
	ggufNoSuffix := write("m.weights", "GGUF\x03\x00\x00\x00")
	bin := write("m.bin", "not checked by detection")
	other := write("stories", "any regular file")
	for _, c := range []struct{ path, want string }{
		{own, "posformer"}, {hfDir, "hf"}, {ggufFile, "gguf"}, {ggufNoSuffix, "gguf"}, {bin, "llama2c"}, {other, "llama2c"},
		{filepath.Join(dir, "missing.bin"), "llama2c"}, {filepath.Join(dir, "missing.gguf"), "gguf"}, {t.TempDir(), "posformer"},
	} {
		f, err := models.FormatOf(c.path)
		if err != nil || f.Name != c.want {
			t.Errorf("FormatOf(%s) = %q, %v; want %s", filepath.Base(c.path), f.Name, err, c.want)
		}
	}
	if got := strings.Join(models.FormatNames(), " "); got != "gguf hf llama2c posformer" {
		t.Errorf("formats %q, want gguf hf llama2c posformer", got)
	}
	missing := filepath.Join(dir, "missing")
	_, err := Load(missing, "", 0)
	if err == nil || strings.Contains(err.Error(), "\n") {
		t.Fatalf("loading a missing path: %v, want a one-line error", err)
	}
	for _, want := range []string{missing, "no such file", "posformer (a directory", "hf (", "gguf (", "llama2c ("} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	for path, want := range map[string]quant.Type{own: quant.F32, missing: quant.F32, other: quant.F32} {
		if got := StoredWeightType(path); got != want {
			t.Errorf("StoredWeightType(%s) = %v, want %v", filepath.Base(path), got, want)
		}
	}
}
