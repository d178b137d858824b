package tokenizer

// Normalizers of Hugging Face tokenizer.json files: text-to-text rewrites
// applied before pre-tokenization (Unicode normalization, lowercasing,
// SentencePiece's "▁" for spaces, BERT's cleaning). Semantics follow the
// Rust `tokenizers` crate (src/normalizers).

import (
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

type normalizer interface {
	normalize(s string) (string, error)
}

// unicodeNorm is NFC, NFD, NFKC or NFKD (Unicode Standard Annex #15).
type unicodeNorm struct{ form norm.Form }

func (u unicodeNorm) normalize(s string) (string, error) { return u.form.String(s), nil }

type lowercaseNorm struct{}

func (lowercaseNorm) normalize(s string) (string, error) { return strings.ToLower(s), nil }

// stripNorm removes leading and/or trailing whitespace.
type stripNorm struct{ left, right bool }

func (n stripNorm) normalize(s string) (string, error) {
	if n.left {
		s = strings.TrimLeftFunc(s, unicode.IsSpace)
	}
	if n.right {
		s = strings.TrimRightFunc(s, unicode.IsSpace)
	}
	return s, nil
}

// stripAccentsNorm removes combining marks; it is meant to follow NFD, which
// splits "é" into "e" and a combining acute accent.
type stripAccentsNorm struct{}

func (stripAccentsNorm) normalize(s string) (string, error) { return dropMarks(s, unicode.M), nil }

// dropMarks deletes the characters of class.
func dropMarks(s string, class *unicode.RangeTable) string {
	return strings.Map(func(r rune) rune {
		if unicode.Is(class, r) {
			return -1
		}
		return r
	}, s)
}

// prependNorm prepends a string to non-empty text (Llama 2 uses it to add
// SentencePiece's "▁" in front of the first word).
type prependNorm struct{ prefix string }

func (p prependNorm) normalize(s string) (string, error) {
	if s == "" {
		return s, nil
	}
	return p.prefix + s, nil
}

// replaceNorm replaces every match of a string or regex pattern.
type replaceNorm struct {
	m       matcher
	content string
}

func (r replaceNorm) normalize(s string) (string, error) {
	return replaceAll(s, r.m, r.content)
}

func replaceAll(s string, m matcher, content string) (string, error) {
	ms, err := m.find(s)
	if err != nil || len(ms) == 0 {
		return s, err
	}
	var b strings.Builder
	prev := 0
	for _, r := range ms {
		b.WriteString(s[prev:r[0]])
		b.WriteString(content)
		prev = r[1]
	}
	b.WriteString(s[prev:])
	return b.String(), nil
}

type sequenceNorm []normalizer

func (q sequenceNorm) normalize(s string) (string, error) {
	var err error
	for _, n := range q {
		if s, err = n.normalize(s); err != nil {
			return "", err
		}
	}
	return s, nil
}

// bertNorm is BERT's BasicTokenizer cleanup (Devlin et al. 2019, and
// google-research/bert tokenization.py): drop control characters, map
// whitespace to spaces, put spaces around CJK ideographs so each becomes a
// word, strip accents and lowercase.
type bertNorm struct {
	cleanText, chineseChars, stripAccents, lowercase bool
}

func (b bertNorm) normalize(s string) (string, error) {
	if b.cleanText {
		s = strings.Map(func(r rune) rune {
			switch {
			case r == 0 || r == 0xFFFD:
				return -1
			case r == '\t' || r == '\n' || r == '\r':
				return ' '
			case unicode.Is(unicode.C, r):
				return -1
			case unicode.IsSpace(r):
				return ' '
			}
			return r
		}, s)
	}
	if b.chineseChars {
		var sb strings.Builder
		for _, r := range s {
			if isChineseChar(r) {
				sb.WriteByte(' ')
				sb.WriteRune(r)
				sb.WriteByte(' ')
			} else {
				sb.WriteRune(r)
			}
		}
		s = sb.String()
	}
	if b.stripAccents {
		// BERT drops only nonspacing marks (Mn), StripAccents all marks.
		s = dropMarks(norm.NFD.String(s), unicode.Mn)
	}
	if b.lowercase {
		s = strings.ToLower(s)
	}
	return s, nil
}

// isChineseChar reports whether r is in a CJK Unified Ideographs block, as
// BERT defines it (Japanese kana and Hangul are not included).
func isChineseChar(r rune) bool {
	return (r >= 0x4E00 && r <= 0x9FFF) || (r >= 0x3400 && r <= 0x4DBF) ||
		(r >= 0x20000 && r <= 0x2A6DF) || (r >= 0x2A700 && r <= 0x2B73F) ||
		(r >= 0x2B740 && r <= 0x2B81F) || (r >= 0x2B820 && r <= 0x2CEAF) ||
		(r >= 0xF900 && r <= 0xFAFF) || (r >= 0x2F800 && r <= 0x2FA1F)
}
