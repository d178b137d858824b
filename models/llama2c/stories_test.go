package llama2c_test

// The checks against llama2.c's own algorithm: a float64 forward pass written here from
// run.c (its memory_map_weights offsets, rmsnorm, RoPE, attention over a KV cache, SwiGLU,
// classifier), sharing no code with the engine or with this package's reader.

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/posformer/posformer/engine"
	"github.com/posformer/posformer/layers/quant"
	"github.com/posformer/posformer/models"
	"github.com/posformer/posformer/models/llama2c"
)

// refModel holds a version 0 file's weights in float64, sliced as run.c maps them.
type refModel struct {
	dim, hidden, layers, heads, kvHeads, vocab, seqLen              int
	emb, rmsAtt, wq, wk, wv, wo, rmsFFN, w1, w2, w3, rmsFinal, wcls []float64
}

// readRef reads a version 0 file by run.c's read_checkpoint and memory_map_weights.
func readRef(t testing.TB, path string) *refModel {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	hdr := make([]int, 7)
	for i := range hdr {
		hdr[i] = int(int32(binary.LittleEndian.Uint32(data[4*i:])))
	}
	m := &refModel{dim: hdr[0], hidden: hdr[1], layers: hdr[2], heads: hdr[3], kvHeads: hdr[4], vocab: hdr[5], seqLen: hdr[6]}
	shared := m.vocab > 0
	if !shared {
		m.vocab = -m.vocab
	}
	f := make([]float64, (len(data)-28)/4)
	for i := range f {
		f[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(data[28+4*i:])))
	}
	hs := m.dim / m.heads
	kvDim := hs * m.kvHeads
	take := func(n int) []float64 { s := f[:n]; f = f[n:]; return s }
	L := m.layers
	m.emb = take(m.vocab * m.dim)
	m.rmsAtt = take(L * m.dim)
	m.wq = take(L * m.dim * m.dim)
	m.wk = take(L * m.dim * kvDim)
	m.wv = take(L * m.dim * kvDim)
	m.wo = take(L * m.dim * m.dim)
	m.rmsFFN = take(L * m.dim)
	m.w1 = take(L * m.dim * m.hidden)
	m.w2 = take(L * m.hidden * m.dim)
	m.w3 = take(L * m.dim * m.hidden)
	m.rmsFinal = take(m.dim)
	take(m.seqLen * hs) // freq_cis_real and freq_cis_imag, unused
	if shared {
		m.wcls = m.emb
	} else {
		m.wcls = take(m.vocab * m.dim)
	}
	if len(f) != 0 {
		t.Fatalf("%d floats left after the classifier", len(f))
	}
	return m
}

func rmsnorm(x, w []float64) []float64 {
	ss := 0.0
	for _, v := range x {
		ss += v * v
	}
	s := 1 / math.Sqrt(ss/float64(len(x))+1e-5)
	out := make([]float64, len(x))
	for i := range x {
		out[i] = w[i] * s * x[i]
	}
	return out
}

// matmul is W (d, n) @ x (n,).
func matmul(w, x []float64, d int) []float64 {
	n := len(x)
	out := make([]float64, d)
	for i := range d {
		for j := range n {
			out[i] += w[i*n+j] * x[j]
		}
	}
	return out
}

// refState is the KV cache, [layer][pos] -> kvDim values.
type refState struct{ k, v [][][]float64 }

