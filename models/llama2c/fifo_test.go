package llama2c

import (
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/posformer/posformer/layers/quant"
	"github.com/posformer/posformer/models"
)

// A named pipe, with or without the .bin suffix, would block open(2) for ever: every reader
// refuses it at once, and the format detector does not open it.
func TestFIFORefused(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("named pipes are made with mkfifo(2) here")
	}
	backend, _ := simplego.New("ops_sequential")
	for _, name := range []string{"model.bin", "weights"} {
		path := filepath.Join(t.TempDir(), name)
		if err := syscall.Mkfifo(path, 0o644); err != nil {
			t.Fatal(err)
		}
		want := "open " + path + ": is a named pipe (FIFO), not a regular file"
		for what, read := range map[string]func() error{
			"engine's path": func() error {
				f, err := models.FormatOf(path)
				if err != nil {
					return err
				}
				if typ := models.StoredWeightType(path); typ != quant.F32 {
					t.Errorf("StoredWeightType = %v; want f32 for a file that does not read", typ)
				}
				_, err = f.Load(path, backend, context.New())
				return err
			},
			"ReadFile":       func() error { _, _, err := ReadFile(path); return err },
			"ReadHeaderFile": func() error { _, err := ReadHeaderFile(path); return err },
		} {
			done := make(chan error, 1)
			go func() { done <- read() }()
			select {
			case err := <-done:
				assertOneLine(t, err, want)
			case <-time.After(10 * time.Second):
				t.Fatalf("%s of a named pipe %s blocked", what, name)
			}
		}
	}
	if _, err := os.Stat("/dev/null"); err == nil {
		_, _, err := Load("/dev/null", backend)
		assertOneLine(t, err, "open /dev/null: is a character device, not a regular file")
	}
}
