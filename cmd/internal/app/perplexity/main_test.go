package perplexity

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/posformer/posformer/engine"
	"github.com/posformer/posformer/models"
	"github.com/posformer/posformer/tokenizer"
)

// tinyModel saves a small decoder with random weights and the byte tokenizer, and returns its
// directory.
func tinyModel(t *testing.T) string {
	t.Helper()
	cfg := models.Config{
		Kind: models.Decoder, VocabSize: 260, Dim: 32, NumLayers: 2, NumHeads: 4, NumKVHeads: 2, HiddenDim: 64,
		MaxSeqLen: 128, TrainSeqLen: 64, Tokenizer: "byte", Positional: map[string]any{"name": "rope"},
	}
	backend, err := engine.NewBackend("")
	if err != nil {
		t.Fatal(err)
	}
	m, err := models.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.New()
	if err := ctx.SetRNGStateFromSeed(7); err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(backend, m, ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Forward([][]int{{1}}, [][]int{{0}}); err != nil { // creates the variables
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := models.Save(dir, cfg, e.Ctx); err != nil {
		t.Fatal(err)
	}
	return dir
}

// sampleText is a few hundred bytes of varied ASCII.
func sampleText() string {
	var b strings.Builder
	for i := 0; b.Len() < 300; i++ {
		fmt.Fprintf(&b, "x%d := f(%d) // line %d\n", i, i*i%97, i)
	}
	return b.String()
}

func runCmd(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errw bytes.Buffer
	code = Run(args, strings.NewReader(stdin), &out, &errw)
	return out.String(), errw.String(), code
}

var (
	finalRE = regexp.MustCompile(`Final estimate: PPL = ([0-9.]+) \+/- ([0-9.]+)`)
	bpbRE   = regexp.MustCompile(`bits per byte = ([0-9.]+) \((\d+) tokens scored, (\d+) bytes\)`)
)

// The command's perplexity, standard error and bits per byte are those of a hand loop over
// engine.Forward's logits for the same chunks, with its own log-softmax; for a byte model, bits
// per byte is the NLL per token over ln 2.
func TestMatchesHandLoop(t *testing.T) {
	dir := tinyModel(t)
	text := sampleText()
	file := filepath.Join(t.TempDir(), "text.txt")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	const ctx = 64 // the config's train_seq_len, -c's default
	stdout, stderr, code := runCmd(t, "", "-m", dir, "-f", file)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}

	e, err := engine.Load(dir, "", ctx)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.Load("byte")
	if err != nil {
		t.Fatal(err)
	}
	ids, err := tok.Encode(text)
	if err != nil {
		t.Fatal(err)
	}
	var nlls []float64
	for c := 0; (c+1)*ctx <= len(ids); c++ {
		chunk := ids[c*ctx : (c+1)*ctx]
		pos := make([]int, ctx)
		for i := range pos {
			pos[i] = i
		}
		logits, err := e.Forward([][]int{chunk}, [][]int{pos})
		if err != nil {
			t.Fatal(err)
		}
		for j := ctx / 2; j+1 < ctx; j++ {
			var z float64
			for _, v := range logits[0][j] {
				z += math.Exp(float64(v))
			}
			nlls = append(nlls, math.Log(z)-float64(logits[0][j][chunk[j+1]]))
		}
	}
	if want := (len(text) / ctx) * (ctx - 1 - ctx/2); len(nlls) != want {
		t.Fatalf("hand loop scored %d tokens, want %d", len(nlls), want)
	}
	var sum float64
	for _, v := range nlls {
		sum += v
	}
	n := float64(len(nlls))
	mean := sum / n
	var dev float64
	for _, v := range nlls {
		dev += (v - mean) * (v - mean)
	}
	ppl := math.Exp(mean)
	se := math.Sqrt(dev/n/(n-1)) * ppl // llama.cpp: sqrt((<x²>-<x>²)/(n-1)) · ppl

	f := finalRE.FindStringSubmatch(stdout)
	b := bpbRE.FindStringSubmatch(stdout)
	if f == nil || b == nil {
		t.Fatalf("no final estimate or bits per byte in %q", stdout)
	}
	if got, want := f[1], fmt.Sprintf("%.4f", ppl); got != want {
		t.Errorf("PPL %s, want %s", got, want)
	}
	if got, want := f[2], fmt.Sprintf("%.5f", se); got != want {
		t.Errorf("standard error %s, want %s", got, want)
	}
	if got, want := b[1], fmt.Sprintf("%.4f", mean/math.Ln2); got != want {
		t.Errorf("bits per byte %s, want NLL per token / ln 2 = %s", got, want)
	}
	if b[2] != strconv.Itoa(len(nlls)) || b[3] != strconv.Itoa(len(nlls)) {
		t.Errorf("scored %s tokens and %s bytes, want %d of each", b[2], b[3], len(nlls))
	}
	// Score itself, to more digits than the printout.
	s, err := Score(e, ids, ctx, -1, -1, nil, tok.Decode)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(s.NLL-sum) > 1e-9*sum || s.Tokens != len(nlls) {
		t.Errorf("Score: NLL %.12g over %d tokens, hand loop %.12g over %d", s.NLL, s.Tokens, sum, len(nlls))
	}
	if got, want := s.BitsPerByte(), s.NLL/float64(s.Tokens)/math.Ln2; got != want {
		t.Errorf("byte model: bits per byte %v, want NLL per token / ln 2 = %v", got, want)
	}
	// One running value per chunk on the progress line, the last the final estimate.
	if got := strings.Count(stderr, "]"); got != len(text)/ctx {
		t.Errorf("%d progress values for %d chunks: %s", got, len(text)/ctx, stderr)
	}
	if !strings.Contains(stderr, fmt.Sprintf("[%d]%s,", len(text)/ctx, f[1])) {
		t.Errorf("the last running value is not the final estimate %s: %s", f[1], stderr)
	}

	// -f - reads the same text from standard input; --chunks bounds the chunks scored.
	stdin, _, code := runCmd(t, text, "-m", dir, "-f", "-")
	if code != 0 || stdin != stdout {
		t.Errorf("-f -: exit %d, %q, want %q", code, stdin, stdout)
	}
	one, _, code := runCmd(t, text, "-m", dir, "-f", "-", "--chunks", "1")
	if want := fmt.Sprintf("(%d tokens scored,", ctx-1-ctx/2); code != 0 || !strings.Contains(one, want) {
		t.Errorf("--chunks 1: exit %d, %q, want %q", code, one, want)
	}
}

// Bad input: one-line errors, exit 2 for flags and for a text shorter than one chunk.
func TestRefusals(t *testing.T) {
	dir := tinyModel(t)
	cases := []struct {
		stdin string
		args  []string
		want  string
	}{
		{"", []string{"-m", dir}, "-f FILE is required"},
		{"", []string{"-m", dir, "-f", "-", "-c", "-3"}, "-c must be at least 2"},
		{"", []string{"-m", dir, "-f", "-", "--chunks", "0"}, "--chunks must be positive"},
		{"", []string{"-m", dir, "-f", "-", "extra"}, "unexpected argument"},
		{"short text", []string{"-m", dir, "-f", "-"}, "standard input is 10 tokens, shorter than one chunk of -c 64"},
		{sampleText(), []string{"-m", dir, "-f", "-", "-c", "320"}, "is 311 tokens, shorter than one chunk of -c 320"},
	}
	for _, c := range cases {
		stdout, stderr, code := runCmd(t, c.stdin, c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 || stdout != "" {
			t.Errorf("%v: exit %d, stderr %q, want exit 2 and one line with %q", c.args, code, stderr, c.want)
		}
	}
	_, stderr, code := runCmd(t, "", "-m", dir, "-f", filepath.Join(t.TempDir(), "missing.txt"))
	if code != 1 || !strings.Contains(stderr, "-f:") {
		t.Errorf("a missing file: exit %d, %q, want exit 1 naming -f", code, stderr)
	}
}
