package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
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
