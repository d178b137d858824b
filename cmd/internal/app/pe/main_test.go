package pe

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/posformer/posformer/engine"
	"github.com/posformer/posformer/models"
	"github.com/posformer/posformer/positional"
)

// extraOptions are the options a scheme needs beyond its defaults.
var extraOptions = map[string][]string{
	"learned": {"-pe", "max_positions=32"},
}

// pe runs the command in-process on a command line, as main does, and returns its stdout.
func pe(args ...string) (string, error) {
	o, rest, err := parse(args, io.Discard)
	if err != nil {
		return "", err
	}
	var out bytes.Buffer
	err = run(o, rest, &out, io.Discard)
	return out.String(), err
}

// peJSON runs pe with -format json and decodes the object.
func peJSON(t *testing.T, args ...string) map[string]any {
	t.Helper()
	out, err := pe(append(args, "-format", "json")...)
	if err != nil {
		t.Fatalf("pe %s: %v", strings.Join(args, " "), err)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("pe %s: output is not one JSON object: %v", strings.Join(args, " "), err)
	}
	return m
}

// dims returns the shape of a nested JSON array, failing on ragged or non-numeric ones.
func dims(t *testing.T, key string, v any) []int {
	t.Helper()
	a, ok := v.([]any)
	if !ok {
		if _, isNum := v.(float64); !isNum {
			t.Fatalf("%s: %T is neither an array nor a number", key, v)
		}
		return nil
	}
	if len(a) == 0 {
		return []int{0}
	}
	inner := dims(t, key, a[0])
	for _, x := range a[1:] {
		if d := dims(t, key, x); fmt.Sprint(d) != fmt.Sprint(inner) {
			t.Fatalf("%s: ragged array (%v vs %v)", key, d, inner)
		}
	}
	return append([]int{len(a)}, inner...)
}

func matrix(t *testing.T, v any) [][]float64 {
	t.Helper()
	var out [][]float64
	for _, row := range v.([]any) {
		var r []float64
		for _, x := range row.([]any) {
			r = append(r, x.(float64))
		}
		out = append(out, r)
	}
	return out
}

func vector(v any) []float64 {
	var out []float64
	for _, x := range v.([]any) {
		out = append(out, x.(float64))
	}
	return out
}