// forward is run.c's forward(transformer, token, pos), in float64.
func (m *refModel) forward(s *refState, token, pos int) []float64 {
	dim, hs := m.dim, m.dim/m.heads
	kvDim := hs * m.kvHeads
	kvMul := m.heads / m.kvHeads
	x := append([]float64(nil), m.emb[token*dim:(token+1)*dim]...)
	if s.k == nil {
		s.k, s.v = make([][][]float64, m.layers), make([][][]float64, m.layers)
	}
	for l := range m.layers {
		xb := rmsnorm(x, m.rmsAtt[l*dim:])
		q := matmul(m.wq[l*dim*dim:], xb, dim)
		k := matmul(m.wk[l*dim*kvDim:], xb, kvDim)
		v := matmul(m.wv[l*dim*kvDim:], xb, kvDim)
		for i := 0; i < dim; i += 2 {
			freq := 1 / math.Pow(10000, float64(i%hs)/float64(hs))
			fcr, fci := math.Cos(float64(pos)*freq), math.Sin(float64(pos)*freq)
			vecs := [][]float64{q}
			if i < kvDim {
				vecs = append(vecs, k)
			}
			for _, vec := range vecs {
				v0, v1 := vec[i], vec[i+1]
				vec[i], vec[i+1] = v0*fcr-v1*fci, v0*fci+v1*fcr
			}
		}
		s.k[l] = append(s.k[l], k)
		s.v[l] = append(s.v[l], v)
		out := make([]float64, dim)
		for h := range m.heads {
			qh := q[h*hs : (h+1)*hs]
			att := make([]float64, pos+1)
			top := math.Inf(-1)
			for t := 0; t <= pos; t++ {
				kh := s.k[l][t][(h/kvMul)*hs:]
				for i := range hs {
					att[t] += qh[i] * kh[i]
				}
				att[t] /= math.Sqrt(float64(hs))
				top = math.Max(top, att[t])
			}
			sum := 0.0
			for t := range att {
				att[t] = math.Exp(att[t] - top)
				sum += att[t]
			}
			for t := range att {
				vh := s.v[l][t][(h/kvMul)*hs:]
				for i := range hs {
					out[h*hs+i] += att[t] / sum * vh[i]
				}
			}
		}
		for i, o := range matmul(m.wo[l*dim*dim:], out, dim) {
			x[i] += o
		}
		xb = rmsnorm(x, m.rmsFFN[l*dim:])
		h1 := matmul(m.w1[l*dim*m.hidden:], xb, m.hidden)
		h3 := matmul(m.w3[l*dim*m.hidden:], xb, m.hidden)
		for i := range h1 {
			h1[i] = h1[i] / (1 + math.Exp(-h1[i])) * h3[i]
		}
		for i, o := range matmul(m.w2[l*dim*m.hidden:], h1, dim) {
			x[i] += o
		}
	}
	return matmul(m.wcls, rmsnorm(x, m.rmsFinal), m.vocab)
}

func argmax(v []float32) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}

// compareDecode feeds the engine greedy tokens from BOS, one at a time through its KV cache,
// for steps positions, and checks every step's logits against the reference. It returns the
// greedy ids (the argmax after each step) and the largest relative error seen.
func compareDecode(t *testing.T, e *engine.Engine, ref *refModel, steps int) ([]int, float64) {
	t.Helper()
	s := e.NewSession(1)
	var st refState
	tok, worst := 1, 0.0
	var ids []int
	for pos := range steps {
		out, err := s.Append([][]int{{tok}}, [][]int{{pos}})
		if err != nil {
			t.Fatal(err)
		}
		got, want := out[0][0], ref.forward(&st, tok, pos)
		scale, diff := 0.0, 0.0
		for i := range want {
			scale = math.Max(scale, math.Abs(want[i]))
			diff = math.Max(diff, math.Abs(float64(got[i])-want[i]))
		}
		rel := diff / scale
		worst = math.Max(worst, rel)
		if rel > 1e-4 {
			t.Fatalf("position %d (token %d): logits differ from run.c's algorithm by %.3g relative (max |diff| %.3g, max |logit| %.3g)", pos, tok, rel, diff, scale)
		}
		tok = argmax(got)
		// The greedy choice must be the reference's too, unless the two best are closer than
		// float32 can tell apart.
		if wantTok := argmaxF64(want); wantTok != tok && want[wantTok]-want[tok] > 1e-4*scale {
			t.Fatalf("position %d: greedy token %d, run.c's algorithm picks %d", pos, tok, wantTok)
		}
		ids = append(ids, tok)
	}
	return ids, worst
}

func argmaxF64(v []float64) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}

// stories260KPath is ../shared/fixtures/stories260K.bin relative to the repository root, or
// "" when it is absent.
func stories260KPath() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
	path := filepath.Join(dir, "..", "shared", "fixtures", "stories260K.bin")
	if _, err := os.Stat(path); err != nil {
		return ""
	}
	return path
}

