package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/posformer/posformer/benchmarks/tasks"
)

// Bad input is a one-line error that names the problem (and lists the valid choices).
func TestBadFlagsAreOneLineErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"-task", "lmx"}, "valid: lm, copy, passkey, mlm"},
		{[]string{"-scheme", "ropez"}, "valid: "},
		{[]string{"-lengths", "64,0"}, "below 1"},
		{[]string{"-lengths", "64,x"}, "comma-separated"},
		{[]string{"--quick", "--full"}, "exclude"},
		{[]string{"-resume"}, "--full"},
		{[]string{"--full", "-jobs", "0"}, "at least 1"},
		{[]string{"-m", "somewhere"}, "-task"},
		{[]string{"-bogus"}, "-bogus"},
		{[]string{"extra"}, "unexpected argument"},
	}
	for _, c := range cases {
		_, err := parseFlags(c.args)
		if err == nil {
			t.Errorf("%v: no error", c.args)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, c.want) || strings.Contains(msg, "\n") {
			t.Errorf("%v: error %q, want one line containing %q", c.args, msg, c.want)
		}
	}
	if _, err := parseFlags([]string{"-task", "lm,copy", "-scheme", "rope,alibi", "-lengths", "64,128"}); err != nil {
		t.Errorf("valid flags: %v", err)
	}
}

// A checkpoint records its task; scoring it on another is refused, naming both.
func TestCheckTaskRefusesAnotherTask(t *testing.T) {
	dir := t.TempDir()
	js, _ := json.Marshal(map[string]any{"task": "copy", "scheme": "rope", "seed": 1})
	if err := os.WriteFile(filepath.Join(dir, "train.json"), js, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := checkTask(dir, "copy"); err != nil {
		t.Errorf("own task refused: %v", err)
	}
	_, err := checkTask(dir, "lm")
	if err == nil || !strings.Contains(err.Error(), "trained for task copy, not lm") {
		t.Errorf("wrong task: %v", err)
	}
	if _, err := checkTask(t.TempDir(), "lm"); err == nil || !strings.Contains(err.Error(), "no train.json") {
		t.Errorf("no train.json: %v", err)
	}
	short := tasks.MinPasskeyLength - 1
	if _, err := plan("passkey", fullBudget, []int{short}, nil); err == nil || !strings.Contains(err.Error(), fmt.Sprintf(">= %d", short+1)) {
		t.Errorf("passkey length %d: %v", short, err)
	}
}

// Seeds average into one row, with their range; merge keeps rows it did not redo.
func TestAggregateAndMerge(t *testing.T) {
	nan := func() float64 { var z float64; return z / z }()
	rs := []result{
		{Task: "copy", Model: "rope", Scheme: "rope", Seed: 1, Length: 64, Depth: nan, Metric: "exact_match", Value: 0.2},
		{Task: "copy", Model: "rope-seed2", Scheme: "rope", Seed: 2, Length: 64, Depth: nan, Metric: "exact_match", Value: 0.6},
		{Task: "copy", Model: "none", Scheme: "none", Seed: 1, Length: 64, Depth: nan, Metric: "exact_match", Value: 1},
	}
	ss, lengths := aggregate(rs, "exact_match")
	if len(ss) != 2 || len(lengths) != 1 {
		t.Fatalf("%d series, %d lengths; want 2 and 1", len(ss), len(lengths))
	}
	for _, s := range ss {
		if s.label == "rope" && (s.seeds != 2 || s.mean[64] != 0.4 || s.lo[64] != 0.2 || s.hi[64] != 0.6) {
			t.Errorf("rope: %+v, want mean 0.4 over 2 seeds, range 0.2-0.6", s)
		}
	}
	fresh := []result{{Task: "copy", Model: "none", Scheme: "none", Seed: 1, Length: 64, Metric: "exact_match", Value: 0.5}}
	m := merge(rs, fresh)
	if len(m) != 3 || m[2].Value != 0.5 {
		t.Errorf("merge: %+v", m)
	}
}