// Every registered scheme prints one JSON object with exactly the keys its interfaces promise,
// each of the right shape, for a decoder and (where the scheme applies) an encoder.
func TestEverySchemeJSON(t *testing.T) {
	const n, dim, heads = 12, 32, 4
	for _, name := range positional.Names() {
		for _, kind := range []string{"decoder", "encoder"} {
			args := append([]string{"-scheme", name, "-kind", kind, "-len", fmt.Sprint(n), "-dim", fmt.Sprint(dim), "-heads", fmt.Sprint(heads)}, extraOptions[name]...)
			o, _, err := parse(args, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			opts, _ := schemeOptions(o)
			s, err := positional.New(name, opts, positional.Arch{Dim: dim, NumHeads: heads, NumKVHeads: heads, HeadDim: dim / heads, NumLayers: 1, Causal: kind == "decoder"})
			if err != nil {
				if _, cmdErr := pe(args...); cmdErr == nil {
					t.Errorf("%s %s: the scheme refuses (%v) but pe printed nothing wrong", name, kind, err)
				}
				t.Logf("%s %s: %v", name, kind, err)
				continue
			}
			m := peJSON(t, args...)
			_, abs := s.(positional.Absolute)
			_, bias := s.(positional.Bias)
			_, qk := s.(positional.QueryKey)
			_, rel := s.(positional.Relative)
			_, buck := s.(positional.Bucketed)
			_, sl := s.(slopes)
			_, rot := s.(rotary)
			_, rc := s.(rotatingCode)
			want := map[string]struct {
				present bool
				shape   []int // nil: a number
			}{
				"table":             {abs, []int{n, dim}},
				"bias":              {bias, []int{heads, n, n}},
				"slopes":            {sl, []int{heads}},
				"buckets":           {buck, []int{n, n}},
				"scores":            {qk || rel, []int{heads, n, n}},
				"attention_factor":  {rot, nil},
				"rotation_residual": {rc, nil},
			}
			for key, w := range want {
				v, ok := m[key]
				if ok != w.present {
					t.Errorf("%s %s: key %q present=%v, want %v", name, kind, key, ok, w.present)
					continue
				}
				if ok {
					if got := dims(t, key, v); fmt.Sprint(got) != fmt.Sprint(w.shape) {
						t.Errorf("%s %s: %s has shape %v, want %v", name, kind, key, got, w.shape)
					}
				}
			}
			if _, ok := m["inv_freq"]; ok != rot {
				t.Errorf("%s %s: inv_freq present=%v, want %v", name, kind, ok, rot)
			} else if ok && len(vector(m["inv_freq"])) == 0 {
				t.Errorf("%s %s: empty inv_freq", name, kind)
			}
			if buck {
				for _, row := range matrix(t, m["buckets"]) {
					for _, b := range row {
						if b != math.Trunc(b) {
							t.Fatalf("%s %s: bucket %g is not an integer", name, kind, b)
						}
					}
				}
			}
			if m["scheme"] != name || m["kind"] != kind || m["len"] != float64(n) {
				t.Errorf("%s %s: header says scheme %v, kind %v, len %v", name, kind, m["scheme"], m["kind"], m["len"])
			}
		}
	}
}

// CSV prints the main matrix in long form: one header line, then one line per value.
func TestEverySchemeCSV(t *testing.T) {
	const n, dim, heads = 6, 8, 2
	for _, name := range positional.Names() {
		args := append([]string{"-scheme", name, "-len", fmt.Sprint(n), "-dim", fmt.Sprint(dim), "-heads", fmt.Sprint(heads)}, extraOptions[name]...)
		out, err := pe(append(args, "-format", "csv")...)
		m := peJSON(t, args...)
		var header string
		var rows int
		switch {
		case m["table"] != nil:
			header, rows = "pos,dim,value", n*dim
		case m["bias"] != nil || m["scores"] != nil:
			header, rows = "head,i,j,value", heads*n*n
		case m["buckets"] != nil:
			header, rows = "i,j,bucket", n*n
		default:
			if err == nil || !strings.Contains(err.Error(), "nothing to print") {
				t.Errorf("%s: nothing to print, but got %q, %v", name, out, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if lines[0] != header || len(lines) != rows+1 {
			t.Errorf("%s: header %q and %d rows, want %q and %d", name, lines[0], len(lines)-1, header, rows)
		}
	}
}

// The code table is the closed form PE(pos, 2i) = sin(pos/10000^(2i/d)), PE(pos, 2i+1) = cos(...).
func TestSinusoidalTableClosedForm(t *testing.T) {
	const n, d = 50, 16
	table := matrix(t, peJSON(t, "-scheme", "sinusoidal", "-len", fmt.Sprint(n), "-dim", fmt.Sprint(d))["table"])
	for pos := range n {
		for i := range d / 2 {
			angle := float64(pos) / math.Pow(10000, float64(2*i)/d)
			if e := math.Abs(table[pos][2*i] - math.Sin(angle)); e > 1e-5 {
				t.Fatalf("PE(%d, %d) = %g, want sin %g", pos, 2*i, table[pos][2*i], math.Sin(angle))
			}
			if e := math.Abs(table[pos][2*i+1] - math.Cos(angle)); e > 1e-5 {
				t.Fatalf("PE(%d, %d) = %g, want cos %g", pos, 2*i+1, table[pos][2*i+1], math.Cos(angle))
			}
		}
	}
}

// The reported rotation residual of the sinusoidal code is at float32 rounding level, and the
// check behind it does fail when the rotation is not the code's.
func TestSinusoidalRotationResidual(t *testing.T) {
	m := peJSON(t, "-scheme", "sinusoidal", "-len", "64", "-dim", "64")
	r := m["rotation_residual"].(float64)
	t.Logf("max |PE(pos+k) - M_k PE(pos)| = %.3g", r)
	if r >= 1e-5 {
		t.Errorf("rotation residual %g, want < 1e-5", r)
	}
	table := matrix(t, m["table"])
	t32 := make([][]float32, len(table))
	for i, row := range table {
		for _, v := range row {
			t32[i] = append(t32[i], float32(v))
		}
	}
	wrong := positional.Frequencies(64, 500) // another base's frequencies rotate by other angles
	if bad, err := rotationResidual(t32, wrong); err != nil || bad < 0.1 {
		t.Errorf("with wrong frequencies the residual is %g (%v), want large", bad, err)
	}
	if _, err := rotationResidual(t32, wrong[:3]); err == nil {
		t.Error("frequencies of the wrong width gave no error")
	}
}

// ALiBi's bias is -m_h·|i-j| with the paper's slopes m_h = 2^(-8h/n), for n a power of two.
func TestALiBiBias(t *testing.T) {
	const n, heads = 20, 8
	for _, kind := range []string{"decoder", "encoder"} {
		m := peJSON(t, "-scheme", "alibi", "-kind", kind, "-len", fmt.Sprint(n), "-heads", fmt.Sprint(heads))
		sl := vector(m["slopes"])
		for h := range heads {
			if want := math.Pow(2, -8*float64(h+1)/heads); math.Abs(sl[h]-want) > 1e-12 {
				t.Errorf("slope %d = %g, want %g", h, sl[h], want)
			}
		}
		for h, head := range m["bias"].([]any) {
			for i, row := range matrix(t, head) {
				for j, v := range row {
					if want := -sl[h] * math.Abs(float64(i-j)); math.Abs(v-want) > 1e-5 {
						t.Fatalf("%s: bias[%d][%d][%d] = %g, want %g", kind, h, i, j, v, want)
					}
				}
			}
		}
	}
}

// RoPE's scores for the unit content vector u = (1,…,1)/sqrt(d) are the long-term decay of the
// paper: logit(i, j) = (1/sqrt(d))·(2/d)·Σ_p cos((i-j)·θ_p), θ_p = base^(-2p/d). Checked on a
// random model and on the shipped checkpoint (grouped queries: 4 heads share 2 key heads).
func TestRoPEScores(t *testing.T) {
	for _, c := range []struct {
		args []string
		hd   int
		base float64
	}{
		{[]string{"-scheme", "rope", "-dim", "64", "-heads", "4", "-pe", "base=500"}, 16, 500},
		{[]string{"-m", "../../../../weights/rope-decoder"}, 24, 10000},
	} {
		m := peJSON(t, append(c.args, "-len", "40")...)
		inv := vector(m["inv_freq"])
		if len(inv) != c.hd/2 || m["attention_factor"] != 1.0 {
			t.Fatalf("%v: %d frequencies, attention factor %v", c.args, len(inv), m["attention_factor"])
		}
		for p, f := range inv {
			if want := math.Pow(c.base, -2*float64(p)/float64(c.hd)); math.Abs(f-want) > 1e-12 {
				t.Errorf("%v: inv_freq[%d] = %g, want %g", c.args, p, f, want)
			}
		}
		for h, head := range m["scores"].([]any) {
			for i, row := range matrix(t, head) {
				for j, v := range row {
					sum := 0.0
					for p := range c.hd / 2 {
						sum += math.Cos(float64(i-j) * math.Pow(c.base, -2*float64(p)/float64(c.hd)))
					}
					want := sum * 2 / float64(c.hd) / math.Sqrt(float64(c.hd))
					if math.Abs(v-want) > 1e-5 {
						t.Fatalf("%v: scores[%d][%d][%d] = %g, want %g", c.args, h, i, j, v, want)
					}
				}
			}
		}
	}
}

// A trained checkpoint's code is read through its config: the shipped sinusoidal encoder.
func TestCheckpointTable(t *testing.T) {
	m := peJSON(t, "-m", "../../../../weights/sinusoidal-encoder", "-len", "10")
	if m["kind"] != "encoder" || m["scheme"] != "sinusoidal" {
		t.Fatalf("header: %v %v", m["kind"], m["scheme"])
	}
	table := matrix(t, m["table"])
	d := len(table[0])
	for pos, row := range table {
		if want := math.Sin(float64(pos) / math.Pow(10000, 2.0/float64(d))); math.Abs(row[2]-want) > 1e-5 {
			t.Errorf("PE(%d, 2) = %g, want %g", pos, row[2], want)
		}
	}
}

// A trained table is read from the checkpoint, not re-initialized: a learned-positions model is
// saved with a known table, and -m prints that table.
func TestCheckpointLearnedTable(t *testing.T) {
	const n, dim = 12, 8
	cfg := models.Config{
		Kind: models.Decoder, VocabSize: 8, Dim: dim, NumLayers: 1, NumHeads: 2, HiddenDim: 8, MaxSeqLen: n,
		Positional: map[string]any{"name": "learned", "max_positions": float64(n)},
	}
	m, err := models.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	backend, err := engine.NewBackend("")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.New()
	ctx.SetParam(context.ParamInitialSeed, int64(1)) // the same weights every run
	// One forward pass creates the variables.
	if _, err := context.ExecOnce(backend, ctx, func(ctx *context.Context, tok, pos, valid *Node) *Node {
		logits, _ := m.Forward(ctx, tok, pos, valid, nil)
		return logits
	}, [][]int32{{1}}, [][]int32{{0}}, [][]bool{{true}}); err != nil {
		t.Fatal(err)
	}
	want := make([]float32, n*dim)
	for i := range want {
		want[i] = float32(i%7) - 3.5 + float32(i)/100
	}
	v := ctx.GetVariableByScopeAndName("/"+models.Scope+"/positional", "table")
	if v == nil {
		t.Fatal("no positional table variable")
	}
	if err := v.SetValue(tensors.FromFlatDataAndDimensions(want, n, dim)); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := models.Save(dir, cfg, ctx); err != nil {
		t.Fatal(err)
	}
	table := matrix(t, peJSON(t, "-m", dir, "-len", fmt.Sprint(n))["table"])
	for p := range n {
		for d := range dim {
			if got := table[p][d]; math.Abs(got-float64(want[p*dim+d])) > 1e-6 {
				t.Fatalf("table[%d][%d] = %g, want the saved %g", p, d, got, want[p*dim+d])
			}
		}
	}
	if _, err := pe("-m", dir, "-len", fmt.Sprint(n+1)); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("use -len <= %d", n)) {
		t.Errorf("-len past the table: want an error saying -len <= %d, got %v", n, err)
	}
}

// Learned variables come from -seed: the same seed gives the same table, another seed another.
func TestSeed(t *testing.T) {
	table := func(seed string) string {
		out, err := pe("-scheme", "learned", "-pe", "max_positions=8", "-len", "8", "-dim", "8", "-heads", "2", "-seed", seed)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if a, b, c := table("3"), table("3"), table("4"); a != b || a == c {
		t.Errorf("seed 3 twice: equal=%v; seeds 3 and 4: equal=%v", a == b, a == c)
	}
}

// Named scheme flags reach the scheme only when given, and clash with the same -pe option.
func TestSchemeFlags(t *testing.T) {
	m := peJSON(t, "-scheme", "shaw", "-max-distance", "3", "-len", "9", "-dim", "8", "-heads", "2")
	if opts := m["options"].(map[string]any); opts["max_distance"] != 3.0 || len(opts) != 1 {
		t.Errorf("options %v, want max_distance 3 only", opts)
	}
	if got := matrix(t, m["buckets"]); got[8][0] != 0 || got[0][8] != 6 {
		t.Errorf("buckets at distance ±8 with max_distance 3: %v and %v, want 0 and 6", got[8][0], got[0][8])
	}
	// T5's three options: buckets in [0, 8), and keys after the query get buckets of their own
	// only when bidirectional.
	upper := func(args ...string) (opts map[string]any, maxBucket, upperSum float64) {
		m := peJSON(t, append([]string{"-scheme", "t5", "-len", "10", "-dim", "8", "-heads", "2"}, args...)...)
		for i, row := range matrix(t, m["buckets"]) {
			for j, b := range row {
				maxBucket = max(maxBucket, b)
				if j > i {
					upperSum += b
				}
			}
		}
		return m["options"].(map[string]any), maxBucket, upperSum
	}
	opts, top, up := upper("-num-buckets", "8", "-max-distance", "16", "-bidirectional")
	if len(opts) != 3 || opts["num_buckets"] != 8.0 || opts["max_distance"] != 16.0 || opts["bidirectional"] != true {
		t.Errorf("t5 options %v", opts)
	}
	if top >= 8 || up == 0 {
		t.Errorf("t5 bidirectional with 8 buckets: largest bucket %g, keys after the query sum to %g", top, up)
	}
	if opts, _, up := upper("-num-buckets", "8"); len(opts) != 1 || up != 0 {
		t.Errorf("t5 decoder without -bidirectional: options %v, keys after the query sum to %g, want 0", opts, up)
	}
	if opts, _, _ := upper(); len(opts) != 0 {
		t.Errorf("no scheme flag given, but options %v", opts)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-scheme", "shaw", "-max-distance", "3", "-pe", "max_distance=4"}, "given twice"},
		{[]string{"-scheme", "rope", "-bidirectional"}, "unknown option bidirectional"},
		{[]string{"-scheme", "rope", "-num-buckets", "8"}, "unknown option num_buckets"},
	} {
		if _, err := pe(c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: want an error mentioning %q, got %v", c.args, c.want, err)
		}
	}
}

// PNG figures decode as images whose size follows the panels drawn, written atomically.
func TestPNG(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		scheme     string
		minW, minH int
	}{
		{"sinusoidal", 800, 340}, // table and its dot-product decay
		{"rope", 800, 340},       // identical heads drawn once, and the decay
		{"alibi", 1600, 340},     // four heads
	} {
		path := filepath.Join(dir, c.scheme+".png")
		if _, err := pe("-scheme", c.scheme, "-len", "32", "-format", "png", "-o", path); err != nil {
			t.Fatalf("%s: %v", c.scheme, err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", c.scheme, err)
		}
		b := img.Bounds()
		t.Logf("%s: %dx%d", c.scheme, b.Dx(), b.Dy())
		if b.Dx() < c.minW || b.Dy() < c.minH || b.Dx() > 4000 || b.Dy() > 4000 {
			t.Errorf("%s: image is %dx%d, want at least %dx%d", c.scheme, b.Dx(), b.Dy(), c.minW, c.minH)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 3 {
		t.Errorf("want just the three PNGs in %s, found %d files", dir, len(entries))
	}
	// The default name is pe-<scheme>.png in the working directory.
	t.Chdir(dir)
	if _, err := pe("-scheme", "alibi", "-len", "4", "-heads", "1", "-dim", "2", "-format", "png"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "pe-alibi.png")); err != nil {
		t.Errorf("default output: %v", err)
	}
}

// Every scheme draws, except one with nothing to draw, which says so.
func TestEverySchemePNG(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skips drawing every scheme as a PNG (about 5 s; TestPNG still draws one); run it with go test ./cmd/internal/app/pe -run TestEverySchemePNG")
	}
	dir := t.TempDir()
	for _, name := range positional.Names() {
		path := filepath.Join(dir, name+".png")
		_, err := pe(append([]string{"-scheme", name, "-len", "8", "-dim", "16", "-heads", "2", "-format", "png", "-o", path}, extraOptions[name]...)...)
		if err != nil {
			if m := peJSON(t, append([]string{"-scheme", name, "-len", "8", "-dim", "16", "-heads", "2"}, extraOptions[name]...)...); m["table"] != nil || m["bias"] != nil || m["scores"] != nil || m["buckets"] != nil {
				t.Errorf("%s: %v", name, err)
			}
			continue
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := png.Decode(f); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		f.Close()
	}
}

// Bad input is a one-line error naming the problem.
func TestBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"-scheme", "nope"}, append([]string{`"nope"`}, positional.Names()...)},
		{[]string{}, []string{"-scheme", "rope"}},
		{[]string{"-scheme", "rope", "-pe", "bas=2"}, []string{"bas", "base"}},
		{[]string{"-scheme", "rope", "-pe", "base=x"}, []string{"base", "number"}},
		{[]string{"-scheme", "rope", "-len", "0"}, []string{"-len", ">= 1"}},
		{[]string{"-scheme", "rope", "-format", "svg"}, []string{"svg", "json, csv, png"}},
		{[]string{"-scheme", "rope", "-dim", "30", "-heads", "4"}, []string{"-dim", "-heads"}},
		{[]string{"-scheme", "rope", "-kind", "seq2seq"}, []string{"seq2seq", "decoder, encoder"}},
		{[]string{"-scheme", "learned"}, []string{"max_positions"}},
		{[]string{"-scheme", "learned", "-pe", "max_positions=8", "-len", "9"}, []string{"-len 9", "8"}},
		{[]string{"-scheme", "none", "-format", "png"}, []string{"none", "nothing"}},
		{[]string{"-scheme", "rope", "stray"}, []string{"unexpected argument"}},
		{[]string{"-m", "../../../../weights/rope-decoder", "-dim", "8"}, []string{"-dim", "-m"}},
		{[]string{"-m", "../../../../weights/rope-decoder", "-scheme", "alibi"}, []string{"alibi", "rope"}},
		{[]string{"-m", "../../../../weights/rope-decoder", "-layer", "7"}, []string{"-layer 7", "3 layers"}},
		{[]string{"-m", t.TempDir()}, []string{"config.json"}},
		{[]string{"-scheme", "rope", "-o", filepath.Join(t.TempDir(), "no", "such", "dir.json")}, []string{"dir.json"}},
		{[]string{"-len"}, []string{"-len"}},
		{[]string{"-pe", "nokey"}, []string{"key=value"}},
	} {
		_, err := pe(c.args...)
		if err == nil {
			t.Errorf("%v: no error", c.args)
			continue
		}
		msg := err.Error()
		if strings.Contains(msg, "\n") {
			t.Errorf("%v: error spans lines: %q", c.args, msg)
		}
		for _, w := range c.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%v: error %q does not mention %q", c.args, msg, w)
			}
		}
	}
}

