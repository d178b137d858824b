package infer

import (
	"errors"
	"strings"
	"testing"

	"github.com/posformer/posformer/cmd/internal/memlimit"
	"github.com/posformer/posformer/engine"
	"github.com/posformer/posformer/positional"
)

// testModel is the small byte-level decoder shipped for tests: its prompts are bytes, and it
// runs in milliseconds where the built-in model takes longer.
const testModel = "../../../../weights/rope-decoder"

func TestBadFlags(t *testing.T) {
	base := options{model: testModel, prompt: "x", n: 4, sampling: engine.Sampling{TopK: 40, TopP: 0.95, RepeatPenalty: 1}}
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
		{func(o *options) { o.backend = "tpu" }, nil, "unknown backend \"tpu\" (valid: cpu, go, xla:cpu"},
		{func(o *options) { o.weights = "q4_1" }, nil, "valid: f32, bf16, q8_0, q4_0"},
		{func(o *options) { o.weights = "f16" }, nil, "--weights"},
		{func(o *options) { o.ctxSize = -1 }, nil, "-c must be >= 0"},
		{func(o *options) { o.ctxSize = 1 << 40 }, nil, "-c must be at most 16777216"},
		{func(o *options) { o.model, o.ctxSize = "../../../../weights/bench/lm/learned", 3000 }, nil, "-c 3000 is past the 2048 positions"},
		{func(o *options) { o.pe = positional.OptionFlag{"name": "alibi"} }, nil, "--pe name"},
		{func(o *options) { o.pe = positional.OptionFlag{"bogus": 1.0} }, nil, "unknown option bogus"},
		{func(o *options) { o.contextShift, o.keep = true, -2 }, nil, "--keep must be >= -1"},
		{func(o *options) { o.model, o.contextShift = "../../../../weights/bench/lm/learned", true }, nil, "--context-shift needs positions inside attention"},
		{func(o *options) { o.contextShift, o.ctxSize, o.keep = true, 64, 63 }, nil, "--keep 63 leaves fewer than 2"},
		// The option reaches the scheme: FIRE checks its value.
		{func(o *options) {
			o.model, o.pe = "../../../../weights/bench/lm/fire", positional.OptionFlag{"norm_max": -1.0}
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

// -c's errors exit 2, as the flag package's; a context past the memory available is refused
// before its cache exists.
func TestContextBounds(t *testing.T) {
	for _, c := range []int{-1, 1 << 40} {
		o := options{model: testModel, prompt: "x", ctxSize: c, sampling: engine.Sampling{TopK: 40, TopP: 0.95, RepeatPenalty: 1}}
		if err := run(o, nil); !errors.As(err, new(flagError)) {
			t.Errorf("-c %d: %v, want a flag error (exit 2)", c, err)
		}
	}
	e, err := engine.Load(testModel, "", 65536)
	if err != nil {
		t.Fatal(err)
	}
	// 3 layers x 2 KV heads x 24 dims, K and V, float32, and a position (int32) and a
	// validity flag (a byte): 1157 bytes a token, for every window a session grows through:
	// 64, 128, ..., 65536 slots, 64 x 2047 in all.
	need := int64(1157*64*2047) + memlimit.Slack
	err = checkContext(e, 65536, need-1)
	if err == nil || !strings.Contains(err.Error(), "a context of 65536 tokens (-c) needs 160.6 MiB") {
		t.Errorf("a byte short of the memory needed: %v", err)
	}
	for _, avail := range []int64{need, -1} {
		if err := checkContext(e, 65536, avail); err != nil {
			t.Errorf("with %d bytes available: %v, want no error", avail, err)
		}
	}
}

// --context-shift generates past -c: 150 tokens through 64 slots, where without it generation
// stops when the context is full.
func TestContextShiftPastContext(t *testing.T) {
	o := options{model: testModel, n: 150, ctxSize: 64, contextShift: true, keep: 4}
	e, err := o.load()
	if err != nil {
		t.Fatal(err)
	}
	for _, shift := range []bool{true, false} {
		o.contextShift = shift
		sm, err := engine.NewSampler(engine.Sampling{Temp: 0.8, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		st, err := o.generate(e, []int{'f', 'u', 'n', 'c'}, o.n, sm, nil, func(int) { n++ })
		want, reason := 150, "length"
		if !shift {
			want, reason = 64-4+1, "context full" // the last token sampled is not fed back
		}
		if err != nil || n != want || st.StopReason != reason {
			t.Errorf("--context-shift=%v: %d tokens (%q, %v), want %d (%q)", shift, n, st.StopReason, err, want, reason)
		}
	}
}
