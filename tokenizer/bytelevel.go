package tokenizer

// Byte-level helpers shared by GPT-2-style BPE and the decoders.
//
// GPT-2 (Radford et al. 2019, OpenAI's encoder.py `bytes_to_unicode`) runs
// BPE over bytes, but spells each byte as a printable Unicode character so
// vocabularies stay readable text: the 188 printable Latin-1 bytes stand for
// themselves and the other 68 (controls, space, 0x7F-0xA0, 0xAD) are moved to
// U+0100 onwards, which is why a space appears as "Ġ" (U+0120) and a newline
// as "Ċ" (U+010A).

import "unicode/utf8"

// byteToRune[b] is the character GPT-2 uses for byte b; runeToByte inverts it.
var byteToRune, runeToByte = func() ([256]rune, map[rune]byte) {
	var table [256]rune
	inverse := make(map[rune]byte, 256)
	printable := func(b int) bool {
		return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)
	}
	n := 0
	for b := 0; b < 256; b++ {
		r := rune(b)
		if !printable(b) {
			r = rune(256 + n)
			n++
		}
		table[b] = r
		inverse[r] = byte(b)
	}
	return table, inverse
}()

// byteLevelEncode spells every byte of s as its GPT-2 character.
func byteLevelEncode(s string) string {
	out := make([]rune, len(s))
	for i := 0; i < len(s); i++ {
		out[i] = byteToRune[s[i]]
	}
	return string(out)
}

// byteLevelBytes turns a token back into the bytes it spells. A token with
// a character outside the table (an added token such as "<|im_start|>" is
// plain ASCII and maps to itself, but one with, say, "é" does not) is
// passed through as its own UTF-8 bytes, as the Rust decoder does.
func byteLevelBytes(dst []byte, token string) []byte {
	start := len(dst)
	for _, r := range token {
		b, ok := runeToByte[r]
		if !ok {
			return append(dst[:start], token...)
		}
		dst = append(dst, b)
	}
	return dst
}

// lossyUTF8 converts bytes to a string, replacing each maximal ill-formed
// subsequence with U+FFFD as Unicode §3.9 (and Rust's from_utf8_lossy, and
// the WHATWG TextDecoder) do. Go's own conversion would keep invalid bytes,
// and strings.ToValidUTF8 would fold a whole run of them into one U+FFFD.
func lossyUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	out := make([]byte, 0, len(b)+8)
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError || size > 1 {
			out = append(out, b[i:i+size]...)
			i += size
			continue
		}
		out = utf8.AppendRune(out, utf8.RuneError)
		i += maximalSubpart(b[i:])
	}
	return string(out)
}

// maximalSubpart returns how many bytes at the start of b (which does not
// begin with a valid character) form the longest prefix of a well-formed
// sequence (Unicode Table 3-7), at least 1.
func maximalSubpart(b []byte) int {
	lo, hi, need := byte(0x80), byte(0xBF), 0
	switch c := b[0]; {
	case c >= 0xC2 && c <= 0xDF:
		need = 1
	case c == 0xE0:
		lo, need = 0xA0, 2
	case c >= 0xE1 && c <= 0xEC, c == 0xEE, c == 0xEF:
		need = 2
	case c == 0xED:
		hi, need = 0x9F, 2
	case c == 0xF0:
		lo, need = 0x90, 3
	case c >= 0xF1 && c <= 0xF3:
		need = 3
	case c == 0xF4:
		hi, need = 0x8F, 3
	default:
		return 1
	}
	n := 1
	for ; n <= need && n < len(b); n++ {
		if b[n] < lo || b[n] > hi {
			break
		}
		lo, hi = 0x80, 0xBF // only the second byte has a narrower range
	}
	return n
}
