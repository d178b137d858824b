package regular

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestRegularFileOpens(t *testing.T) {
	path := filepath.Join(t.TempDir(), "model.safetensors")
	if err := os.WriteFile(path, []byte("abc"), 0o644); err != nil {
		t.Fatal(err)
	}
	data, err := ReadFile(path)
	if err != nil || string(data) != "abc" {
		t.Fatalf("ReadFile = %q, %v; want \"abc\"", data, err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	// A symbolic link to a regular file is one (os.Stat follows it).
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(path, link); err != nil {
		t.Skip(err)
	}
	if err := Check(link); err != nil {
		t.Errorf("Check(link to a regular file) = %v", err)
	}
}

func TestMissingFileIsNotExist(t *testing.T) {
	_, err := Open(filepath.Join(t.TempDir(), "absent"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open(missing) = %v; want fs.ErrNotExist, as os.Open gives", err)
	}
}

func TestIrregularFilesRefused(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]string{dir: "is a directory, not a regular file"}
	if runtime.GOOS == "linux" {
		fifo := filepath.Join(dir, "model.safetensors")
		if err := syscall.Mkfifo(fifo, 0o644); err != nil {
			t.Fatal(err)
		}
		cases[fifo] = "is a named pipe (FIFO), not a regular file"
		cases["/dev/null"] = "is a character device, not a regular file"
	}
	for path, want := range cases {
		done := make(chan error, 1)
		go func() {
			_, err := ReadFile(path)
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) || strings.Contains(err.Error(), "\n") {
				t.Errorf("ReadFile(%s) = %v; want one line naming the path and %q", path, err, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("ReadFile(%s) blocked", path)
		}
	}
}
