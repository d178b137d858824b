package corpus

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// The held-out files (IsEval) are split once more, so that what decides when training stops
// never scores the model:
//
//   - the validation text (the plateau rule's windows, the choice of a learning rate) and
//   - the test text (the benchmark's tables),
//
// each a list of whole documents. The rule, a pure function of the paths and the files:
//
//  1. a held-out file is a candidate unless it is generated (a "Code generated ... DO NOT
//     EDIT." line near its top) or shorter than MinDocBytes (licence-only stubs);
//  2. it is a validation file if the FNV-32a hash of "validation/"+path is 0 mod 4, else a
//     test file;
//  3. each text takes its files in the order of the FNV-64a hash of their paths (a fixed
//     shuffle of the whole standard library, not the first directories in lexical order),
//     each cut to its first DocCap bytes so that no long file dominates, until it holds at
//     least its byte target and its document count.
//
// Two machines with the same Go version get the same texts; HeldOut.SHA256 tells them apart
// when the Go versions differ.
const (
	MinDocBytes     = 1 << 10
	DocCap          = 8 << 10
	TestBytes       = 256 << 10
	TestDocs        = 50
	ValidationBytes = 64 << 10
	ValidationDocs  = 16
)

// HeldOut is a held-out text: documents joined in order, each followed by "\n\n".
type HeldOut struct {
	Text []byte
	Docs []Doc
}

// Doc is one document of a HeldOut: its path under GOROOT/src and its bytes in Text.
type Doc struct {
	Path       string
	Start, End int
}

// SHA256 is the hex SHA-256 of the text: what results record to say which text scored them.
func (h *HeldOut) SHA256() string {
	sum := sha256.Sum256(h.Text)
	return hex.EncodeToString(sum[:])
}

// IsValidation reports whether a held-out file (IsEval) belongs to the validation text's
// files rather than the test text's.
func IsValidation(rel string) bool {
	h := fnv.New32a()
	h.Write([]byte("validation/" + rel))
	return h.Sum32()%4 == 0
}

// generated matches Go's convention for generated files (go.dev/s/generatedcode).
func generated(data []byte) bool {
	head := data[:min(len(data), 4096)]
	for _, line := range bytes.Split(head, []byte("\n")) {
		if bytes.HasPrefix(line, []byte("// Code generated ")) && bytes.HasSuffix(bytes.TrimRight(line, "\r"), []byte(" DO NOT EDIT.")) {
			return true
		}
	}
	return false
}

// LoadHeldOut builds the validation and test texts from the Go tree at root.
func LoadHeldOut(root string) (validation, test *HeldOut, err error) {
	files, err := SourceFiles(root)
	if err != nil {
		return nil, nil, err
	}
	var val, tst []string
	for _, f := range files {
		if !IsEval(f) {
			continue
		}
		if IsValidation(f) {
			val = append(val, f)
		} else {
			tst = append(tst, f)
		}
	}
	if validation, err = build(root, val, ValidationBytes, ValidationDocs); err != nil {
		return nil, nil, fmt.Errorf("validation text: %w", err)
	}
	if test, err = build(root, tst, TestBytes, TestDocs); err != nil {
		return nil, nil, fmt.Errorf("test text: %w", err)
	}
	return validation, test, nil
}

func pathHash(rel string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(rel))
	return h.Sum64()
}

func build(root string, files []string, wantBytes, wantDocs int) (*HeldOut, error) {
	files = slices.Clone(files)
	slices.SortFunc(files, func(a, b string) int {
		if ha, hb := pathHash(a), pathHash(b); ha != hb {
			if ha < hb {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	h := &HeldOut{}
	for _, rel := range files {
		if len(h.Text) >= wantBytes && len(h.Docs) >= wantDocs {
			break
		}
		data, err := os.ReadFile(filepath.Join(root, "src", filepath.FromSlash(rel)))
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", rel, err)
		}
		if len(data) < MinDocBytes || generated(data) {
			continue
		}
		data = data[:min(len(data), DocCap)]
		start := len(h.Text)
		h.Text = append(h.Text, data...)
		h.Docs = append(h.Docs, Doc{Path: rel, Start: start, End: len(h.Text)})
		h.Text = append(h.Text, fileSeparator...)
	}
	if len(h.Text) < wantBytes || len(h.Docs) < wantDocs {
		return nil, fmt.Errorf("only %d bytes in %d documents under %s/src, want %d in %d: is this a whole Go installation?", len(h.Text), len(h.Docs), root, wantBytes, wantDocs)
	}
	return h, nil
}

// GoVersion is the version of the Go tree at root (its VERSION file's first line, or `go
// version` of its go command): which standard library the texts come from.
func GoVersion(root string) string {
	if data, err := os.ReadFile(filepath.Join(root, "VERSION")); err == nil {
		if line, _, _ := strings.Cut(string(data), "\n"); strings.HasPrefix(line, "go") {
			return strings.TrimSpace(line)
		}
	}
	return "unknown"
}
