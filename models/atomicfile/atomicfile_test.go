package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestWriteReplacesWhole(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.bin")
	if err := WriteFile(path, []byte("old")); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, func(w io.Writer) error { _, err := w.Write([]byte("new contents")); return err }); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != "new contents" {
		t.Fatalf("read %q, %v; want %q", got, err, "new contents")
	}
	info, _ := os.Stat(path)
	if info.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", info.Mode().Perm())
	}
	assertOnly(t, dir, "f.bin")
}

func TestWriteFailureLeavesTarget(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.bin")
	if err := WriteFile(path, []byte("old")); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := Write(path, func(w io.Writer) error {
		w.Write([]byte("half"))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("error %v, want the callback's", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "old" {
		t.Errorf("target holds %q after a failed write, want %q", got, "old")
	}
	assertOnly(t, dir, "f.bin")
}

func TestWriteFileNamesPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing", "f.bin")
	err := WriteFile(path, []byte("x"))
	if err == nil || err.Error()[:len("writing "+path)] != "writing "+path {
		t.Fatalf("error %v, want one naming %s", err, path)
	}
}

// assertOnly checks that dir holds exactly the file name: no temporary file is left behind.
func assertOnly(t *testing.T, dir, name string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != name {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("directory holds %v, want only %s", names, name)
	}
}

// A write killed before its rename leaves ".NAME.<random>.tmp": RemoveOrphans removes those of
// the names it is given, and nothing else.
func TestRemoveOrphans(t *testing.T) {
	dir := t.TempDir()
	keep := []string{"model.safetensors", ".model.safetensors.tmp", ".model.safetensors.x1.tmp", "model.safetensors.123.tmp",
		".other.bin.123.tmp", ".model.safetensors.123.tmp.bak"}
	orphans := []string{".model.safetensors.2604235117.tmp", ".config.json.7.tmp"}
	for _, name := range append(slices.Clone(keep), orphans...) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A real orphan, of the pattern Write uses: a write whose callback never returns is what a
	// kill leaves; a failed one is cleaned up, so a pattern change would show here.
	tmp, err := os.CreateTemp(dir, ".config.json.*"+tmpSuffix)
	if err != nil {
		t.Fatal(err)
	}
	tmp.Close()
	orphans = append(orphans, filepath.Base(tmp.Name()))
	removed, err := RemoveOrphans(dir, "model.safetensors", "config.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != len(orphans) {
		t.Errorf("removed %v, want the %d orphans %v", removed, len(orphans), orphans)
	}
	var left []string
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		left = append(left, e.Name())
	}
	slices.Sort(keep)
	if !slices.Equal(left, keep) {
		t.Errorf("left %v, want %v", left, keep)
	}
	if removed, err := RemoveOrphans(filepath.Join(dir, "missing"), "config.json"); err != nil || removed != nil {
		t.Errorf("a missing folder: %v, %v; want nothing to do", removed, err)
	}
}
