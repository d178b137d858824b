package ropeflags

import (
	"flag"
	"io"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/posformer/posformer/positional"
)

func parse(t *testing.T, args ...string) *Flags {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := Register(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return f
}

func TestApply(t *testing.T) {
	for _, c := range []struct {
		args []string
		want map[string]any
	}{
		{nil, map[string]any{"name": "rope"}},
		{[]string{"--rope-scale", "4"}, map[string]any{"name": "rope", "rope_scaling": map[string]any{"rope_type": "linear", "factor": 4.0}}},
		{[]string{"-rope-freq-scale", "0.25", "--rope-scaling", "ntk"}, map[string]any{"name": "rope", "rope_scaling": map[string]any{"rope_type": "ntk", "factor": 4.0}}},
		{[]string{"--rope-scaling", "dynamic", "--rope-scale", "8", "--yarn-orig-ctx", "128"}, map[string]any{"name": "rope", "rope_scaling": map[string]any{"rope_type": "dynamic", "factor": 8.0, "original_max_position_embeddings": 128}}},
		{[]string{"--rope-scaling", "yarn", "--rope-scale", "4", "--yarn-beta-fast", "16", "--yarn-beta-slow", "2"}, map[string]any{"name": "rope", "rope_scaling": map[string]any{"rope_type": "yarn", "factor": 4.0, "beta_fast": 16.0, "beta_slow": 2.0}}},
		{[]string{"--rope-freq-base", "500000"}, map[string]any{"name": "rope", "base": 500000.0}},
		{[]string{"--rope-scaling", "none"}, map[string]any{"name": "rope"}},
		{[]string{"--grp-attn-n", "4", "--grp-attn-w", "64"}, map[string]any{"name": "rope", "self_extend": map[string]any{"group": 4, "window": 64}}},
		{[]string{"--grp-attn-n", "4"}, map[string]any{"name": "rope", "self_extend": map[string]any{"group": 4, "window": 512}}},
		{[]string{"--grp-attn-n", "1"}, map[string]any{"name": "rope"}},
	} {
		pe := map[string]any{"name": "rope"}
		if c.args != nil && c.args[len(c.args)-1] == "none" {
			pe["rope_scaling"] = map[string]any{"rope_type": "linear", "factor": 2.0}
		}
		if err := parse(t, c.args...).Apply(pe); err != nil {
			t.Errorf("%v: %v", c.args, err)
			continue
		}
		if !reflect.DeepEqual(pe, c.want) {
			t.Errorf("%v: got %v, want %v", c.args, pe, c.want)
		}
		// Whatever the flags produce, the rope scheme accepts.
		if _, err := positional.New("rope", without(pe, "name"), positional.Arch{Dim: 32, NumHeads: 2, NumKVHeads: 2, HeadDim: 16, TrainLen: 64}); err != nil {
			t.Errorf("%v: the scheme refuses the block: %v", c.args, err)
		}
	}
	// llama.cpp's --yarn-attn-factor multiplies the default factor.
	pe := map[string]any{"name": "rope"}
	if err := parse(t, "--rope-scaling", "yarn", "--rope-scale", "8", "--yarn-attn-factor", "0.5").Apply(pe); err != nil {
		t.Fatal(err)
	}
	got := pe["rope_scaling"].(map[string]any)["attention_factor"].(float64)
	if want := 0.5 * (0.1*math.Log(8) + 1); math.Abs(got-want) > 1e-12 {
		t.Errorf("attention_factor %g, want %g", got, want)
	}
}

func without(m map[string]any, key string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		if k != key {
			out[k] = v
		}
	}
	return out
}

func TestErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--rope-scale", "0.5"}, "--rope-scale must be >= 1"},
		{[]string{"--rope-freq-scale", "2"}, "--rope-freq-scale must be in (0, 1]"},
		{[]string{"--rope-scale", "4", "--rope-freq-scale", "0.5"}, "disagree"},
		{[]string{"--rope-scaling", "longrope", "--rope-scale", "4"}, "valid: none, linear, ntk, dynamic, yarn"},
		{[]string{"--rope-scaling", "yarn"}, "needs --rope-scale"},
		{[]string{"--rope-scale", "4", "--yarn-beta-fast", "8"}, "need --rope-scaling yarn"},
		{[]string{"--rope-freq-base", "1"}, "--rope-freq-base must be > 1"},
	} {
		err := parse(t, c.args...).Apply(map[string]any{"name": "rope"})
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: got %v, want a one-line error containing %q", c.args, err, c.want)
		}
	}
	err := parse(t, "--rope-scale", "4").Apply(map[string]any{"name": "alibi"})
	if err == nil || !strings.Contains(err.Error(), `uses "alibi"`) {
		t.Errorf("rope flags on an alibi model: %v", err)
	}
}
