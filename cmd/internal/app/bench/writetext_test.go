package bench

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/posformer/posformer/engine/train/corpus"
)

func TestWriteTextBadArgs(t *testing.T) {
	for _, args := range [][]string{nil, {"a", "b"}, {"-o"}, {""}} {
		err := runWriteText(args)
		if err == nil || !strings.Contains(err.Error(), "-write-text") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: error %v, want one line naming -write-text", args, err)
		}
	}
}

// The folder holds the test text exactly: its documents joined by the separator give the bytes
// and SHA-256 of corpus.LoadHeldOut's test text, in its order.
func TestWriteTextRoundTrip(t *testing.T) {
	if testing.Short() {
		t.Skip("reads the Go tree's held-out files")
	}
	root, err := corpus.GoRoot()
	if err != nil {
		t.Skip(err)
	}
	_, test, err := corpus.LoadHeldOut(root)
	if err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	if err := runWriteText([]string{dir}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "text.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m textManifest
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	if m.Separator != "\n\n" || len(m.Docs) != len(test.Docs) {
		t.Fatalf("separator %q, %d documents; want \"\\n\\n\" and %d", m.Separator, len(m.Docs), len(test.Docs))
	}
	var joined bytes.Buffer
	for i, d := range m.Docs {
		doc, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(d.File)))
		if err != nil {
			t.Fatal(err)
		}
		if d.Path != test.Docs[i].Path || joined.Len() != test.Docs[i].Start {
			t.Errorf("document %d: %s at %d, want %s at %d", i, d.Path, joined.Len(), test.Docs[i].Path, test.Docs[i].Start)
		}
		joined.Write(doc)
		joined.WriteString(m.Separator)
	}
	sum := sha256.Sum256(joined.Bytes())
	if got := hex.EncodeToString(sum[:]); got != test.SHA256() || got != m.SHA256 || joined.Len() != m.Bytes {
		t.Errorf("joined text: %d bytes, SHA-256 %s; want %d bytes, %s (manifest %s)", joined.Len(), got, len(test.Text), test.SHA256(), m.SHA256)
	}
}
