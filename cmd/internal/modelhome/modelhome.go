// Package modelhome finds the model a command's -m names. -m takes a path (a checkpoint folder,
// a GGUF or llama2.c file), as it always has; or a name, looked up in the models directory
// $POSFORMER_HOME (default: the user cache directory's posformer/models, as ollama keeps
// ~/.ollama/models); or the name of the model built into the binary (weights.DefaultName).
//
// The built-in model is written once to the cache directory and loaded from there, rather
// than read from the embedded file system: every loader (safetensors, tokenizer, the memory
// estimate of engine.CheckpointBytes) takes a path, and so does every command, so a folder on
// disk serves them all unchanged for the cost of the model's size in the cache (14 MB).
package modelhome

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/posformer/posformer/models/atomicfile"
	"github.com/posformer/posformer/weights"
)

// EnvHome is the variable that names the models directory.
const EnvHome = "POSFORMER_HOME"

// Extensions are the suffixes a name may leave out: `-m stories15M` finds stories15M.gguf.
var Extensions = []string{".gguf", ".bin"}

// Home is the models directory: $POSFORMER_HOME, or posformer/models under the user cache
// directory (~/.cache on Linux, ~/Library/Caches on macOS).
func Home() (string, error) {
	if h := os.Getenv(EnvHome); h != "" {
		return h, nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no models directory: %w; set %s", err, EnvHome)
	}
	return filepath.Join(cache, "posformer", "models"), nil
}

// Resolve turns -m's value into a path: an existing file or folder as given; else a model of
// that name in the models directory (a folder, or a file with one of Extensions); else the
// built-in model when m is its name. A path (a name with a separator) that does not exist is
// returned as it is, for the loader's message; a bare name found nowhere is an error naming
// where it looked.
func Resolve(m string) (string, error) {
	if _, err := os.Stat(m); err == nil || !isName(m) {
		return m, nil
	}
	home, homeErr := Home()
	if homeErr == nil && isName(m) {
		for _, ext := range append([]string{""}, Extensions...) {
			p := filepath.Join(home, m+ext)
			if _, err := os.Stat(p); err == nil {
				return p, nil
			}
		}
	}
	if m == weights.DefaultName {
		return Builtin()
	}
	where := "the models directory"
	if homeErr == nil {
		where = home
	}
	return "", fmt.Errorf("no model %q: not a file or folder, and not a model in %s (`posformer list` shows them); pass a path with -m, or copy the model there", m, where)
}

// isName reports whether m is a bare name rather than a path.
func isName(m string) bool {
	return m != "" && m != "." && m != ".." && !strings.ContainsAny(m, `/\`)
}

// Builtin writes the built-in model to the cache directory, once per content (a binary with
// other weights writes another folder), and returns that folder. Each file is written
// atomically and config.json last, so a folder holding config.json is complete.
func Builtin() (string, error) {
	src := weights.Default()
	sum, err := digest(src)
	if err != nil {
		return "", fmt.Errorf("reading the built-in model: %w", err)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "posformer", "builtin", weights.DefaultName+"-"+sum)
	if _, err := os.Stat(filepath.Join(dir, "config.json")); err == nil {
		return dir, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("unpacking the built-in model: %w", err)
	}
	names, err := fs.Glob(src, "*")
	if err != nil {
		return "", err
	}
	for _, name := range append(without(names, "config.json"), "config.json") {
		data, err := fs.ReadFile(src, name)
		if err != nil {
			return "", fmt.Errorf("reading the built-in model: %w", err)
		}
		if err := atomicfile.WriteFile(filepath.Join(dir, name), data); err != nil {
			return "", fmt.Errorf("unpacking the built-in model into %s: %w", dir, err)
		}
	}
	return dir, nil
}

// digest is the first 12 hex digits of the SHA-256 of fsys's files, names and contents, in
// lexical order.
func digest(fsys fs.FS) (string, error) {
	h := sha256.New()
	err := fs.WalkDir(fsys, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		f, err := fsys.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		fmt.Fprintf(h, "%s\x00", path)
		_, err = io.Copy(h, f)
		return err
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil))[:12], nil
}

func without(names []string, drop string) []string {
	var out []string
	for _, n := range names {
		if n != drop {
			out = append(out, n)
		}
	}
	return out
}
