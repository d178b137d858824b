package tokenizer

// Parsing of Hugging Face tokenizer.json files into our pipeline. The format
// is the serialization of the Rust `tokenizers` crate: each component is an
// object with a "type" and that type's options, and Sequence types nest
// lists of components. Unknown types are errors naming the type, never
// silently skipped, since a skipped step would give wrong ids.

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// component holds the options of any normalizer, pre-tokenizer, decoder or
// post-processor; each type reads the fields it knows.
type component struct {
	Type string `json:"type"`

	// Sequences.
	Normalizers   []json.RawMessage `json:"normalizers"`
	Pretokenizers []json.RawMessage `json:"pretokenizers"`
	Decoders      []json.RawMessage `json:"decoders"`
	Processors    []json.RawMessage `json:"processors"`

	// Normalizers.
	Prepend            string   `json:"prepend"`
	Pattern            *pattern `json:"pattern"`
	Content            *string  `json:"content"`
	StripLeft          bool     `json:"strip_left"`
	StripRight         bool     `json:"strip_right"`
	CleanText          *bool    `json:"clean_text"`
	HandleChineseChars *bool    `json:"handle_chinese_chars"`
	StripAccents       *bool    `json:"strip_accents"`
	Lowercase          *bool    `json:"lowercase"`

	// Pre-tokenizers.
	AddPrefixSpace   *bool   `json:"add_prefix_space"`
	UseRegex         *bool   `json:"use_regex"`
	Behavior         string  `json:"behavior"`
	Invert           bool    `json:"invert"`
	Replacement      *string `json:"replacement"`
	PrependScheme    string  `json:"prepend_scheme"`
	Split            *bool   `json:"split"`
	IndividualDigits bool    `json:"individual_digits"`
	Delimiter        string  `json:"delimiter"`

	// Decoders.
	Start   int     `json:"start"`
	Stop    int     `json:"stop"`
	Prefix  *string `json:"prefix"`
	Cleanup *bool   `json:"cleanup"`
	Suffix  *string `json:"suffix"`

	// Post-processors.
	Single        []templatePiece                `json:"single"`
	SpecialTokens map[string]struct{ IDs []int } `json:"special_tokens"`
	Sep           json.RawMessage                `json:"sep"`
	Cls           json.RawMessage                `json:"cls"`
}

// pattern is {"String": "..."} or {"Regex": "..."}.
type pattern struct {
	String *string `json:"String"`
	Regex  *string `json:"Regex"`
}

type templatePiece struct {
	SpecialToken *struct {
		ID string `json:"id"`
	} `json:"SpecialToken"`
	Sequence *struct {
		ID string `json:"id"`
	} `json:"Sequence"`
}

func (p *pattern) matcher() (matcher, error) {
	switch {
	case p == nil:
		return nil, errors.New("missing \"pattern\"")
	case p.String != nil:
		return literalMatcher(*p.String), nil
	case p.Regex != nil:
		return compileRegex(*p.Regex)
	}
	return nil, errors.New("\"pattern\" has neither \"String\" nor \"Regex\"")
}

// parseComponent decodes raw into a component; ok is false for null.
func parseComponent(raw json.RawMessage) (c component, ok bool, err error) {
	if len(raw) == 0 || string(raw) == "null" {
		return c, false, nil
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return c, false, err
	}
	return c, true, nil
}

func orDefault(b *bool, def bool) bool {
	if b == nil {
		return def
	}
	return *b
}