// The binary itself: a usage error exits 2, a bad value 1, each with one line on stderr and
// never a panic; good input exits 0.
func TestExitCodes(t *testing.T) {
	if os.Getenv("PE_TEST_MAIN") == "1" {
		os.Exit(Main(strings.Fields(os.Getenv("PE_TEST_ARGS"))))
	}
	for _, c := range []struct {
		args string
		code int
	}{
		{"-len", 2},
		{"-nosuchflag", 2},
		{"-scheme nope", 1},
		{"-scheme rope -len 0", 1},
		{"-scheme rope -pe layout=diagonal", 1},
		{"-scheme rope -len 4 -dim 8 -heads 2", 0},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestExitCodes$")
		cmd.Env = append(os.Environ(), "PE_TEST_MAIN=1", "PE_TEST_ARGS="+c.args)
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = io.Discard, &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		if code != c.code {
			t.Errorf("pe %s: exit %d, want %d (stderr %q)", c.args, code, c.code, stderr.String())
		}
		if c.code != 0 && (len(lines) != 1 || !strings.HasPrefix(lines[0], "pe: ") || strings.Contains(stderr.String(), "goroutine")) {
			t.Errorf("pe %s: want one line starting with \"pe: \" on stderr, got %q", c.args, stderr.String())
		}
	}
}

