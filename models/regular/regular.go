// Package regular opens checkpoint files, refusing anything that is not a regular file. A
// named pipe given as model.safetensors would block open(2) until some writer appears (for
// ever, in practice), and a device or socket streams bytes no size check can bound; a stat
// before the open turns each into a one-line error instead.
package regular

import (
	"fmt"
	"io/fs"
	"os"
)

// Stat is os.Stat that returns an error unless path (its target, for a symbolic link) is a
// regular file. The error is an *fs.PathError, as os.Open's are, so that callers wrap it alike.
func Stat(path string) (fs.FileInfo, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("is %s, not a regular file: a checkpoint file must be a regular file", kind(info.Mode()))}
	}
	return info, nil
}

// Check is Stat for its error alone.
func Check(path string) error {
	_, err := Stat(path)
	return err
}

// Open is os.Open for a regular file only (Check).
func Open(path string) (*os.File, error) {
	if err := Check(path); err != nil {
		return nil, err
	}
	return os.Open(path)
}

// ReadFile is os.ReadFile for a regular file only (Check).
func ReadFile(path string) ([]byte, error) {
	if err := Check(path); err != nil {
		return nil, err
	}
	return os.ReadFile(path)
}

// kind names what a non-regular file is.
func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "an irregular file (" + m.Type().String() + ")"
}
