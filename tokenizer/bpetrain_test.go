package tokenizer

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// Merges worked out by hand. "aaa aaa" is the words "aaa" and "Ġaaa": (a, a)
// occurs twice in each (4), (Ġ, a) once; merged left to right "aaa" becomes
// "aa a", leaving (aa, a) twice and (Ġ, aa) once, and so on. "xy zw" has three
// pairs of count 1: the tie goes to the smaller left id ('x' < 'z' < 'Ġ' in
// code points, the alphabet's order), and the new token "zw" comes before
// (Ġ, zw) can exist. "ab ab ab abc": (a, b) in all four words, (Ġ, a) in three.
func TestTrainBPEByHand(t *testing.T) {
	for _, c := range []struct {
		text   string
		merges [][2]string
		counts []int64
	}{
		{"aaa aaa", [][2]string{{"a", "a"}, {"aa", "a"}, {"Ġ", "aaa"}}, []int64{4, 2, 1}},
		{"xy zw", [][2]string{{"x", "y"}, {"z", "w"}, {"Ġ", "zw"}}, []int64{1, 1, 1}},
		{"ab ab ab abc", [][2]string{{"a", "b"}, {"Ġ", "ab"}, {"Ġab", "c"}}, []int64{4, 3, 1}},
	} {
		v, err := TrainBPE([]byte(c.text), 1000)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(v.Merges, c.merges) || !slices.Equal(v.Counts, c.counts) {
			t.Errorf("%q: merges %q counts %v, want %q %v", c.text, v.Merges, v.Counts, c.merges, c.counts)
		}
		if want := 257 + len(c.merges); len(v.Tokens) != want {
			t.Errorf("%q: %d tokens, want %d", c.text, len(v.Tokens), want)
		}
	}
	// The vocabulary size is a cap: one merge only.
	v, err := TrainBPE([]byte("aaa aaa"), 258)
	if err != nil || len(v.Merges) != 1 || v.Tokens[257] != "aa" || v.Tokens[0] != EndOfText {
		t.Errorf("vocab 258: merges %q tokens[257] %q, %v", v.Merges, v.Tokens[257:], err)
	}
	if _, err := TrainBPE([]byte("x"), 256); err == nil || !strings.Contains(err.Error(), "at least 257") {
		t.Errorf("vocab 256: %v, want a refusal naming 257", err)
	}
}

// goSource is this package's own source, a few hundred KB of Go: the
// training text of the tests below (files by name order; every other one
// held out).
func goSource(t testing.TB) (train, heldOut []byte) {
	files, err := filepath.Glob("*.go")
	if err != nil || len(files) < 4 {
		t.Fatalf("reading the package's source: %v", err)
	}
	slices.Sort(files)
	for i, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			train = append(append(train, data...), "\n\n"...)
		} else {
			heldOut = append(append(heldOut, data...), "\n\n"...)
		}
	}
	return train, heldOut
}

// Each merge's pair had the largest count at its step, and the smallest
// (left id, right id) among pairs of that count: replayed on the words with
// every count recomputed from scratch, not incrementally.
func TestTrainBPEPicksTheMaximum(t *testing.T) {
	train, _ := goSource(t)
	rng := rand.New(rand.NewPCG(3, 4))
	texts := [][]byte{train[:40000]}
	for range 20 {
		var b []byte
		for range 200 {
			b = append(b, "ab c\n\t  é日"[rng.IntN(12)])
		}
		texts = append(texts, b)
	}
	for ti, text := range texts {
		v, err := TrainBPE(text, 257+300)
		if err != nil {
			t.Fatal(err)
		}
		counts, err := countWords(text)
		if err != nil {
			t.Fatal(err)
		}
		// Words as token strings, merged naively step by step.
		var words [][]string
		var n []int64
		for w, c := range counts {
			var syms []string
			for _, b := range []byte(w) {
				syms = append(syms, string(byteToRune[b]))
			}
			words, n = append(words, syms), append(n, c)
		}
		id := func(s string) int { return int(v.ids[s]) }
		for step, m := range v.Merges {
			pairs := map[[2]string]int64{}
			for i, w := range words {
				for j := 0; j+1 < len(w); j++ {
					pairs[[2]string{w[j], w[j+1]}] += n[i]
				}
			}
			var best [2]string
			var bestN int64
			for p, c := range pairs {
				if c > bestN || (c == bestN && (id(p[0]) < id(best[0]) || (id(p[0]) == id(best[0]) && id(p[1]) < id(best[1])))) {
					best, bestN = p, c
				}
			}
			if m != best || v.Counts[step] != bestN {
				t.Fatalf("text %d, merge %d: trained %q (count %d), the maximum is %q (count %d)", ti, step, m, v.Counts[step], best, bestN)
			}
			for i, w := range words {
				var out []string
				for j := 0; j < len(w); j++ {
					if j+1 < len(w) && w[j] == m[0] && w[j+1] == m[1] {
						out = append(out, m[0]+m[1])
						j++
					} else {
						out = append(out, w[j])
					}
				}
				words[i] = out
			}
		}
	}
}

