package tokenizer

// Pre-tokenizers of Hugging Face tokenizer.json files: they cut normalized
// text into the pieces ("words") that the model then encodes one by one, so
// a merge never crosses a piece boundary. Semantics follow the Rust
// `tokenizers` crate (src/pre_tokenizers and NormalizedString::split).
//
// Split patterns are Oniguruma regexes that use lookahead (GPT-2's
// `\s+(?!\S)`, which keeps the last space of a run for the next word), which
// Go's RE2-based regexp cannot express, so they are compiled with
// github.com/dlclark/regexp2, a backtracking engine with .NET syntax that
// agrees with Oniguruma on the constructs these files use.

import (
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

// piece is a span of text on its way to the model. first marks the piece
// that starts at the beginning of the input, which Metaspace's
// prepend_scheme "first" needs.
type piece struct {
	s     string
	first bool
}

type preTokenizer interface {
	preTokenize(pieces []piece) ([]piece, error)
}

// gpt2Pattern is the split regex of GPT-2's encoder.py, also used by the
// ByteLevel pre-tokenizer: contractions, words with an optional leading
// space, numbers, runs of other symbols, and whitespace, where a run of
// spaces before a word leaves its last space to that word.
const gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

// matcher finds the non-overlapping matches of a pattern, left to right, as
// byte ranges.
type matcher interface {
	find(s string) ([][2]int, error)
}

// literalMatcher matches a fixed string.
type literalMatcher string

func (m literalMatcher) find(s string) ([][2]int, error) {
	var out [][2]int
	if m == "" {
		return nil, nil
	}
	for off := 0; ; {
		i := strings.Index(s[off:], string(m))
		if i < 0 {
			return out, nil
		}
		out = append(out, [2]int{off + i, off + i + len(m)})
		off += i + len(m)
	}
}

// regexMatcher matches an Oniguruma-style regex through regexp2, or GPT-2's pattern by hand
// (fast, gpt2Split).
type regexMatcher struct {
	re   *regexp2.Regexp
	fast func(s string) [][2]int
}

// regexTimeout bounds one match. A backtracking engine can take
// exponential time on a pathological pattern from a corrupt file; the
// patterns real tokenizers use match in microseconds. (A variable so the
// fuzz test can lower it.)
var regexTimeout = 5 * time.Second

func compileRegex(pattern string) (m regexMatcher, err error) {
	defer func() {
		// regexp2 is a port of .NET's engine; an input it did not foresee
		// must not take the program down.
		if r := recover(); r != nil {
			m, err = regexMatcher{}, fmt.Errorf("regex %q: %q", pattern, fmt.Sprint(r))
		}
	}()
	re, err := regexp2.Compile(pattern, regexp2.None)
	if err != nil {
		// regexp2 quotes the pattern raw, newlines included.
		return regexMatcher{}, fmt.Errorf("regex %q: %s", pattern, strings.ReplaceAll(err.Error(), "\n", `\n`))
	}
	re.MatchTimeout = regexTimeout
	m = regexMatcher{re: re}
	if pattern == gpt2Pattern {
		m.fast = gpt2Split
	}
	return m, nil
}

func (m regexMatcher) find(s string) (out [][2]int, err error) {
	if s == "" {
		return nil, nil
	}
	if m.fast != nil {
		return m.fast(s), nil
	}
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("regex %q: %q", m.re.String(), fmt.Sprint(r))
		}
	}()
	// regexp2 reports offsets in runes; keep the byte offset of each rune.
	// Input is valid UTF-8 (Encode replaces invalid bytes first).
	runes := make([]rune, 0, len(s))
	byteAt := make([]int, 0, len(s)+1)
	for i, r := range s {
		runes = append(runes, r)
		byteAt = append(byteAt, i)
	}
	byteAt = append(byteAt, len(s))
	m2, err := m.re.FindRunesMatch(runes)
	for ; m2 != nil && err == nil; m2, err = m.re.FindNextMatch(m2) {
		out = append(out, [2]int{byteAt[m2.Index], byteAt[m2.Index+m2.Length]})
	}
	if err != nil {
		return nil, fmt.Errorf("regex %q: %w", m.re.String(), err)
	}
	return out, nil
}

