package train

import (
	"errors"
	"flag"
	"strings"
	"testing"
)

// A resumed run, or one that replaced a checkpoint, records the command that trains the model,
// as an uninterrupted run does.
func TestWithoutResume(t *testing.T) {
	got := strings.Join(WithoutResume([]string{"-task", "copy", "-resume", "-steps", "10", "--resume=true", "--force", "-force=false", "-o", "resume", "-forced"}), " ")
	if want := "-task copy -steps 10 -o resume -forced"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// ParseArgs reads cmd/train's flags with their defaults, leaves Kind empty unless -kind is
// given (the task decides it), records the command line, and refuses stray arguments and bad
// values in one line.
func TestParseArgs(t *testing.T) {
	args := []string{"-task", "mlm", "-scheme", "alibi", "-pe", "slopes=0.5,0.25", "-pe", "causal=false", "-steps", "7", "-o", "out"}
	o, err := ParseArgs(args, nil)
	if err != nil {
		t.Fatal(err)
	}
	if o.Kind != "" || o.Task != "mlm" || o.Scheme != "alibi" || o.Steps != 7 || o.Out != "out" || o.Dim != 128 || o.Batch != 16 || o.LR != 2e-3 {
		t.Errorf("parsed %+v", o)
	}
	if o.PE["slopes"] != "0.5,0.25" || o.PE["causal"] != false || strings.Join(o.Args, " ") != strings.Join(args, " ") {
		t.Errorf("-pe %v, args %q", o.PE, o.Args)
	}
	if o, err := ParseArgs([]string{"-kind", "decoder"}, nil); err != nil || o.Kind != "decoder" {
		t.Errorf("-kind decoder: %q, %v", o.Kind, err)
	}
	if o, err := ParseArgs([]string{"-bpe", "4096", "-tokenizer", "t.json"}, nil); err != nil || o.BPE != 4096 || o.Tokenizer != "t.json" {
		t.Errorf("-bpe 4096 -tokenizer t.json: %d %q, %v", o.BPE, o.Tokenizer, err)
	}
	if o, _ := ParseArgs(nil, nil); o.BPE != 0 || o.Tokenizer != "" {
		t.Errorf("by default a run is byte-level: -bpe %d -tokenizer %q", o.BPE, o.Tokenizer)
	}
	var edited map[string]any
	rope := func(fs *flag.FlagSet) func(map[string]any) error {
		scale := fs.Float64("rope-scale", 0, "")
		return func(pe map[string]any) error { edited = pe; pe["factor"] = *scale; return nil }
	}
	o, err = ParseArgs([]string{"--rope-scale", "4"}, rope)
	if err != nil || o.Rope == nil || o.Rope(map[string]any{}) != nil || edited["factor"] != 4.0 {
		t.Errorf("extra flags: %v, edit gave %v", err, edited)
	}
	if _, err := ParseArgs([]string{"-o", "x", "extra"}, nil); !errors.Is(err, ErrArgument) {
		t.Errorf("stray argument: %v", err)
	}
	if _, err := ParseArgs([]string{"-steps", "x"}, nil); err == nil || !strings.Contains(err.Error(), "run with -h") {
		t.Errorf("bad value: %v", err)
	}
	if _, err := ParseArgs([]string{"-h"}, nil); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v", err)
	}
}

// Threads go to the cpu backend (the default one too) unless its name sets them.
func TestWithThreads(t *testing.T) {
	t.Setenv("GOMLX_BACKEND", "")
	for _, c := range []struct {
		name  string
		cores int
		want  string
	}{
		{"", 0, "cpu"}, {"", 1, "cpu:threads=1"}, {"cpu:bf16dot=true", 2, "cpu:bf16dot=true,threads=2"},
		{"cpu:threads=3", 1, "cpu:threads=3"}, {"go", 1, "go"},
	} {
		if got := withThreads(c.name, c.cores); got != c.want {
			t.Errorf("withThreads(%q, %d) = %q, want %q", c.name, c.cores, got, c.want)
		}
	}
}
