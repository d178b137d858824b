package safetensors

import (
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A named pipe called model.safetensors would block open(2) for ever: refused at once.
func TestOpenRefusesFIFO(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("named pipes are made with mkfifo(2) here")
	}
	path := filepath.Join(t.TempDir(), "model.safetensors")
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := Open(path)
		done <- err
	}()
	select {
	case err := <-done:
		want := "safetensors: open " + path + ": is a named pipe (FIFO), not a regular file: a checkpoint file must be a regular file"
		if err == nil || err.Error() != want {
			t.Errorf("Open(fifo) = %v; want %q", err, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Open of a named pipe blocked")
	}
	if _, err := Open(t.TempDir()); err == nil || !strings.Contains(err.Error(), "is a directory, not a regular file") {
		t.Errorf("Open(dir) = %v", err)
	}
}
