package infer

import (
	"strings"
	"testing"

	"github.com/posformer/posformer/tokenizer"
)

// Generated text keeps the spaces that a SentencePiece-style (Metaspace) decoder drops at the
// start of a text, for checkpoint directories as for GGUF files: printing each token's own
// decoding would give "Helloworldagain".
func TestPrintTextKeepsMetaspaceSpaces(t *testing.T) {
	tok, err := tokenizer.ParseHF([]byte(`{
		"model": {"type": "WordLevel", "unk_token": "<unk>", "vocab": {"▁Hello": 0, "▁world": 1, "▁again": 2, "<unk>": 3}},
		"pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always"},
		"decoder": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := tok.Decode([]int{1}); got != "world" {
		t.Fatalf("the decoder does not drop a leading space (%q): this test would not test anything", got)
	}
	var out strings.Builder
	emit := printText(&out, tok, []int{0})
	emit(1)
	emit(2)
	if got, want := "Hello"+out.String(), "Hello world again"; got != want {
		t.Errorf("printed %q, want %q", got, want)
	}
}
