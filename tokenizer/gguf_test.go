package tokenizer

import (
	"slices"
	"strings"
	"testing"
)

// A llama2.c tokenizer.bin described as a GGUF "llama" vocabulary encodes as run.c does (SPM by
// scores with "▁" for spaces is the same algorithm), and decodes back to the text.
func TestGGUFFromLlama2C(t *testing.T) {
	l2c, _ := testLlama2C(t)
	v, err := ToGGUF(l2c, l2c.VocabSize()+5)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Tokens) != l2c.VocabSize()+5 || v.Types[len(v.Types)-1] != GGUFUnused || v.Tokens[259] != "▁" {
		t.Fatalf("vocabulary: %d tokens, last type %d, token 259 %q", len(v.Tokens), v.Types[len(v.Types)-1], v.Tokens[259])
	}
	tk, err := NewGGUF(v)
	if err != nil {
		t.Fatal(err)
	}
	// "lo" is left out: run.c never merges a piece scored -1e10 (its loop starts there), an
	// artefact of its search that SentencePiece and llama.cpp do not share.
	for _, s := range []string{"hello", "hel", "aaaa", "é€", "\xA9\xA9", "😀", "<s>", "hello hello", "  two spaces", "tab\there\n", ""} {
		want, _ := l2c.Encode(s)
		got, err := tk.Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Errorf("Encode(%q) = %v, run.c's %v", s, got, want)
		}
		if d := tk.Decode(append([]int{1}, got...)); d != s {
			t.Errorf("Decode(BOS + Encode(%q)) = %q", s, d)
		}
	}
	if sp := tk.Special(); sp.BOS != 1 || sp.EOS != 2 {
		t.Errorf("specials %+v", sp)
	}
	// Back to a vocabulary unchanged.
	again, err := ToGGUF(tk, len(v.Tokens))
	if err != nil || !slices.Equal(again.Tokens, v.Tokens) || !slices.Equal(again.Scores, v.Scores) || !slices.Equal(again.Types, v.Types) {
		t.Errorf("re-export differs (%v)", err)
	}
}

// The byte tokenizer as a "gpt2" vocabulary without merges: every byte its own token.
func TestGGUFFromByte(t *testing.T) {
	v, err := ToGGUF(NewByte(), 260)
	if err != nil {
		t.Fatal(err)
	}
	tk, err := NewGGUF(v)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"func main() {\n\tfmt.Println(\"héllo\")\n}", "  x", "<s> </s>", ""} {
		want, _ := NewByte().Encode(s)
		got, err := tk.Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Errorf("Encode(%q) = %v, want %v", s, got, want)
		}
		if d := tk.Decode(got); d != s {
			t.Errorf("Decode(Encode(%q)) = %q", s, d)
		}
	}
	if sp := tk.Special(); sp != (Specials{BOS: 256, EOS: 257, PAD: 258, MASK: 259}) {
		t.Errorf("specials %+v", sp)
	}
}

// A byte-level BPE tokenizer.json as a "gpt2" vocabulary with its merges.
func TestGGUFFromHF(t *testing.T) {
	h, err := LoadHF("testdata/bpe.json")
	if err != nil {
		t.Fatal(err)
	}
	v, err := ToGGUF(h, 20)
	if err != nil {
		t.Fatal(err)
	}
	if v.Pre != "gpt-2" || len(v.Merges) != 5 || v.Types[0] != GGUFControl || v.Types[19] != GGUFUnused {
		t.Fatalf("vocabulary %+v", v)
	}
	tk, err := NewGGUF(v)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"hello", "hello hello", "<s>hell", "he ll o"} {
		want, _ := h.Encode(s)
		got, err := tk.Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("Encode(%q) = %v, tokenizer.json gives %v", s, got, want)
		}
		if d, w := tk.Decode(got), h.Decode(want); d != w {
			t.Errorf("Decode = %q, tokenizer.json gives %q", d, w)
		}
	}
}

// A hand-made SPM vocabulary: user-defined tokens are cut out first, characters without a
// token fall back to bytes or to the unknown token, and no prefix is added when asked.
func TestSPM(t *testing.T) {
	v := GGUFVocab{Model: "llama", BOS: 1, EOS: 2, UNK: 0, PAD: -1,
		Tokens: []string{"<unk>", "<s>", "</s>", "▁", "a", "b", "ab", "▁ab", "<|tool|>", "<0x63>"},
		Scores: []float32{0, 0, 0, -1, -2, -3, -1, -0.5, 0, 0},
		Types:  []int32{GGUFUnknown, GGUFControl, GGUFControl, GGUFNormal, GGUFNormal, GGUFNormal, GGUFNormal, GGUFNormal, GGUFUserDefined, GGUFByte},
	}
	for _, c := range []struct {
		prefix bool
		text   string
		want   []int
	}{
		{false, "ab", []int{6}},
		{true, "ab", []int{7}},
		{true, "ab ab", []int{7, 7}},
		{true, "a<|tool|>b", []int{3, 4, 8, 5}},
		{false, "cd", []int{9, 0}}, // c has a byte token, d has none: unknown
		{true, "<s>", []int{3, 0, 0, 0}},
	} {
		v.AddSpacePrefix = c.prefix
		tk, err := NewGGUF(v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := tk.Encode(c.text)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("prefix %v: Encode(%q) = %v, want %v", c.prefix, c.text, got, c.want)
		}
	}
}

func TestNewGGUFRefuses(t *testing.T) {
	ok := GGUFVocab{Model: "gpt2", Tokens: []string{"a", "b", "ab"}, Merges: []string{"a b"}, BOS: -1, EOS: -1, UNK: -1, PAD: -1}
	for _, c := range []struct {
		edit func(v *GGUFVocab)
		want string
	}{
		{func(v *GGUFVocab) { v.Model = "rwkv" }, `tokenizer.ggml.model "rwkv" is not supported`},
		{func(v *GGUFVocab) { v.Pre = "deepseek-coder" }, `tokenizer.ggml.pre "deepseek-coder" is not supported`},
		{func(v *GGUFVocab) { v.Merges = []string{"ab"} }, `tokenizer.ggml.merges[0] "ab" is not two tokens`},
		{func(v *GGUFVocab) { v.Merges = []string{"a c"} }, `token "c" is not in the vocabulary`},
		{func(v *GGUFVocab) { v.Scores = []float32{1} }, "scores has 1 entries for 3 tokens"},
		{func(v *GGUFVocab) { v.EOS = 3 }, "eos_token_id 3 is not a token"},
		{func(v *GGUFVocab) { v.Tokens = nil }, "tokens is empty"},
		{func(v *GGUFVocab) { v.Model, v.Types = "llama", []int32{GGUFByte, 1, 1} }, `token 0 "a" has the byte type but is not <0xXX>`},
	} {
		v := ok
		c.edit(&v)
		_, err := NewGGUF(v)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewGGUF: %v; want %q", err, c.want)
		}
	}
	if _, err := NewGGUF(ok); err != nil {
		t.Fatal(err)
	}
	if _, err := ToGGUF(NewByte(), 100); err == nil || !strings.Contains(err.Error(), "260 tokens but the model's embedding only 100 rows") {
		t.Errorf("ToGGUF into too few rows: %v", err)
	}
}
