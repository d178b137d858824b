package server

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/posformer/posformer/tokenizer"
)

// Streaming a text token by token (bytes, with the byte tokenizer, so characters span
// tokens) sends exactly the text up to the first stop string, in pieces that are each whole
// characters, and never a piece of a stop string.
func TestTextStreamProperty(t *testing.T) {
	tok := tokenizer.NewByte()
	alphabet := []string{"a", "b", " ", "\n", "é", "→", "🙂", "ab", "ba"}
	r := rand.New(rand.NewPCG(5, 6))
	for trial := range 500 {
		var b strings.Builder
		for range 1 + r.IntN(30) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		text := b.String()
		var stops []string
		for range r.IntN(3) {
			var s strings.Builder
			for range 1 + r.IntN(3) {
				s.WriteString(alphabet[r.IntN(len(alphabet))])
			}
			stops = append(stops, s.String())
		}
		cut := len(text) // the first occurrence of any stop string
		for _, s := range stops {
			if i := strings.Index(text, s); i >= 0 {
				cut = min(cut, i)
			}
		}
		want, wantStop := text[:cut], cut < len(text)
		ids, _ := tok.Encode(text)
		ts := newTextStream(tok, []int{'x'}, stops)
		var got strings.Builder
		stopped := false
		for _, id := range ids {
			piece, st := ts.push(id)
			if !utf8.ValidString(piece) {
				t.Fatalf("trial %d: piece %q is not whole characters", trial, piece)
			}
			got.WriteString(piece)
			if stopped = st; stopped {
				break
			}
		}
		if !stopped {
			got.WriteString(ts.flush())
		}
		if got.String() != want || stopped != wantStop {
			t.Fatalf("trial %d: text %q, stops %q: streamed %q (stopped %v), want %q (%v)", trial, text, stops, got.String(), stopped, want, wantStop)
		}
	}
}

// A stop string's first characters are held back while they may still become it, and sent
// once they cannot.
func TestTextStreamHoldsBack(t *testing.T) {
	tok := tokenizer.NewByte()
	ts := newTextStream(tok, nil, []string{"\nUser:"})
	var sent []string
	for _, c := range []byte("ok\nUs") {
		piece, _ := ts.push(int(c))
		sent = append(sent, piece)
	}
	if got := strings.Join(sent, ""); got != "ok" {
		t.Errorf("after %q, sent %q; want the possible start of the stop string held back", "ok\nUs", got)
	}
	piece, stopped := ts.push('e') // "\nUse" can still become "\nUser:"
	if piece != "" || stopped {
		t.Errorf("after 'e': %q %v", piece, stopped)
	}
	piece, _ = ts.push('!')
	if piece != "\nUse!" {
		t.Errorf("once it cannot be the stop string, the held text goes out: %q", piece)
	}
}
