package list

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/posformer/posformer/models/safetensors"
	"github.com/posformer/posformer/weights"
)

// A checkpoint folder in $POSFORMER_HOME is listed with its format, size, parameter count and
// scheme; a file that is no model is not; the built-in model comes last.
func TestList(t *testing.T) {
	home := t.TempDir()
	t.Setenv("POSFORMER_HOME", home)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	src := "../../../../weights/rope-decoder"
	if err := os.Mkdir(filepath.Join(home, "mine"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"config.json", "model.safetensors"} {
		data, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(home, "mine", name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(home, "notes.txt"), []byte("not a model"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := Run(nil, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	// The parameters, counted here from the tensors' shapes.
	f, err := safetensors.Open(filepath.Join(src, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var params int64
	for _, info := range f.Infos() {
		n := int64(1)
		for _, d := range info.Shape {
			n *= int64(d)
		}
		params += n
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("want a header, mine and the built-in model, got:\n%s", out.String())
	}
	want := []string{"mine", "posformer", "1.3", "MB", count(params), "rope"}
	if got := strings.Fields(lines[1]); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("row %q, want %q", got, want)
	}
	if !strings.HasPrefix(lines[2], weights.DefaultName+" (built in)") {
		t.Errorf("last row %q, want the built-in model", lines[2])
	}
	if params < 300_000 || params > 400_000 || count(params) != "330K" {
		t.Errorf("%d parameters (%s); the shipped decoder has about 330K", params, count(params))
	}
}

func TestCountAndSize(t *testing.T) {
	for n, want := range map[int64]string{-1: "?", 999: "999", 15_200: "15K", 15_000_000: "15.0M", 1_100_000_000: "1.1B"} {
		if got := count(n); got != want {
			t.Errorf("count(%d) = %q, want %q", n, got, want)
		}
	}
	for b, want := range map[int64]string{1_321_616: "1.3 MB", 512: "0.5 kB", 4_700_000_000: "4.7 GB"} {
		if got := size(b); got != want {
			t.Errorf("size(%d) = %q, want %q", b, got, want)
		}
	}
}
