package corpus

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func goRoot(t *testing.T) string {
	t.Helper()
	root, err := GoRoot()
	if err != nil {
		t.Skipf("no Go source tree available: %v", err)
	}
	return root
}

func TestLoadRealGoRoot(t *testing.T) {
	root := goRoot(t)
	const maxBytes = 2 << 20
	c, err := Load(root, maxBytes)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Train) == 0 || len(c.Eval) == 0 || c.TrainFiles == 0 || c.EvalFiles == 0 {
		t.Fatalf("empty split: train %d bytes/%d files, eval %d bytes/%d files",
			len(c.Train), c.TrainFiles, len(c.Eval), c.EvalFiles)
	}
	if len(c.Train) > maxBytes || len(c.Eval) > maxBytes {
		t.Errorf("cap %d exceeded: train %d, eval %d", maxBytes, len(c.Train), len(c.Eval))
	}
	if !bytes.Contains(c.Train, []byte("\npackage ")) || !bytes.Contains(c.Eval, []byte("\npackage ")) {
		t.Error("splits do not look like Go source")
	}

	again, err := Load(root, maxBytes)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c, again) {
		t.Error("two loads of the same tree differ")
	}
}

func TestIsEvalSplit(t *testing.T) {
	// A file's split is a function of its path alone: FNV-1a (32 bits) of the path, eval when
	// it is 0 mod 10. Computed here byte by byte, so that a change of hash (which would move
	// files between the splits and make old results incomparable) fails this test.
	fnv1a := func(s string) uint32 {
		h := uint32(2166136261)
		for i := 0; i < len(s); i++ {
			h ^= uint32(s[i])
			h *= 16777619
		}
		return h
	}
	evals := 0
	for i := range 200 {
		rel := fmt.Sprintf("pkg%d/file%d.go", i%7, i)
		want := fnv1a(rel)%10 == 0
		if IsEval(rel) != want {
			t.Errorf("IsEval(%q) = %v, want %v (FNV-1a %d)", rel, !want, want, fnv1a(rel))
		}
		if want {
			evals++
		}
	}
	if evals == 0 || evals == 200 {
		t.Fatalf("%d of 200 paths in eval: the check above compared one split only", evals)
	}

	files, err := SourceFiles(goRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 1000 {
		t.Fatalf("only %d source files found; expected thousands", len(files))
	}
	eval := 0
	for _, f := range files {
		if strings.Contains(f, `\`) || strings.HasSuffix(f, "_test.go") {
			t.Fatalf("unexpected path %q", f)
		}
		if IsEval(f) {
			eval++
		}
	}
	frac := float64(eval) / float64(len(files))
	t.Logf("%d of %d files (%.1f%%) go to eval", eval, len(files), 100*frac)
	if frac < 0.08 || frac > 0.12 {
		t.Errorf("eval fraction %.3f, want about 0.10", frac)
	}
}

// writeFiles creates files (path relative to dir, '/'-separated) with the
// given contents.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for rel, body := range files {
		path := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLoadFiltersFakeRoot(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"src/a/a.go":               "package a",
		"src/b/b.go":               "package b",
		"src/b/b_test.go":          "package b_test",
		"src/b/notes.txt":          "not go",
		"src/b/testdata/bad.go":    "package bad",
		"src/vendor/x/x.go":        "package x",
		"src/c/vendor/y/y.go":      "package y",
		"src/c/testdata/z/deep.go": "package deep",
	})

	files, err := SourceFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a/a.go", "b/b.go"}; !reflect.DeepEqual(files, want) {
		t.Fatalf("SourceFiles = %q, want %q", files, want)
	}

	c, err := Load(root, 0)
	if err != nil {
		t.Fatal(err)
	}
	var train, eval string
	for _, f := range []struct{ rel, body string }{{"a/a.go", "package a"}, {"b/b.go", "package b"}} {
		if IsEval(f.rel) {
			eval += f.body + "\n\n"
		} else {
			train += f.body + "\n\n"
		}
	}
	if string(c.Train) != train || string(c.Eval) != eval {
		t.Errorf("Load gave train %q eval %q, want train %q eval %q", c.Train, c.Eval, train, eval)
	}
	if c.TrainFiles+c.EvalFiles != 2 {
		t.Errorf("loaded %d+%d files, want 2", c.TrainFiles, c.EvalFiles)
	}
}

func TestLoadTruncates(t *testing.T) {
	root := t.TempDir()
	// Pick names that all land in the training split so the cap is
	// exercised on one split.
	var names []string
	for i := 0; len(names) < 3; i++ {
		name := string(rune('a'+i%26)) + strings.Repeat("x", i/26) + ".go"
		if !IsEval(name) {
			names = append(names, name)
		}
	}
	files := map[string]string{}
	for _, n := range names {
		files["src/"+n] = strings.Repeat("y", 10)
	}
	writeFiles(t, root, files)

	c, err := Load(root, 15) // First file takes 12 bytes, second is cut.
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Train) != 15 || c.TrainFiles != 2 {
		t.Errorf("got %d bytes from %d files, want 15 bytes from 2", len(c.Train), c.TrainFiles)
	}
}

func TestLoadMissingSrc(t *testing.T) {
	root := t.TempDir()
	_, err := Load(root, 0)
	if err == nil {
		t.Fatal("Load on a directory without src succeeded")
	}
	msg := err.Error()
	if !strings.Contains(msg, filepath.Join(root, "src")) || !strings.Contains(msg, "go env GOROOT") || strings.Contains(msg, "\n") {
		t.Errorf("unhelpful error: %q", msg)
	}
}

func TestBatch(t *testing.T) {
	data := []byte("the quick brown fox jumps over the lazy dog, again and again")
	in1, tg1 := NewSampler(data, 7).Batch(4, 8)
	in2, tg2 := NewSampler(data, 7).Batch(4, 8)
	if !reflect.DeepEqual(in1, in2) || !reflect.DeepEqual(tg1, tg2) {
		t.Error("same seed gave different batches")
	}
	in3, _ := NewSampler(data, 8).Batch(4, 8)
	if reflect.DeepEqual(in1, in3) {
		t.Error("different seeds gave the same batch")
	}

	if len(in1) != 4 || len(tg1) != 4 {
		t.Fatalf("batch size %d/%d, want 4", len(in1), len(tg1))
	}
	for i := range in1 {
		if len(in1[i]) != 8 || len(tg1[i]) != 8 {
			t.Fatalf("row %d has lengths %d/%d, want 8", i, len(in1[i]), len(tg1[i]))
		}
		for j := 0; j+1 < 8; j++ {
			if tg1[i][j] != in1[i][j+1] {
				t.Errorf("targets[%d][%d]=%d, inputs[%d][%d]=%d", i, j, tg1[i][j], i, j+1, in1[i][j+1])
			}
		}
		// The row must be a real slice of data.
		row := make([]byte, 9)
		for j, id := range in1[i] {
			row[j] = byte(id)
		}
		row[8] = byte(tg1[i][7])
		if !bytes.Contains(data, row) {
			t.Errorf("row %d %q is not a substring of data", i, row)
		}
	}
}

func TestBatchCoversWholeData(t *testing.T) {
	// With data exactly one window long, the only offset is 0.
	data := []byte("abcde")
	in, tg := NewSampler(data, 1).Batch(3, 4)
	for i := range in {
		if string(toBytes(in[i])) != "abcd" || string(toBytes(tg[i])) != "bcde" {
			t.Errorf("row %d: %q -> %q", i, toBytes(in[i]), toBytes(tg[i]))
		}
	}
}

func toBytes(ids []int32) []byte {
	b := make([]byte, len(ids))
	for i, id := range ids {
		b[i] = byte(id)
	}
	return b
}

func TestWindows(t *testing.T) {
	data := []byte("0123456789ab") // 12 bytes
	in, tg := Windows(data, 4, 0)
	// Windows start at 0, 4, 8 but the one at 8 needs bytes 8..12.
	wantIn := []string{"0123", "4567"}
	wantTg := []string{"1234", "5678"}
	if len(in) != len(wantIn) || len(tg) != len(wantTg) {
		t.Fatalf("got %d/%d windows, want %d", len(in), len(tg), len(wantIn))
	}
	for k := range in {
		if string(toBytes(in[k])) != wantIn[k] || string(toBytes(tg[k])) != wantTg[k] {
			t.Errorf("window %d: %q -> %q, want %q -> %q", k, toBytes(in[k]), toBytes(tg[k]), wantIn[k], wantTg[k])
		}
	}

	// One more byte makes room for the third window.
	if in, _ := Windows(append(data, 'c'), 4, 0); len(in) != 3 {
		t.Errorf("13 bytes gave %d windows, want 3", len(in))
	}
	if in, tg := Windows(data, 4, 1); len(in) != 1 || len(tg) != 1 {
		t.Errorf("max=1 gave %d windows", len(in))
	}
	if in, _ := Windows(data[:4], 4, 0); len(in) != 0 {
		t.Errorf("data shorter than a window gave %d windows", len(in))
	}
}

// A cap on the number of windows samples the whole text, not its beginning.
func TestWindowsSpread(t *testing.T) {
	data := []byte("abcdefghijklmnopqrstuvwxyz")
	in, tg := Windows(data, 4, 3)
	wantIn := []string{"abcd", "klmn", "vwxy"} // starts 0, 21/2, 21: the last ends at the text's end
	wantTg := []string{"bcde", "lmno", "wxyz"}
	if len(in) != 3 {
		t.Fatalf("got %d windows, want 3", len(in))
	}
	for k := range in {
		if string(toBytes(in[k])) != wantIn[k] || string(toBytes(tg[k])) != wantTg[k] {
			t.Errorf("window %d: %q -> %q, want %q -> %q", k, toBytes(in[k]), toBytes(tg[k]), wantIn[k], wantTg[k])
		}
	}
}
