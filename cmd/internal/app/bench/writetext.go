// The benchmark's test text on disk: go run ./cmd/bench -write-text DIR, so that a scorer
// outside this module (benchmarks/rescore) reads exactly the bytes the lm tables score.
//
//	go run ./cmd/bench -write-text testtext
package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/posformer/posformer/engine/train/corpus"
	"github.com/posformer/posformer/models/atomicfile"
)

// textManifest is DIR/text.json: the documents in the text's order. The text is each
// document's bytes followed by Separator; SHA256 is that text's, as the results' text column
// records its first 12 hex digits.
type textManifest struct {
	GoVersion string    `json:"go_version"`
	SHA256    string    `json:"sha256"`
	Bytes     int       `json:"bytes"`
	Separator string    `json:"separator"`
	Docs      []textDoc `json:"docs"`
}

type textDoc struct {
	File  string `json:"file"` // under DIR
	Path  string `json:"path"` // under GOROOT/src
	Start int    `json:"start"`
	End   int    `json:"end"`
}

// runWriteText is the -write-text mode: the test text (corpus.LoadHeldOut) as one file per
// document in DIR/docs plus DIR/text.json.
func runWriteText(args []string) error {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help") {
		fmt.Fprintln(os.Stderr, "usage: bench -write-text DIR: the lm test text as DIR/docs/NNN.txt and DIR/text.json (order, paths, SHA-256)")
		return nil
	}
	if len(args) != 1 || args[0] == "" || args[0][0] == '-' {
		return fmt.Errorf("-write-text: give one folder to write into, e.g. -write-text testtext")
	}
	dir := args[0]
	root, err := corpus.GoRoot()
	if err != nil {
		return err
	}
	_, test, err := corpus.LoadHeldOut(root)
	if err != nil {
		return err
	}
	m := textManifest{GoVersion: corpus.GoVersion(root), SHA256: test.SHA256(), Bytes: len(test.Text)}
	for i, d := range test.Docs {
		next := len(test.Text)
		if i+1 < len(test.Docs) {
			next = test.Docs[i+1].Start
		}
		if i == 0 {
			m.Separator = string(test.Text[d.End:next])
		} else if string(test.Text[d.End:next]) != m.Separator {
			return fmt.Errorf("-write-text: document %s is followed by %q, not %q as the first: the text is not documents joined by one separator", d.Path, test.Text[d.End:next], m.Separator)
		}
		f := fmt.Sprintf("docs/%03d.txt", i)
		if err := os.MkdirAll(filepath.Join(dir, "docs"), 0o755); err != nil {
			return fmt.Errorf("-write-text: %w", err)
		}
		if err := atomicfile.WriteFile(filepath.Join(dir, filepath.FromSlash(f)), test.Text[d.Start:d.End]); err != nil {
			return fmt.Errorf("-write-text: %w", err)
		}
		m.Docs = append(m.Docs, textDoc{File: f, Path: d.Path, Start: d.Start, End: d.End})
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, "text.json"), append(data, '\n')); err != nil {
		return fmt.Errorf("-write-text: %w", err)
	}
	fmt.Fprintf(os.Stderr, "bench: wrote %d documents (%d bytes, %s, SHA-256 %s) to %s\n", len(m.Docs), m.Bytes, m.GoVersion, m.SHA256, dir)
	return nil
}
