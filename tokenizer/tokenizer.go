// Package tokenizer turns text into token ids and back.
//
// Two implementations exist: Byte, a dependency-free tokenizer whose ids are
// raw bytes plus four special tokens, and HF, a wrapper around Hugging Face
// tokenizer.json files loaded through github.com/sugarme/tokenizer.
package tokenizer

import (
	"errors"
	"fmt"
	"os"
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

// Load picks a tokenizer by name: "byte" gives the byte-level tokenizer and
// a path to a tokenizer.json file gives a Hugging Face tokenizer.
func Load(name string) (Tokenizer, error) {
	if name == "byte" {
		return NewByte(), nil
	}
	// A name that looks like a JSON file goes to LoadHF even when missing,
	// because "file not found at P" is a more useful error than a list of
	// choices when the user clearly meant a path.
	if info, err := os.Stat(name); (err == nil && !info.IsDir()) || strings.HasSuffix(name, ".json") {
		hf, err := LoadHF(name)
		if err != nil {
			return nil, err
		}
		return hf, nil
	}
	return nil, fmt.Errorf("unknown tokenizer %q: valid choices are \"byte\" or a path to a tokenizer.json file", name)
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