// funcMatcher matches single characters for which f is true.
type funcMatcher func(rune) bool

func (f funcMatcher) find(s string) ([][2]int, error) {
	var out [][2]int
	for i, r := range s {
		if f(r) {
			out = append(out, [2]int{i, i + utf8.RuneLen(r)})
		}
	}
	return out, nil
}

// splitBehavior says what happens to the matched delimiters, as in the Rust
// crate's SplitDelimiterBehavior.
type splitBehavior int

const (
	removed            splitBehavior = iota // dropped
	isolated                                // pieces of their own
	mergedWithPrevious                      // glued to the end of the previous piece
	mergedWithNext                          // glued to the start of the next piece
	contiguous                              // consecutive delimiters form one piece
)

func parseBehavior(s string) (splitBehavior, error) {
	switch s {
	case "Removed":
		return removed, nil
	case "Isolated":
		return isolated, nil
	case "MergedWithPrevious":
		return mergedWithPrevious, nil
	case "MergedWithNext":
		return mergedWithNext, nil
	case "Contiguous":
		return contiguous, nil
	}
	return 0, fmt.Errorf("unknown split behavior %q (want Removed, Isolated, MergedWithPrevious, MergedWithNext or Contiguous)", s)
}

// split cuts p at the matches of m, following NormalizedString::split.
// invert swaps matches and the text between them.
func split(p piece, m matcher, behavior splitBehavior, invert bool) ([]piece, error) {
	ms, err := m.find(p.s)
	if err != nil {
		return nil, err
	}
	type span struct {
		start, end int
		match      bool
	}
	// The whole text as alternating gaps and matches (empty matches kept,
	// as the Rust crate keeps them; empty pieces are dropped at the end).
	spans := make([]span, 0, 2*len(ms)+1)
	prev := 0
	for _, r := range ms {
		if r[0] > prev {
			spans = append(spans, span{prev, r[0], invert})
		}
		spans = append(spans, span{r[0], r[1], !invert})
		prev = r[1]
	}
	if prev < len(p.s) || len(p.s) == 0 {
		spans = append(spans, span{prev, len(p.s), invert})
	}

	type cut struct {
		start, end int
		drop       bool
	}
	cuts := make([]cut, 0, len(spans))
	switch behavior {
	case removed:
		for _, s := range spans {
			cuts = append(cuts, cut{s.start, s.end, s.match})
		}
	case isolated:
		for _, s := range spans {
			cuts = append(cuts, cut{s.start, s.end, false})
		}
	case contiguous:
		prevMatch := false
		for _, s := range spans {
			if s.match == prevMatch && len(cuts) > 0 {
				cuts[len(cuts)-1].end = s.end
			} else {
				cuts = append(cuts, cut{s.start, s.end, false})
			}
			prevMatch = s.match
		}
	case mergedWithPrevious:
		prevMatch := false
		for _, s := range spans {
			if s.match && !prevMatch && len(cuts) > 0 {
				cuts[len(cuts)-1].end = s.end
			} else {
				cuts = append(cuts, cut{s.start, s.end, false})
			}
			prevMatch = s.match
		}
	case mergedWithNext:
		// The mirror image of mergedWithPrevious: walk from the end.
		prevMatch := false
		for i := len(spans) - 1; i >= 0; i-- {
			s := spans[i]
			if s.match && !prevMatch && len(cuts) > 0 {
				cuts[len(cuts)-1].start = s.start
			} else {
				cuts = append(cuts, cut{s.start, s.end, false})
			}
			prevMatch = s.match
		}
		for i, j := 0, len(cuts)-1; i < j; i, j = i+1, j-1 {
			cuts[i], cuts[j] = cuts[j], cuts[i]
		}
	}
	out := make([]piece, 0, len(cuts))
	for _, c := range cuts {
		if c.drop || c.end <= c.start {
			continue
		}
		out = append(out, piece{s: p.s[c.start:c.end], first: p.first && c.start == 0})
	}
	return out, nil
}

