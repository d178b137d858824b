// Package models describes a transformer in one Config (as nanoGPT does), builds decoders
// (causal LM) and encoders (bidirectional, masked-LM head) from it, and reads and writes
// posformer checkpoints: a directory with config.json and model.safetensors.
//
// It is also the core every other checkpoint format builds on: the canonical names of a
// model's tensors (names.go), where a checkpoint holds each of them (Source), and the
// registry of formats that engine.Load picks from (format.go). The formats live in
// subpackages (hf, gguf, llama2c), the published families' tensor tables in families.
package models

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/posformer/posformer/layers"
	"github.com/posformer/posformer/models/regular"
	"github.com/posformer/posformer/positional"
)

// Config is a model's architecture and positional scheme, stored as config.json.
type Config struct {
	Kind          string  `json:"kind"`       // "decoder" (causal LM) or "encoder" (masked LM)
	VocabSize     int     `json:"vocab_size"` // tokens
	Dim           int     `json:"dim"`        // model width
	NumLayers     int     `json:"n_layers"`
	NumHeads      int     `json:"n_heads"`
	NumKVHeads    int     `json:"n_kv_heads"`     // grouped-query attention; 0 means n_heads
	HiddenDim     int     `json:"hidden_dim"`     // feed-forward width
	FFN           string  `json:"ffn"`            // "swiglu", "gelu" (erf, BERT) or "gelu_tanh" (GPT-2)
	Norm          string  `json:"norm"`           // "rmsnorm" or "layernorm"
	NormEps       float64 `json:"norm_eps"`       // in (0, MaxNormEps]; 0 (or absent) means 1e-5
	Bias          bool    `json:"bias"`           // biases in the linear projections
	TieEmbeddings bool    `json:"tie_embeddings"` // the output head reuses the token embedding
	MaxSeqLen     int     `json:"max_seq_len"`    // default KV-cache capacity (context size)
	TrainSeqLen   int     `json:"train_seq_len,omitempty"`
	Tokenizer     string  `json:"tokenizer"` // "byte", or a tokenizer.json path relative to the checkpoint
	// Positional is the scheme's block: {"name": "rope", "base": 10000, ...}.
	Positional map[string]any `json:"positional"`
	// NoPELayers lists blocks (from 0) whose attention gets no positional hook, as SmolLM3 and
	// Llama 4 interleave NoPE layers with RoPE ones. Input hooks, applied once below the first
	// block, are unaffected, so this needs a scheme that acts inside attention.
	NoPELayers []int `json:"nope_layers,omitempty"`
	// The fields below describe the checkpoints of other projects (Hugging Face GPT-2, BERT,
	// Qwen2); their zero values are the posformer architecture.
	NormPosition  string `json:"norm_position,omitempty"`  // "pre" (default) or "post": norm(x + f(x)) and no final norm (BERT)
	QKVBias       bool   `json:"qkv_bias,omitempty"`       // biases on the query, key and value projections only (Qwen2)
	TokenTypes    int    `json:"token_types,omitempty"`    // rows of a token-type table; row 0 is added to every token (BERT)
	EmbedNorm     bool   `json:"embed_norm,omitempty"`     // a norm over the summed input embeddings (BERT)
	HeadTransform bool   `json:"head_transform,omitempty"` // dense + activation + norm before the output head (BERT's masked-LM head)
	HeadBias      bool   `json:"head_bias,omitempty"`      // a bias on the output logits (BERT)
}

// TokenizerPath is where the tokenizer c names lies for a checkpoint in dir: "byte" and an
// absolute path as they are, a relative path under dir.
func (c Config) TokenizerPath(dir string) string {
	if c.Tokenizer == "byte" || filepath.IsAbs(c.Tokenizer) {
		return c.Tokenizer
	}
	return filepath.Join(dir, c.Tokenizer)
}

// Decoder and Encoder are the two kinds of model.
const (
	Decoder = "decoder"
	Encoder = "encoder"
)

// Defaults fills unset optional fields.
func (c *Config) Defaults() {
	if c.NumKVHeads == 0 {
		c.NumKVHeads = c.NumHeads
	}
	if c.FFN == "" {
		c.FFN = "swiglu"
	}
	if c.Norm == "" {
		c.Norm = "rmsnorm"
	}
	if c.NormPosition == "" {
		c.NormPosition = "pre"
	}
	if c.NormEps == 0 {
		c.NormEps = 1e-5
	}
	if c.Tokenizer == "" {
		c.Tokenizer = "byte"
	}
	if c.Positional == nil {
		c.Positional = map[string]any{"name": "none"}
	}
}

// Causal reports whether the model is a decoder.
func (c *Config) Causal() bool { return c.Kind == Decoder }

// SchemeName is the positional scheme's registry name.
func (c *Config) SchemeName() string {
	name, _ := c.Positional["name"].(string)
	return name
}

// Block is the per-block part of the configuration.
func (c *Config) Block() layers.BlockConfig {
	hd := 0
	if c.NumHeads > 0 {
		hd = c.Dim / c.NumHeads
	}
	return layers.BlockConfig{
		Dim: c.Dim, Hidden: c.HiddenDim, NumHeads: c.NumHeads, NumKVHeads: c.NumKVHeads, HeadDim: hd,
		NumLayers: c.NumLayers, Causal: c.Causal(), Norm: c.Norm, NormEps: c.NormEps, NormPosition: c.NormPosition,
		FFN: c.FFN, Bias: c.Bias, QKVBias: c.QKVBias,
	}
}

// Arch is what the positional scheme sees of the model.
func (c *Config) Arch() positional.Arch {
	b := c.Block()
	return positional.Arch{Dim: c.Dim, NumHeads: c.NumHeads, NumKVHeads: c.NumKVHeads, HeadDim: b.HeadDim, NumLayers: c.NumLayers, Causal: c.Causal(), TrainLen: c.TrainSeqLen}
}

