package models

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A checkpoint's tokenizer file goes along with it; one named outside the folder is refused
// (the copy would lose it), and nothing is written.
func TestCopyCheckpointTokenizer(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	weights, err := os.ReadFile("../weights/rope-decoder/model.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, data string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(src, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(WeightsFile, string(weights))
	write("tokenizer.json", `{"model": {"type": "BPE"}}`)
	write(ConfigFile, `{"tokenizer": "tokenizer.json"}`)
	dst := filepath.Join(dir, "dst")
	if err := CopyCheckpoint(src, dst, "BF16"); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(dst, "tokenizer.json")); err != nil || string(got) != `{"model": {"type": "BPE"}}` {
		t.Errorf("tokenizer.json copied as %q (%v)", got, err)
	}

	write(ConfigFile, `{"tokenizer": "../tokenizer.json"}`)
	out := filepath.Join(dir, "out")
	err = CopyCheckpoint(src, out, "F16")
	if err == nil || !strings.Contains(err.Error(), "lies outside the folder") {
		t.Errorf("a tokenizer outside the folder: %v", err)
	}
	if err := CopyCheckpoint(src, out, "Q8_0"); err == nil || !strings.Contains(err.Error(), "stores F32, F16 or BF16") {
		t.Errorf("Q8_0: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("a refused copy left files: %v", entries)
	}
}
