package corpus

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// heldOut is IsHeldOut written another way: the first 8 bytes of the hash, as hex, compared
// with the start of the last 5% of their range, (2^64-1) - floor((2^64-1)/20) = 0xf333...33.
func heldOut(rel string) bool {
	sum := sha256.Sum256([]byte(rel))
	return hex.EncodeToString(sum[:8]) >= "f333333333333333"
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// One file: its last 5% of bytes are held out.
func TestLoadTextOneFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notes.txt")
	text := strings.Repeat("0123456789", 10) // 100 bytes: 95 train, 5 held out
	write(t, path, text)
	c, err := LoadText(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	if string(c.Train) != text[:95]+"\n\n" || string(c.Eval) != text[95:]+"\n\n" {
		t.Errorf("train %q, eval %q; want the first 95 bytes and the last 5", c.Train, c.Eval)
	}
	if c.TrainFiles != 1 || c.EvalFiles != 1 {
		t.Errorf("files %d / %d, want 1 / 1", c.TrainFiles, c.EvalFiles)
	}
}

// A directory: each file goes whole to the split its path's hash picks; binary files, hidden
// files, hidden directories and the run's own folder are skipped; a glob reads the same files.
func TestLoadTextDirectory(t *testing.T) {
	dir := t.TempDir()
	var train, eval []string
	for i := 0; len(eval) == 0 || len(train) < 3; i++ {
		name := fmt.Sprintf("doc%02d.txt", i)
		write(t, filepath.Join(dir, name), "text of "+name)
		if heldOut(name) {
			eval = append(eval, name)
		} else {
			train = append(train, name)
		}
	}
	write(t, filepath.Join(dir, "image.bin"), "PNG\x00\x01\x02")
	write(t, filepath.Join(dir, ".hidden"), "secret")
	write(t, filepath.Join(dir, ".git", "config"), "[core]")
	write(t, filepath.Join(dir, "out", "loss.csv"), "step,loss")
	join := func(names []string) string {
		var b strings.Builder
		for _, n := range names {
			b.WriteString("text of " + n + "\n\n")
		}
		return b.String()
	}
	c, err := LoadText(dir, 0, filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	if string(c.Train) != join(train) || string(c.Eval) != join(eval) {
		t.Errorf("train %q, eval %q; want %q and %q", c.Train, c.Eval, join(train), join(eval))
	}
	if c.TrainFiles != len(train) || c.EvalFiles != len(eval) {
		t.Errorf("files %d / %d, want %d / %d", c.TrainFiles, c.EvalFiles, len(train), len(eval))
	}
	// A glob's matches are hashed as matched (with the directory): only the bytes are compared.
	c, err = LoadText(filepath.Join(dir, "*.txt"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(c.Train) + len(c.Eval); got != len(join(train))+len(join(eval)) {
		t.Errorf("the glob read %d bytes, want %d (every .txt file, nothing else)", got, len(join(train))+len(join(eval)))
	}
	if bytes.Contains(append(c.Train, c.Eval...), []byte("secret")) {
		t.Errorf("a hidden file was read")
	}
}

// Files whose hashes all fall in the training split: each file's last 5% is held out instead.
func TestLoadTextFallsBackToBytes(t *testing.T) {
	dir := t.TempDir()
	var names []string
	for i := 0; len(names) < 2; i++ {
		if name := fmt.Sprintf("f%d.txt", i); !heldOut(name) {
			names = append(names, name)
		}
	}
	for _, n := range names {
		write(t, filepath.Join(dir, n), strings.Repeat("a", 38)+"zz") // 40 bytes: 38 + 2
	}
	c, err := LoadText(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	a := strings.Repeat("a", 38) + "\n\n"
	if string(c.Train) != a+a || string(c.Eval) != "zz\n\nzz\n\n" {
		t.Errorf("train %q, eval %q; want each file's last 2 bytes held out", c.Train, c.Eval)
	}
}

func TestLoadTextErrors(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "blob"), "\x00\x00")
	for _, data := range []string{dir, filepath.Join(dir, "missing.txt"), filepath.Join(dir, "*.md")} {
		if _, err := LoadText(data, 0); err == nil || !strings.HasPrefix(err.Error(), "-data") {
			t.Errorf("LoadText(%s): %v; want an error naming -data", data, err)
		}
	}
}