// Scheme builds the configured positional scheme.
func (c *Config) Scheme() (positional.Scheme, error) {
	opts := map[string]any{}
	for k, v := range c.Positional {
		if k != "name" {
			opts[k] = v
		}
	}
	return positional.New(c.SchemeName(), opts, c.Arch())
}

// Validate reports the first inconsistency, as a one-line error.
func (c *Config) Validate() error {
	switch {
	case c.Kind != Decoder && c.Kind != Encoder:
		return fmt.Errorf("config: kind is %q (valid: decoder, encoder)", c.Kind)
	case c.VocabSize < 1 || c.Dim < 1 || c.NumLayers < 1 || c.HiddenDim < 1:
		return fmt.Errorf("config: vocab_size (%d), dim (%d), n_layers (%d) and hidden_dim (%d) must be >= 1", c.VocabSize, c.Dim, c.NumLayers, c.HiddenDim)
	case c.NumHeads < 1 || c.Dim%c.NumHeads != 0:
		return fmt.Errorf("config: dim (%d) must be a multiple of n_heads (%d)", c.Dim, c.NumHeads)
	case c.FFN != "swiglu" && c.FFN != "gelu" && c.FFN != "gelu_tanh":
		return fmt.Errorf("config: ffn is %q (valid: %s)", c.FFN, layers.FFNKinds)
	case c.Norm != "rmsnorm" && c.Norm != "layernorm":
		return fmt.Errorf("config: norm is %q (valid: rmsnorm, layernorm)", c.Norm)
	case c.NormPosition != "pre" && c.NormPosition != "post":
		return fmt.Errorf("config: norm_position is %q (valid: pre, post)", c.NormPosition)
	case c.TokenTypes < 0:
		return fmt.Errorf("config: token_types must be >= 0, got %d", c.TokenTypes)
	case c.MaxSeqLen < 1:
		return fmt.Errorf("config: max_seq_len must be >= 1, got %d", c.MaxSeqLen)
	}
	if err := CheckNormEps("norm_eps", c.NormEps); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if err := c.Block().Validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	s, err := c.Scheme()
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if len(c.NoPELayers) > 0 {
		_, qk := s.(positional.QueryKey)
		_, rel := s.(positional.Relative)
		_, bias := s.(positional.Bias)
		if !qk && !rel && !bias {
			return fmt.Errorf("config: nope_layers needs a scheme that acts inside attention; %q only touches the input embeddings", c.SchemeName())
		}
	}
	seen := map[int]bool{}
	for _, l := range c.NoPELayers {
		if l < 0 || l >= c.NumLayers || seen[l] {
			return fmt.Errorf("config: nope_layers %v: each entry must be a distinct layer in [0, %d)", c.NoPELayers, c.NumLayers)
		}
		seen[l] = true
	}
	return nil
}

// MaxNormEps bounds a norm's epsilon. Published models use 1e-5 to 1e-12; an epsilon near the
// variance of unit-scale activations (1) would swamp it, and a negative, zero or NaN one makes
// the norm divide by the square root of nothing sensible: the model loads and emits garbage.
const MaxNormEps = 1.0

// CheckNormEps refuses a norm epsilon that is not positive, finite and at most MaxNormEps;
// key is what the checkpoint calls it (norm_eps, rms_norm_eps, ...), for the message. Every
// Config goes through it in Validate; a format whose key has another name checks it as read,
// so that its message names the key of the file.
func CheckNormEps(key string, eps float64) error {
	if eps > 0 && eps <= MaxNormEps { // false for NaN
		return nil
	}
	return fmt.Errorf("%s is %v: a norm epsilon must be positive, finite and at most %g (models use 1e-5, 1e-6 or 1e-12)", key, eps, MaxNormEps)
}

// UsesPositions reports whether block layer applies the positional scheme's attention hooks.
func (c *Config) UsesPositions(layer int) bool {
	return !slices.Contains(c.NoPELayers, layer)
}

// ReadConfig reads and validates dir/config.json.
func ReadConfig(dir string) (*Config, error) {
	path := filepath.Join(dir, "config.json")
	data, err := regular.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading model config: %w", err)
	}
	var c Config
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("parsing %s: %w", path, err)
	}
	c.Defaults()
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &c, nil
}

// MinParams is a lower bound on the parameters a model of this configuration has, computed by
// arithmetic alone (no graph is built): the token embedding, and per layer the output
// projection and the feed-forward matrices. Loaders compare it with the weight file's size
// before building anything, so that a config claiming 10⁹ layers fails at once.
func (c *Config) MinParams() float64 {
	perLayer := float64(c.Dim)*float64(c.Dim) + 2*float64(c.Dim)*float64(c.HiddenDim)
	return float64(c.VocabSize)*float64(c.Dim) + float64(c.NumLayers)*perLayer
}

// MinBytesPerParam is the fewest bytes a stored parameter takes in any format read here
// (Q4_0: 18 bytes per 32 values).
const MinBytesPerParam = 18.0 / 32

// CheckFits refuses a configuration whose parameters the weight files (of fileBytes in all)
// cannot hold.
func (c *Config) CheckFits(what string, fileBytes int64) error {
	if need := c.MinParams() * MinBytesPerParam; need > float64(fileBytes) {
		return fmt.Errorf("the config (%d layers, dim %d, hidden %d, vocab %d) needs at least %.3g bytes of weights but %s has %d: the config does not describe this checkpoint",
			c.NumLayers, c.Dim, c.HiddenDim, c.VocabSize, need, what, fileBytes)
	}
	return nil
}