// The RoPE-scaling flags reach the scheme: inv_freq and attention_factor follow the
// formulas, and dynamic NTK's frequencies follow -len.
func TestRoPEScalingFlags(t *testing.T) {
	const b, s, L, r = 10000.0, 4.0, 128, 16 // -dim 64 -heads 4: head dim 16
	freqs := func(rep map[string]any) []float64 {
		var out []float64
		for _, v := range rep["inv_freq"].([]any) {
			out = append(out, v.(float64))
		}
		return out
	}
	theta := func(i int, base float64) float64 { return math.Pow(base, -float64(2*i)/r) }
	lin := peJSON(t, "-scheme", "rope", "-dim", "64", "-heads", "4", "--rope-scale", "4")
	for i, f := range freqs(lin) {
		if math.Abs(f-theta(i, b)/s) > 1e-12 {
			t.Errorf("linear: θ_%d = %g, want %g", i, f, theta(i, b)/s)
		}
	}
	for _, n := range []int{64, 512} {
		dyn := peJSON(t, "-scheme", "rope", "-dim", "64", "-heads", "4", "-len", fmt.Sprint(n), "--rope-scaling", "dynamic", "--rope-scale", "4", "--yarn-orig-ctx", fmt.Sprint(L))
		base := b
		if n > L {
			base = b * math.Pow(s*float64(n)/L-(s-1), r/(r-2.0))
		}
		for i, f := range freqs(dyn) {
			if math.Abs(f-theta(i, base)) > 1e-12*theta(i, base)+1e-15 {
				t.Errorf("dynamic at -len %d: θ_%d = %g, want %g", n, i, f, theta(i, base))
			}
		}
	}
	yarn := peJSON(t, "-scheme", "rope", "-dim", "64", "-heads", "4", "--rope-scaling", "yarn", "--rope-freq-scale", "0.25", "--yarn-orig-ctx", "128")
	if f := yarn["attention_factor"].(float64); math.Abs(f-(0.1*math.Log(s)+1)) > 1e-12 {
		t.Errorf("yarn attention_factor %g, want %g", f, 0.1*math.Log(s)+1)
	}
	if _, err := pe("-scheme", "rope", "--rope-scaling", "yarn", "--rope-scale", "4"); err == nil || !strings.Contains(err.Error(), "--yarn-orig-ctx") {
		t.Errorf("yarn without an original context: %v", err)
	}
	if _, err := pe("-scheme", "alibi", "--rope-scale", "4"); err == nil || !strings.Contains(err.Error(), "rope scheme") {
		t.Errorf("rope flags on alibi: %v", err)
	}
}

// -m takes a model's name in $POSFORMER_HOME as run does, and shows the same table as its path.
func TestModelByName(t *testing.T) {
	home := t.TempDir()
	src, err := filepath.Abs("../../../../weights/rope-decoder")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(src, filepath.Join(home, "mine")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("POSFORMER_HOME", home)
	byName := peJSON(t, "-m", "mine", "-len", "12")
	byPath := peJSON(t, "-m", src, "-len", "12")
	if !reflect.DeepEqual(byName["scores"], byPath["scores"]) || byName["scores"] == nil {
		t.Fatalf("-m mine and -m %s give different tables", src)
	}
	if _, err := pe("-m", "nosuchmodel"); err == nil || !strings.Contains(err.Error(), `no model "nosuchmodel"`) {
		t.Fatalf("-m nosuchmodel: %v", err)
	}
}
