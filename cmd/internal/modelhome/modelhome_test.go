package modelhome

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/posformer/posformer/weights"
)

// -m finds a path as given, then a name in $POSFORMER_HOME (a folder, or a file without its
// extension), then the built-in model; a bare name found nowhere is an error naming the
// directory, and a missing path is left to the loader.
func TestResolve(t *testing.T) {
	home := t.TempDir()
	t.Setenv(EnvHome, home)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	if err := os.Mkdir(filepath.Join(home, "mine"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "small.gguf"), []byte("GGUF"), 0o644); err != nil {
		t.Fatal(err)
	}
	local := filepath.Join(t.TempDir(), "here")
	if err := os.Mkdir(local, 0o755); err != nil {
		t.Fatal(err)
	}
	for m, want := range map[string]string{
		local:                  local,
		"mine":                 filepath.Join(home, "mine"),
		"small":                filepath.Join(home, "small.gguf"),
		"small.gguf":           filepath.Join(home, "small.gguf"),
		"./missing/model.gguf": "./missing/model.gguf",
	} {
		if got, err := Resolve(m); err != nil || got != want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", m, got, err, want)
		}
	}
	if _, err := Resolve("nosuch"); err == nil || !strings.Contains(err.Error(), home) {
		t.Errorf("Resolve(nosuch): %v; want an error naming %s", err, home)
	}
	dir, err := Resolve(weights.DefaultName)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("../../../weights", weights.DefaultName, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "model.safetensors"))
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("the unpacked built-in weights differ from the shipped folder's (%v)", err)
	}
	// A second call finds the folder written by the first.
	if again, err := Builtin(); err != nil || again != dir {
		t.Errorf("Builtin() again = %q, %v; want %q", again, err, dir)
	}
	// A name in $POSFORMER_HOME shadows the built-in model.
	if err := os.Mkdir(filepath.Join(home, weights.DefaultName), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, _ := Resolve(weights.DefaultName); got != filepath.Join(home, weights.DefaultName) {
		t.Errorf("with a rope-decoder in $POSFORMER_HOME, Resolve gave %q", got)
	}
}

func TestHome(t *testing.T) {
	t.Setenv(EnvHome, "")
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("HOME", t.TempDir())
	if h, err := Home(); err != nil || (h != filepath.Join(cache, "posformer", "models") && !strings.HasSuffix(h, filepath.Join("posformer", "models"))) {
		t.Errorf("Home() = %q, %v", h, err)
	}
}