// Any bytes, valid UTF-8 or not, come back from Decode(Encode(b)).
func TestTrainedBPERoundTrip(t *testing.T) {
	train, heldOut := goSource(t)
	v, err := TrainBPE(train, 600)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	cases := [][]byte{heldOut, []byte("\xff\xfe a\x80b \xe6\x97 日本\n\n\t x"), {}}
	for range 200 {
		b := make([]byte, rng.IntN(64))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		cases = append(cases, b)
	}
	for _, b := range cases {
		ids, err := v.Encode(b)
		if err != nil {
			t.Fatal(err)
		}
		if got := v.Decode(ids); !bytes.Equal(got, b) {
			t.Fatalf("Decode(Encode(%q)) = %q", b[:min(len(b), 80)], got[:min(len(got), 80)])
		}
	}
	ids, _ := v.Encode(heldOut)
	if ratio := float64(len(heldOut)) / float64(len(ids)); ratio < 1.5 {
		t.Errorf("%.2f bytes per token on held-out Go source with 343 merges, want at least 1.5", ratio)
	}
}

// The written tokenizer.json loads (ParseHF) and encodes held-out text to the
// ids the trainer's own encoder gives, and decodes them back; its specials
// are <|endoftext|> for BOS and EOS.
func TestTrainedJSONEncodesAsTrainer(t *testing.T) {
	train, heldOut := goSource(t)
	v, err := TrainBPE(train, 1000)
	if err != nil {
		t.Fatal(err)
	}
	data, err := v.JSON()
	if err != nil {
		t.Fatal(err)
	}
	h, err := ParseHF(data)
	if err != nil {
		t.Fatalf("loading the trained tokenizer.json: %v", err)
	}
	if h.VocabSize() != len(v.Tokens) || h.Special().BOS != 0 || h.Special().EOS != 0 {
		t.Errorf("vocab %d (want %d), specials %+v (want BOS and EOS 0)", h.VocabSize(), len(v.Tokens), h.Special())
	}
	want, err := v.Encode(heldOut)
	if err != nil {
		t.Fatal(err)
	}
	got, err := EncodeLong(h, heldOut)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		i := 0
		for i < min(len(got), len(want)) && got[i] == want[i] {
			i++
		}
		t.Fatalf("tokenizer.json gives %d ids, the trainer %d; first difference at %d: %v vs %v", len(got), len(want), i,
			got[i:min(i+5, len(got))], want[i:min(i+5, len(want))])
	}
	if h.Decode(got) != string(heldOut) {
		t.Errorf("tokenizer.json does not decode its ids back to the text")
	}
	// A special-token literal in text is text, and with ParseSpecial the token.
	ids, _ := EncodeWith(h, "a<|endoftext|>", EncodeOptions{ParseSpecial: true})
	if len(ids) != 2 || ids[1] != 0 {
		t.Errorf("ParseSpecial: %v, want [a's id, 0]", ids)
	}
}

// Encoding in chunks (EncodeLong) gives the ids of encoding the whole text:
// the chunks are cut where no match of GPT-2's regex can cross.
func TestEncodeLongMatchesEncode(t *testing.T) {
	train, heldOut := goSource(t)
	text := append(append([]byte(nil), heldOut...), train...)
	v, err := TrainBPE(train[:50000], 800)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := v.JSON()
	h, err := ParseHF(data)
	if err != nil {
		t.Fatal(err)
	}
	chunks := 0
	for rest := text; len(rest) > 0; chunks++ {
		rest = rest[safeCut(rest, 64<<10):]
	}
	if chunks < 3 {
		t.Fatalf("%d bytes are %d chunks; the test needs several", len(text), chunks)
	}
	whole, err := h.Encode(string(text))
	if err != nil {
		t.Fatal(err)
	}
	long, err := EncodeLong(h, text)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(whole, long) {
		t.Errorf("EncodeLong over %d chunks differs from Encode (%d vs %d ids)", chunks, len(long), len(whole))
	}
}

// BenchmarkTrainBPE learns 4,000 merges from the Go tree's source (the
// first 8 MB of its .go files, by path), reporting the seconds per run.
func BenchmarkTrainBPE(b *testing.B) {
	var text []byte
	root := filepath.Join(runtime.GOROOT(), "src")
	filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || len(text) >= 8<<20 {
			return filepath.SkipAll
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") {
			data, _ := os.ReadFile(path)
			text = append(append(text, data...), "\n\n"...)
		}
		return nil
	})
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if _, err := TrainBPE(text, 257+4000); err != nil {
			b.Fatal(err)
		}
	}
}
