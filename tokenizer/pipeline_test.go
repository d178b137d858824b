package tokenizer

// Unit tests of the tokenizer.json pipeline on small hand-written files,
// each expected value derived by hand from the Rust crate's documented
// semantics (the comments show the derivations). tokenizer/conformance
// checks real files against Hugging Face's JavaScript port.

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// hfJSON builds a tokenizer.json text from its sections; empty sections
// are null.
func hfJSON(model, normalizer, pre, post, decoder, added string) string {
	or := func(s string) string {
		if s == "" {
			return "null"
		}
		return s
	}
	if added == "" {
		added = "[]"
	}
	return fmt.Sprintf(`{"version": "1.0", "added_tokens": %s, "normalizer": %s, "pre_tokenizer": %s,
		"post_processor": %s, "decoder": %s, "model": %s}`, added, or(normalizer), or(pre), or(post), or(decoder), model)
}

func mustParse(t *testing.T, data string) *HF {
	t.Helper()
	h, err := ParseHF([]byte(data))
	if err != nil {
		t.Fatalf("ParseHF: %v", err)
	}
	return h
}

func mustEncode(t *testing.T, h *HF, text string, opt EncodeOptions) []int {
	t.Helper()
	ids, err := h.EncodeWith(text, opt)
	if err != nil {
		t.Fatalf("EncodeWith(%q): %v", text, err)
	}
	return ids
}

func TestByteLevelTable(t *testing.T) {
	// GPT-2's spelling: printable bytes stand for themselves, the others
	// move to U+0100 onwards in byte order: 0x00 -> U+0100, ..., ' ' (the
	// 33rd unprintable byte) -> U+0120 'Ġ', '\n' (the 11th) -> U+010A 'Ċ'.
	for b, want := range map[byte]rune{'a': 'a', '!': '!', 0: 'Ā', ' ': 'Ġ', '\n': 'Ċ', 0x7F: 'ġ', 0xAD: 'Ń', 0xFF: 'ÿ'} {
		if got := byteToRune[b]; got != want {
			t.Errorf("byteToRune[%#x] = %q, want %q", b, got, want)
		}
	}
	seen := map[rune]bool{}
	for b := 0; b < 256; b++ {
		r := byteToRune[b]
		if seen[r] || runeToByte[r] != byte(b) {
			t.Fatalf("byte %#x: table is not a bijection", b)
		}
		seen[r] = true
	}
}

func TestLossyUTF8(t *testing.T) {
	// The example of Unicode §3.9 (Table 3-8, "U+FFFD Substitution of
	// Maximal Subparts"): 61 F1 80 80 E1 80 C2 62 80 63 80 BF 64 decodes
	// to a, FFFD, FFFD, FFFD, b, FFFD, c, FFFD, FFFD, d.
	in := []byte{0x61, 0xF1, 0x80, 0x80, 0xE1, 0x80, 0xC2, 0x62, 0x80, 0x63, 0x80, 0xBF, 0x64}
	if got, want := lossyUTF8(in), "a\uFFFD\uFFFD\uFFFDb\uFFFDc\uFFFD\uFFFDd"; got != want {
		t.Errorf("lossyUTF8 = %q, want %q", got, want)
	}
	// Surrogates (ED A0 80) are ill-formed after ED: three replacements.
	if got, want := lossyUTF8([]byte{0xED, 0xA0, 0x80}), "\uFFFD\uFFFD\uFFFD"; got != want {
		t.Errorf("lossyUTF8(surrogate) = %q, want %q", got, want)
	}
	if got := lossyUTF8([]byte("héllo 👍")); got != "héllo 👍" {
		t.Errorf("valid text changed: %q", got)
	}
}

func TestSplitBehaviors(t *testing.T) {
	// The example of the Rust crate's SplitDelimiterBehavior docs.
	want := map[splitBehavior][]string{
		removed:            {"the", "final", "countdown"},
		isolated:           {"the", "-", "final", "-", "-", "countdown"},
		mergedWithPrevious: {"the-", "final-", "-", "countdown"},
		mergedWithNext:     {"the", "-final", "-", "-countdown"},
		contiguous:         {"the", "-", "final", "--", "countdown"},
	}
	for beh, w := range want {
		ps, err := split(piece{s: "the-final--countdown"}, literalMatcher("-"), beh, false)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range ps {
			got = append(got, p.s)
		}
		if !slices.Equal(got, w) {
			t.Errorf("behavior %d: got %q, want %q", beh, got, w)
		}
	}
	// invert: the matches are the words and the rest is removed.
	re, err := compileRegex(`\w+`)
	if err != nil {
		t.Fatal(err)
	}
	ps, _ := split(piece{s: "a, bc!"}, re, removed, true)
	if len(ps) != 2 || ps[0].s != "a" || ps[1].s != "bc" {
		t.Errorf("inverted split = %v, want [a bc]", ps)
	}
}

