package bench

import (
	"strings"
	"testing"
)

// Bad input is a one-line error that names the problem (and lists the valid choices).
func TestBadFlagsAreOneLineErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"-task", "lmx"}, "valid: lm, copy, reverse, passkey, mqar, mlm"},
		{[]string{"-scheme", "ropez"}, "valid: "},
		{[]string{"-lengths", "64,0"}, "below 1"},
		{[]string{"-lengths", "64,x"}, "comma-separated"},
		{[]string{"--quick", "--full"}, "exclude"},
		{[]string{"-resume"}, "drop -resume"},
		{[]string{"--full", "--resume"}, "drop -resume"},
		{[]string{"--full", "-resume=true"}, "drop -resume"},
		{[]string{"--full", "-jobs", "0"}, "at least 1"},
		{[]string{"-m", "somewhere"}, "-task"},
		{[]string{"-bogus"}, "-bogus"},
		{[]string{"-plan"}, "add --full"},
		{[]string{"-steps", "100"}, "add --full"},
		{[]string{"-ship", "x"}, "add --full"},
		{[]string{"-within", "2h"}, "add --full"},
		{[]string{"--full", "-within", "-1h"}, "positive duration"},
		{[]string{"--full", "-within", "soon"}, "-within"},
		{[]string{"--full", "-steps", "-1"}, "-steps -1"},
		{[]string{"--full", "-m", "x", "-task", "lm"}, "drop them or --full"},
		{[]string{"--full", "--rope-scaling", "yarn", "--rope-scale", "4"}, "drop them or --full"},
		{[]string{"extra"}, "unexpected argument"},
		{[]string{"--sliding-stride", "16"}, "-m DIR -task lm"},
		{[]string{"-m", "x", "-task", "copy", "--sliding-stride", "16"}, "-m DIR -task lm"},
		{[]string{"-m", "x", "-task", "lm", "--sliding-stride", "-3"}, "at least 1 token"},
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
	o, err := parseFlags([]string{"--full", "-plan", "-task", "mqar", "-seeds", "2", "-steps", "300", "-jobs", "1"})
	if err != nil || !o.full || !o.plan || o.seeds != 2 || o.steps != 300 || o.jobs != 1 || len(o.tasks) != 1 {
		t.Errorf("--full flags: %+v, %v", o, err)
	}
	if o.ship != "" {
		t.Errorf("a pilot (-steps) ships to %q; want nowhere", o.ship)
	}
	// The grid trains outside what git keeps, writes the benchmark's report, ships its subset
	// to weights/bench; scoring checkpoints writes where git does not look, never over the report.
	o, _ = parseFlags([]string{"--full"})
	if o.weights != "weights/grid" || o.out != "benchmarks" || o.ship != "weights/bench" {
		t.Errorf("--full's places: weights %q, results %q, shipped %q", o.weights, o.out, o.ship)
	}
	o, _ = parseFlags(nil)
	if o.weights != "weights/bench" || o.out != "benchmarks/shipped" {
		t.Errorf("scoring's places: weights %q, results %q; want weights/bench and benchmarks/shipped", o.weights, o.out)
	}
	o, _ = parseFlags([]string{"--full", "-weights", "/tmp/w", "-o", "/tmp/o", "-ship", ""})
	if o.weights != "/tmp/w" || o.out != "/tmp/o" || o.ship != "" {
		t.Errorf("given places not kept: %+v", o)
	}
}

// The -speed mode checks its flags before measuring anything: a bad one is a one-line error.
func TestSpeedBadFlags(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"-n", "0"}, "-n must be >= 1, got 0"},
		{[]string{"-reps", "0"}, "-reps must be >= 1, got 0"},
		{[]string{"-c", "-1"}, "-c must be >= 0, got -1"},
		{[]string{"-prompts", "16,x"}, `-prompts: want comma-separated positive integers, got "16,x"`},
		{[]string{"-batches", "0"}, `-batches: want comma-separated positive integers, got "0"`},
		{[]string{"--weights", "q9"}, `--weights "q9": unknown weight type (valid: f32, bf16, q8_0, q4_0)`},
		{[]string{"-shape", "7B"}, `-shape "7B": unknown (valid: 15M, 260K)`},
		{[]string{"-m", "/nonexistent/model.bin"}, "-m /nonexistent/model.bin: "},
		{[]string{"extra"}, `-speed: unexpected argument "extra"`},
		{[]string{"-bogus"}, "-speed: flag provided but not defined: -bogus (run with -speed -h for the flags)"},
	}
	for _, c := range cases {
		err := runSpeed(c.args)
		if err == nil {
			t.Errorf("%v: no error", c.args)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, c.want) || strings.Contains(msg, "\n") {
			t.Errorf("%v: error %q, want one line containing %q", c.args, msg, c.want)
		}
	}
}
