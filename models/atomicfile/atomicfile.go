// Package atomicfile writes files so that a crash never leaves half of one under its final
// name: the bytes go to a temporary file beside the target, which is synced and then renamed
// over it. Every checkpoint writer (safetensors, GGUF, llama2.c, config.json) goes through it.
package atomicfile

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Write creates path with the bytes that write produces. The temporary file is in path's
// directory, so that the rename cannot cross file systems; on any error it is removed and
// path is left as it was. Errors are returned as they are, for the caller to wrap.
func Write(path string, write func(w io.Writer) error) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	err = write(tmp)
	if err == nil {
		err = tmp.Chmod(0o644) // CreateTemp's 0600 would make the file private to its writer
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return err
	}
	// Persist the rename itself. Best effort: path is already replaced, so failing here
	// could not leave it untouched anyway.
	if d, derr := os.Open(dir); derr == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// WriteFile is Write of the bytes data, its error naming path.
func WriteFile(path string, data []byte) error {
	if err := Write(path, func(w io.Writer) error { _, err := w.Write(data); return err }); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
