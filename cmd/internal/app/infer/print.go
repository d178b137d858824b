package infer

import (
	"fmt"
	"io"
	"strings"

	"github.com/posformer/posformer/tokenizer"
)

// printText streams the text of the generated tokens. Each step decodes the prompt and every
// token so far and prints what is new: decoding tokens one by one would lose what depends on
// their neighbours (SentencePiece drops the space before a sequence's first word; a character
// may span tokens, and is held back while its bytes are incomplete).
func printText(out io.Writer, tok tokenizer.Tokenizer, prompt []int) func(int) {
	// Incremental detokenization over a sliding window (as vLLM does): the new text is the
	// decoding of ids[prefix:] minus that of ids[prefix:read], so a piece's leading space,
	// which a SentencePiece decoder drops at the start of a text, survives, and each token
	// costs a few tokens' decoding rather than the whole sequence's.
	ids := append([]int(nil), prompt...)
	prefix, read := max(0, len(ids)-5), len(ids)
	held := 0
	return func(t int) {
		ids = append(ids, t)
		before := tok.Decode(ids[prefix:read])
		text := tok.Decode(ids[prefix:])
		if strings.HasSuffix(text, "\uFFFD") && held < 4 {
			held++ // an incomplete UTF-8 character: wait for its other bytes
			return
		}
		held = 0
		n := 0 // the common prefix: all of before, unless decoding in context changed it
		for n < len(before) && n < len(text) && before[n] == text[n] {
			n++
		}
		fmt.Fprint(out, text[n:])
		prefix, read = read, len(ids)
	}
}
