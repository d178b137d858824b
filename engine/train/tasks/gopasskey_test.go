package tasks

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// The Go passkey holds its line once at the asked depth, ends with the question, scores exactly
// the five digits of the key, and is length+1 bytes long.
func TestGoPasskeyExample(t *testing.T) {
	hay := Haystack([]byte(strings.Repeat("func f(x int) int {\n\treturn x*2 + 1 // 42\n}\n", 100)))
	r := rand.New(rand.NewPCG(1, 2))
	for _, depth := range []float64{0, 0.5, 1} {
		for _, n := range []int{MinGoPasskeyLength, 128, 1024} {
			ex := GoPasskeyExample(r, hay, n, depth)
			if len(ex.Input) != n {
				t.Fatalf("length %d: input of %d", n, len(ex.Input))
			}
			text := make([]byte, 0, n+1)
			for _, b := range ex.Input {
				text = append(text, byte(b))
			}
			text = append(text, byte(ex.Target[n-1]))
			s := string(text)
			key := s[len(s)-KeyDigits:]
			if strings.Count(s, goPasskeyLine) != 2 || !strings.Contains(s, goPasskeyLine+key+"\n") || !strings.HasSuffix(s, goPasskeyLine+key) {
				t.Errorf("depth %g, length %d: %q", depth, n, s)
			}
			scored := ""
			for j, w := range ex.Weight {
				if w > 0 {
					scored += string(rune(ex.Target[j]))
				}
			}
			if scored != key {
				t.Errorf("scored %q, want the key %q", scored, key)
			}
			if at := strings.Index(s, goPasskeyLine); depth == 0 && at != 0 {
				t.Errorf("depth 0: the line starts at byte %d", at)
			}
		}
	}
}
