package tokenizer

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// gpt2Split is GPT-2's pre-tokenizer pattern (gpt2Pattern) matched by hand, the same matches as
// the backtracking engine gives, ten times faster or more (it is most of a BPE encoding's time
// there). At each position the pattern's alternatives are tried in order, as a leftmost-first
// engine does:
//
//	's|'t|'re|'ve|'m|'ll|'d    a contraction
//	 ?\p{L}+                   letters, after at most one space (U+0020)
//	 ?\p{N}+                   digits and other numbers, likewise
//	 ?[^\s\p{L}\p{N}]+         anything else, likewise
//	\s+(?!\S)                  whitespace, leaving its last character to a word after it
//	\s+                        whitespace
//
// Every character is one of letter, number, space or other, so the matches tile s. \s is
// unicode.IsSpace, \p{L} unicode.IsLetter and \p{N} unicode.IsNumber, as in regexp2.
// TestGPT2SplitMatchesRegex checks it against the engine.
func gpt2Split(s string) [][2]int {
	out := make([][2]int, 0, len(s)/4+1)
	for i := 0; i < len(s); {
		end := gpt2Next(s, i)
		out = append(out, [2]int{i, end})
		i = end
	}
	return out
}

// gpt2Class is a character's class in the pattern.
type gpt2Class int

const (
	gpt2Other gpt2Class = iota
	gpt2Letter
	gpt2Number
	gpt2Space
)

func gpt2ClassOf(r rune) gpt2Class {
	switch {
	case r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'):
		return gpt2Letter
	case r < utf8.RuneSelf && r >= '0' && r <= '9':
		return gpt2Number
	case unicode.IsSpace(r):
		return gpt2Space
	case unicode.IsLetter(r):
		return gpt2Letter
	case unicode.IsNumber(r):
		return gpt2Number
	}
	return gpt2Other
}

var gpt2Contractions = []string{"s", "t", "re", "ve", "m", "ll", "d"}

// gpt2Next is the end of the match that starts at i.
func gpt2Next(s string, i int) int {
	r, _ := utf8.DecodeRuneInString(s[i:])
	if r == '\'' {
		for _, c := range gpt2Contractions {
			if strings.HasPrefix(s[i+1:], c) {
				return i + 1 + len(c)
			}
		}
	}
	c := gpt2ClassOf(r)
	start := i
	if r == ' ' && i+1 < len(s) {
		// One space may lead a word of any class but space.
		r2, _ := utf8.DecodeRuneInString(s[i+1:])
		if c2 := gpt2ClassOf(r2); c2 != gpt2Space {
			c, start = c2, i+1
		}
	}
	if c != gpt2Space {
		return gpt2Run(s, start, c)
	}
	// Whitespace: the whole run if it ends the text or is one character, else all but its last
	// character (which then leads the next word).
	end, last, count := i, i, 0
	for end < len(s) {
		r, n := utf8.DecodeRuneInString(s[end:])
		if !unicode.IsSpace(r) {
			break
		}
		last, end, count = end, end+n, count+1
	}
	if end == len(s) || count == 1 {
		return end
	}
	return last
}

// gpt2Run is the end of the run of characters of class c from i.
func gpt2Run(s string, i int, c gpt2Class) int {
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if gpt2ClassOf(r) != c {
			break
		}
		i += n
	}
	return i
}