// stories260K returns the fixture's path, checked against the README's sha256, or skips.
func stories260K(t *testing.T) string {
	t.Helper()
	path := stories260KPath()
	if path == "" {
		t.Skip("../shared/fixtures/stories260K.bin is absent (see ../shared/fixtures/README.md)")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	if got := hex.EncodeToString(sum[:]); got != "9414d5a285453a7eab631713d171753232c978f6f97654211469aff8be93c8d6" {
		t.Fatalf("%s has sha256 %s, not the fixture's", path, got)
	}
	return path
}

// stories260K.bin loads, its logits at every one of its 512 positions equal run.c's
// algorithm in float64, and greedy generation from BOS runs to the 512-position limit.
func TestStories260K(t *testing.T) {
	path := stories260K(t)
	start := time.Now()
	e, err := engine.Load(path, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("engine.Load (read + graph setup): %v", time.Since(start))
	c := e.Model.Config
	if c.Dim != 64 || c.HiddenDim != 172 || c.NumLayers != 5 || c.NumHeads != 8 || c.NumKVHeads != 4 || c.VocabSize != 512 || c.MaxSeqLen != 512 || !c.TieEmbeddings {
		t.Fatalf("config %+v disagrees with the fixture's README", c)
	}
	ref := readRef(t, path)
	steps := 512
	if testing.Short() {
		steps = 64
	}
	ids, worst := compareDecode(t, e, ref, steps)
	t.Logf("%d positions: max relative logit error %.2g; greedy ids from BOS: %v ...", steps, worst, ids[:20])

	// Generate, as cmd/infer runs it: BOS, greedy, stop at BOS, until the context is full.
	sm, err := engine.NewSampler(engine.Sampling{Temp: 0})
	if err != nil {
		t.Fatal(err)
	}
	var gen []int
	st, err := e.Generate([]int{1}, -1, sm, []int{1}, func(tok int) { gen = append(gen, tok) })
	if err != nil {
		t.Fatal(err)
	}
	if st.StopReason != "context full" || len(gen) != 512 {
		t.Fatalf("generation stopped after %d tokens (%s); run.c with -n 512 prints 512", len(gen), st.StopReason)
	}
	for i := range ids {
		if gen[i] != ids[i] {
			t.Fatalf("Generate's token %d is %d; stepping the cache gave %d", i, gen[i], ids[i])
		}
	}
	t.Logf("Generate: %d tokens at %.0f tok/s", len(gen), st.DecodeRate())
}

// A random model with an unshared classifier and grouped queries, written by Write as
// version 0, agrees with the reference too (covers wcls and the negative vocab_size). The same
// weights as version 1 give identical logits, and version 2 gives exactly the logits of its
// dequantized weights (how close those are to the originals is TestRoundTrip's business).
func TestRandomModelAllVersions(t *testing.T) {
	cfg := models.Config{Kind: models.Decoder, VocabSize: 96, Dim: 48, NumLayers: 3, NumHeads: 6, NumKVHeads: 2,
		HiddenDim: 80, MaxSeqLen: 24, Positional: map[string]any{"name": "rope", "layout": "interleaved"}}
	w, err := llama2c.RandomWeights(cfg, 3, 0.15)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	logits := func(path string) [][]float32 {
		t.Helper()
		e, err := engine.Load(path, "", 0)
		if err != nil {
			t.Fatal(err)
		}
		prompt := []int{1, 5, 17, 94, 3, 3, 60, 2, 41, 77}
		pos := make([]int, len(prompt))
		for i := range pos {
			pos[i] = i
		}
		out, err := e.Forward([][]int{prompt}, [][]int{pos})
		if err != nil {
			t.Fatal(err)
		}
		return out[0]
	}
	write := func(name string, w llama2c.Weights, version int) string {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := llama2c.Write(path, cfg, w, version); err != nil {
			t.Fatal(err)
		}
		return path
	}
	v0 := write("v0.bin", w, 0)
	e, err := engine.Load(v0, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	_, worst := compareDecode(t, e, readRef(t, v0), cfg.MaxSeqLen)
	t.Logf("random model, %d positions: max relative error %.2g", cfg.MaxSeqLen, worst)

	v2 := write("v2.bin", w, 2)
	_, deq, err := llama2c.ReadFile(v2)
	if err != nil {
		t.Fatal(err)
	}
	for _, pair := range [][2]string{{v0, write("v1.bin", w, 1)}, {write("deq.bin", deq, 0), v2}} {
		a, b := logits(pair[0]), logits(pair[1])
		for i := range a {
			for j := range a[i] {
				if a[i][j] != b[i][j] {
					t.Fatalf("%s and %s: logit [%d][%d] is %g and %g; want identical", filepath.Base(pair[0]), filepath.Base(pair[1]), i, j, a[i][j], b[i][j])
				}
			}
		}
	}
}

// BenchmarkLoad measures llama2c.Load (read the file, build the model, fill its variables)
// for stories260K and for a random model of stories15M's shape (dim 288, hidden 768, 6 layers,
// 6 heads, vocab 32000, seq 256; 60 MB as version 0).
//
//	go test ./models/llama2c -run '^$' -bench Load -benchtime 5x
func BenchmarkLoad(b *testing.B) {
	backend, err := engine.NewBackend("")
	if err != nil {
		b.Fatal(err)
	}
	cfg := models.Config{Kind: models.Decoder, VocabSize: 32000, Dim: 288, NumLayers: 6, NumHeads: 6, HiddenDim: 768,
		MaxSeqLen: 256, TieEmbeddings: true, Positional: map[string]any{"name": "rope", "layout": "interleaved"}}
	w, err := llama2c.RandomWeights(cfg, 1, 0.02)
	if err != nil {
		b.Fatal(err)
	}
	random15M := filepath.Join(b.TempDir(), "random15M.bin")
	if err := llama2c.Write(random15M, cfg, w, 0); err != nil {
		b.Fatal(err)
	}
	paths := map[string]string{"random15M": random15M}
	if p := stories260KPath(); p != "" {
		paths["stories260K"] = p
	}
	for name, path := range paths {
		b.Run(name, func(b *testing.B) {
			info, _ := os.Stat(path)
			b.SetBytes(info.Size())
			for b.Loop() {
				if _, _, err := llama2c.Load(path, backend); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A version-2 file loaded into a Q8_0 context keeps its int8 values (no float32 matrix is
// made) and computes the logits of its dequantized weights up to float summation order.
func TestVersion2KeptAsQ8(t *testing.T) {
	cfg := models.Config{Kind: models.Decoder, VocabSize: 96, Dim: 64, NumLayers: 2, NumHeads: 4, NumKVHeads: 2,
		HiddenDim: 96, MaxSeqLen: 24, Positional: map[string]any{"name": "rope", "layout": "interleaved"}}
	w, err := llama2c.RandomWeights(cfg, 5, 0.15)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	v2 := filepath.Join(dir, "v2.bin")
	if err := llama2c.Write(v2, cfg, w, 2); err != nil {
		t.Fatal(err)
	}
	_, deq, err := llama2c.ReadFile(v2)
	if err != nil {
		t.Fatal(err)
	}
	deqPath := filepath.Join(dir, "deq.bin")
	if err := llama2c.Write(deqPath, cfg, deq, 0); err != nil {
		t.Fatal(err)
	}
	if got := engine.StoredWeightType(v2); got != quant.Q8_0 {
		t.Errorf("StoredWeightType(version 2) = %v, want q8_0", got)
	}
	// The exact path: int8 activations (the default where the kernels are assembly) round x
	// to 8 bits and would move the logits past this test's tolerance.
	q8, err := engine.LoadAs(v2, "cpu:actq8=false", 0, quant.Q8_0)
	if err != nil {
		t.Fatal(err)
	}
	if v := q8.Ctx.InAbsPath("/model/layer_0/attn/wq").GetVariable("weight_q8_0"); v == nil || v.Shape().DType != dtypes.Int8 {
		t.Fatalf("wq is not held as int8: %v", v)
	}
	ref, err := engine.Load(deqPath, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	prompt := []int{1, 5, 17, 94, 3, 3, 60, 2, 41, 77}
	pos := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	a, err := q8.Forward([][]int{prompt}, [][]int{pos})
	if err != nil {
		t.Fatal(err)
	}
	b, err := ref.Forward([][]int{prompt}, [][]int{pos})
	if err != nil {
		t.Fatal(err)
	}
	for i := range a[0] {
		for j := range a[0][i] {
			if d := math.Abs(float64(a[0][i][j] - b[0][i][j])); d > 1e-4*(1+math.Abs(float64(b[0][i][j]))) {
				t.Fatalf("logit [%d][%d]: q8_0 %g, dequantized float32 %g", i, j, a[0][i][j], b[0][i][j])
			}
		}
	}
}
