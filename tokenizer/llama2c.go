package tokenizer

// Llama2C is llama2.c's tokenizer.bin, read and applied exactly as run.c does
// (github.com/karpathy/llama2.c, run.c: build_tokenizer, encode, decode).
//
// File: int32 max_token_length, then for every token: float32 score, int32 length, and that
// many bytes of piece. SentencePiece's "▁" is already replaced by a space, BOS and EOS read
// "\n<s>\n" and "\n</s>\n", and ids 3..258 are the byte pieces "<0x00>".."<0xFF>".
//
// Encoding is SentencePiece BPE by scores: prepend a " " (the dummy prefix) when the text is not
// empty, look each UTF-8 codepoint up as a piece (a codepoint with no piece becomes its bytes,
// id byte+3), then repeatedly merge the adjacent pair whose concatenation is the piece with the
// highest score, leftmost on ties, until no pair is a piece.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
)

// Ids llama2.c fixes: <unk>, <s> (BOS) and </s> (EOS) come first, bytes follow.
const (
	llama2cUNK        = 0
	llama2cBOS        = 1
	llama2cEOS        = 2
	llama2cByteOffset = 3
)

// Llama2C is a tokenizer read from llama2.c's tokenizer.bin.
type Llama2C struct {
	pieces         []string
	scores         []float32
	maxTokenLength int
	ids            map[string]int // piece -> id, lowest id on duplicates; never the control ids 0..2
}

// LoadLlama2C reads a tokenizer.bin with n tokens (n <= 0: every token up to the end of the
// file; run.c reads exactly the model's vocab_size and ignores the rest).
func LoadLlama2C(path string, n int) (*Llama2C, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, fmt.Errorf("loading llama2.c tokenizer: %w", err)
	}
	t, err := ParseLlama2C(data, n)
	if err != nil {
		return nil, fmt.Errorf("loading llama2.c tokenizer %s: %w", path, err)
	}
	return t, nil
}

// ParseLlama2C parses the bytes of a tokenizer.bin (see LoadLlama2C for n).
func ParseLlama2C(data []byte, n int) (*Llama2C, error) {
	r := bytes.NewReader(data)
	var maxLen int32
	if err := binary.Read(r, binary.LittleEndian, &maxLen); err != nil {
		return nil, fmt.Errorf("file of %d bytes has no max_token_length header", len(data))
	}
	if maxLen < 1 {
		return nil, fmt.Errorf("max_token_length is %d; want >= 1 (is this a llama2.c tokenizer.bin?)", maxLen)
	}
	t := &Llama2C{maxTokenLength: int(maxLen), ids: map[string]int{}}
	for i := 0; n <= 0 || i < n; i++ {
		if n <= 0 && r.Len() == 0 {
			break
		}
		var rec struct {
			Score float32
			Len   int32
		}
		if err := binary.Read(r, binary.LittleEndian, &rec); err != nil {
			return nil, fmt.Errorf("token %d: file ends inside its score and length (want %d tokens)", i, n)
		}
		if rec.Len < 0 || int(rec.Len) > r.Len() {
			return nil, fmt.Errorf("token %d: length %d but %d bytes are left", i, rec.Len, r.Len())
		}
		if math.IsNaN(float64(rec.Score)) {
			return nil, fmt.Errorf("token %d: score is NaN", i)
		}
		piece := make([]byte, rec.Len)
		io.ReadFull(r, piece)
		t.pieces = append(t.pieces, string(piece))
		t.scores = append(t.scores, rec.Score)
		if _, dup := t.ids[string(piece)]; !dup && i > llama2cEOS {
			t.ids[string(piece)] = i
		}
	}
	if len(t.pieces) <= llama2cEOS {
		return nil, fmt.Errorf("has %d tokens; want at least <unk>, <s>, </s> and more", len(t.pieces))
	}
	return t, nil
}

// VocabSize is the number of tokens read.
func (t *Llama2C) VocabSize() int { return len(t.pieces) }

// Special returns BOS 1 and EOS 2, as run.c hard-codes them; there is no PAD or MASK.
func (t *Llama2C) Special() Specials {
	return Specials{BOS: llama2cBOS, EOS: llama2cEOS, PAD: -1, MASK: -1}
}

