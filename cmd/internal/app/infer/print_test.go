package infer

import (
	"strings"
	"testing"
	"unicode/utf8"

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

// writes records each Write apart.
type writes []string

func (w *writes) Write(p []byte) (int, error) { *w = append(*w, string(p)); return len(p), nil }

// A model trained on byte-level BPE tokens (cmd/train -bpe) streams whole characters: a token
// that ends inside a character's UTF-8 bytes prints nothing until the token that completes it,
// and the pieces add up to the text.
func TestPrintTextByteLevelBPE(t *testing.T) {
	v, err := tokenizer.TrainBPE([]byte("func main() { x := 1 }\nfunc main() { y := 2 }\n"), 270)
	if err != nil {
		t.Fatal(err)
	}
	js, err := v.JSON()
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.ParseHF(js)
	if err != nil {
		t.Fatal(err)
	}
	text := "func main() { s := \"日本語 é 👍\" }"
	ids, err := tok.Encode(text)
	if err != nil {
		t.Fatal(err)
	}
	prompt, rest := ids[:2], ids[2:]
	var out writes
	emit := printText(&out, tok, prompt)
	for _, id := range rest {
		emit(id)
	}
	if got := tok.Decode(prompt) + strings.Join(out, ""); got != text {
		t.Errorf("printed %q, want %q", got, text)
	}
	for _, piece := range out {
		if !utf8.ValidString(piece) || strings.ContainsRune(piece, utf8.RuneError) {
			t.Errorf("printed a broken character: %q (all: %q)", piece, out)
		}
	}
	if len(rest) <= len(out) {
		t.Errorf("%d tokens printed as %d pieces: no token was held back, so the test tested nothing", len(rest), len(out))
	}
}
