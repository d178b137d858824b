// Package tokenizer turns text into token ids and back.
//
// Three implementations exist: Byte, a dependency-free tokenizer whose ids are
// raw bytes plus four special tokens; HF, a wrapper around Hugging Face
// tokenizer.json files loaded through github.com/sugarme/tokenizer; and
// Llama2C, llama2.c's tokenizer.bin encoded and decoded as run.c does.
package tokenizer

import (
	"bytes"
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

// Load picks a tokenizer by name: "byte" gives the byte-level tokenizer, a
// path to a tokenizer.json file a Hugging Face tokenizer, and a path to
// llama2.c's tokenizer.bin (a .bin name, or any file that does not start
// with '{') a Llama2C tokenizer with every token in the file.
func Load(name string) (Tokenizer, error) {
	if name == "byte" {
		return NewByte(), nil
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
	if info, err := os.Stat(name); (err == nil && !info.IsDir()) || strings.HasSuffix(name, ".json") {
		hf, err := LoadHF(name)
		if err != nil {
			return nil, err
		}
		return hf, nil
	}
	return nil, fmt.Errorf("unknown tokenizer %q: valid choices are \"byte\", a path to a tokenizer.json file or to a llama2.c tokenizer.bin", name)
}

// isNonJSONFile reports whether name is a readable file whose first
// non-space byte is not '{' (a tokenizer.json always starts with one).
func isNonJSONFile(name string) bool {
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