// splitAll applies split to every piece.
func splitAll(pieces []piece, m matcher, behavior splitBehavior, invert bool) ([]piece, error) {
	var out []piece
	for _, p := range pieces {
		ps, err := split(p, m, behavior, invert)
		if err != nil {
			return nil, err
		}
		out = append(out, ps...)
	}
	return out, nil
}

// splitPre is the Split pre-tokenizer: a string or regex pattern.
type splitPre struct {
	m        matcher
	behavior splitBehavior
	invert   bool
}

func (s splitPre) preTokenize(pieces []piece) ([]piece, error) {
	return splitAll(pieces, s.m, s.behavior, s.invert)
}

// byteLevelPre is GPT-2's pre-tokenizer: optionally a leading space, the
// GPT-2 regex split, then every byte spelled as its GPT-2 character.
type byteLevelPre struct {
	addPrefixSpace bool
	re             matcher // nil when use_regex is false
}

func (b byteLevelPre) preTokenize(pieces []piece) ([]piece, error) {
	var out []piece
	for _, p := range pieces {
		if b.addPrefixSpace && !strings.HasPrefix(p.s, " ") {
			p.s = " " + p.s
		}
		ps := []piece{p}
		if b.re != nil {
			var err error
			if ps, err = split(p, b.re, isolated, false); err != nil {
				return nil, err
			}
		}
		for _, q := range ps {
			out = append(out, piece{s: byteLevelEncode(q.s), first: q.first})
		}
	}
	return out, nil
}

// metaspacePre is SentencePiece's convention: spaces become "▁" and a "▁"
// is prepended so the first word looks like every other word.
type metaspacePre struct {
	replacement string
	prepend     string // "always", "first" or "never"
	split       bool
}

func (m metaspacePre) preTokenize(pieces []piece) ([]piece, error) {
	var out []piece
	for _, p := range pieces {
		s := strings.ReplaceAll(p.s, " ", m.replacement)
		if !strings.HasPrefix(s, m.replacement) && (m.prepend == "always" || (m.prepend == "first" && p.first)) {
			s = m.replacement + s
		}
		q := piece{s: s, first: p.first}
		if !m.split {
			out = append(out, q)
			continue
		}
		ps, err := split(q, literalMatcher(m.replacement), mergedWithNext, false)
		if err != nil {
			return nil, err
		}
		out = append(out, ps...)
	}
	return out, nil
}

// sequencePre applies pre-tokenizers in order.
type sequencePre []preTokenizer

func (s sequencePre) preTokenize(pieces []piece) ([]piece, error) {
	var err error
	for _, p := range s {
		if pieces, err = p.preTokenize(pieces); err != nil {
			return nil, err
		}
	}
	return pieces, nil
}

// funcPre splits with a per-character predicate; Digits, Punctuation,
// WhitespaceSplit, CharDelimiterSplit and BertPreTokenizer are all of this
// shape.
type funcPre []struct {
	m        matcher
	behavior splitBehavior
}

func (f funcPre) preTokenize(pieces []piece) ([]piece, error) {
	var err error
	for _, step := range f {
		if pieces, err = splitAll(pieces, step.m, step.behavior, false); err != nil {
			return nil, err
		}
	}
	return pieces, nil
}

// isPunctuation is the Rust crate's is_punc: ASCII punctuation (which
// includes symbols such as '$' and '+') or any Unicode punctuation.
func isPunctuation(r rune) bool {
	if r < 0x80 {
		return (r >= '!' && r <= '/') || (r >= ':' && r <= '@') || (r >= '[' && r <= '`') || (r >= '{' && r <= '~')
	}
	return unicode.IsPunct(r)
}

// isNumeric is Rust's char::is_numeric: the Nd, Nl and No categories.
func isNumeric(r rune) bool { return unicode.IsNumber(r) }

// isSpace is Rust's char::is_whitespace (the Unicode White_Space property).
func isSpace(r rune) bool { return unicode.IsSpace(r) }
