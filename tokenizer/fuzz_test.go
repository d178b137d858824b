package tokenizer

// FuzzTokenizerJSON feeds arbitrary bytes to the tokenizer.json parser and,
// when they parse, runs the tokenizer: any input must give a tokenizer or a
// one-line error, never a panic, and an accepted tokenizer must encode and
// decode without panicking.
//
//	go test -run '^$' -fuzz FuzzTokenizerJSON -fuzztime 60s ./tokenizer

import (
	"os"
	"strings"
	"testing"
	"time"
)

func FuzzTokenizerJSON(f *testing.F) {
	// Fuzzed regexes can backtrack exponentially; a short limit keeps the
	// fuzzer moving (the limit itself is what is being exercised).
	defer func(d time.Duration) { regexTimeout = d }(regexTimeout)
	regexTimeout = 50 * time.Millisecond
	for _, p := range []string{"testdata/bpe.json", "testdata/split_lookahead.json", "testdata/truncated.json"} {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	bpeModel := `{"type": "BPE", "byte_fallback": true, "ignore_merges": true, "unk_token": "<unk>", "vocab": {"<unk>": 0, "a": 1, "b": 2, "ab": 3, "<0x41>": 4}, "merges": [["a", "b"]]}`
	for _, seed := range []string{
		hfJSON(bpeModel, `{"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "Prepend", "prepend": "▁"}, {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]}`,
			`{"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": {"Regex": "\\s+(?!\\S)|\\p{L}+"}, "behavior": "Isolated", "invert": false}, {"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}]}`,
			`{"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<unk>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}], "special_tokens": {"<unk>": {"id": "<unk>", "ids": [0], "tokens": ["<unk>"]}}}`,
			`{"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "▁"}, "content": " "}, {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}`,
			`[{"id": 0, "content": "<unk>", "special": true, "lstrip": true, "rstrip": true}, {"id": 3, "content": "ab", "special": false, "single_word": true}]`),
		hfJSON(`{"type": "WordPiece", "vocab": {"[UNK]": 0, "a": 1, "##b": 2}}`, `{"type": "BertNormalizer"}`, `{"type": "BertPreTokenizer"}`,
			`{"type": "BertProcessing", "sep": ["[UNK]", 0], "cls": ["[UNK]", 0]}`, `{"type": "WordPiece"}`, ""),
		hfJSON(`{"type": "WordLevel", "vocab": {"a": 0}, "unk_token": "a"}`, `{"type": "Lowercase"}`,
			`{"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": true}`, "", `{"type": "Metaspace"}`, ""),
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := ParseHF(data)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error spans several lines: %q", err)
			}
			return
		}
		for _, text := range []string{"ab  AB\tä e\u0301 <unk>", "\xff\xfe bad utf-8"} {
			for _, opt := range []EncodeOptions{{}, {AddSpecial: true, ParseSpecial: true}} {
				ids, err := h.EncodeWith(text, opt)
				if err != nil {
					continue
				}
				for _, id := range ids {
					if id < 0 || id >= h.VocabSize() {
						t.Fatalf("Encode gave id %d outside 0..%d", id, h.VocabSize()-1)
					}
				}
				h.Decode(ids)
				h.DecodeWith(ids, DecodeOptions{KeepSpecial: true})
			}
		}
	})
}
