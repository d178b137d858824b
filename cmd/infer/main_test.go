package main

import (
	"github.com/posformer/posformer/positional"
	"strings"
	"testing"

	"github.com/posformer/posformer/engine"
)

func TestBadFlags(t *testing.T) {
	base := options{model: "../../" + DefaultModel, prompt: "x", n: 4, sampling: engine.Sampling{TopK: 40, TopP: 0.95, RepeatPenalty: 1}}
	cases := []struct {
		mutate func(*options)
		args   []string
		want   string
	}{
		{func(o *options) { o.n = -5 }, nil, "-n must be"},
		{func(o *options) { o.sampling.Temp = -1 }, nil, "--temp"},
		{func(o *options) { o.sampling.TopP = 1.5 }, nil, "--top-p"},
		{func(o *options) { o.sampling.TopK = -1 }, nil, "--top-k"},
		{func(o *options) {}, []string{"stray"}, "unexpected argument"},
		{func(o *options) { o.model = t.TempDir() }, nil, "no model at"},
		{func(o *options) { o.backend = "xla:cpu" }, nil, "PJRT"},
		{func(o *options) { o.weights = "q4_1" }, nil, "valid: f32, bf16, q8_0, q4_0"},
		{func(o *options) { o.weights = "f16" }, nil, "--weights"},
		{func(o *options) { o.pe = positional.OptionFlag{"name": "alibi"} }, nil, "--pe name"},
		{func(o *options) { o.pe = positional.OptionFlag{"bogus": 1.0} }, nil, "unknown option bogus"},
		// The option reaches the scheme: FIRE checks its value.
		{func(o *options) {
			o.model, o.pe = "../../weights/bench/lm/fire", positional.OptionFlag{"norm_max": -1.0}
		}, nil, "norm_max must be"},
	}
	for _, c := range cases {
		o := base
		o.pe = positional.OptionFlag{}
		c.mutate(&o)
		err := run(o, c.args)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("want a one-line error mentioning %q, got %v", c.want, err)
		}
	}
}
