package tokenizer

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// tokenizerBin builds a tokenizer.bin as llama2.c's tokenizer.py exports it: <unk>, BOS, EOS,
// the 256 byte pieces, then extra pieces with their scores.
func tokenizerBin(extra []string, scores []float32) []byte {
	pieces := []string{"<unk>", "\n<s>\n", "\n</s>\n"}
	sc := []float32{0, 0, 0}
	for b := range 256 {
		pieces = append(pieces, fmt.Sprintf("<0x%02X>", b))
		sc = append(sc, 0)
	}
	pieces = append(pieces, extra...)
	sc = append(sc, scores...)
	maxLen := 0
	for _, p := range pieces {
		maxLen = max(maxLen, len(p))
	}
	out := binary.LittleEndian.AppendUint32(nil, uint32(maxLen))
	for i, p := range pieces {
		out = binary.LittleEndian.AppendUint32(out, math.Float32bits(sc[i]))
		out = binary.LittleEndian.AppendUint32(out, uint32(len(p)))
		out = append(out, p...)
	}
	return out
}

// testPieces are ids 259.. of the test tokenizer, with their scores.
var testPieces = []struct {
	piece string
	score float32
}{
	{" ", -10}, {"h", -11}, {"e", -12}, {"l", -13}, {"o", -14}, {"a", -15}, {"€", -16}, {"\xA9\xA9", -17},
	{"he", -1}, {"ll", -2}, {" h", -3}, {"hell", -4}, {"hello", -5}, {" hello", -6},
	{"aa", -7}, {"aaa", -0.5}, {"w", -18}, {"lo", -1e10}, // "lo" scores -1e10: run.c never merges it
}

func testLlama2C(t *testing.T) (*Llama2C, map[string]int) {
	t.Helper()
	var pieces []string
	var scores []float32
	id := map[string]int{}
	for i, p := range testPieces {
		pieces = append(pieces, p.piece)
		scores = append(scores, p.score)
		id[p.piece] = 259 + i
	}
	tk, err := ParseLlama2C(tokenizerBin(pieces, scores), 0)
	if err != nil {
		t.Fatal(err)
	}
	return tk, id
}

// Encodings derived by hand from run.c's rules (dummy prefix, codepoints, byte fallback +3,
// best-scoring merge first, leftmost on ties).
func TestLlama2CEncode(t *testing.T) {
	tk, id := testLlama2C(t)
	cases := []struct {
		text string
		want []int
	}{
		// [" " h e l l o] -> he (-1) -> ll (-2) -> hell (-4) -> hello (-5) -> " hello" (-6).
		// " h" (-3) loses to he at the start and is gone once he is made.
		{"hello", []int{id[" hello"]}},
		// [" " h e l] -> he -> [" " he l]: "hel" and " he" are no pieces, so it stops.
		{"hel", []int{id[" "], id["he"], id["l"]}},
		// [" " l o]: "lo" is a piece but scores -1e10, which run.c's loop never takes.
		{"lo", []int{id[" "], id["l"], id["o"]}},
		// [" " a a a a]: the three "aa" tie at -7 and the leftmost goes first: [" " aa a a];
		// then "aaa" (-0.5) beats "aa" (-7): [" " aaa a]. Rightmost-first would give [" " a aaa].
		{"aaaa", []int{id[" "], id["aaa"], id["a"]}},
		// é (C3 A9) has no piece: its bytes + 3. € is one piece of three bytes.
		{"é€", []int{id[" "], 0xC3 + 3, 0xA9 + 3, id["€"]}},
		// Two stray continuation bytes form one "codepoint", which is a piece here.
		{"\xA9\xA9", []int{id[" "], id["\xA9\xA9"]}},
		// A four-byte codepoint without a piece falls back to its four bytes.
		{"😀", []int{id[" "], 0xF0 + 3, 0x9F + 3, 0x98 + 3, 0x80 + 3}},
		// Text that reads like a control token is text.
		{"<s>", []int{id[" "], '<' + 3, 's' + 3, '>' + 3}},
		{"", nil},
	}
	for _, c := range cases {
		got, err := tk.Encode(c.text)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("Encode(%q) = %v, want %v", c.text, got, c.want)
		}
	}
}

func TestLlama2CDecode(t *testing.T) {
	tk, id := testLlama2C(t)
	// run.c's decode: the leading space goes only right after BOS; byte pieces are raw bytes.
	if got := tk.Piece(1, id[" hello"]); got != "hello" {
		t.Errorf("Piece after BOS = %q, want %q", got, "hello")
	}
	if got := tk.Piece(id["he"], id[" hello"]); got != " hello" {
		t.Errorf("Piece after a token = %q, want %q", got, " hello")
	}
	if got := tk.Piece(5, 0xC3+3); got != "\xC3" {
		t.Errorf("Piece of <0xC3> = %q", got)
	}
	if got := tk.Decode([]int{1, id[" hello"], 2, id[" h"], 0xC3 + 3, 0xA9 + 3, 9999}); got != "hello hé" {
		t.Errorf("Decode = %q, want control tokens and bad ids dropped: %q", got, "hello hé")
	}
	for _, s := range []string{"hello", "hello hello", "  two spaces", "é€😀 aaaa lo", "\xA9\xA9", "tab\there\n", "x\x00y", ""} {
		ids, err := tk.Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := tk.Decode(ids); got != s {
			t.Errorf("Decode(Encode(%q)) = %q (ids %v)", s, got, ids)
		}
	}
}

func TestLlama2CLoad(t *testing.T) {
	dir := t.TempDir()
	data := tokenizerBin([]string{" ", "a"}, []float32{-1, -2})
	for _, name := range []string{"tok512.bin", "tokenizer"} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		tk, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		if l, ok := tk.(*Llama2C); !ok || l.VocabSize() != 261 || l.Special().BOS != 1 || l.Special().EOS != 2 {
			t.Errorf("Load(%s) = %T with %d tokens", name, tk, tk.VocabSize())
		}
	}
	// run.c reads the model's vocab_size tokens and ignores the rest.
	if l, err := LoadLlama2C(filepath.Join(dir, "tok512.bin"), 260); err != nil || l.VocabSize() != 260 {
		t.Errorf("LoadLlama2C(n=260): %v", err)
	}
	bad := func(name string, b []byte, n int, want string) {
		t.Helper()
		path := filepath.Join(dir, name)
		os.WriteFile(path, b, 0o644)
		_, err := LoadLlama2C(path, n)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: want a one-line error containing %q, got %v", name, want, err)
		}
	}
	bad("more.bin", data, 300, "token 261: file ends")
	bad("cut.bin", data[:len(data)-1], 0, "token 260: length 1 but 0 bytes are left")
	bad("empty.bin", nil, 0, "no max_token_length")
	bad("zero.bin", make([]byte, 16), 0, "max_token_length is 0")
	bad("missing.bin", nil, 0, "")
	os.Remove(filepath.Join(dir, "missing.bin"))
	if _, err := Load(filepath.Join(dir, "missing.bin")); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("Load of a missing .bin: %v", err)
	}
	// A tokenizer without byte pieces cannot fall back.
	small, err := ParseLlama2C(tokenizerBin(nil, nil)[:4+3*8+len("<unk>\n<s>\n\n</s>\n")], 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := small.Encode("x"); err == nil || !strings.Contains(err.Error(), "byte 0x78 has no piece") {
		t.Errorf("Encode without byte pieces: %v", err)
	}
}
