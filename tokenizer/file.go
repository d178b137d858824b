package tokenizer

import (
	"fmt"
	"io/fs"
	"os"
)

// checkRegular refuses a path that is not a regular file: a named pipe would block open(2)
// until a writer appears, and a device streams bytes without end; a stat first turns both into
// an error.
func checkRegular(path string) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !info.Mode().IsRegular() {
		return &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("is not a regular file (%v): a tokenizer file must be one", info.Mode().Type())}
	}
	return nil
}

// readFile is os.ReadFile for a regular file only.
func readFile(path string) ([]byte, error) {
	if err := checkRegular(path); err != nil {
		return nil, err
	}
	return os.ReadFile(path)
}
