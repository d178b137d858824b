package train

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/posformer/posformer/engine/train/corpus"
	"github.com/posformer/posformer/models"
	"github.com/posformer/posformer/tokenizer"
)

// bpeText is a small text with enough repetition for merges, written to a file.
func bpeText(t *testing.T) string {
	var b strings.Builder
	words := strings.Fields("alpha beta gamma delta epsilon zeta theta kappa lambda sigma omega Println Sprintf return")
	for i := range 400 {
		fmt.Fprintf(&b, "func f%d() { fmt.%s(%q, %d) }\n", i, words[i%len(words)], words[(i*7)%len(words)], i*i)
	}
	path := filepath.Join(t.TempDir(), "text.go")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func tinyBPE(data, out string) Options {
	return Options{Kind: "decoder", Scheme: "rope", Out: out, PE: map[string]any{}, Dim: 16, Layers: 1, Heads: 2, KV: 1,
		Hidden: 16, Ctx: 64, Steps: 2, Batch: 2, Seq: 16, LR: 1e-3, Warmup: 1, Seed: 1, EvalEvery: 1, SaveEvery: 2,
		EvalWindows: 4, MaskRate: 0.15, Data: data, BPE: 300}
}

// -bpe learns a vocabulary, saves it as the checkpoint's tokenizer.json (named in config.json,
// sizing the embedding), trains on its tokens, and reports bits per byte in loss.csv and
// train.json: the eval loss times the windows' tokens over the bytes their targets decode to,
// over ln 2, recomputed here from the saved tokenizer.
func TestTrainOnBPE(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a tiny model for 2 steps")
	}
	data, dir := bpeText(t), t.TempDir()
	o := tinyBPE(data, dir)
	r, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := models.ReadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.Load(filepath.Join(dir, TokenizerFile))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Tokenizer != TokenizerFile || cfg.VocabSize != 300 || tok.VocabSize() != 300 {
		t.Errorf("config tokenizer %q vocab %d, tokenizer.json %d tokens; want %s, 300, 300", cfg.Tokenizer, cfg.VocabSize, tok.VocabSize(), TokenizerFile)
	}
	// The held-out split of -data, as the run saw it, in the run's tokens.
	c, err := corpus.LoadText(data, 0, dir)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := tokenizer.EncodeLong(tok, c.Eval)
	if err != nil {
		t.Fatal(err)
	}
	ids32 := make([]int32, len(ids))
	for i, id := range ids {
		ids32[i] = int32(id)
	}
	_, tgt := corpus.TokenWindows(ids32, o.Seq, o.EvalWindows)
	tokens, nbytes := 0, 0
	for _, row := range tgt {
		ints := make([]int, len(row))
		for i, id := range row {
			ints[i] = int(id)
		}
		tokens += len(row)
		nbytes += len(tok.Decode(ints))
	}
	want := r.EvalLoss * float64(tokens) / float64(nbytes) / math.Ln2
	curve, err := ReadCurve(dir, 100)
	if err != nil || len(curve) != 2 {
		t.Fatalf("loss curve %v, %v; want 2 points", curve, err)
	}
	last := curve[len(curve)-1]
	if math.Abs(last.BitsPerByte-want) > 1e-4*want || last.BitsPerByte <= 0 {
		t.Errorf("loss.csv bits per byte %g, want %g (eval loss %g nats/token, %d tokens over %d bytes)", last.BitsPerByte, want, r.EvalLoss, tokens, nbytes)
	}
	var info map[string]any
	js, _ := os.ReadFile(filepath.Join(dir, InfoFile))
	if err := json.Unmarshal(js, &info); err != nil {
		t.Fatal(err)
	}
	if got := info["eval_bits_per_byte"].(float64); math.Abs(got-want) > 1e-9*want {
		t.Errorf("train.json eval_bits_per_byte %g, want %g", got, want)
	}
	if info["tokenizer"] != TokenizerFile || info["vocab_size"] != 300.0 {
		t.Errorf("train.json tokenizer %v vocab %v", info["tokenizer"], info["vocab_size"])
	}

	// -resume reuses the folder's tokenizer; a -bpe or -tokenizer that disagrees is refused.
	o.Steps, o.Resume = 3, true
	resumed, err := Run(context.Background(), o)
	if err != nil || resumed.Steps != 3 {
		t.Errorf("resumed: step %d, %v", resumed.Steps, err)
	}

	// -init from a BPE checkpoint fine-tunes on its tokens: -o gets a copy of its tokenizer, and
	// a step at a vanishing learning rate scores what the source scored.
	ft := tinyBPE(data, t.TempDir())
	ft.BPE, ft.Init, ft.Steps, ft.LR = 0, dir, 1, 1e-12
	fr, err := Run(context.Background(), ft)
	if err != nil {
		t.Fatal(err)
	}
	if a := mustRead(t, filepath.Join(ft.Out, TokenizerFile)); string(a) != string(mustRead(t, filepath.Join(dir, TokenizerFile))) {
		t.Error("-init: the fine-tune's tokenizer.json is not a copy of its source's")
	}
	if c, err := models.ReadConfig(ft.Out); err != nil || c.Tokenizer != TokenizerFile || c.VocabSize != 300 {
		t.Errorf("-init: config %+v, %v; want tokenizer %s, vocab 300", c, err, TokenizerFile)
	}
	if math.Abs(fr.EvalLoss-resumed.EvalLoss) > 1e-4 {
		t.Errorf("-init at lr 1e-12: eval loss %g, its source's %g", fr.EvalLoss, resumed.EvalLoss)
	}
	o.Steps = 4
	o.BPE = 400
	if _, err := Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), "not -bpe 400") {
		t.Errorf("resume with another -bpe: %v", err)
	}
	other := filepath.Join(t.TempDir(), "tokenizer.json")
	v, _ := tokenizer.TrainBPE([]byte("some other text entirely"), 260)
	js, _ = v.JSON()
	os.WriteFile(other, js, 0o644)
	o.BPE, o.Tokenizer = 0, other
	if _, err := Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), "differs") {
		t.Errorf("resume with another -tokenizer: %v", err)
	}

	// -tokenizer trains a fresh model on that file's tokens, copied into the folder.
	o = tinyBPE(data, t.TempDir())
	o.BPE, o.Tokenizer = 0, filepath.Join(dir, TokenizerFile)
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if a, _ := os.ReadFile(filepath.Join(o.Out, TokenizerFile)); string(a) != string(mustRead(t, filepath.Join(dir, TokenizerFile))) {
		t.Error("-tokenizer: the folder's tokenizer.json is not a copy of the file given")
	}
	// -force back to bytes leaves no stale tokenizer.json behind.
	o.Tokenizer, o.Force = "", true
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(o.Out, TokenizerFile)); err == nil {
		t.Error("-force to a byte run kept the old tokenizer.json")
	}
}

