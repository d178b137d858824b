package models

import (
	"path/filepath"
	"strings"
	"testing"
)

// The options added for other projects' checkpoints are validated like the others, and their
// zero values leave a posformer config as it was.
func TestConfigOptionsValidate(t *testing.T) {
	for _, c := range []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.NormPosition = "middle" }, `norm_position is "middle" (valid: pre, post)`},
		{func(c *Config) { c.FFN = "relu" }, "valid: gelu, gelu_tanh, swiglu"},
		{func(c *Config) { c.TokenTypes = -1 }, "token_types must be >= 0"},
	} {
		cfg := testConfig()
		cfg.Defaults()
		c.edit(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("err = %v, want %q", err, c.want)
		}
	}
	cfg := testConfig()
	cfg.Defaults()
	if cfg.NormPosition != "pre" || cfg.Validate() != nil {
		t.Errorf("defaults: norm_position %q, validate %v", cfg.NormPosition, cfg.Validate())
	}
}

// A config's tokenizer is "byte", an absolute path, or a path relative to its checkpoint.
func TestTokenizerPath(t *testing.T) {
	abs := filepath.Join(t.TempDir(), "tok.json")
	for _, c := range []struct{ name, want string }{
		{"byte", "byte"},
		{abs, abs},
		{"tokenizer.json", filepath.Join("ckpt", "tokenizer.json")},
		{"sub/t.json", filepath.Join("ckpt", "sub", "t.json")},
	} {
		if got := (Config{Tokenizer: c.name}).TokenizerPath("ckpt"); got != c.want {
			t.Errorf("tokenizer %q: %q, want %q", c.name, got, c.want)
		}
	}
}
