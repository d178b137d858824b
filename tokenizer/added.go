package tokenizer

// Added tokens of Hugging Face tokenizer.json files ("added_tokens"): strings
// such as "<|begin_of_text|>" or Gemma's "\n\n" that are cut out of the text
// before the model sees it and map straight to one id. Matching is
// leftmost-longest, as the Rust crate's aho-corasick automaton does
// (src/tokenizer/added_vocabulary.rs); tokens marked "normalized" are
// matched in normalized text, the others in the raw input.

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

type addedToken struct {
	id                                            int
	content                                       string
	special, singleWord, lstrip, rstrip, normInto bool
}

// addedSplitter finds added tokens in text with a byte trie.
type addedSplitter struct {
	tokens []addedToken
	edges  map[uint64]int32 // node << 8 | byte -> child node
	tokAt  []int32          // node -> index in tokens, or -1
}

func newAddedSplitter() *addedSplitter {
	return &addedSplitter{edges: map[uint64]int32{}, tokAt: []int32{-1}}
}

// add registers content (already normalized when it is matched in
// normalized text) as a spelling of t. Empty spellings are ignored.
func (a *addedSplitter) add(content string, t addedToken) {
	if content == "" {
		return
	}
	node := int32(0)
	for i := 0; i < len(content); i++ {
		key := uint64(node)<<8 | uint64(content[i])
		next, ok := a.edges[key]
		if !ok {
			next = int32(len(a.tokAt))
			a.tokAt = append(a.tokAt, -1)
			a.edges[key] = next
		}
		node = next
	}
	a.tokAt[node] = int32(len(a.tokens))
	a.tokens = append(a.tokens, t)
}

// segment is a span of text that is either an added token (id >= 0) or
// text still to be tokenized (id < 0). first marks the span that starts
// at the beginning of the input.
type segment struct {
	s     string
	id    int
	first bool
}

// split cuts s at the added tokens it contains. With skipSpecial, special
// tokens are still matched (so nothing inside one is matched either) but
// left in the text, which is what the Rust crate's split_special_tokens
// (encode_special_tokens) does.
func (a *addedSplitter) split(s string, first, skipSpecial bool) []segment {
	if len(a.tokens) == 0 {
		return []segment{{s: s, id: -1, first: first}}
	}
	var out []segment
	done := 0 // end of the text already handed out
	for i := 0; i < len(s); {
		start, stop, tok := i, -1, -1
		node := int32(0)
		for j := i; j < len(s); j++ {
			next, ok := a.edges[uint64(node)<<8|uint64(s[j])]
			if !ok {
				break
			}
			node = next
			if t := a.tokAt[node]; t >= 0 {
				stop, tok = j+1, int(t)
			}
		}
		if tok < 0 {
			i++
			continue
		}
		i = stop
		t := a.tokens[tok]
		if skipSpecial && t.special {
			continue
		}
		if t.singleWord && (endsWithWordChar(s[:start]) || startsWithWordChar(s[stop:])) {
			continue
		}
		if t.lstrip {
			start = max(len(strings.TrimRightFunc(s[:start], unicode.IsSpace)), done)
		}
		if t.rstrip {
			stop = len(s) - len(strings.TrimLeftFunc(s[stop:], unicode.IsSpace))
			i = stop
		}
		if start > done {
			out = append(out, segment{s: s[done:start], id: -1, first: first && done == 0})
		}
		out = append(out, segment{s: s[start:stop], id: t.id, first: first && start == 0})
		done = stop
	}
	if done < len(s) {
		out = append(out, segment{s: s[done:], id: -1, first: first && done == 0})
	}
	return out
}

// isWordChar is the Rust crate's notion of a word character for
// single_word tokens.
func isWordChar(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r)
}

func endsWithWordChar(s string) bool {
	r, size := utf8.DecodeLastRuneInString(s)
	return size > 0 && isWordChar(r)
}

func startsWithWordChar(s string) bool {
	for _, r := range s {
		return isWordChar(r)
	}
	return false
}
