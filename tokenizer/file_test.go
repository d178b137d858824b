package tokenizer

import (
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A named pipe given as a tokenizer is refused at once instead of blocking the open for ever.
func TestFIFORefused(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("named pipes are made with mkfifo on Linux here")
	}
	for _, name := range []string{"tokenizer.json", "tokenizer.bin", "vocab.json"} {
		path := filepath.Join(t.TempDir(), name)
		if err := syscall.Mkfifo(path, 0o600); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { _, err := Load(path); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("%s as a FIFO: %v, want an error saying it is not a regular file", name, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s as a FIFO: Load blocked", name)
		}
	}
}
