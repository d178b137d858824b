// Package atomicfile writes files so that a crash never leaves half of one under its final
// name: the bytes go to a temporary file beside the target, which is synced and then renamed
// over it. Every checkpoint writer (safetensors, GGUF, llama2.c, config.json) goes through it.
package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Write creates path with the bytes that write produces. The temporary file is in path's
// directory, so that the rename cannot cross file systems; on any error it is removed and
// path is left as it was. Errors are returned as they are, for the caller to wrap.
func Write(path string, write func(w io.Writer) error) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*"+tmpSuffix)
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

// tmpSuffix ends every temporary file's name: "." + the target's base name + "." + the random
// number os.CreateTemp puts in place of its "*" + tmpSuffix.
const tmpSuffix = ".tmp"

// RemoveOrphans removes from dir the temporary files that Write leaves behind when its process
// is killed before the rename (a full-size copy of the file it was writing), for the targets
// named by their base names. It must not run while another process writes those targets in
// dir: their temporary files would go too. It returns the paths it removed.
func RemoveOrphans(dir string, names ...string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("looking for unfinished writes in %s: %w", dir, err)
	}
	var removed []string
	for _, e := range entries {
		if e.IsDir() || !isTemp(e.Name(), names) {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return removed, fmt.Errorf("removing the unfinished write %s: %w", path, err)
		}
		removed = append(removed, path)
	}
	return removed, nil
}

// isTemp reports whether file is Write's temporary file for one of the base names.
func isTemp(file string, names []string) bool {
	for _, name := range names {
		rest, ok := strings.CutPrefix(file, "."+name+".")
		if !ok {
			continue
		}
		random, ok := strings.CutSuffix(rest, tmpSuffix)
		if ok && random != "" && strings.Trim(random, "0123456789") == "" {
			return true
		}
	}
	return false
}
