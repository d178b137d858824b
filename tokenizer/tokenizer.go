// Package tokenizer turns text into token ids and back.
//
// Implementations: Byte, a dependency-free tokenizer whose ids are raw bytes
// plus four special tokens; HF, our own runner for Hugging Face
// tokenizer.json files (BPE, WordPiece, WordLevel), which also loads GPT-2's
// original vocab.json + merges.txt (LoadGPT2); and Llama2C, llama2.c's
// tokenizer.bin encoded and decoded as run.c does. TrainBPE learns a byte-level BPE
// vocabulary, as Hugging Face's BpeTrainer does, and writes it as a tokenizer.json.
package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Tokenizer turns text into token ids and back.
type Tokenizer interface {
	// Encode turns plain text into ids. No BOS/EOS is added, and
	// special-token literals such as "<s>" in text are treated as ordinary
	// text, so user input can never smuggle in control tokens.
	Encode(text string) ([]int, error)
	// Decode turns ids back into text. Special tokens are dropped, except
	// the mask token, which renders as MaskLiteral so masked prompts
	// survive a round trip.
	Decode(ids []int) string
	VocabSize() int
	Special() Specials
}

// Specials holds special-token ids; -1 where the tokenizer has none.
type Specials struct{ BOS, EOS, PAD, MASK int }

// Literals of special tokens (used by cmd/infer to find the mask marker in a prompt).
const MaskLiteral = "<mask>"

// EncodeOptions ask for special tokens when encoding. The zero value is
// what Encode does. They mirror Hugging Face's encode arguments (and
// llama.cpp's llama_tokenize add_special/parse_special).
type EncodeOptions struct {
	// AddSpecial adds the tokens the tokenizer puts around a text (BOS,
	// EOS, [CLS]/[SEP]): add_special_tokens=True.
	AddSpecial bool
	// ParseSpecial turns special-token literals in the text, such as
	// "<|begin_of_text|>", into their ids: split_special_tokens=False.
	// Without it they are encoded as the characters they are made of.
	ParseSpecial bool
}

// DecodeOptions: KeepSpecial renders special tokens as their text
// (skip_special_tokens=False) instead of dropping them.
type DecodeOptions struct{ KeepSpecial bool }

// Optioned is implemented by tokenizers that honour EncodeOptions and
// DecodeOptions.
type Optioned interface {
	EncodeWith(text string, opt EncodeOptions) ([]int, error)
	DecodeWith(ids []int, opt DecodeOptions) string
}

// EncodeWith encodes text with t, honouring opt when t is Optioned. Other
// tokenizers have no special-token literals to parse, and AddSpecial puts
// BOS first, as llama2.c's run.c does.
func EncodeWith(t Tokenizer, text string, opt EncodeOptions) ([]int, error) {
	if o, ok := t.(Optioned); ok {
		return o.EncodeWith(text, opt)
	}
	ids, err := t.Encode(text)
	if err != nil || !opt.AddSpecial || t.Special().BOS < 0 {
		return ids, err
	}
	return append([]int{t.Special().BOS}, ids...), nil
}

// DecodeWith decodes ids with t, honouring opt when t is Optioned.
func DecodeWith(t Tokenizer, ids []int, opt DecodeOptions) string {
	if o, ok := t.(Optioned); ok {
		return o.DecodeWith(ids, opt)
	}
	return t.Decode(ids)
}

