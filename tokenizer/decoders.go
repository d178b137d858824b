package tokenizer

// Decoders of Hugging Face tokenizer.json files: they turn the token strings
// of a sequence of ids back into text, undoing the spelling conventions of
// the pre-tokenizer ("Ġ" for a byte-level space, "▁" for a SentencePiece
// space, "<0xE6>" byte tokens, "##" word-piece continuations). Each step maps
// a list of strings to a list of strings, and the results are concatenated.
// Semantics follow the Rust `tokenizers` crate (src/decoders).

import (
	"strings"
	"unicode/utf8"
)

type decoder interface {
	decodeChain(tokens []string) ([]string, error)
}

// byteLevelDec maps GPT-2 byte characters back to bytes and the bytes to
// text, replacing invalid UTF-8 as the Rust crate does.
type byteLevelDec struct{}

func (byteLevelDec) decodeChain(tokens []string) ([]string, error) {
	var b []byte
	for _, t := range tokens {
		b = byteLevelBytes(b, t)
	}
	return []string{lossyUTF8(b)}, nil
}

// metaspaceDec turns "▁" back into spaces. When the pre-tokenizer
// prepended one, the first token's "▁" is dropped instead.
type metaspaceDec struct {
	replacement rune
	prepend     bool
}

func (m metaspaceDec) decodeChain(tokens []string) ([]string, error) {
	out := make([]string, len(tokens))
	for i, t := range tokens {
		out[i] = strings.Map(func(r rune) rune {
			if r != m.replacement {
				return r
			}
			if i == 0 && m.prepend {
				return -1
			}
			return ' '
		}, t)
	}
	return out, nil
}

// replaceDec replaces a pattern in every token.
type replaceDec struct {
	m       matcher
	content string
}

func (r replaceDec) decodeChain(tokens []string) ([]string, error) {
	out := make([]string, len(tokens))
	for i, t := range tokens {
		var err error
		if out[i], err = replaceAll(t, r.m, r.content); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// byteFallbackDec joins runs of "<0xXX>" tokens into the text their bytes
// spell; a run that is not valid UTF-8 becomes one U+FFFD per byte, as in
// the Rust crate.
type byteFallbackDec struct{}

func (byteFallbackDec) decodeChain(tokens []string) ([]string, error) {
	var out []string
	var run []byte
	flush := func() {
		if len(run) == 0 {
			return
		}
		if utf8.Valid(run) {
			out = append(out, string(run))
		} else {
			for range run {
				out = append(out, "\uFFFD")
			}
		}
		run = run[:0]
	}
	for _, t := range tokens {
		if b, ok := parseByteToken(t); ok {
			run = append(run, b)
			continue
		}
		flush()
		out = append(out, t)
	}
	flush()
	return out, nil
}

// parseByteToken reads a "<0xXX>" token.
func parseByteToken(t string) (byte, bool) {
	if len(t) != 6 || !strings.HasPrefix(t, "<0x") || t[5] != '>' {
		return 0, false
	}
	var v byte
	for _, c := range []byte(t[3:5]) {
		v <<= 4
		switch {
		case c >= '0' && c <= '9':
			v |= c - '0'
		case c >= 'A' && c <= 'F':
			v |= c - 'A' + 10
		case c >= 'a' && c <= 'f':
			v |= c - 'a' + 10
		default:
			return 0, false
		}
	}
	return v, true
}

// fuseDec joins all tokens into one.
type fuseDec struct{}

func (fuseDec) decodeChain(tokens []string) ([]string, error) {
	return []string{strings.Join(tokens, "")}, nil
}

// stripDec removes up to start leading and stop trailing copies of a
// character from every token (Llama 2 uses it to drop the space that
// stood for its prepended "▁").
type stripDec struct {
	content     rune
	start, stop int
}

func (s stripDec) decodeChain(tokens []string) ([]string, error) {
	out := make([]string, len(tokens))
	for i, t := range tokens {
		r := []rune(t)
		lo := 0
		for lo < s.start && lo < len(r) && r[lo] == s.content {
			lo++
		}
		hi := len(r)
		for n := 0; n < s.stop && hi > lo && r[hi-1] == s.content; n++ {
			hi--
		}
		out[i] = string(r[lo:hi])
	}
	return out, nil
}

// wordPieceDec joins word pieces: a piece with the continuation prefix is
// glued to the previous one, others get a space.
type wordPieceDec struct {
	prefix  string
	cleanup bool
}

func (w wordPieceDec) decodeChain(tokens []string) ([]string, error) {
	out := make([]string, len(tokens))
	for i, t := range tokens {
		if i > 0 {
			if strings.HasPrefix(t, w.prefix) {
				t = strings.Replace(t, w.prefix, "", 1)
			} else {
				t = " " + t
			}
		}
		if w.cleanup {
			t = cleanupTokenization(t)
		}
		out[i] = t
	}
	return out, nil
}

// cleanupTokenization removes the spaces BERT-style decoding leaves before
// punctuation and contractions.
func cleanupTokenization(s string) string {
	// One replacement after another, as the Rust crate does.
	for _, r := range [][2]string{{" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"},
		{" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}} {
		s = strings.ReplaceAll(s, r[0], r[1])
	}
	return s
}

// bpeDec replaces the end-of-word suffix by a space (none after the last
// token).
type bpeDec struct{ suffix string }

func (b bpeDec) decodeChain(tokens []string) ([]string, error) {
	if b.suffix == "" {
		return tokens, nil
	}
	out := make([]string, len(tokens))
	for i, t := range tokens {
		sep := " "
		if i == len(tokens)-1 {
			sep = ""
		}
		out[i] = strings.ReplaceAll(t, b.suffix, sep)
	}
	return out, nil
}

type sequenceDec []decoder

func (q sequenceDec) decodeChain(tokens []string) ([]string, error) {
	var err error
	for _, d := range q {
		if tokens, err = d.decodeChain(tokens); err != nil {
			return nil, err
		}
	}
	return tokens, nil
}
