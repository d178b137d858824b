package export

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/posformer/posformer/cmd/internal/gguftok"
	"github.com/posformer/posformer/cmd/internal/llama2ctest"
	"github.com/posformer/posformer/engine"
)

// stories260KPath finds ../shared/fixtures/stories260K.bin (or ../shared/stories260K.bin) beside
// a directory above the package's, as the repository root's ../shared; "" when absent.
func stories260KPath() string {
	dir, _ := os.Getwd()
	for ; dir != filepath.Dir(dir); dir = filepath.Dir(dir) {
		for _, p := range []string{filepath.Join(dir, "..", "shared", "fixtures", "stories260K.bin"), filepath.Join(dir, "..", "shared", "stories260K.bin")} {
			if _, err := os.Stat(p); err == nil {
				return p
			}
		}
	}
	return ""
}

func greedyIDs(t *testing.T, path string, prompt []int, n int) []int {
	t.Helper()
	e, err := engine.Load(path, "cpu", 0)
	if err != nil {
		t.Fatal(err)
	}
	sm, err := engine.NewSampler(engine.Sampling{Temp: 0})
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	if _, err := e.Generate(prompt, n, sm, nil, func(tok int) { got = append(got, tok) }); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestLlama2CKeepsBOS exports the llama2.c fixture to GGUF without -z, with -z tokenizer.bin and
// with --no-vocab. Each file must say that BOS is 1 and starts every prompt, and the prompt a
// GGUF runner builds from that (cmd/internal/gguftok, as infer and serve do) must continue as
// run.c's BOS-first prompt does on the .bin: the same 32 greedy ids.
func TestLlama2CKeepsBOS(t *testing.T) {
	bin := stories260KPath()
	if bin == "" {
		t.Skip("../shared/fixtures/stories260K.bin is absent (see ../shared/fixtures/README.md)")
	}
	const n = 32
	ids := []int{300, 400, 270} // any ids of the 512-token vocabulary
	want := greedyIDs(t, bin, append([]int{1}, ids...), n)
	if slices.Equal(greedyIDs(t, bin, ids, n), want) {
		t.Fatalf("the .bin continues %v alike with and without BOS: the test could not tell them apart", ids)
	}
	dir := t.TempDir()
	for i, c := range []struct {
		name string
		o    options
	}{
		{"without -z", options{}},
		{"-z tokenizer.bin", options{tokenizer: llama2ctest.Tokenizer(t, 512)}},
		{"--no-vocab", options{noVocab: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := c.o
			o.model, o.out, o.typ = bin, filepath.Join(dir, fmt.Sprintf("stories-%d.gguf", i)), "f32"
			var log bytes.Buffer
			if err := run(o, &log); err != nil {
				t.Fatal(err)
			}
			l, err := gguftok.Load(o.out, "", 512)
			if err != nil {
				t.Fatal(err)
			}
			if !l.AddBOS || l.BOS != 1 {
				t.Fatalf("the GGUF has add_bos_token %v, BOS %d; want true, 1", l.AddBOS, l.BOS)
			}
			got := greedyIDs(t, o.out, append([]int{l.BOS}, ids...), n)
			if !slices.Equal(got, want) {
				t.Errorf("greedy from %v: the GGUF picks %v, the .bin %v", ids, got, want)
			}
		})
	}
}
