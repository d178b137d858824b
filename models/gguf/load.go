package gguf

// Loading a GGUF model into posformer: its metadata becomes a models.Config, and each of our
// tensors is found under llama.cpp's name (gguf-py's TENSOR_NAMES, in the tables of
// models/families shared with Hugging Face) with the shape the metadata implies, every one
// checked before any data is read:
//
//	llama  token_embd, output_norm, output (absent: tied), blk.N.{attn_norm, attn_q, attn_k,
//	       attn_v, attn_output, ffn_norm, ffn_gate, ffn_up, ffn_down}; q/k/v biases optional.
//	       RMSNorm, SwiGLU, RoPE on adjacent pairs (2i, 2i+1).
//	qwen2  the same names, q/k/v biases required, RoPE on pairs (i, i + d/2) (ggml's NEOX mode).
//	gpt2   token_embd, position_embd, output_norm, output, blk.N.{attn_norm, attn_qkv,
//	       attn_output, ffn_norm, ffn_up, ffn_down}, all with biases; LayerNorm, tanh GELU.
//
// RoPE layout. Hugging Face stores Llama's query and key rows for rotating pairs (i, i + d/2)
// ("rotate_half"); llama.cpp's convert permutes the rows of each head, GGUF row 2i + s holding
// HF row s·d/2 + i, so that its rotation of adjacent pairs computes the same thing. Rather than
// undo the permutation we run the file as llama.cpp does, with layout "interleaved": q and k
// come out with their rows permuted alike within each head, and q·k, the only place they meet,
// is a sum over those rows, so the logits are the same (TestRoPELayoutEquivalence checks it
// against the unpermuted model). llama2.c checkpoints are interleaved natively.

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/posformer/posformer/layers/quant"
	"github.com/posformer/posformer/models"
	"github.com/posformer/posformer/models/families"
	"github.com/posformer/posformer/models/hf"
	"github.com/posformer/posformer/positional"
)

// TokenizerName is what a loaded Config records as its tokenizer: the file's tokenizer.ggml
// metadata (cmd/infer builds it from there).
const TokenizerName = "tokenizer.ggml"

// KeyTrainSeqLen is posformer's own key for a model's training length, when it differs from
// the context length (models.Config.TrainSeqLen).
const KeyTrainSeqLen = "posformer.train_seq_len"

// Architectures lists the general.architecture values Load reads.
var Architectures = []string{"llama", "qwen2", "gpt2"}

func init() {
	models.RegisterFormat(models.Format{Name: "gguf", What: "a .gguf file", Detect: IsFile, Load: LoadInto, WeightType: StoredWeightType})
}

// StoredWeightType is the type of the matrices of the GGUF file at path, what a load keeps by
// default: f16 runs as f32, which the engine holds (f32 too for an unreadable file).
func StoredWeightType(path string) quant.Type {
	f, err := Open(path)
	if err != nil {
		return quant.F32
	}
	defer f.Close()
	if t := f.MatrixType(); t != quant.F16 {
		return t
	}
	return quant.F32
}

// Load reads the GGUF model at path into a model and a context holding its variables under
// posformer's checkpoint names. Edits change the configuration first (inference-time settings
// such as RoPE scaling).
func Load(path string, backend backends.Backend, edits ...models.Edit) (*models.Model, *context.Context, error) {
	ctx := context.New()
	m, err := LoadInto(path, backend, ctx, edits...)
	if err != nil {
		return nil, nil, err
	}
	return m, ctx, nil
}

// LoadInto is Load into the given context: an inference context receives its matrices packed
// or quantized as it asks (models.StoreTensor; a matrix stored in the context's own block type
// is kept as the file has it).
func LoadInto(path string, backend backends.Backend, ctx *context.Context, edits ...models.Edit) (*models.Model, error) {
	f, err := Open(path)
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", path, err)
	}
	defer f.Close()
	m, err := load(f, backend, ctx, edits)
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", path, err)
	}
	return m, nil
}

