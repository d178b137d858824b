package models

import (
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
