package tokenizer

// Byte is the dependency-free tokenizer of the toy models: one id per UTF-8
// byte, so any text can be represented and no vocabulary file is needed.

import "strings"

// Ids of the byte tokenizer's special tokens. They sit right after the 256
// byte values so every id fits in a small, dense embedding table.
const (
	byteBOS   = 256 // "<s>"
	byteEOS   = 257 // "</s>"
	bytePAD   = 258 // "<pad>"
	byteMASK  = 259 // "<mask>"
	byteVocab = 260
)

// Byte is a byte-level tokenizer: ids 0..255 are the raw bytes of the UTF-8
// text, followed by BOS, EOS, PAD and MASK. It needs no vocabulary file and
// can represent any input, which makes it the safe default.
type Byte struct{}

// NewByte returns a byte-level tokenizer.
func NewByte() *Byte { return &Byte{} }

// Encode returns one id per byte of text. It never fails; the error is
// there to satisfy Tokenizer.
func (Byte) Encode(text string) ([]int, error) {
	ids := make([]int, len(text))
	for i := 0; i < len(text); i++ {
		ids[i] = int(text[i])
	}
	return ids, nil
}

// Decode turns ids back into text. BOS, EOS and PAD are dropped, MASK
// becomes MaskLiteral, and ids outside 0..259 are skipped rather than
// panicking, since models can emit any id while sampling. Bytes that do not
// form valid UTF-8 are returned as they are.
func (Byte) Decode(ids []int) string {
	buf := make([]byte, 0, len(ids))
	for _, id := range ids {
		switch {
		case id >= 0 && id < 256:
			buf = append(buf, byte(id))
		case id == byteMASK:
			buf = append(buf, MaskLiteral...)
		}
	}
	return string(buf)
}

// VocabSize is 256 byte values plus 4 special tokens.
func (Byte) VocabSize() int { return byteVocab }

// Special returns the ids of BOS, EOS, PAD and MASK.
func (Byte) Special() Specials {
	return Specials{BOS: byteBOS, EOS: byteEOS, PAD: bytePAD, MASK: byteMASK}
}

// byteSpecials are the literals of the special tokens, in id order from
// byteBOS.
var byteSpecials = [...]string{"<s>", "</s>", "<pad>", MaskLiteral}

// EncodeWith encodes text; AddSpecial puts BOS first and ParseSpecial turns
// the literals "<s>", "</s>", "<pad>" and "<mask>" into their ids.
func (b Byte) EncodeWith(text string, opt EncodeOptions) ([]int, error) {
	var ids []int
	if opt.AddSpecial {
		ids = append(ids, byteBOS)
	}
	for len(text) > 0 {
		next, tok := len(text), -1
		if opt.ParseSpecial {
			for i, lit := range byteSpecials {
				if j := strings.Index(text, lit); j >= 0 && j < next {
					next, tok = j, byteBOS+i
				}
			}
		}
		plain, _ := b.Encode(text[:next])
		ids = append(ids, plain...)
		if tok < 0 {
			break
		}
		ids = append(ids, tok)
		text = text[next+len(byteSpecials[tok-byteBOS]):]
	}
	if ids == nil {
		ids = []int{}
	}
	return ids, nil
}

// DecodeWith decodes ids; KeepSpecial renders BOS, EOS and PAD as "<s>",
// "</s>" and "<pad>" instead of dropping them.
func (b Byte) DecodeWith(ids []int, opt DecodeOptions) string {
	if !opt.KeepSpecial {
		return b.Decode(ids)
	}
	var buf []byte
	for _, id := range ids {
		switch {
		case id >= 0 && id < 256:
			buf = append(buf, byte(id))
		case id >= byteBOS && id < byteVocab:
			buf = append(buf, byteSpecials[id-byteBOS]...)
		}
	}
	return string(buf)
}
