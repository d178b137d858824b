package tokenizer

import (
	"slices"
	"testing"
)

func TestByteRoundTripASCII(t *testing.T) {
	b := NewByte()
	ids, err := b.Encode("Hi!")
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	// 'H' = 0x48, 'i' = 0x69, '!' = 0x21.
	if want := []int{72, 105, 33}; !slices.Equal(ids, want) {
		t.Fatalf("Encode(\"Hi!\") = %v, want %v", ids, want)
	}
	if got := b.Decode(ids); got != "Hi!" {
		t.Fatalf("Decode = %q, want %q", got, "Hi!")
	}
}

func TestByteRoundTripUTF8(t *testing.T) {
	b := NewByte()
	text := "é€😀" // 2-, 3- and 4-byte UTF-8 sequences
	ids, err := b.Encode(text)
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	// é = C3 A9, € = E2 82 AC, 😀 = F0 9F 98 80.
	want := []int{0xC3, 0xA9, 0xE2, 0x82, 0xAC, 0xF0, 0x9F, 0x98, 0x80}
	if !slices.Equal(ids, want) {
		t.Fatalf("Encode(%q) = %v, want %v", text, ids, want)
	}
	if got := b.Decode(ids); got != text {
		t.Fatalf("Decode = %q, want %q", got, text)
	}
}

func TestByteEncodeLeavesSpecialLiteralsAlone(t *testing.T) {
	ids, err := NewByte().Encode("<s>")
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	if want := []int{'<', 's', '>'}; !slices.Equal(ids, want) {
		t.Fatalf("Encode(\"<s>\") = %v, want %v", ids, want)
	}
}

func TestByteDecodeSpecials(t *testing.T) {
	b := NewByte()
	s := b.Special()
	if s != (Specials{BOS: 256, EOS: 257, PAD: 258, MASK: 259}) {
		t.Fatalf("Special() = %+v", s)
	}
	if b.VocabSize() != 260 {
		t.Fatalf("VocabSize() = %d, want 260", b.VocabSize())
	}
	// BOS/EOS/PAD vanish, MASK shows as its literal, out-of-range ids
	// (-1, 260, 1000) are skipped.
	ids := []int{s.BOS, 'a', s.MASK, 'b', -1, 260, 1000, s.EOS, s.PAD}
	if got, want := b.Decode(ids), "a<mask>b"; got != want {
		t.Fatalf("Decode(%v) = %q, want %q", ids, got, want)
	}
}

func TestByteDecodeInvalidUTF8(t *testing.T) {
	// A lone continuation byte is not valid UTF-8; it must come back as is.
	if got := NewByte().Decode([]int{'a', 0x80, 'b'}); got != "a\x80b" {
		t.Fatalf("Decode = %q, want %q", got, "a\x80b")
	}
}
