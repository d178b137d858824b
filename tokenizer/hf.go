package tokenizer

// HF is a Hugging Face tokenizer.json file run by our own pipeline, a
// re-implementation of the Rust `tokenizers` crate
// (github.com/huggingface/tokenizers, tokenizer/src) for the parts
// inference needs:
//
//	text -> added tokens cut out of the raw text
//	     -> normalizer (NFC, "▁" for spaces, ...) on the rest
//	     -> added tokens cut out of the normalized text
//	     -> pre-tokenizer (regex split, byte-level spelling, ...) into words
//	     -> model (BPE, WordPiece, WordLevel) on each word
//	     -> post-processor (BOS/EOS), only when asked for
//
// and decoding runs the file's decoder over the tokens' strings.
//
// We first wrapped github.com/sugarme/tokenizer, but measured against
// Hugging Face's own JavaScript port it matched only about half the lines
// of a mixed text, and its faults sat in the core steps (a regex engine
// without lookahead, so Llama 3 and Qwen files failed to load; byte_fallback
// and ignore_merges ignored; equal-rank merges not applied leftmost-first;
// special tokens lost with byte-level pre-tokenizers; NFC decomposing), so
// wrapping would have meant replacing nearly every step anyway.
// tokenizer/conformance checks this pipeline against the JavaScript port.

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// HF is a tokenizer loaded from a Hugging Face tokenizer.json file (or
// GPT-2's vocab.json + merges.txt, see LoadGPT2). It is safe for
// concurrent use.
type HF struct {
	normalizer normalizer    // nil: none
	pre        preTokenizer  // nil: the whole text is one word
	model      model         //
	post       postProcessor // nil: nothing added
	decoder    decoder       // nil: tokens joined with spaces

	rawAdded  *addedSplitter // added tokens matched in the raw text
	normAdded *addedSplitter // added tokens matched after normalization

	idToToken map[int]string
	special   map[int]bool // ids of added tokens marked special
	specials  Specials
	vocabSize int
}

// LoadHF loads a Hugging Face tokenizer.json file.
func LoadHF(path string) (*HF, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, fmt.Errorf("loading tokenizer.json at %s: %w", path, err)
	}
	h, err := ParseHF(data)
	if err != nil {
		return nil, fmt.Errorf("loading tokenizer.json at %s: %w", path, err)
	}
	return h, nil
}

// hfFile is the top level of tokenizer.json.
type hfFile struct {
	AddedTokens   []addedTokenJSON `json:"added_tokens"`
	Normalizer    json.RawMessage  `json:"normalizer"`
	PreTokenizer  json.RawMessage  `json:"pre_tokenizer"`
	PostProcessor json.RawMessage  `json:"post_processor"`
	Decoder       json.RawMessage  `json:"decoder"`
	Model         *modelJSON       `json:"model"`
}

