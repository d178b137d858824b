package corpus

// Training on your own text (cmd/train -data PATH): a file, a directory walked recursively,
// or a glob, read as bytes and split into training and held-out text by a rule that depends
// on the paths alone, so that a resumed run and a re-run see the same split.

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// sniffBytes is how much of a file IsBinary looks at: git's heuristic, a NUL byte in the
// first 8000 bytes, which every text encoding but UTF-16/32 lacks and most binary formats
// have.
const sniffBytes = 8000

// EvalShare is the held-out share: 1/20, 5%.
const EvalShare = 20

// IsBinary reports whether data, a file's start, looks binary (a NUL in its first 8000 bytes).
func IsBinary(data []byte) bool {
	return bytes.IndexByte(data[:min(len(data), sniffBytes)], 0) >= 0
}

// IsHeldOut reports whether the file at rel (its path relative to the directory -data names,
// or as the glob matched it, with '/' separators) is held out: when the first 8 bytes of the
// SHA-256 of rel, as a big-endian number, fall in the last 5% of their range. A hash of the
// path keeps a file's split when other files come and go, as IsEval does for Go's source.
func IsHeldOut(rel string) bool {
	sum := sha256.Sum256([]byte(rel))
	return binary.BigEndian.Uint64(sum[:8]) >= math.MaxUint64-math.MaxUint64/EvalShare
}

// TextFiles lists the files -data names, with the paths IsHeldOut hashes, in lexical order:
// a file; a directory's files, recursively, skipping hidden files and directories (.git) and
// the directories in skip (the run's own -o, which a run writes into as it trains); or the
// files and directories a glob matches. Binary files are skipped when read (LoadText).
func TextFiles(pattern string, skip ...string) (paths, rels []string, err error) {
	skipped := map[string]bool{}
	for _, d := range skip {
		if abs, err := filepath.Abs(d); err == nil {
			skipped[abs] = true
		}
	}
	add := func(root string) error {
		info, err := os.Stat(root)
		if err != nil {
			return err
		}
		if !info.IsDir() {
			paths, rels = append(paths, root), append(rels, filepath.ToSlash(root))
			return nil
		}
		return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if path != root && strings.HasPrefix(d.Name(), ".") {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if d.IsDir() && len(skipped) > 0 {
				if abs, err := filepath.Abs(path); err == nil && skipped[abs] {
					return filepath.SkipDir
				}
			}
			if d.Type().IsRegular() {
				rel, err := filepath.Rel(root, path)
				if err != nil {
					return err
				}
				paths, rels = append(paths, path), append(rels, filepath.ToSlash(rel))
			}
			return nil
		})
	}
	if _, statErr := os.Stat(pattern); statErr == nil || !strings.ContainsAny(pattern, "*?[") {
		if err := add(pattern); err != nil {
			return nil, nil, fmt.Errorf("-data: %w", err)
		}
	} else {
		matches, err := filepath.Glob(pattern)
		if err != nil {
			return nil, nil, fmt.Errorf("-data %s: %w", pattern, err)
		}
		if len(matches) == 0 {
			return nil, nil, fmt.Errorf("-data %s: no file matches the pattern", pattern)
		}
		for _, m := range matches {
			if err := add(m); err != nil {
				return nil, nil, fmt.Errorf("-data: %w", err)
			}
		}
	}
	return paths, rels, nil
}

// LoadText reads the text files -data names (TextFiles, binary ones skipped) and splits them:
// each file whose path IsHeldOut goes to Eval, the others to Train. When that leaves a split
// empty (one file, or a few whose hashes all fall one way), the last 5% of each file's bytes
// go to Eval instead, the rest to Train. maxBytes > 0 caps each split, as Load does. The
// directories in skip are not read (TextFiles).
func LoadText(pattern string, maxBytes int, skip ...string) (*Corpus, error) {
	paths, rels, err := TextFiles(pattern, skip...)
	if err != nil {
		return nil, err
	}
	var texts [][]byte
	var names []string
	for i, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("-data: reading %s: %w", p, err)
		}
		if len(data) == 0 || IsBinary(data) {
			continue
		}
		texts, names = append(texts, data), append(names, rels[i])
	}
	if len(texts) == 0 {
		return nil, fmt.Errorf("-data %s: no text found (empty and binary files are skipped); name a text file, a directory of them or a glob", pattern)
	}
	c := &Corpus{}
	held := 0
	for _, n := range names {
		if IsHeldOut(n) {
			held++
		}
	}
	byFile := held > 0 && held < len(names)
	for i, data := range texts {
		train, eval := data, []byte(nil)
		switch {
		case byFile && IsHeldOut(names[i]):
			train, eval = nil, data
		case !byFile:
			cut := len(data) - len(data)/EvalShare
			train, eval = data[:cut], data[cut:]
		}
		if len(train) > 0 {
			c.Train = appendCapped(c.Train, train, maxBytes)
			c.TrainFiles++
		}
		if len(eval) > 0 {
			c.Eval = appendCapped(c.Eval, eval, maxBytes)
			c.EvalFiles++
		}
	}
	return c, nil
}

// appendCapped appends text and the file separator to split, cut at maxBytes (> 0).
func appendCapped(split, text []byte, maxBytes int) []byte {
	split = append(append(split, text...), fileSeparator...)
	if maxBytes > 0 && len(split) > maxBytes {
		split = split[:maxBytes]
	}
	return slices.Clip(split)
}
