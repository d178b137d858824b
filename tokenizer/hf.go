package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	sugar "github.com/sugarme/tokenizer"
	"github.com/sugarme/tokenizer/pretrained"
)

// HF wraps a Hugging Face tokenizer.json loaded with sugarme/tokenizer.
//
// sugarme/tokenizer panics instead of returning errors on inputs it does not
// support (for example lookahead regexes, which Go's regexp lacks), so every
// call into it is guarded by recover and turned into an error.
type HF struct {
	path string
	// full knows every token in the file and is used for decoding and id
	// lookups.
	full *sugar.Tokenizer
	// literal is the same tokenizer without the special added tokens.
	// sugarme always cuts special-token literals out of the input, and
	// Encode promises to treat them as plain text, so encoding uses a copy
	// that does not know them.
	literal   *sugar.Tokenizer
	specials  Specials
	vocabSize int
}

// LoadHF loads a Hugging Face tokenizer.json file.
func LoadHF(path string) (*HF, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("loading tokenizer.json at %s: %w", path, err)
	}
	var cfg sugar.Config
	if err := json.Unmarshal(data, &cfg); err != nil {
		return nil, fmt.Errorf("loading tokenizer.json at %s: parsing JSON: %w", path, err)
	}
	// Valid JSON such as "{}" or "null" would otherwise reach sugarme and
	// fail somewhere deep inside it with a confusing message.
	if cfg.Model == nil {
		return nil, fmt.Errorf("loading tokenizer.json at %s: no \"model\" section", path)
	}

	full, err := buildTokenizer(cfg)
	if err != nil {
		return nil, fmt.Errorf("loading tokenizer.json at %s: %w", path, err)
	}
	literalCfg := cfg
	literalCfg.AddedTokens = nil
	for _, at := range cfg.AddedTokens {
		if !at.Special {
			literalCfg.AddedTokens = append(literalCfg.AddedTokens, at)
		}
	}
	literal, err := buildTokenizer(literalCfg)
	if err != nil {
		return nil, fmt.Errorf("loading tokenizer.json at %s: %w", path, err)
	}

	h := &HF{path: path, full: full, literal: literal}
	h.specials = Specials{
		// "<|endoftext|>" comes last because GPT-2 style files use it for
		// both BOS and EOS; a dedicated BOS token wins when there is one.
		BOS:  h.firstID("<s>", "<|begin_of_text|>", "[CLS]", "<|endoftext|>"),
		EOS:  h.firstID("</s>", "<|end_of_text|>", "<|endoftext|>", "[SEP]"),
		PAD:  h.firstID("<pad>", "[PAD]"),
		MASK: h.firstID("<mask>", "[MASK]"),
	}
	h.vocabSize = h.maxID(cfg.AddedTokens) + 1
	return h, nil
}

// buildTokenizer turns a parsed config into a sugarme tokenizer, converting
// panics into errors.
func buildTokenizer(cfg sugar.Config) (tk *sugar.Tokenizer, err error) {
	defer func() {
		if r := recover(); r != nil {
			tk, err = nil, fmt.Errorf("unsupported by sugarme/tokenizer: %s", oneLine(fmt.Sprint(r)))
		}
	}()
	// sugarme only builds from a reader, so the config goes back to JSON.
	data, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("re-encoding config: %w", err)
	}
	tk, err = pretrained.FromReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("unsupported by sugarme/tokenizer: %s", oneLine(err.Error()))
	}
	return tk, nil
}

// firstID returns the id of the first candidate token the vocabulary has,
// or -1 if it has none of them.
func (h *HF) firstID(candidates ...string) int {
	for _, c := range candidates {
		if id, ok := h.full.TokenToId(c); ok {
			return id
		}
	}
	return -1
}

// maxID returns the largest id in the model vocabulary or among the added
// tokens. VocabSize is based on it rather than on a token count because
// vocabularies may have gaps, and every id must fit in the embedding table.
func (h *HF) maxID(added []sugar.TokenConfig) int {
	maxID := -1
	// Read the model vocabulary directly: sugar.Tokenizer.GetVocab(true)
	// writes the added tokens into the model's own map.
	for _, id := range h.full.GetModel().GetVocab() {
		maxID = max(maxID, id)
	}
	for _, at := range added {
		if id, ok := h.full.TokenToId(at.Content); ok {
			maxID = max(maxID, id)
		}
	}
	return maxID
}

// Encode turns text into ids without adding special tokens. Special-token
// literals in text are encoded as ordinary text.
func (h *HF) Encode(text string) (ids []int, err error) {
	defer func() {
		if r := recover(); r != nil {
			ids, err = nil, fmt.Errorf("encoding with tokenizer.json at %s: unsupported by sugarme/tokenizer: %s", h.path, oneLine(fmt.Sprint(r)))
		}
	}()
	if text == "" {
		return []int{}, nil
	}
	enc, err := h.literal.EncodeSingle(text, false)
	if err != nil {
		return nil, fmt.Errorf("encoding with tokenizer.json at %s: %w", h.path, err)
	}
	if enc == nil {
		return nil, errors.New("encoding with tokenizer.json at " + h.path + ": sugarme/tokenizer returned no encoding")
	}
	// Map tokens back through the full tokenizer: sugarme numbers added
	// tokens that are missing from the model vocabulary in the order it
	// adds them, so without the special tokens the literal copy could give
	// a non-special added token a different id than Decode expects.
	ids = make([]int, len(enc.Tokens))
	for i, tok := range enc.Tokens {
		id, ok := h.full.TokenToId(tok)
		if !ok {
			id = enc.Ids[i]
		}
		ids[i] = id
	}
	return ids, nil
}

// Decode turns ids back into text. Special tokens are dropped, except the
// mask token, which renders as MaskLiteral. Ids outside 0..VocabSize()-1
// are skipped. If sugarme panics while decoding, Decode returns "" because
// its signature has no room for an error.
func (h *HF) Decode(ids []int) (text string) {
	defer func() {
		if r := recover(); r != nil {
			text = ""
		}
	}()
	var out strings.Builder
	var run []int
	// Runs between masks are decoded as a whole so the decoder can join
	// sub-word pieces and byte-level characters correctly.
	flush := func() {
		if len(run) > 0 {
			out.WriteString(h.full.Decode(run, true))
			run = run[:0]
		}
	}
	s := h.specials
	for _, id := range ids {
		switch {
		case id < 0 || id >= h.vocabSize:
			// Out of range: skipped, as documented.
		case id == s.MASK:
			flush()
			out.WriteString(MaskLiteral)
		case id == s.BOS || id == s.EOS || id == s.PAD:
			// Dropped even if the file does not mark them special.
		default:
			run = append(run, id)
		}
	}
	flush()
	return out.String()
}

// VocabSize returns one more than the largest id the tokenizer knows.
func (h *HF) VocabSize() int { return h.vocabSize }

// Special returns the ids of the common special tokens found in the file.
func (h *HF) Special() Specials { return h.specials }

// oneLine collapses runs of whitespace, including newlines that sugarme
// puts in its messages, so errors stay on a single line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
