package weightflag

import (
	"flag"
	"strings"
	"testing"

	"github.com/posformer/posformer/layers/quant"
)

// The shipped checkpoint directory stores float32; a given type overrides it; a type the
// engine cannot hold in memory (f16, read from files only) or an unknown one is an error
// naming the flag and the valid types.
func TestType(t *testing.T) {
	const model = "../../../weights/rope-decoder"
	for _, c := range []struct {
		weights string
		want    quant.Type
		err     string
	}{
		{"", quant.F32, ""},
		{"bf16", quant.BF16, ""},
		{"q4_0", quant.Q4_0, ""},
		{"q8_0", quant.Q8_0, ""},
		{"f16", 0, "--weights \"f16\": unknown weight type (valid: f32, bf16, q8_0, q4_0)"},
		{"int3", 0, "--weights \"int3\": unknown weight type (valid: f32, bf16, q8_0, q4_0)"},
	} {
		got, err := Type(c.weights, model)
		switch {
		case c.err != "" && (err == nil || err.Error() != c.err):
			t.Errorf("Type(%q): %v, want the error %q", c.weights, err, c.err)
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("Type(%q) = %v, %v; want %v", c.weights, got, err, c.want)
		}
	}
}

func TestRegister(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	p := Register(fs)
	if err := fs.Parse([]string{"--weights", "q8_0"}); err != nil || *p != "q8_0" {
		t.Errorf("--weights q8_0 gave %q, %v", *p, err)
	}
	if f := fs.Lookup(Name); f.Usage != Usage || !strings.Contains(f.Usage, "f32, bf16, q8_0, q4_0") {
		t.Errorf("help %q, want %q naming every type", f.Usage, Usage)
	}
	fs = flag.NewFlagSet("y", flag.ContinueOnError)
	var s string
	Var(fs, &s, "the command's own words")
	if f := fs.Lookup(Name); f.Usage != "the command's own words" {
		t.Errorf("help %q, want the command's own", f.Usage)
	}
}