type addedTokenJSON struct {
	ID         *int   `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	Lstrip     bool   `json:"lstrip"`
	Rstrip     bool   `json:"rstrip"`
	Normalized *bool  `json:"normalized"`
	Special    bool   `json:"special"`
}

// ParseHF builds a tokenizer from the contents of a tokenizer.json file.
func ParseHF(data []byte) (*HF, error) {
	var f hfFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("parsing JSON: %w", err)
	}
	if f.Model == nil {
		return nil, errors.New("no \"model\" section")
	}
	h := &HF{}
	var err error
	if h.model, err = buildModel(f.Model); err != nil {
		return nil, err
	}
	if h.normalizer, err = buildNormalizer(f.Normalizer); err != nil {
		return nil, fmt.Errorf("normalizer: %w", err)
	}
	if h.pre, err = buildPreTokenizer(f.PreTokenizer); err != nil {
		return nil, fmt.Errorf("pre_tokenizer: %w", err)
	}
	if h.post, err = buildPostProcessor(f.PostProcessor); err != nil {
		return nil, fmt.Errorf("post_processor: %w", err)
	}
	if h.decoder, err = buildDecoder(f.Decoder); err != nil {
		return nil, fmt.Errorf("decoder: %w", err)
	}
	added := make([]addedToken, len(f.AddedTokens))
	for i, a := range f.AddedTokens {
		if a.ID == nil || *a.ID < 0 || *a.ID > maxTokenID {
			return nil, fmt.Errorf("added token %d (%q): want an \"id\" in 0..%d", i, a.Content, maxTokenID)
		}
		added[i] = addedToken{
			id: *a.ID, content: a.Content, special: a.Special,
			singleWord: a.SingleWord, lstrip: a.Lstrip, rstrip: a.Rstrip,
			// Non-special tokens are normalized unless told otherwise.
			normInto: orDefault(a.Normalized, !a.Special),
		}
	}
	if err := h.setVocab(added); err != nil {
		return nil, err
	}
	if h.post != nil {
		// With nothing to wrap, the post-processor returns exactly the ids
		// it adds; each must be a token, or a model would be fed ids
		// outside its embedding table.
		for _, id := range h.post(nil) {
			if _, ok := h.idToToken[id]; !ok {
				return nil, fmt.Errorf("post_processor: adds id %d, which is not in the vocabulary", id)
			}
		}
	}
	return h, nil
}

// setVocab registers the added tokens and derives the id tables and the
// common special tokens.
func (h *HF) setVocab(added []addedToken) error {
	h.rawAdded, h.normAdded = newAddedSplitter(), newAddedSplitter()
	h.idToToken = make(map[int]string, len(h.model.vocab())+len(added))
	h.special = map[int]bool{}
	for tok, id := range h.model.vocab() {
		h.idToToken[id] = tok
		h.vocabSize = max(h.vocabSize, id+1)
	}
	for _, a := range added {
		// An added token's own string wins over a model token with the
		// same id, as in the Rust crate's decoding.
		h.idToToken[a.id] = a.content
		h.vocabSize = max(h.vocabSize, a.id+1)
		if a.special {
			h.special[a.id] = true
		}
		if !a.normInto {
			h.rawAdded.add(a.content, a)
			continue
		}
		// Matched in normalized text, so match its normalized spelling.
		content := a.content
		if h.normalizer != nil {
			var err error
			if content, err = h.normalizer.normalize(content); err != nil {
				return fmt.Errorf("added token %q: %w", a.content, err)
			}
		}
		h.normAdded.add(content, a)
	}
	specialByName := map[string]int{}
	for _, a := range added {
		if a.special {
			specialByName[a.content] = a.id
		}
	}
	pick := func(candidates ...string) int {
		for _, c := range candidates {
			if id, ok := specialByName[c]; ok {
				return id
			}
			// Files that mark nothing special (hand-written ones) still
			// name their control tokens the usual way.
			if len(specialByName) == 0 {
				if id, ok := h.model.vocab()[c]; ok {
					return id
				}
			}
		}
		return -1
	}
	h.specials = Specials{
		// "<|endoftext|>" comes last because GPT-2 style files use it for
		// both BOS and EOS; a dedicated BOS token wins when there is one.
		BOS:  pick("<s>", "<|begin_of_text|>", "<bos>", "[CLS]", "<|startoftext|>", "<|endoftext|>"),
		EOS:  pick("</s>", "<|end_of_text|>", "<eos>", "<|endoftext|>", "[SEP]"),
		PAD:  pick("<pad>", "[PAD]", "<|pad|>"),
		MASK: pick("<mask>", "[MASK]"),
	}
	return nil
}

// Encode turns text into ids without adding special tokens. Special-token
// literals in text are encoded as ordinary text (added tokens that are not
// special, such as Gemma's "\n\n", are still recognized: they are part of
// how the file spells ordinary text).
func (h *HF) Encode(text string) ([]int, error) {
	return h.EncodeWith(text, EncodeOptions{})
}

// EncodeWith encodes text with the given options. Invalid UTF-8 in text is
// replaced by U+FFFD first, since the pipeline is defined on Unicode text.
func (h *HF) EncodeWith(text string, opt EncodeOptions) ([]int, error) {
	if !utf8.ValidString(text) {
		text = lossyUTF8([]byte(text))
	}
	ids := []int{}
	skip := !opt.ParseSpecial
	for _, seg := range h.rawAdded.split(text, true, skip) {
		if seg.id >= 0 {
			ids = append(ids, seg.id)
			continue
		}
		s := seg.s
		if h.normalizer != nil {
			var err error
			if s, err = h.normalizer.normalize(s); err != nil {
				return nil, fmt.Errorf("normalizing: %w", err)
			}
		}
		for _, sub := range h.normAdded.split(s, seg.first, skip) {
			if sub.id >= 0 {
				ids = append(ids, sub.id)
				continue
			}
			words := []piece{{s: sub.s, first: sub.first}}
			if h.pre != nil {
				var err error
				if words, err = h.pre.preTokenize(words); err != nil {
					return nil, fmt.Errorf("pre-tokenizing: %w", err)
				}
			}
			for _, w := range words {
				var err error
				if ids, err = h.model.encode(ids, w.s); err != nil {
					return nil, fmt.Errorf("encoding %q: %w", w.s, err)
				}
			}
		}
	}
	if opt.AddSpecial && h.post != nil {
		ids = h.post(ids)
	}
	return ids, nil
}

// Decode turns ids back into text. Special tokens are dropped, except the
// mask token, which renders as MaskLiteral. Ids the tokenizer does not know
// are skipped.
func (h *HF) Decode(ids []int) string {
	return h.DecodeWith(ids, DecodeOptions{})
}

// DecodeWith decodes ids; with KeepSpecial, special tokens are kept as
// their text (Hugging Face's skip_special_tokens=False).
func (h *HF) DecodeWith(ids []int, opt DecodeOptions) string {
	var out strings.Builder
	var run []string
	// Runs between masks are decoded as a whole so the decoder can join
	// sub-word pieces and byte-level characters correctly.
	flush := func() {
		if len(run) > 0 {
			out.WriteString(h.decodeTokens(run))
			run = run[:0]
		}
	}
	s := h.specials
	for _, id := range ids {
		tok, ok := h.idToToken[id]
		switch {
		case !ok:
			// Unknown: skipped, as documented.
		case opt.KeepSpecial:
			run = append(run, tok)
		case id == s.MASK:
			flush()
			out.WriteString(MaskLiteral)
		case h.special[id] || id == s.BOS || id == s.EOS || id == s.PAD:
			// Dropped even if the file does not mark them special.
		default:
			run = append(run, tok)
		}
	}
	flush()
	return out.String()
}

// decodeTokens runs the decoder over token strings. No decoder step can
// fail on strings we produced ourselves, so an error (a regex gone wrong)
// falls back to the plain concatenation rather than losing the text.
func (h *HF) decodeTokens(tokens []string) string {
	if h.decoder == nil {
		return strings.Join(tokens, " ")
	}
	parts, err := h.decoder.decodeChain(tokens)
	if err != nil {
		return strings.Join(tokens, "")
	}
	return strings.Join(parts, "")
}

// VocabSize returns one more than the largest id the tokenizer knows.
func (h *HF) VocabSize() int { return h.vocabSize }

// Special returns the ids of the common special tokens found in the file.
func (h *HF) Special() Specials { return h.specials }
