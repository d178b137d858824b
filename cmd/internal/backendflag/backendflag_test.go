package backendflag

import (
	"flag"
	"strings"
	"testing"

	"github.com/posformer/posformer/engine"
)

// Both help texts name every backend the engine accepts, so that a new one cannot be left out.
func TestUsageNamesEveryBackend(t *testing.T) {
	for _, usage := range []string{Usage, ShortUsage} {
		for _, name := range engine.BackendNames() {
			if !strings.Contains(usage, name) {
				t.Errorf("help %q does not name the backend %q", usage, name)
			}
		}
	}
}

func TestRegister(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	p := Register(fs)
	if err := fs.Parse([]string{"--backend", "cpu:threads=2"}); err != nil {
		t.Fatal(err)
	}
	if *p != "cpu:threads=2" {
		t.Errorf("--backend cpu:threads=2 gave %q", *p)
	}
	if f := fs.Lookup(Name); f == nil || f.Usage != Usage || f.DefValue != "" {
		t.Errorf("flag %+v, want help %q and no default", f, Usage)
	}

	fs = flag.NewFlagSet("y", flag.ContinueOnError)
	var s string
	Var(fs, &s, ShortUsage)
	if err := fs.Parse(nil); err != nil || s != "" {
		t.Errorf("no --backend gave %q, %v; want the empty default", s, err)
	}
	if f := fs.Lookup(Name); f.Usage != ShortUsage {
		t.Errorf("help %q, want %q", f.Usage, ShortUsage)
	}
}
