package flaghelp

import (
	"bytes"
	"flag"
	"strings"
	"testing"
)

// Aliases bound to one variable are one entry naming both; a flag.Func (whose value cannot
// be compared) and a lone flag stay entries of their own.
func TestAliasesOnOneLine(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	var n int
	var m string
	for _, name := range []string{"n-predict", "n"} {
		fs.IntVar(&n, name, 128, "tokens to generate")
	}
	for _, name := range []string{"m", "model"} {
		fs.StringVar(&m, name, "", "model")
	}
	var other, parallel int
	fs.IntVar(&other, "seed", -1, "seed")
	fs.IntVar(&parallel, "np", 4, "rows")
	fs.IntVar(&parallel, "parallel", 4, "rows")
	fs.Func("pe", "option", func(string) error { return nil })
	var b bytes.Buffer
	Fprint(&b, fs)
	out := b.String()
	want := "  -m, --model string\n    \tmodel\n" +
		"  -n, --n-predict int\n    \ttokens to generate (default 128)\n" +
		"  -np, --parallel int\n    \trows (default 4)\n" +
		"  --pe value\n    \toption\n" +
		"  --seed int\n    \tseed (default -1)\n"
	if out != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
	if c := strings.Count(out, "tokens to generate"); c != 1 {
		t.Errorf("the alias's text printed %d times, want 1", c)
	}
	if g := Groups(fs); len(g) != 5 {
		t.Errorf("%d groups, want 5", len(g))
	}
}