func buildNormalizer(raw json.RawMessage) (normalizer, error) {
	c, ok, err := parseComponent(raw)
	if !ok || err != nil {
		return nil, err
	}
	switch c.Type {
	case "NFC":
		return unicodeNorm{norm.NFC}, nil
	case "NFD":
		return unicodeNorm{norm.NFD}, nil
	case "NFKC":
		return unicodeNorm{norm.NFKC}, nil
	case "NFKD":
		return unicodeNorm{norm.NFKD}, nil
	case "Lowercase":
		return lowercaseNorm{}, nil
	case "Strip":
		return stripNorm{c.StripLeft, c.StripRight}, nil
	case "StripAccents":
		return stripAccentsNorm{}, nil
	case "Prepend":
		return prependNorm{c.Prepend}, nil
	case "Replace":
		m, err := c.Pattern.matcher()
		if err != nil {
			return nil, fmt.Errorf("Replace normalizer: %w", err)
		}
		return replaceNorm{m, deref(c.Content)}, nil
	case "BertNormalizer":
		lower := orDefault(c.Lowercase, true)
		return bertNorm{
			cleanText:    orDefault(c.CleanText, true),
			chineseChars: orDefault(c.HandleChineseChars, true),
			stripAccents: orDefault(c.StripAccents, lower),
			lowercase:    lower,
		}, nil
	case "Sequence":
		var seq sequenceNorm
		for i, r := range c.Normalizers {
			n, err := buildNormalizer(r)
			if err != nil {
				return nil, fmt.Errorf("normalizer %d of Sequence: %w", i, err)
			}
			if n != nil {
				seq = append(seq, n)
			}
		}
		return seq, nil
	case "Precompiled":
		return nil, errors.New("normalizer \"Precompiled\" (a SentencePiece character map) is not supported")
	}
	return nil, fmt.Errorf("unknown normalizer type %q", c.Type)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func buildPreTokenizer(raw json.RawMessage) (preTokenizer, error) {
	c, ok, err := parseComponent(raw)
	if !ok || err != nil {
		return nil, err
	}
	switch c.Type {
	case "ByteLevel":
		b := byteLevelPre{addPrefixSpace: orDefault(c.AddPrefixSpace, true)}
		if orDefault(c.UseRegex, true) {
			if b.re, err = compileRegex(gpt2Pattern); err != nil {
				return nil, err
			}
		}
		return b, nil
	case "Split":
		m, err := c.Pattern.matcher()
		if err != nil {
			return nil, fmt.Errorf("Split pre-tokenizer: %w", err)
		}
		beh, err := parseBehavior(c.Behavior)
		if err != nil {
			return nil, fmt.Errorf("Split pre-tokenizer: %w", err)
		}
		return splitPre{m, beh, c.Invert}, nil
	case "Metaspace":
		rep := "▁"
		if c.Replacement != nil {
			rep = *c.Replacement
		}
		if utf8.RuneCountInString(rep) != 1 {
			return nil, fmt.Errorf("Metaspace pre-tokenizer: replacement %q must be one character", rep)
		}
		scheme, err := prependScheme(c)
		if err != nil {
			return nil, fmt.Errorf("Metaspace pre-tokenizer: %w", err)
		}
		return metaspacePre{replacement: rep, prepend: scheme, split: orDefault(c.Split, true)}, nil
	case "Digits":
		beh := contiguous
		if c.IndividualDigits {
			beh = isolated
		}
		return funcPre{{funcMatcher(isNumeric), beh}}, nil
	case "Punctuation":
		beh := isolated
		if c.Behavior != "" {
			if beh, err = parseBehavior(c.Behavior); err != nil {
				return nil, fmt.Errorf("Punctuation pre-tokenizer: %w", err)
			}
		}
		return funcPre{{funcMatcher(isPunctuation), beh}}, nil
	case "WhitespaceSplit":
		return funcPre{{funcMatcher(isSpace), removed}}, nil
	case "Whitespace":
		re, err := compileRegex(`\w+|[^\w\s]+`)
		if err != nil {
			return nil, err
		}
		return splitPre{re, removed, true}, nil
	case "BertPreTokenizer":
		return funcPre{{funcMatcher(isSpace), removed}, {funcMatcher(isPunctuation), isolated}}, nil
	case "CharDelimiterSplit":
		r := []rune(c.Delimiter)
		if len(r) != 1 {
			return nil, fmt.Errorf("CharDelimiterSplit pre-tokenizer: delimiter %q must be one character", c.Delimiter)
		}
		return funcPre{{literalMatcher(c.Delimiter), removed}}, nil
	case "Sequence":
		var seq sequencePre
		for i, r := range c.Pretokenizers {
			p, err := buildPreTokenizer(r)
			if err != nil {
				return nil, fmt.Errorf("pre-tokenizer %d of Sequence: %w", i, err)
			}
			if p != nil {
				seq = append(seq, p)
			}
		}
		return seq, nil
	}
	return nil, fmt.Errorf("unknown pre-tokenizer type %q", c.Type)
}

// prependScheme reads Metaspace's prepend_scheme, or the older
// add_prefix_space flag it replaced.
func prependScheme(c component) (string, error) {
	switch c.PrependScheme {
	case "always", "first", "never":
		return c.PrependScheme, nil
	case "":
		if orDefault(c.AddPrefixSpace, true) {
			return "always", nil
		}
		return "never", nil
	}
	return "", fmt.Errorf("unknown prepend_scheme %q (want always, first or never)", c.PrependScheme)
}

func buildDecoder(raw json.RawMessage) (decoder, error) {
	c, ok, err := parseComponent(raw)
	if !ok || err != nil {
		return nil, err
	}
	switch c.Type {
	case "ByteLevel":
		return byteLevelDec{}, nil
	case "Metaspace":
		rep := "▁"
		if c.Replacement != nil {
			rep = *c.Replacement
		}
		r := []rune(rep)
		if len(r) != 1 {
			return nil, fmt.Errorf("Metaspace decoder: replacement %q must be one character", rep)
		}
		scheme, err := prependScheme(c)
		if err != nil {
			return nil, fmt.Errorf("Metaspace decoder: %w", err)
		}
		return metaspaceDec{replacement: r[0], prepend: scheme != "never"}, nil
	case "Replace":
		m, err := c.Pattern.matcher()
		if err != nil {
			return nil, fmt.Errorf("Replace decoder: %w", err)
		}
		return replaceDec{m, deref(c.Content)}, nil
	case "ByteFallback":
		return byteFallbackDec{}, nil
	case "Fuse":
		return fuseDec{}, nil
	case "Strip":
		r := []rune(deref(c.Content))
		if len(r) != 1 {
			return nil, fmt.Errorf("Strip decoder: content %q must be one character", deref(c.Content))
		}
		if c.Start < 0 || c.Stop < 0 {
			return nil, fmt.Errorf("Strip decoder: start %d and stop %d must be >= 0", c.Start, c.Stop)
		}
		return stripDec{r[0], c.Start, c.Stop}, nil
	case "WordPiece":
		prefix := "##"
		if c.Prefix != nil {
			prefix = *c.Prefix
		}
		return wordPieceDec{prefix: prefix, cleanup: orDefault(c.Cleanup, true)}, nil
	case "BPEDecoder":
		suffix := "</w>"
		if c.Suffix != nil {
			suffix = *c.Suffix
		}
		return bpeDec{suffix}, nil
	case "Sequence":
		var seq sequenceDec
		for i, r := range c.Decoders {
			d, err := buildDecoder(r)
			if err != nil {
				return nil, fmt.Errorf("decoder %d of Sequence: %w", i, err)
			}
			if d != nil {
				seq = append(seq, d)
			}
		}
		return seq, nil
	}
	return nil, fmt.Errorf("unknown decoder type %q", c.Type)
}

// postProcessor adds the special tokens of a single sequence (BOS, EOS,
// [CLS] ... [SEP]) when encoding with AddSpecial.
type postProcessor func(ids []int) []int

func buildPostProcessor(raw json.RawMessage) (postProcessor, error) {
	c, ok, err := parseComponent(raw)
	if !ok || err != nil {
		return nil, err
	}
	switch c.Type {
	case "TemplateProcessing":
		var before, after []int
		seen := false
		for i, p := range c.Single {
			switch {
			case p.Sequence != nil:
				if p.Sequence.ID != "A" {
					return nil, fmt.Errorf("TemplateProcessing: single template piece %d names sequence %q, want \"A\"", i, p.Sequence.ID)
				}
				if seen {
					return nil, errors.New("TemplateProcessing: single template uses sequence A twice")
				}
				seen = true
			case p.SpecialToken != nil:
				st, ok := c.SpecialTokens[p.SpecialToken.ID]
				if !ok {
					return nil, fmt.Errorf("TemplateProcessing: special token %q is not in \"special_tokens\"", p.SpecialToken.ID)
				}
				if seen {
					after = append(after, st.IDs...)
				} else {
					before = append(before, st.IDs...)
				}
			default:
				return nil, fmt.Errorf("TemplateProcessing: single template piece %d is neither Sequence nor SpecialToken", i)
			}
		}
		if err := checkIDs(before, after); err != nil {
			return nil, fmt.Errorf("TemplateProcessing: %w", err)
		}
		return func(ids []int) []int {
			return append(append(append([]int{}, before...), ids...), after...)
		}, nil
	case "BertProcessing", "RobertaProcessing":
		cls, err := tokenPair(c.Cls)
		if err != nil {
			return nil, fmt.Errorf("%s: \"cls\": %w", c.Type, err)
		}
		sep, err := tokenPair(c.Sep)
		if err != nil {
			return nil, fmt.Errorf("%s: \"sep\": %w", c.Type, err)
		}
		return func(ids []int) []int {
			return append(append([]int{cls}, ids...), sep)
		}, nil
	case "ByteLevel":
		// Only adjusts offsets, which we do not report.
		return func(ids []int) []int { return ids }, nil
	case "Sequence":
		var steps []postProcessor
		for i, r := range c.Processors {
			p, err := buildPostProcessor(r)
			if err != nil {
				return nil, fmt.Errorf("post-processor %d of Sequence: %w", i, err)
			}
			if p != nil {
				steps = append(steps, p)
			}
		}
		return func(ids []int) []int {
			for _, s := range steps {
				ids = s(ids)
			}
			return ids
		}, nil
	}
	return nil, fmt.Errorf("unknown post-processor type %q", c.Type)
}

func checkIDs(lists ...[]int) error {
	for _, l := range lists {
		for _, id := range l {
			if id < 0 || id > maxTokenID {
				return fmt.Errorf("id %d out of range 0..%d", id, maxTokenID)
			}
		}
	}
	return nil
}

// tokenPair reads ["[CLS]", 101] and returns the id.
func tokenPair(raw json.RawMessage) (int, error) {
	var pair []any
	if err := json.Unmarshal(raw, &pair); err != nil {
		return 0, err
	}
	if len(pair) != 2 {
		return 0, fmt.Errorf("want [token, id], got %s", raw)
	}
	f, ok := pair[1].(float64)
	if !ok || f != math.Trunc(f) || f < 0 || f > maxTokenID {
		return 0, fmt.Errorf("want [token, id] with an id in 0..%d, got %s", maxTokenID, raw)
	}
	return int(f), nil
}

// maxTokenID bounds ids so a corrupt file cannot ask for absurd tables;
// the largest real vocabularies have a few hundred thousand tokens.
const maxTokenID = 1<<24 - 1

// modelJSON is the "model" section.
type modelJSON struct {
	Type                    string    `json:"type"`
	Vocab                   vocabJSON `json:"vocab"`
	Merges                  *merges   `json:"merges"`
	UnkToken                *string   `json:"unk_token"`
	ContinuingSubwordPrefix *string   `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string   `json:"end_of_word_suffix"`
	FuseUnk                 bool      `json:"fuse_unk"`
	ByteFallback            bool      `json:"byte_fallback"`
	IgnoreMerges            bool      `json:"ignore_merges"`
	MaxInputCharsPerWord    *int      `json:"max_input_chars_per_word"`
}

func buildModel(m *modelJSON) (model, error) {
	if m == nil {
		return nil, errors.New("no \"model\" section")
	}
	typ := m.Type
	if typ == "" {
		// Files written before "type" was serialized: guess as the Rust
		// crate's untagged deserializer does.
		switch {
		case m.Merges != nil:
			typ = "BPE"
		case m.ContinuingSubwordPrefix != nil:
			typ = "WordPiece"
		default:
			typ = "WordLevel"
		}
	}
	if typ == "Unigram" || m.Vocab.isList {
		return nil, errors.New("model type \"Unigram\" is not supported (supported: BPE, WordPiece, WordLevel)")
	}
	vocab := m.Vocab.m
	if vocab == nil {
		return nil, fmt.Errorf("%s model: no \"vocab\"", typ)
	}
	if err := checkVocab(vocab); err != nil {
		return nil, fmt.Errorf("%s model: %w", typ, err)
	}
	switch typ {
	case "BPE":
		b := &bpe{
			tokens:       vocab,
			unk:          deref(m.UnkToken),
			fuseUnk:      m.FuseUnk,
			byteFallback: m.ByteFallback,
			ignoreMerges: m.IgnoreMerges,
			prefix:       deref(m.ContinuingSubwordPrefix),
			suffix:       deref(m.EndOfWordSuffix),
			cache:        map[string][]int{},
		}
		var pairs [][2]string
		if m.Merges != nil {
			pairs = *m.Merges
		}
		var err error
		if b.merges, err = mergeTable(vocab, pairs, b.prefix); err != nil {
			return nil, fmt.Errorf("BPE model: %w", err)
		}
		return b, nil
	case "WordPiece":
		w := &wordPiece{tokens: vocab, unk: "[UNK]", prefix: "##", maxChars: 100}
		if m.UnkToken != nil {
			w.unk = *m.UnkToken
		}
		if m.ContinuingSubwordPrefix != nil {
			w.prefix = *m.ContinuingSubwordPrefix
		}
		if m.MaxInputCharsPerWord != nil {
			w.maxChars = *m.MaxInputCharsPerWord
		}
		return w, nil
	case "WordLevel":
		return &wordLevel{tokens: vocab, unk: deref(m.UnkToken)}, nil
	}
	return nil, fmt.Errorf("unknown model type %q (supported: BPE, WordPiece, WordLevel)", typ)
}

// checkVocab rejects ids no embedding table could hold.
func checkVocab(vocab map[string]int) error {
	for tok, id := range vocab {
		if id < 0 || id > maxTokenID {
			return fmt.Errorf("vocab: token %q has id %d, want 0..%d", tok, id, maxTokenID)
		}
	}
	return nil
}

// vocabJSON is {"token": id, ...}, or a list of [piece, score] pairs for
// Unigram models, which we only recognize to reject.
type vocabJSON struct {
	m      map[string]int
	isList bool
}

func (v *vocabJSON) UnmarshalJSON(data []byte) error {
	switch t := firstByte(data); t {
	case '[':
		v.isList = true
		return nil
	case 'n':
		return nil
	}
	return json.Unmarshal(data, &v.m)
}

func firstByte(data []byte) byte {
	for _, c := range data {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return c
		}
	}
	return 0
}

// merges are written as "a b" strings (older files) or as ["a", "b"]
// pairs (newer ones, which allow spaces inside tokens). Files carry up to a
// few hundred thousand of them, so they are scanned by hand rather than
// through reflection, which made loading Gemma 3 take seconds.
type merges [][2]string

func (m *merges) UnmarshalJSON(data []byte) error {
	sc := jsonScanner{data: data}
	if sc.peek() == 'n' {
		return nil // null
	}
	if err := sc.expect('['); err != nil {
		return err
	}
	var out [][2]string
	for i := 0; ; i++ {
		if sc.peek() == ']' && i == 0 {
			sc.pos++
			break
		}
		var pair [2]string
		switch sc.peek() {
		case '"':
			s, err := sc.str()
			if err != nil {
				return err
			}
			a, b, ok := strings.Cut(s, " ")
			if !ok || strings.Contains(b, " ") {
				return fmt.Errorf("merge %d %q: want two tokens separated by one space", i, s)
			}
			pair = [2]string{a, b}
		case '[':
			sc.pos++
			var err error
			if pair[0], err = sc.str(); err == nil {
				if err = sc.expect(','); err == nil {
					if pair[1], err = sc.str(); err == nil {
						err = sc.expect(']')
					}
				}
			}
			if err != nil {
				return fmt.Errorf("merge %d: want [\"a\", \"b\"]: %w", i, err)
			}
		default:
			return fmt.Errorf("merge %d: want \"a b\" or [\"a\", \"b\"], got %q at offset %d", i, sc.peek(), sc.pos)
		}
		out = append(out, pair)
		if sc.peek() == ',' {
			sc.pos++
			continue
		}
		if err := sc.expect(']'); err != nil {
			return fmt.Errorf("merges: %w", err)
		}
		break
	}
	*m = out
	return nil
}

// jsonScanner reads the few JSON shapes merges use from already validated
// JSON (encoding/json validates before calling UnmarshalJSON).
type jsonScanner struct {
	data []byte
	pos  int
}

func (s *jsonScanner) peek() byte {
	for s.pos < len(s.data) {
		switch c := s.data[s.pos]; c {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return c
		}
	}
	return 0
}

func (s *jsonScanner) expect(c byte) error {
	if got := s.peek(); got != c {
		return fmt.Errorf("want %q, got %q at offset %d", c, got, s.pos)
	}
	s.pos++
	return nil
}

// str reads a string literal, decoding escapes through encoding/json only
// when there are any.
func (s *jsonScanner) str() (string, error) {
	if err := s.expect('"'); err != nil {
		return "", err
	}
	start, escaped := s.pos, false
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case '\\':
			escaped = true
			s.pos += 2
			continue
		case '"':
			lit := s.data[start-1 : s.pos+1]
			s.pos++
			if !escaped {
				return string(lit[1 : len(lit)-1]), nil
			}
			var out string
			err := json.Unmarshal(lit, &out)
			return out, err
		}
		s.pos++
	}
	return "", errors.New("unterminated string")
}

// mergeTable maps each pair of ids to its rank and the id of the merged
// token. A later duplicate of a pair overrides an earlier one, as in the
// Rust crate.
func mergeTable(vocab map[string]int, pairs [][2]string, prefix string) (map[uint64]merge, error) {
	table := make(map[uint64]merge, len(pairs))
	for rank, p := range pairs {
		a, ok := vocab[p[0]]
		if !ok {
			return nil, fmt.Errorf("merge %d: token %q is not in the vocabulary", rank, p[0])
		}
		b, ok := vocab[p[1]]
		if !ok {
			return nil, fmt.Errorf("merge %d: token %q is not in the vocabulary", rank, p[1])
		}
		joined := p[0] + strings.TrimPrefix(p[1], prefix)
		id, ok := vocab[joined]
		if !ok {
			return nil, fmt.Errorf("merge %d: merged token %q is not in the vocabulary", rank, joined)
		}
		table[pairKey(int32(a), int32(b))] = merge{int32(rank), int32(id)}
	}
	return table, nil
}
