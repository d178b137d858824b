package server

// Tokens to text, as they arrive. Decoding each token alone would lose what depends on its
// neighbours (SentencePiece drops the space before a text's first word; a character may span
// several byte tokens), and decoding everything at every token costs O(n²). As vLLM does, each
// token decodes a few tokens of context, and the new text is what that decoding adds to the
// context's own. Text that could be the start of a stop string is held back until it is known
// not to be one, so that a stream never sends part of a stop string.

import (
	"strings"
	"unicode/utf8"

	"github.com/posformer/posformer/tokenizer"
)

// textStream turns generated tokens into text and cuts it at the first stop string.
type textStream struct {
	tok          tokenizer.Tokenizer
	ids          []int // prompt tail, then the generated tokens
	prefix, read int   // ids[prefix:read] is the context already turned into text
	held         int   // tokens held back because their text ends inside a character
	pending      string
	stops        []string
}

// newTextStream starts after prompt (whose last tokens give the first token its context).
func newTextStream(tok tokenizer.Tokenizer, prompt []int, stops []string) *textStream {
	ctx := prompt[max(0, len(prompt)-5):]
	ids := append([]int(nil), ctx...)
	return &textStream{tok: tok, ids: ids, prefix: 0, read: len(ids), stops: stops}
}

// push adds a token and returns the text now safe to send; stopped reports that a stop string
// was generated (out ends right before it, and the stream is over).
func (t *textStream) push(id int) (out string, stopped bool) {
	t.ids = append(t.ids, id)
	before := t.tok.Decode(t.ids[t.prefix:t.read])
	text := t.tok.Decode(t.ids[t.prefix:])
	if incomplete(text) && t.held < 4 {
		t.held++ // wait for the character's other bytes
		return "", false
	}
	t.held = 0
	n := 0 // the common prefix: all of before, unless decoding in context changed it
	for n < len(before) && n < len(text) && before[n] == text[n] {
		n++
	}
	t.pending += text[n:]
	t.prefix, t.read = t.read, len(t.ids)
	return t.release()
}

// release cuts pending at a stop string, or returns all of it but a tail that may still grow
// into one.
func (t *textStream) release() (string, bool) {
	cut := -1
	for _, s := range t.stops {
		if i := strings.Index(t.pending, s); i >= 0 && (cut < 0 || i < cut) {
			cut = i
		}
	}
	if cut >= 0 {
		out := t.pending[:cut]
		t.pending = ""
		return out, true
	}
	keep := 0
	for _, s := range t.stops {
		for k := min(len(s)-1, len(t.pending)); k > keep; k-- {
			if strings.HasSuffix(t.pending, s[:k]) {
				keep = k
				break
			}
		}
	}
	out := t.pending[:len(t.pending)-keep]
	t.pending = t.pending[len(t.pending)-keep:]
	return out, false
}

// flush returns what is left when generation ends without a stop string: held-back text
// included, an unfinished character as the decoder renders it.
func (t *textStream) flush() string {
	if t.read < len(t.ids) {
		before := t.tok.Decode(t.ids[t.prefix:t.read])
		text := t.tok.Decode(t.ids[t.prefix:])
		n := 0
		for n < len(before) && n < len(text) && before[n] == text[n] {
			n++
		}
		t.pending += text[n:]
		t.prefix, t.read = t.read, len(t.ids)
	}
	out := t.pending
	t.pending = ""
	return out
}

// incomplete reports whether text ends inside a character: a decoder's replacement character
// (Hugging Face byte fallback), or raw bytes that do not yet form one (the byte tokenizer).
func incomplete(text string) bool {
	if strings.HasSuffix(text, "\uFFFD") {
		return true
	}
	// The last character starts at most 3 bytes from the end.
	for i := len(text) - 1; i >= 0 && i >= len(text)-utf8.UTFMax; i-- {
		if utf8.RuneStart(text[i]) {
			return !utf8.FullRuneInString(text[i:])
		}
	}
	return false
}
