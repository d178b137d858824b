package tokenizer

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Ids in testdata/bpe.json.
const (
	idH     = 4
	idO     = 7
	idSpace = 8 // "Ġ", how byte-level BPE spells a space
	idHello = 12
	idLt    = 14
	idS     = 15
	idGt    = 16
)

func loadTestBPE(t *testing.T) *HF {
	t.Helper()
	h, err := LoadHF("testdata/bpe.json")
	if err != nil {
		t.Fatalf("LoadHF: %v", err)
	}
	return h
}

func TestHFEncodeDecode(t *testing.T) {
	h := loadTestBPE(t)

	// How "hello hello oh" is encoded, by hand:
	//
	// The ByteLevel pre-tokenizer splits on the GPT-2 pattern, keeping a
	// leading space with the word and spelling it "Ġ":
	//   "hello", "Ġhello", "Ġoh".
	// BPE then repeatedly applies the lowest-ranked merge present. The
	// merges, by rank, are 0 "h e", 1 "l l", 2 "he ll", 3 "hell o", 4 "Ġ h".
	//   "hello":  h e l l o -> he l l o -> he ll o -> hell o -> hello   = [12]
	//   "Ġhello": Ġ h e l l o; "h e" (rank 0) beats "Ġ h" (rank 4), so h is
	//             taken by "he" and "Ġh" never forms:
	//             Ġ he l l o -> Ġ he ll o -> Ġ hell o -> Ġ hello      = [8 12]
	//   "Ġoh":    Ġ o h; neither "Ġ o" nor "o h" is a merge            = [8 7 4]
	text := "hello hello oh"
	want := []int{idHello, idSpace, idHello, idSpace, idO, idH}
	ids, err := h.Encode(text)
	if err != nil {
		t.Fatalf("Encode(%q): %v", text, err)
	}
	if !slices.Equal(ids, want) {
		t.Fatalf("Encode(%q) = %v, want %v", text, ids, want)
	}
	if got := h.Decode(ids); got != text {
		t.Fatalf("Decode(%v) = %q, want %q", ids, got, text)
	}
}

func TestHFSpecials(t *testing.T) {
	h := loadTestBPE(t)
	if got, want := h.Special(), (Specials{BOS: 0, EOS: 1, PAD: 2, MASK: 3}); got != want {
		t.Fatalf("Special() = %+v, want %+v", got, want)
	}
	if got := h.VocabSize(); got != 17 {
		t.Fatalf("VocabSize() = %d, want 17", got)
	}
}

func TestHFEncodeTreatsSpecialLiteralsAsText(t *testing.T) {
	h := loadTestBPE(t)
	// "<s>" must come out as the characters <, s, >, not as BOS (id 0).
	ids, err := h.Encode("<s>")
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	if want := []int{idLt, idS, idGt}; !slices.Equal(ids, want) {
		t.Fatalf("Encode(\"<s>\") = %v, want %v", ids, want)
	}
}

func TestHFDecodeSpecials(t *testing.T) {
	h := loadTestBPE(t)
	s := h.Special()
	// BOS/EOS/PAD vanish, MASK renders as its literal, out-of-range ids
	// are skipped.
	ids := []int{s.BOS, idHello, s.MASK, idSpace, idHello, -1, 99, s.EOS, s.PAD}
	if got, want := h.Decode(ids), "hello<mask> hello"; got != want {
		t.Fatalf("Decode(%v) = %q, want %q", ids, got, want)
	}
}

func TestHFEncodeWithMask(t *testing.T) {
	h := loadTestBPE(t)
	ids, maskAt, err := EncodeWithMask(h, "hello<mask> oh")
	if err != nil {
		t.Fatalf("EncodeWithMask: %v", err)
	}
	if want := []int{idHello, 3, idSpace, idO, idH}; !slices.Equal(ids, want) {
		t.Fatalf("ids = %v, want %v", ids, want)
	}
	if want := []int{1}; !slices.Equal(maskAt, want) {
		t.Fatalf("maskAt = %v, want %v", maskAt, want)
	}
}

func TestHFEncodeDropsUnknownChars(t *testing.T) {
	h := loadTestBPE(t)
	// "x" is not in the vocabulary, and the file has neither an unknown
	// token nor byte fallback: the Rust crate drops such characters, and
	// so do we. "hxello" is then "hello".
	for text, want := range map[string][]int{"x": {}, "hxello": {idHello}} {
		ids, err := h.Encode(text)
		if err != nil {
			t.Fatalf("Encode(%q): %v", text, err)
		}
		if !slices.Equal(ids, want) {
			t.Errorf("Encode(%q) = %v, want %v", text, ids, want)
		}
	}
}

func TestLoadHFBadFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := map[string]string{
		"missing":   filepath.Join(dir, "does-not-exist.json"),
		"truncated": "testdata/truncated.json",
		"garbage":   write("garbage.json", "\x00\x01 this is not json"),
		"empty":     write("empty.json", ""),
		"null":      write("null.json", "null"),
		"no model":  write("nomodel.json", "{}"),
		"bad model": write("badmodel.json", `{"model": {"type": "BPE", "vocab": 3}}`),
	}
	for name, path := range cases {
		t.Run(name, func(t *testing.T) {
			h, err := LoadHF(path)
			if err == nil {
				t.Fatalf("LoadHF(%s) = %v, want error", path, h)
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not mention the path", err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q spans several lines", err)
			}
		})
	}
}