// Load picks a tokenizer by name: "byte" gives the byte-level tokenizer; a
// path gives the tokenizer in that file: a Hugging Face tokenizer.json,
// GPT-2's vocab.json/encoder.json with merges.txt/vocab.bpe beside it, or
// llama2.c's tokenizer.bin (a .bin name, or any file that does not start
// with '{') with every token in the file. A directory stands for the
// tokenizer.json, vocab.json or tokenizer.bin inside it.
func Load(name string) (Tokenizer, error) {
	if name == "byte" {
		return NewByte(), nil
	}
	info, err := os.Stat(name)
	if err == nil && info.IsDir() {
		for _, f := range []string{"tokenizer.json", "vocab.json", "encoder.json", "tokenizer.bin"} {
			if _, err := os.Stat(filepath.Join(name, f)); err == nil {
				return Load(filepath.Join(name, f))
			}
		}
		return nil, fmt.Errorf("no tokenizer in directory %s: want tokenizer.json, vocab.json with merges.txt, or tokenizer.bin", name)
	}
	// A name that looks like a JSON or .bin file goes to its loader even when
	// missing, because "file not found at P" is a more useful error than a
	// list of choices when the user clearly meant a path.
	if strings.HasSuffix(name, ".bin") || (!strings.HasSuffix(name, ".json") && isNonJSONFile(name)) {
		l, err := LoadLlama2C(name, 0)
		if err != nil {
			return nil, err
		}
		return l, nil
	}
	if err == nil || strings.HasSuffix(name, ".json") {
		return loadFile(name)
	}
	return nil, fmt.Errorf("unknown tokenizer %q: valid choices are \"byte\", a path to a tokenizer.json file, a GPT-2 vocab.json, or a llama2.c tokenizer.bin", name)
}

// isNonJSONFile reports whether name is a readable file whose first
// non-space byte is not '{' (a tokenizer.json always starts with one).
func isNonJSONFile(name string) bool {
	if checkRegular(name) != nil {
		return false
	}
	f, err := os.Open(name)
	if err != nil {
		return false
	}
	defer f.Close()
	buf := make([]byte, 512)
	n, _ := f.Read(buf)
	trimmed := bytes.TrimLeft(buf[:n], " \t\r\n")
	return n > 0 && (len(trimmed) == 0 || trimmed[0] != '{')
}

// loadFile tells a tokenizer.json (an object with a "model") from a GPT-2
// vocabulary (an object of token ids) by its top-level keys.
func loadFile(path string) (Tokenizer, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, fmt.Errorf("loading tokenizer at %s: %w", path, err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("loading tokenizer at %s: not a tokenizer.json or vocab.json: %w", path, err)
	}
	// A GPT-2 vocabulary may well have a token "model", but its value is
	// a number, never an object.
	if m := top["model"]; (len(m) > 0 && m[0] == '{') || !looksLikeVocab(top) {
		h, err := ParseHF(data)
		if err != nil {
			return nil, fmt.Errorf("loading tokenizer.json at %s: %w", path, err)
		}
		return h, nil
	}
	merges, err := findMerges(path)
	if err != nil {
		return nil, err
	}
	return LoadGPT2(path, merges)
}

// EncodeWithMask splits text on MaskLiteral, encodes the pieces with t, and
// joins them with t.Special().MASK. It returns the ids and the indices of
// the mask tokens within them.
//
// The pieces are encoded separately because Encode deliberately treats
// "<mask>" as literal text; this is the one place where the marker is
// meant to become the mask token.
func EncodeWithMask(t Tokenizer, text string) (ids []int, maskAt []int, err error) {
	mask := t.Special().MASK
	if mask < 0 {
		return nil, nil, errors.New("encoding with mask: tokenizer has no mask token")
	}
	ids = []int{}
	maskAt = []int{}
	for i, piece := range strings.Split(text, MaskLiteral) {
		if i > 0 {
			maskAt = append(maskAt, len(ids))
			ids = append(ids, mask)
		}
		// Empty pieces (mask at the start or end, or two masks in a row)
		// contribute nothing, and some tokenizers dislike empty input.
		if piece == "" {
			continue
		}
		pieceIDs, err := t.Encode(piece)
		if err != nil {
			return nil, nil, fmt.Errorf("encoding with mask, piece %d: %w", i, err)
		}
		ids = append(ids, pieceIDs...)
	}
	return ids, maskAt, nil
}