// Encode is run.c's encode(text, bos=0, eos=0). Pieces of the control tokens (ids 0..2) are
// never matched, so "<s>" in text stays text (run.c's lookup could match them in principle,
// though no real tokenizer.bin lets merges reach "\n<s>\n").
func (t *Llama2C) Encode(text string) ([]int, error) {
	var tokens []int
	if text != "" {
		// run.c assumes " " is a piece; a file without one gets no dummy prefix.
		if id, ok := t.ids[" "]; ok {
			tokens = append(tokens, id)
		}
	}
	// A codepoint is a byte and the continuation bytes (10xxxxxx) after it, at most four
	// bytes, however malformed the UTF-8 (run.c's loop reads bytes the same way).
	for i := 0; i < len(text); {
		start := i
		for i++; i < len(text) && text[i]&0xC0 == 0x80 && i-start < 4; i++ {
		}
		if id, ok := t.ids[text[start:i]]; ok {
			tokens = append(tokens, id)
			continue
		}
		for j := start; j < i; j++ {
			id := int(text[j]) + llama2cByteOffset
			if id >= len(t.pieces) {
				return nil, fmt.Errorf("encoding: byte 0x%02X has no piece (the vocabulary has %d tokens, byte pieces need 259)", text[j], len(t.pieces))
			}
			tokens = append(tokens, id)
		}
	}
	// best[i] is the piece (and score) that merging tokens i and i+1 would make, or -1. After
	// a merge only the two pairs touching the merged token change.
	pairID := func(i int) int {
		if id, ok := t.ids[t.pieces[tokens[i]]+t.pieces[tokens[i+1]]]; ok {
			return id
		}
		return -1
	}
	best := make([]int, max(len(tokens)-1, 0))
	for i := range best {
		best[i] = pairID(i)
	}
	for {
		// run.c starts from -1e10 and takes a strictly greater score: leftmost wins ties, and a
		// piece scored -1e10 or lower is never merged.
		bestScore, at := float32(-1e10), -1
		for i, id := range best {
			if id >= 0 && t.scores[id] > bestScore {
				bestScore, at = t.scores[id], i
			}
		}
		if at < 0 {
			return tokens, nil
		}
		tokens[at] = best[at]
		tokens = append(tokens[:at+1], tokens[at+2:]...)
		best = append(best[:at], best[at+1:]...)
		if at < len(best) {
			best[at] = pairID(at)
		}
		if at > 0 {
			best[at-1] = pairID(at - 1)
		}
	}
}

// Piece is run.c's decode(prev_token, token): the token's piece, without its leading space
// right after BOS (SentencePiece strips the dummy prefix), and "<0xXX>" pieces as the raw byte.
// Out-of-range ids give "".
func (t *Llama2C) Piece(prev, id int) string {
	if id < 0 || id >= len(t.pieces) {
		return ""
	}
	piece := t.pieces[id]
	if prev == llama2cBOS && len(piece) > 0 && piece[0] == ' ' {
		piece = piece[1:]
	}
	// run.c parses with sscanf(piece, "<0x%02hhX>"): "<0x" and one or two hex digits.
	if len(piece) >= 4 && piece[:3] == "<0x" {
		if v, n := parseHex(piece[3:min(len(piece), 5)]); n > 0 {
			return string([]byte{v})
		}
	}
	return piece
}

// parseHex reads up to two leading hex digits of s; n is how many there were.
func parseHex(s string) (v byte, n int) {
	for ; n < len(s); n++ {
		c := s[n]
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | (c - '0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | (c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			v = v<<4 | (c - 'A' + 10)
		default:
			return v, n
		}
	}
	return v, n
}

// Decode joins the pieces of ids as run.c prints them one after another, the sequence starting
// as if right after BOS (so Decode(Encode(x)) == x: the dummy prefix goes). The control tokens
// <unk>, <s> and </s> are dropped, as the Tokenizer interface asks, where run.c would print
// their pieces.
func (t *Llama2C) Decode(ids []int) string {
	var b []byte
	prev := llama2cBOS
	for _, id := range ids {
		if id != llama2cUNK && id != llama2cBOS && id != llama2cEOS {
			b = append(b, t.Piece(prev, id)...)
		}
		prev = id
	}
	return string(b)
}
