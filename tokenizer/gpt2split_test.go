package tokenizer

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// gpt2Split gives the backtracking engine's matches of GPT-2's pattern: on this package's own
// source, and on random strings of letters, numbers, spaces of every kind Unicode has (the
// no-break and line separators, NEL, the ideographic space), punctuation, combining marks,
// emoji, controls and apostrophes that start and do not start contractions.
func TestGPT2SplitMatchesRegex(t *testing.T) {
	m, err := compileRegex(gpt2Pattern)
	if err != nil {
		t.Fatal(err)
	}
	if m.fast == nil {
		t.Fatal("GPT-2's pattern compiled without its hand-written matcher")
	}
	slow := regexMatcher{re: m.re}
	train, heldOut := goSource(t)
	texts := []string{string(train), string(heldOut), "", " ", "  ", "x ", "x  ", " x", "  x", "\n", "\n x", "'s", "''s", " 's",
		"don't we'll they're I've I'm he'd", "'S", "a\u00a0b", "1\u2028 2", "\u3000\u3000x", "end  "}
	pool := []rune{' ', ' ', ' ', '\n', '\t', '\r', '\v', '\f', 0x85, 0xa0, 0x1680, 0x2000, 0x2028, 0x2029, 0x202f, 0x3000,
		'a', 'Z', 's', 't', 'r', 'e', 'v', 'm', 'l', 'd', 'é', 'ж', '中', '0', '٣', 'Ⅻ', '½', '\'', '\'', '"', '.', '-', '_',
		0x301, 0x200d, 0xfeff, '😀', 0, 0x1b, '$'}
	rng := rand.New(rand.NewPCG(17, 18))
	for range 3000 {
		var b strings.Builder
		for range rng.IntN(40) {
			b.WriteRune(pool[rng.IntN(len(pool))])
		}
		texts = append(texts, b.String())
	}
	for _, s := range texts {
		want, err := slow.find(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := gpt2Split(s); !slices.Equal(got, want) {
			for i := range min(len(got), len(want)) {
				if got[i] != want[i] {
					t.Fatalf("%q: match %d is %q, the regex's %q", s, i, s[got[i][0]:got[i][1]], s[want[i][0]:want[i][1]])
				}
			}
			t.Fatalf("%q: %d matches, the regex %d", s, len(got), len(want))
		}
	}
}

// BenchmarkGPT2Split is the pre-tokenizer on this package's source, by hand and by the regex.
func BenchmarkGPT2Split(b *testing.B) {
	train, _ := goSource(b)
	m, err := compileRegex(gpt2Pattern)
	if err != nil {
		b.Fatal(err)
	}
	s := string(train)
	b.Run("hand", func(b *testing.B) {
		b.SetBytes(int64(len(s)))
		for b.Loop() {
			gpt2Split(s)
		}
	})
	b.Run("regex", func(b *testing.B) {
		slow := regexMatcher{re: m.re}
		b.SetBytes(int64(len(s)))
		for b.Loop() {
			if _, err := slow.find(s); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// FuzzGPT2Split: on any valid UTF-8 text, the hand-written matcher gives the regex's matches.
func FuzzGPT2Split(f *testing.F) {
	for _, s := range []string{"don't  stop\n\n x", "a\u00a0b 1\u2028 2", "'s 're", "\t \u3000x.. ,y"} {
		f.Add(s)
	}
	m, err := compileRegex(gpt2Pattern)
	if err != nil {
		f.Fatal(err)
	}
	slow := regexMatcher{re: m.re}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return // Encode replaces invalid bytes before pre-tokenizing
		}
		want, err := slow.find(s)
		if err != nil {
			t.Skip(err)
		}
		if got := gpt2Split(s); !slices.Equal(got, want) {
			t.Fatalf("%q: %v, the regex %v", s, got, want)
		}
	})
}
