package tokenize

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const bpeFile = "../../../../tokenizer/testdata/bpe.json"

func runString(t *testing.T, o options, in string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := run(o, strings.NewReader(in), &out)
	return out.String(), err
}

func TestEncodeLines(t *testing.T) {
	// testdata/bpe.json: "hello" is 12, "Ġ" 8, "o" 7, "h" 4, and <, s, >
	// are 14, 15, 16; <s> is the special id 0 (see tokenizer/hf_test.go).
	cases := []struct {
		special bool
		in, out string
	}{
		{false, "hello hello oh\n<s>hello\n\n", "[12, 8, 12, 8, 7, 4]\n[14, 15, 16, 12]\n[]\n"},
		{true, "<s>hello\r\n", "[0, 12]\n"}, // no post-processor in the file: nothing added
		{false, "hello", "[12]\n"},          // last line without a newline
	}
	for _, c := range cases {
		got, err := runString(t, options{tok: bpeFile, special: c.special}, c.in)
		if err != nil {
			t.Fatalf("run(%q): %v", c.in, err)
		}
		if got != c.out {
			t.Errorf("run(%q, special=%v) = %q, want %q", c.in, c.special, got, c.out)
		}
	}
}

func TestDecodeLines(t *testing.T) {
	got, err := runString(t, options{tok: bpeFile, decode: true}, "[12, 8, 12]\n\n[0,12,1]\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := "hello hello\nhello\n"; got != want {
		t.Errorf("decode = %q, want %q", got, want)
	}
	got, err = runString(t, options{tok: bpeFile, decode: true, special: true}, "[0,12,1]\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := "<s>hello</s>\n"; got != want {
		t.Errorf("decode --special = %q, want %q", got, want)
	}
}

func TestByteRoundTrip(t *testing.T) {
	text := "tabs\tand ünïcödé\n"
	ids, err := runString(t, options{tok: "byte"}, text)
	if err != nil {
		t.Fatal(err)
	}
	back, err := runString(t, options{tok: "byte", decode: true}, ids)
	if err != nil {
		t.Fatal(err)
	}
	if back != text {
		t.Errorf("decode(encode(%q)) = %q", text, back)
	}
}

func TestErrors(t *testing.T) {
	cases := []struct {
		o    options
		in   string
		want string
	}{
		{options{}, "x\n", "no tokenizer"},
		{options{tok: "missing.json"}, "x\n", "missing.json"},
		{options{tok: bpeFile, decode: true}, "[1, 2\n", "line 1: want a JSON array"},
		{options{tok: bpeFile, decode: true}, "[12]\n[999]\n", "line 2: id 999 is outside the vocabulary"},
		{options{tok: bpeFile, merges: "missing.txt"}, "x\n", "missing.txt"},
	}
	for _, c := range cases {
		_, err := runString(t, c.o, c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err = %v, want one containing %q", c.o, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: error %q spans several lines", c.o, err)
		}
	}
}

// TestCommandErrors runs the built command: a bad input is one line on
// stderr and a non-zero exit, never a stack trace.
func TestCommandErrors(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	bin := filepath.Join(t.TempDir(), "tokenize")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/posformer/posformer/cmd/tokenize").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	garbage := filepath.Join(t.TempDir(), "tokenizer.json")
	if err := os.WriteFile(garbage, []byte(`{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a b"]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"-t", garbage}, {"-t", "nope"}, {"--bogus"}, {"-t", "byte", "extra"}} {
		cmd := exec.Command(bin, args...)
		cmd.Stdin = strings.NewReader("hello\n")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		if err == nil {
			t.Errorf("%v: exit 0, want failure", args)
			continue
		}
		msg := strings.TrimSpace(stderr.String())
		if strings.Count(msg, "\n") > 0 || !strings.HasPrefix(msg, "tokenize: ") {
			t.Errorf("%v: stderr %q, want one line starting with \"tokenize: \"", args, msg)
		}
	}
}

// TestLlama2CTokenizerBin runs a llama2.c tokenizer.bin built here as
// llama2.c's tokenizer.py writes one: max_token_length, then per token a
// float32 score, an int32 length and the piece; <unk>, BOS, EOS and the 256
// byte pieces come first, so " " is id 259, "h" 260, "i" 261, "hi" 262 and
// " hi" 263.
func TestLlama2CTokenizerBin(t *testing.T) {
	pieces := []string{"<unk>", "\n<s>\n", "\n</s>\n"}
	scores := []float32{0, 0, 0}
	for b := range 256 {
		pieces = append(pieces, fmt.Sprintf("<0x%02X>", b))
		scores = append(scores, 0)
	}
	pieces = append(pieces, " ", "h", "i", "hi", " hi")
	scores = append(scores, -10, -11, -12, -1, -0.5)
	data := binary.LittleEndian.AppendUint32(nil, 6)
	for i, p := range pieces {
		data = binary.LittleEndian.AppendUint32(data, math.Float32bits(scores[i]))
		data = binary.LittleEndian.AppendUint32(data, uint32(len(p)))
		data = append(data, p...)
	}
	path := filepath.Join(t.TempDir(), "tokenizer.bin")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	// run.c: a dummy " " first, then the best-scoring merges: "hi" (-1)
	// and then " hi" (-0.5). --special adds BOS (1) as run.c does.
	for special, want := range map[bool]string{false: "[263]\n", true: "[1, 263]\n"} {
		got, err := runString(t, options{tok: path, special: special}, "hi\n")
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("special=%v: got %q, want %q", special, got, want)
		}
	}
	// Decoding drops BOS and the dummy prefix's space after it.
	if got, err := runString(t, options{tok: path, decode: true}, "[1, 263]\n"); err != nil || got != "hi\n" {
		t.Errorf("decode = %q, %v; want \"hi\\n\"", got, err)
	}
}
