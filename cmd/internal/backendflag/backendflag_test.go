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

func TestWithThreads(t *testing.T) {
	t.Setenv("GOMLX_BACKEND", "")
	for _, c := range []struct {
		backend string
		n       int
		want    string
	}{
		{"", 0, ""},
		{"", 3, "cpu:threads=3"},
		{"cpu", 2, "cpu:threads=2"},
		{"cpu:bf16dot=true", 4, "cpu:bf16dot=true,threads=4"},
	} {
		got, err := WithThreads(c.backend, c.n)
		if err != nil || got != c.want {
			t.Errorf("WithThreads(%q, %d) = %q, %v; want %q", c.backend, c.n, got, err, c.want)
		}
	}
	for _, c := range []struct {
		backend string
		n       int
	}{{"go", 2}, {"cpu:threads=2", 4}, {"", -1}} {
		if _, err := WithThreads(c.backend, c.n); err == nil {
			t.Errorf("WithThreads(%q, %d): no error", c.backend, c.n)
		}
	}
	t.Setenv("GOMLX_BACKEND", "go")
	if _, err := WithThreads("", 2); err == nil {
		t.Errorf("-t with $GOMLX_BACKEND=go: no error")
	}
}