// Config translates a file's metadata and tensor infos into a posformer Config, checked.
func Config(f *File) (models.Config, error) {
	cfg, _, err := config(f)
	return cfg, err
}

func load(f *File, backend backends.Backend, ctx *context.Context, edits []models.Edit) (*models.Model, error) {
	cfg, table, err := config(f)
	if err != nil {
		return nil, err
	}
	for _, edit := range edits {
		if err := edit(&cfg); err != nil {
			return nil, err
		}
	}
	m, err := models.New(cfg)
	if err != nil {
		return nil, err
	}
	params, err := m.Params(backend)
	if err != nil {
		return nil, err
	}
	// config has matched the file's tensors with the metadata; the model's own list of
	// parameters must be that table, name by name and shape by shape.
	if err := models.MatchParams("the GGUF table", params, table); err != nil {
		return nil, err
	}
	for _, p := range params {
		src := table[p.Name]
		info, _ := f.Tensor(src.Name)
		raw, err := f.readPart(info, src.Part, max(src.Parts, 1))
		if err != nil {
			return nil, err
		}
		if err := models.StoreTensor(ctx, backend, p.Name, p.Shape, info.Type, raw); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// readPart reads part i of parts equal runs of rows of t (all of it when parts is 1).
func (f *File) readPart(t TensorInfo, part, parts int) ([]byte, error) {
	if parts == 1 {
		return f.ReadTensor(t)
	}
	n := t.Bytes / int64(parts)
	sub := t
	sub.Offset += uint64(int64(part) * n)
	sub.Bytes = n
	return f.ReadTensor(sub)
}

func archOf(f *File) string {
	if v, ok := f.Get(KeyArchitecture); ok {
		if s, ok := v.V.(string); ok {
			return s
		}
	}
	return ""
}

// meta reads an architecture's keys, collecting every problem.
type meta struct {
	f    *File
	arch string
	errs []string
}

func (m *meta) errorf(format string, args ...any) {
	m.errs = append(m.errs, fmt.Sprintf(format, args...))
}

func (m *meta) err() error {
	if len(m.errs) == 0 {
		return nil
	}
	return fmt.Errorf("%s", strings.Join(m.errs, "; "))
}

func (m *meta) key(k string) string {
	if strings.HasPrefix(k, "general.") || strings.HasPrefix(k, "posformer.") {
		return k
	}
	return m.arch + "." + k
}

// int reads an integer key; def < 0 makes it required.
func (m *meta) int(k string, def int) int {
	v, ok := m.f.Get(m.key(k))
	if !ok {
		if def < 0 {
			m.errorf("%s is missing", m.key(k))
		}
		return def
	}
	u, ok := v.Uint()
	if !ok || u > math.MaxInt32 {
		m.errorf("%s is %v (%v); want a non-negative integer", m.key(k), v, v.Type)
		return def
	}
	return int(u)
}

// float reads a number key; required when def is NaN.
func (m *meta) float(k string, def float64) float64 {
	v, ok := m.f.Get(m.key(k))
	if !ok {
		if math.IsNaN(def) {
			m.errorf("%s is missing", m.key(k))
		}
		return def
	}
	x, ok := v.Float()
	if !ok || math.IsNaN(x) || math.IsInf(x, 0) {
		m.errorf("%s is %v (%v); want a finite number", m.key(k), v, v.Type)
		return def
	}
	return x
}

// normEps reads a required norm epsilon, recording a value models.CheckNormEps refuses under
// the file's key.
func (m *meta) normEps(k string) float64 {
	x := m.float(k, math.NaN())
	if !math.IsNaN(x) { // NaN: missing or not finite, recorded already
		if err := models.CheckNormEps(m.key(k), x); err != nil {
			m.errorf("%v", err)
		}
	}
	return x
}

func (m *meta) str(k, def string) string {
	v, ok := m.f.Get(m.key(k))
	if !ok {
		return def
	}
	s, ok := v.V.(string)
	if !ok {
		m.errorf("%s is %v (%v); want a string", m.key(k), v, v.Type)
		return def
	}
	return s
}

func (m *meta) has(k string) bool {
	_, ok := m.f.Get(m.key(k))
	return ok
}

// config reads the model's configuration and the table of its tensors.
func config(f *File) (models.Config, map[string]models.Source, error) {
	arch := archOf(f)
	if arch == "" {
		return models.Config{}, nil, fmt.Errorf("metadata %s is missing or not a string: not a model file", KeyArchitecture)
	}
	if !slices.Contains(Architectures, arch) {
		return models.Config{}, nil, fmt.Errorf("architecture %q is not supported (supported: %s)", arch, strings.Join(Architectures, ", "))
	}
	m := &meta{f: f, arch: arch}
	ctxLen := m.int("context_length", -1)
	c := models.Config{
		Kind: models.Decoder, Dim: m.int("embedding_length", -1), NumLayers: m.int("block_count", -1),
		HiddenDim: m.int("feed_forward_length", -1), NumHeads: m.int("attention.head_count", -1),
		MaxSeqLen: min(ctxLen, hf.MaxDefaultContext), TrainSeqLen: m.int(KeyTrainSeqLen, max(ctxLen, 0)),
		Tokenizer: TokenizerName,
	}
	c.NumKVHeads = m.int("attention.head_count_kv", c.NumHeads)
	if n := m.int("expert_count", 0); n > 0 {
		m.errorf("%s is %d: mixture-of-experts models are not supported", m.key("expert_count"), n)
	}
	emb, ok := f.Tensor("token_embd.weight")
	switch {
	case !ok:
		m.errorf("tensor token_embd.weight is missing")
	case len(emb.Dims) != 2:
		m.errorf("tensor token_embd.weight has shape %v; want [vocab, embedding_length]", emb.Shape())
	default:
		c.VocabSize = int(emb.Dims[1])
	}
	if n := m.int("vocab_size", c.VocabSize); n != c.VocabSize {
		m.errorf("%s is %d but token_embd.weight has %d rows", m.key("vocab_size"), n, c.VocabSize)
	}
	_, hasOutput := f.Tensor("output.weight")
	c.TieEmbeddings = !hasOutput
	hd := 0
	if c.NumHeads > 0 {
		hd = c.Dim / c.NumHeads
	}
	for _, k := range []string{"attention.key_length", "attention.value_length"} {
		if n := m.int(k, hd); n != hd {
			m.errorf("%s is %d but embedding_length/head_count is %d, which posformer assumes", m.key(k), n, hd)
		}
	}

	if c.NumLayers > len(f.Tensors) {
		// Bounds the tables below by the file, whatever block_count claims.
		m.errorf("%s is %d but the file has %d tensors", m.key("block_count"), c.NumLayers, len(f.Tensors))
		return models.Config{}, nil, m.err()
	}
	var table map[string]models.Source
	switch arch {
	case "llama", "qwen2":
		c.FFN, c.Norm = "swiglu", "rmsnorm"
		c.NormEps = m.normEps("attention.layer_norm_rms_epsilon")
		layout := "interleaved"
		if arch == "qwen2" {
			layout = "half"
		}
		pe := map[string]any{"name": "rope", "layout": layout, "base": m.float("rope.freq_base", 10000)}
		if n := m.int("rope.dimension_count", hd); n != hd {
			m.errorf("%s is %d but the head size is %d; partial rotary is not supported for %s", m.key("rope.dimension_count"), n, hd, arch)
		}
		sc := longRoPEScaling(f, m, ctxLen, hd/2)
		if sc == nil {
			sc = ropeScaling(m, ctxLen)
		}
		if sc != nil {
			pe["rope_scaling"] = sc
		}
		c.Positional = pe
		if _, ok := f.Tensor("rope_freqs.weight"); ok {
			m.errorf("tensor rope_freqs.weight (per-pair RoPE factors, as Llama 3.1's scaling is stored) is not supported")
		}
		_, qb := f.Tensor("blk.0.attn_q.bias")
		_, ob := f.Tensor("blk.0.attn_output.bias")
		_, fb := f.Tensor("blk.0.ffn_up.bias")
		switch {
		case arch == "qwen2" || (qb && !ob && !fb):
			c.QKVBias = true
		case qb && ob && fb:
			c.Bias = true
		case qb || ob || fb:
			m.errorf("biases on %s only are not supported (q, k and v; or every projection; or none)", biasList(qb, ob, fb))
		}
		table = families.Llama.GGUF(c)
	case "gpt2":
		c.FFN, c.Norm, c.Bias = "gelu_tanh", "layernorm", true
		c.NormEps = m.normEps("attention.layer_norm_epsilon")
		if c.NumKVHeads != c.NumHeads {
			m.errorf("%s is %d; gpt2 has no grouped-query attention (head_count %d)", m.key("attention.head_count_kv"), c.NumKVHeads, c.NumHeads)
		}
		c.Positional = map[string]any{"name": "learned", "max_positions": ctxLen}
		table = families.GPT2.GGUF(c)
	}
	if err := m.err(); err != nil {
		return models.Config{}, nil, err
	}
	if err := matchTensors(f, arch, table, RopeFactorsLong, RopeFactorsShort); err != nil {
		return models.Config{}, nil, err
	}
	c.Defaults()
	if err := c.Validate(); err != nil {
		return models.Config{}, nil, err
	}
	return c, table, nil
}

// matchTensors checks that the file holds exactly the tensors of table, each of the shape the
// metadata implies, besides the tensors read into the configuration (known): every size the
// model will allocate is then one the file backs.
func matchTensors(f *File, arch string, table map[string]models.Source, known ...string) error {
	used := map[string]bool{}
	for _, name := range known {
		used[name] = true
	}
	for _, ours := range slices.Sorted(maps.Keys(table)) {
		src := table[ours]
		info, ok := f.Tensor(src.Name)
		if !ok {
			return fmt.Errorf("tensor %s is missing (the metadata implies shape %v)", src.Name, src.Shape)
		}
		if !slices.Equal(info.Shape(), src.Shape) {
			return fmt.Errorf("tensor %s has shape %v in the file but the metadata implies %v", src.Name, info.Shape(), src.Shape)
		}
		used[src.Name] = true
	}
	for _, t := range f.Tensors {
		if !used[t.Name] {
			return fmt.Errorf("unexpected tensor %s %v: not part of a %s model with this metadata (check block_count and the tensor names)", t.Name, t.Shape(), arch)
		}
	}
	return nil
}

func biasList(q, o, f bool) string {
	var s []string
	for _, b := range []struct {
		ok   bool
		name string
	}{{q, "attn_q"}, {o, "attn_output"}, {f, "ffn_up"}} {
		if b.ok {
			s = append(s, b.name)
		}
	}
	return strings.Join(s, " and ")
}

// ropeScaling reads {arch}.rope.scaling.* (and the older rope.scale_linear) into the config's
// rope_scaling block, or nil for none.
func ropeScaling(m *meta, ctxLen int) map[string]any {
	typ := m.str("rope.scaling.type", "")
	factor := m.float("rope.scaling.factor", 1)
	if typ == "" && m.has("rope.scale_linear") {
		typ, factor = "linear", m.float("rope.scale_linear", 1)
	}
	switch typ {
	case "", "none":
		return nil
	case "linear", "yarn":
	case "longrope":
		m.errorf("%s is longrope but the file has no %s and %s (the per-pair factors)", m.key("rope.scaling.type"), RopeFactorsShort, RopeFactorsLong)
		return nil
	default:
		m.errorf("%s is %q (supported: none, linear, yarn, longrope)", m.key("rope.scaling.type"), typ)
		return nil
	}
	if factor <= 1 {
		return nil // llama.cpp treats a factor of 1 (or 0: unset) as no scaling
	}
	sc := map[string]any{"rope_type": typ, "factor": factor,
		"original_max_position_embeddings": m.int("rope.scaling.original_context_length", ctxLen)}
	if typ == "yarn" {
		// llama.cpp's attn_factor multiplies YaRN's 0.1·ln(s) + 1; ours replaces it.
		if a := m.float("rope.scaling.attn_factor", 1); a != 1 {
			sc["attention_factor"] = a * positional.YaRNAttentionFactor(factor)
		}
		if m.has("rope.scaling.yarn_beta_fast") {
			sc["beta_fast"] = m.float("rope.scaling.yarn_beta_fast", 32)
		}
		if m.has("rope.scaling.yarn_beta_slow") {
			sc["beta_slow"] = m.float("rope.scaling.yarn_beta_slow", 1)
		}
	}
	return sc
}

// LongRoPE's per-pair rescale factors, as llama.cpp's converter writes Phi-3's (F32, one value per
// rotary pair, outside the blocks: llama-model.cpp reads them as rope_long and rope_short).
const (
	RopeFactorsLong  = "rope_factors_long.weight"
	RopeFactorsShort = "rope_factors_short.weight"
)

// longRoPEScaling reads LongRoPE into the config's rope_scaling block when the file holds its
// factors (nil otherwise): the factors from the two tensors, the original context from
// rope.scaling.original_context_length (default: the context length), the attention factor from
// rope.scaling.attn_factor, which the converter writes as the factor itself (√(1 + ln s / ln L)
// when absent), and s from rope.scaling.factor, or context_length / L as the converter computes
// it.
func longRoPEScaling(f *File, m *meta, ctxLen, pairs int) map[string]any {
	long, hasLong := f.Tensor(RopeFactorsLong)
	short, hasShort := f.Tensor(RopeFactorsShort)
	if !hasLong && !hasShort {
		return nil
	}
	if !hasLong || !hasShort {
		m.errorf("the file has only one of %s and %s; LongRoPE needs both", RopeFactorsShort, RopeFactorsLong)
		return nil
	}
	if typ := m.str("rope.scaling.type", "longrope"); typ != "longrope" {
		m.errorf("%s is %q but the file holds LongRoPE's factors (%s)", m.key("rope.scaling.type"), typ, RopeFactorsLong)
		return nil
	}
	read := func(t TensorInfo) []any {
		if t.Type != quant.F32 || len(t.Dims) != 1 || t.Numel() != pairs {
			m.errorf("tensor %s is %v %v; want F32 [%d], one factor per rotary pair", t.Name, t.Type, t.Shape(), pairs)
			return nil
		}
		v, err := f.ReadFloat32(t)
		if err != nil {
			m.errorf("%v", err)
			return nil
		}
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = float64(x)
		}
		return out
	}
	orig := m.int("rope.scaling.original_context_length", ctxLen)
	factor := m.float("rope.scaling.factor", 0)
	if factor <= 0 && orig > 0 {
		factor = float64(ctxLen) / float64(orig)
	}
	sc := map[string]any{"rope_type": "longrope", "factor": max(factor, 1), "original_max_position_embeddings": orig,
		"short_factor": read(short), "long_factor": read(long)}
	// The converter always writes the attention factor; the default one (to float32's
	// precision) stays implicit, so that a round trip gives back the configuration it wrote.
	if a := m.float("rope.scaling.attn_factor", 0); a > 0 && orig > 0 {
		if def := positional.LongRoPEAttentionFactor(max(factor, 1), orig); math.Abs(a-def) > 1e-6*def {
			sc["attention_factor"] = a
		}
	}
	return sc
}

// MatrixType is the type that holds most of the bytes of a file's matrices: what llama.cpp
// computes with, and so what an inference context keeps by default (F32 for a file of vectors
// only).
func (f *File) MatrixType() quant.Type {
	bytes := map[quant.Type]int64{}
	best := quant.F32
	for _, t := range f.Tensors {
		if len(t.Dims) == 2 {
			bytes[t.Type] += t.Bytes
			if bytes[t.Type] > bytes[best] {
				best = t.Type
			}
		}
	}
	return best
}