func TestByteLevelPreTokenizerLookahead(t *testing.T) {
	pre, err := buildPreTokenizer([]byte(`{"type": "ByteLevel", "add_prefix_space": false, "use_regex": true}`))
	if err != nil {
		t.Fatal(err)
	}
	// `\s+(?!\S)` takes a run of spaces but leaves the last one to the
	// word that follows: "   world" is "  " + " world". At the end of the
	// text nothing follows, so the whole run is one piece. Spaces are
	// then spelled "Ġ".
	ps, err := pre.preTokenize([]piece{{s: "Hello   world  !  "}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range ps {
		got = append(got, p.s)
	}
	if want := []string{"Hello", "ĠĠ", "Ġworld", "Ġ", "Ġ!", "ĠĠ"}; !slices.Equal(got, want) {
		t.Errorf("pieces = %q, want %q", got, want)
	}
}

func TestByteLevelPreTokenizerWhiteSpace(t *testing.T) {
	// \s is Unicode's White_Space property, as in Oniguruma (the Rust
	// crate) and Python's regex (OpenAI's encoder.py): U+0085 NEXT LINE is
	// whitespace, U+FEFF ZERO WIDTH NO-BREAK SPACE (a format character,
	// Cf) is not. So in "a\u0085b \ufeffc", U+0085 is a whitespace run of
	// its own, and " \ufeff" is a space plus a non-letter, non-digit run.
	re, err := compileRegex(gpt2Pattern)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := split(piece{s: "a\u0085b \ufeffc"}, re, isolated, false)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range ps {
		got = append(got, p.s)
	}
	if want := []string{"a", "\u0085", "b", " \ufeff", "c"}; !slices.Equal(got, want) {
		t.Errorf("pieces = %q, want %q", got, want)
	}
}

func TestLoadHFLookaheadRegex(t *testing.T) {
	// The Llama 3 / Qwen kind of Split pattern, which Go's regexp rejects.
	h, err := LoadHF("testdata/split_lookahead.json")
	if err != nil {
		t.Fatalf("LoadHF: %v", err)
	}
	// "(?i:'s|'t)" isolates "'S" regardless of case; the model knows only
	// "s" (15) among its characters, so the apostrophe is dropped.
	if ids := mustEncode(t, h, "'S", EncodeOptions{}); !slices.Equal(ids, []int{}) {
		t.Errorf("Encode(\"'S\") = %v, want [] (neither ' nor S is in the vocabulary)", ids)
	}
	if ids := mustEncode(t, h, "hello's", EncodeOptions{}); !slices.Equal(ids, []int{idHello, idS}) {
		t.Errorf("Encode(\"hello's\") = %v, want [%d %d]", ids, idHello, idS)
	}
}

// equalsModel has "=", "==" and "====" and two merges.
const equalsModel = `{"type": "BPE", "vocab": {"=": 0, "==": 1, "====": 2}, "merges": ["= =", "== =="]}`

func TestBPELeftmostFirst(t *testing.T) {
	h := mustParse(t, hfJSON(equalsModel, "", "", "", "", ""))
	// "=====": all four "= =" pairs have rank 0; the leftmost goes first,
	// which takes the second "=" away from the second pair:
	//   = = = = =  ->  == = = =  ->  == == =  ->  ==== =   = [2 0]
	// Merging from the right would give [0 2] instead.
	for text, want := range map[string][]int{"=====": {2, 0}, "===": {1, 0}, "========": {2, 2}} {
		if got := mustEncode(t, h, text, EncodeOptions{}); !slices.Equal(got, want) {
			t.Errorf("Encode(%q) = %v, want %v", text, got, want)
		}
	}
}

func TestBPEIgnoreMerges(t *testing.T) {
	// "abc" is in the vocabulary but no merge builds it from "ab" + "c".
	model := func(ignore bool) string {
		return fmt.Sprintf(`{"type": "BPE", "ignore_merges": %v, "vocab": {"a": 0, "b": 1, "c": 2, "ab": 3, "abc": 4}, "merges": [["a", "b"]]}`, ignore)
	}
	for ignore, want := range map[bool][]int{false: {3, 2}, true: {4}} {
		h := mustParse(t, hfJSON(model(ignore), "", "", "", "", ""))
		if got := mustEncode(t, h, "abc", EncodeOptions{}); !slices.Equal(got, want) {
			t.Errorf("ignore_merges=%v: Encode(\"abc\") = %v, want %v", ignore, got, want)
		}
	}
}

func TestBPEByteFallbackAndUnk(t *testing.T) {
	// "é" is not in the vocabulary; its UTF-8 bytes are C3 A9.
	model := func(fallback, fuse bool) string {
		return fmt.Sprintf(`{"type": "BPE", "unk_token": "<unk>", "byte_fallback": %v, "fuse_unk": %v,
			"vocab": {"<unk>": 0, "<0xC3>": 1, "<0xA9>": 2, "a": 3}, "merges": []}`, fallback, fuse)
	}
	dec := `{"type": "Sequence", "decoders": [{"type": "ByteFallback"}, {"type": "Fuse"}]}`
	cases := []struct {
		fallback, fuse bool
		want           []int
	}{
		{true, false, []int{3, 1, 2, 1, 2}}, // bytes of each é
		{false, false, []int{3, 0, 0}},      // one unk per é
		{false, true, []int{3, 0}},          // consecutive unks fused
	}
	for _, c := range cases {
		h := mustParse(t, hfJSON(model(c.fallback, c.fuse), "", "", "", dec, ""))
		got := mustEncode(t, h, "aéé", EncodeOptions{})
		if !slices.Equal(got, c.want) {
			t.Errorf("byte_fallback=%v fuse_unk=%v: Encode(\"aéé\") = %v, want %v", c.fallback, c.fuse, got, c.want)
		}
		if c.fallback {
			if text := h.Decode(got); text != "aéé" {
				t.Errorf("Decode(%v) = %q, want \"aéé\"", got, text)
			}
			// A lone continuation byte is not UTF-8: one U+FFFD per byte.
			if text := h.Decode([]int{2, 3}); text != "\uFFFDa" {
				t.Errorf("Decode([2 3]) = %q, want \"\\uFFFDa\"", text)
			}
		}
	}
}

func TestNFCNormalizer(t *testing.T) {
	model := `{"type": "BPE", "vocab": {"é": 0, "e": 1, "\u0301": 2}, "merges": []}`
	// NFC composes e + U+0301 into é (U+00E9); NFD decomposes é.
	for form, want := range map[string][]int{"NFC": {0, 0}, "NFD": {1, 2, 1, 2}} {
		h := mustParse(t, hfJSON(model, `{"type": "`+form+`"}`, "", "", "", ""))
		if got := mustEncode(t, h, "e\u0301\u00e9", EncodeOptions{}); !slices.Equal(got, want) {
			t.Errorf("%s: got %v, want %v", form, got, want)
		}
	}
}

func TestSpecialTokensWithByteLevel(t *testing.T) {
	h := loadTestBPE(t)
	// Parsed, "<s>" is id 0 even though the ByteLevel pre-tokenizer would
	// otherwise see "<s>hello" as symbols + letters; as plain text it is
	// the characters <, s, >.
	if got, want := mustEncode(t, h, "<s>hello", EncodeOptions{ParseSpecial: true}), []int{0, idHello}; !slices.Equal(got, want) {
		t.Errorf("ParseSpecial: got %v, want %v", got, want)
	}
	if got, want := mustEncode(t, h, "<s>hello", EncodeOptions{}), []int{idLt, idS, idGt, idHello}; !slices.Equal(got, want) {
		t.Errorf("plain: got %v, want %v", got, want)
	}
	if got := h.DecodeWith([]int{0, idHello, 1}, DecodeOptions{KeepSpecial: true}); got != "<s>hello</s>" {
		t.Errorf("DecodeWith(KeepSpecial) = %q, want \"<s>hello</s>\"", got)
	}
}

func TestTemplateProcessing(t *testing.T) {
	data, err := os.ReadFile("testdata/bpe.json")
	if err != nil {
		t.Fatal(err)
	}
	post := `{"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
		{"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}}],
		"special_tokens": {"<s>": {"id": "<s>", "ids": [0], "tokens": ["<s>"]}, "</s>": {"id": "</s>", "ids": [1], "tokens": ["</s>"]}}}`
	text := strings.Replace(string(data), `"post_processor": null`, `"post_processor": `+post, 1)
	h := mustParse(t, text)
	if got, want := mustEncode(t, h, "hello", EncodeOptions{AddSpecial: true}), []int{0, idHello, 1}; !slices.Equal(got, want) {
		t.Errorf("AddSpecial: got %v, want %v", got, want)
	}
	if got, want := mustEncode(t, h, "hello", EncodeOptions{}), []int{idHello}; !slices.Equal(got, want) {
		t.Errorf("plain: got %v, want %v", got, want)
	}
}

func TestAddedTokenStripAndSingleWord(t *testing.T) {
	// No pre-tokenizer and a WordLevel model: each stretch of text between
	// added tokens is one word, so the spaces an added token absorbs show.
	model := `{"type": "WordLevel", "unk_token": "<unk>", "vocab": {"a ": 0, "a": 1, " b": 2, "b": 3, "[M]": 4, "<unk>": 5}}`
	added := func(lstrip, rstrip, single bool) string {
		return fmt.Sprintf(`[{"id": 4, "content": "[M]", "single_word": %v, "lstrip": %v, "rstrip": %v, "normalized": false, "special": true}]`, single, lstrip, rstrip)
	}
	cases := []struct {
		lstrip, rstrip, single bool
		text                   string
		want                   []int
	}{
		{false, false, false, "a [M] b", []int{0, 4, 2}},
		{true, false, false, "a [M] b", []int{1, 4, 2}}, // the space before goes with [M]
		{false, true, false, "a [M] b", []int{0, 4, 3}}, // the space after goes with [M]
		{true, true, false, "a [M] b", []int{1, 4, 3}},
		{false, false, true, "a [M] b", []int{0, 4, 2}}, // a word on its own: matched
		{false, false, true, "a[M] b", []int{5}},        // glued to "a": not matched, one unknown word
	}
	for _, c := range cases {
		h := mustParse(t, hfJSON(model, "", "", "", "", added(c.lstrip, c.rstrip, c.single)))
		if got := mustEncode(t, h, c.text, EncodeOptions{ParseSpecial: true}); !slices.Equal(got, c.want) {
			t.Errorf("lstrip=%v rstrip=%v single_word=%v: Encode(%q) = %v, want %v", c.lstrip, c.rstrip, c.single, c.text, got, c.want)
		}
	}
}

func TestMetaspace(t *testing.T) {
	pre := func(split bool, scheme string) preTokenizer {
		p, err := buildPreTokenizer([]byte(fmt.Sprintf(`{"type": "Metaspace", "replacement": "▁", "prepend_scheme": %q, "split": %v}`, scheme, split)))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		split  bool
		scheme string
		in     piece
		want   []string
	}{
		{true, "always", piece{s: "Hello world"}, []string{"▁Hello", "▁world"}},
		{false, "always", piece{s: "Hello world"}, []string{"▁Hello▁world"}},
		{false, "never", piece{s: "Hello world"}, []string{"Hello▁world"}},
		{false, "first", piece{s: "Hi", first: true}, []string{"▁Hi"}},
		{false, "first", piece{s: "Hi", first: false}, []string{"Hi"}},
	}
	for _, c := range cases {
		ps, err := pre(c.split, c.scheme).preTokenize([]piece{c.in})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range ps {
			got = append(got, p.s)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("split=%v scheme=%s %q: got %q, want %q", c.split, c.scheme, c.in.s, got, c.want)
		}
	}
}

func TestDecoders(t *testing.T) {
	cases := []struct {
		decoder string
		tokens  []string
		want    string
	}{
		{`{"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always"}`, []string{"▁Hello", "▁world"}, "Hello world"},
		{`{"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
			{"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}`,
			[]string{"▁Hello", "▁", "<0xE2>", "<0x9C>", "<0xA8>"}, "Hello ✨"},
		{`{"type": "WordPiece", "prefix": "##", "cleanup": true}`, []string{"un", "##aff", "##able", ",", "it", "'s"}, "unaffable, it's"},
		{`{"type": "BPEDecoder", "suffix": "</w>"}`, []string{"hel", "lo</w>", "wor", "ld</w>"}, "hello world"},
		{`{"type": "ByteLevel"}`, []string{"Hello", "Ġw", "orld", "Ċ"}, "Hello world\n"},
	}
	for _, c := range cases {
		d, err := buildDecoder([]byte(c.decoder))
		if err != nil {
			t.Fatal(err)
		}
		parts, err := d.decodeChain(c.tokens)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(parts, ""); got != c.want {
			t.Errorf("%s: got %q, want %q", c.decoder, got, c.want)
		}
	}
}

func TestWordPieceBERT(t *testing.T) {
	// BERT's own example (google-research/bert README): "unaffable" ->
	// un ##aff ##able, after the BERT normalizer lowercases and the BERT
	// pre-tokenizer splits off punctuation.
	model := `{"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "max_input_chars_per_word": 100,
		"vocab": {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "[MASK]": 4, "un": 5, "##aff": 6, "##able": 7, ",": 8, "runs": 9, "!": 10}}`
	added := `[{"id": 0, "content": "[PAD]", "special": true}, {"id": 1, "content": "[UNK]", "special": true},
		{"id": 2, "content": "[CLS]", "special": true}, {"id": 3, "content": "[SEP]", "special": true},
		{"id": 4, "content": "[MASK]", "special": true}]`
	post := `{"type": "BertProcessing", "sep": ["[SEP]", 3], "cls": ["[CLS]", 2]}`
	h := mustParse(t, hfJSON(model, `{"type": "BertNormalizer", "lowercase": true}`, `{"type": "BertPreTokenizer"}`,
		post, `{"type": "WordPiece", "prefix": "##", "cleanup": true}`, added))
	got := mustEncode(t, h, "UNaffable,\truns! xyz", EncodeOptions{AddSpecial: true})
	// xyz has no piece at all: one [UNK].
	if want := []int{2, 5, 6, 7, 8, 9, 10, 1, 3}; !slices.Equal(got, want) {
		t.Errorf("Encode = %v, want %v", got, want)
	}
	if s := h.Special(); s.BOS != 2 || s.EOS != 3 || s.PAD != 0 || s.MASK != 4 {
		t.Errorf("Special() = %+v, want BOS 2 EOS 3 PAD 0 MASK 4", s)
	}
	// Decoding drops [CLS]/[SEP]/[UNK] and glues ## pieces.
	if text := h.Decode(got); text != "unaffable, runs!" {
		t.Errorf("Decode = %q, want \"unaffable, runs!\"", text)
	}
}

func TestParseHFErrors(t *testing.T) {
	bpeModel := `{"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]}`
	cases := map[string]string{
		"unknown normalizer":    hfJSON(bpeModel, `{"type": "Wobble"}`, "", "", "", ""),
		"unknown pre-tokenizer": hfJSON(bpeModel, "", `{"type": "Wobble"}`, "", "", ""),
		"unknown decoder":       hfJSON(bpeModel, "", "", "", `{"type": "Wobble"}`, ""),
		"unknown post":          hfJSON(bpeModel, "", "", `{"type": "Wobble"}`, "", ""),
		"bad regex":             hfJSON(bpeModel, "", `{"type": "Split", "pattern": {"Regex": "(?<"}, "behavior": "Isolated"}`, "", "", ""),
		"bad behavior":          hfJSON(bpeModel, "", `{"type": "Split", "pattern": {"String": " "}, "behavior": "Sideways"}`, "", "", ""),
		"unigram":               hfJSON(`{"type": "Unigram", "vocab": [["a", 0.0]]}`, "", "", "", "", ""),
		"merge not in vocab":    hfJSON(`{"type": "BPE", "vocab": {"a": 0}, "merges": ["a b"]}`, "", "", "", "", ""),
		"merged not in vocab":   hfJSON(`{"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": ["a b"]}`, "", "", "", "", ""),
		"three-part merge":      hfJSON(`{"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": ["a b c"]}`, "", "", "", "", ""),
		"negative id":           hfJSON(`{"type": "BPE", "vocab": {"a": -1}, "merges": []}`, "", "", "", "", ""),
		"added without id":      hfJSON(bpeModel, "", "", "", "", `[{"content": "x"}]`),
		"template unknown":      hfJSON(bpeModel, "", "", `{"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>"}}], "special_tokens": {}}`, "", ""),
		"template id unknown": hfJSON(bpeModel, "", "", `{"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>"}}, {"Sequence": {"id": "A"}}],
			"special_tokens": {"<s>": {"id": "<s>", "ids": [99], "tokens": ["<s>"]}}}`, "", ""),
		"no model": `{"normalizer": null}`,
	}
	for name, data := range cases {
		_, err := ParseHF([]byte(data))
		if err == nil {
			t.Errorf("%s: ParseHF succeeded, want an error", name)
			continue
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %q spans several lines", name, err)
		}
	}
}

func TestGPT2Files(t *testing.T) {
	// testdata/bpe.json's vocabulary and merges, in GPT-2's file format.
	dir := t.TempDir()
	vocab := `{"<|endoftext|>": 0, "h": 4, "e": 5, "l": 6, "o": 7, "Ġ": 8, "he": 9, "ll": 10, "hell": 11, "hello": 12, "Ġh": 13, "<": 14, "s": 15, ">": 16, "model": 17, "m": 18, "d": 19}`
	merges := "#version: 0.2\nh e\nl l\nhe ll\nhell o\nĠ h\n"
	for name, content := range map[string]string{"vocab.json": vocab, "merges.txt": merges} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A "model" token must not make the vocabulary look like a
	// tokenizer.json.
	tk, err := Load(filepath.Join(dir, "vocab.json"))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	// As in TestHFEncodeEncodeDecode: hello, Ġ hello, Ġ o h.
	ids, err := tk.Encode("hello hello oh")
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{idHello, idSpace, idHello, idSpace, idO, idH}; !slices.Equal(ids, want) {
		t.Errorf("Encode = %v, want %v", ids, want)
	}
	if got := tk.Decode(ids); got != "hello hello oh" {
		t.Errorf("Decode = %q", got)
	}
	// <|endoftext|> is special: text unless parsed.
	if got, _ := EncodeWith(tk, "<|endoftext|>", EncodeOptions{ParseSpecial: true}); !slices.Equal(got, []int{0}) {
		t.Errorf("parsed <|endoftext|> = %v, want [0]", got)
	}
	// A directory stands for the vocabulary in it.
	if _, err := Load(dir); err != nil {
		t.Errorf("Load(dir): %v", err)
	}
	// Without merges beside it, the error says how to pass them.
	lone := filepath.Join(t.TempDir(), "encoder.json")
	if err := os.WriteFile(lone, []byte(vocab), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(lone); err == nil || !strings.Contains(err.Error(), "--merges") {
		t.Errorf("Load without merges: err = %v, want one mentioning --merges", err)
	}
	bad := filepath.Join(t.TempDir(), "merges.txt")
	if err := os.WriteFile(bad, []byte("#version: 0.2\nh e x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadGPT2(filepath.Join(dir, "vocab.json"), bad); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("bad merges: err = %v, want one naming line 2", err)
	}
}

func TestEncodeConcurrent(t *testing.T) {
	h := loadTestBPE(t)
	texts := []string{"hello hello oh", "oh hello", "<s> hell", "lo lo"}
	want := make([][]int, len(texts))
	for i, s := range texts {
		want[i] = mustEncode(t, h, s, EncodeOptions{})
	}
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < 200; n++ {
				i := (g + n) % len(texts)
				if got, err := h.Encode(texts[i]); err != nil || !slices.Equal(got, want[i]) {
					errs <- fmt.Sprintf("Encode(%q) = %v, %v; want %v", texts[i], got, err, want[i])
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func TestByteWithOptions(t *testing.T) {
	b := NewByte()
	got, _ := b.EncodeWith("a<s>b<mask>", EncodeOptions{AddSpecial: true, ParseSpecial: true})
	if want := []int{byteBOS, 'a', byteBOS, 'b', byteMASK}; !slices.Equal(got, want) {
		t.Errorf("EncodeWith = %v, want %v", got, want)
	}
	if got := b.DecodeWith([]int{byteBOS, 'a', byteEOS}, DecodeOptions{KeepSpecial: true}); got != "<s>a</s>" {
		t.Errorf("DecodeWith = %q", got)
	}
}