func mustRead(t *testing.T, path string) []byte {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// -bpe and -tokenizer are for plain decoders: an encoder, a benchmark task, -bos, -init (which
// keeps its checkpoint's vocabulary), a negative size or both flags at once are refused with one
// line naming the flag; so is -skip-generated with -data.
func TestBPERefusals(t *testing.T) {
	for _, c := range []struct {
		edit func(*Options)
		want string
	}{
		{func(o *Options) { o.Kind = "encoder" }, "-bpe trains decoders only"},
		{func(o *Options) { o.Kind, o.Task = "", "copy" }, "-task copy"},
		{func(o *Options) { o.BOS = true }, "drop -bos"},
		{func(o *Options) { o.Init = "somewhere" }, "-bpe with -init"},
		{func(o *Options) { o.BPE = -3 }, "-bpe -3"},
		{func(o *Options) { o.Data, o.BPE = bpeText(t), 5000 }, "no pair left to merge"},
		{func(o *Options) { o.Tokenizer = "t.json" }, "give one"},
		{func(o *Options) { o.BPE, o.Tokenizer, o.Kind = 0, "t.json", "encoder" }, "-tokenizer trains decoders only"},
		{func(o *Options) { o.Data, o.SkipGenerated = bpeText(t), true }, "-skip-generated leaves out the Go tree's"},
	} {
		o := tinyBPE("unused", t.TempDir())
		c.edit(&o)
		_, err := Run(context.Background(), o)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: %v; want one line with %q", o, err, c.want)
		}
	}
}

// A loss curve with the bits-per-byte column reads back; a byte run's curve has no such column.
func TestCurveBitsPerByte(t *testing.T) {
	dir := t.TempDir()
	pts := []CurvePoint{{Step: 10, TrainLoss: 3, EvalLoss: 2.5, LR: 1e-3, Seconds: 4, BitsPerByte: 1.25}}
	if err := writeCurve(dir, pts, true); err != nil {
		t.Fatal(err)
	}
	got, err := ReadCurve(dir, 100)
	if err != nil || len(got) != 1 || got[0] != pts[0] {
		t.Errorf("BPE curve read back as %+v, %v", got, err)
	}
	if err := writeCurve(dir, pts, false); err != nil {
		t.Fatal(err)
	}
	if data := string(mustRead(t, filepath.Join(dir, CurveFile))); data != "step,train_loss,eval_loss,lr,seconds\n10,3,2.5,0.001,4\n" {
		t.Errorf("byte curve:\n%s", data)
	}
}
