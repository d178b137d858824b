package bench

import (
	"strings"
	"testing"
)

// Bad input is a one-line error that names the problem (and lists the valid choices).
func TestBadFlagsAreOneLineErrors(t *testing.T) {
	t.Setenv("POSFORMER_HOME", t.TempDir()) // -m by name looks there
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
		{[]string{"-m", "nosuchmodel", "-task", "lm"}, `no model "nosuchmodel"`},
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
	t.Setenv("POSFORMER_HOME", t.TempDir()) // -m by name looks there
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
		{[]string{"-m", "nosuchmodel"}, `no model "nosuchmodel"`},
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

// The cluster flags: each bad combination is a one-line error naming the fix.
func TestClusterFlags(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--cell", "3"}, "add --full"},
		{[]string{"--slurm"}, "add --full"},
		{[]string{"--full", "--recipe", "v9"}, "want v2"},
		{[]string{"--full", "--cell", "3", "--slurm"}, "exclude each other"},
		{[]string{"--full", "-plan", "--k8s", "--image", "i", "--pvc", "p"}, "exclude each other"},
		{[]string{"--full", "--submit"}, "add --slurm"},
		{[]string{"--full", "--partition", "cpu"}, "add --slurm"},
		{[]string{"--full", "--image", "x"}, "add --k8s"},
		{[]string{"--full", "--mem", "4G"}, "add one"},
		{[]string{"--full", "--k8s"}, "--image"},
		{[]string{"--full", "--k8s", "--image", "i", "--pvc", "p", "--k8s-name", "Bad_Name"}, "--k8s-name"},
		{[]string{"--full", "--k8s", "--image", "i", "--pvc", "p", "--mount", "data"}, "absolute"},
		{[]string{"--full", "--nodes", "4"}, "-plan --nodes N"},
		{[]string{"--full", "-plan", "--nodes", "0"}, "at least 1"},
		{[]string{"--full", "-plan", "--cores-per-node", "8"}, "--nodes"},
		{[]string{"--full", "--index", "2"}, "--cells LIST --index N"},
		{[]string{"--full", "--cells", "1-3", "--index", "-1"}, "--cells LIST --index N"},
		{[]string{"--full", "--cores", "2"}, "--cell ID --cores N"},
		{[]string{"--full", "--slurm", "--array-limit", "-1"}, "--array-limit 0 or more"},
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
	o, err := parseFlags([]string{"--full", "--recipe", "tiny", "--cells", "0-3", "--index", "2", "--cores", "1"})
	if err != nil || o.cluster.cells != "0-3" || o.cluster.index != 2 || o.cluster.cores != 1 || o.cluster.recipe != "tiny" {
		t.Errorf("--cells flags: %+v, %v", o.cluster, err)
	}
	o, err = parseFlags([]string{"--full", "--slurm", "--submit", "--partition", "cpu", "--time", "1:00:00", "--mem", "2G", "--cpus-per-task", "2", "--array-limit", "16"})
	if err != nil || !o.cluster.slurm || !o.cluster.submit || o.cluster.arrayLimit != 16 || o.cluster.cpusPerTask != 2 {
		t.Errorf("--slurm flags: %+v, %v", o.cluster, err)
	}
}

// The flags a scheduler's task gets rebuild the same grid: parsed again they give the same cells.
func TestGridArgsRoundTrip(t *testing.T) {
	o, err := parseFlags([]string{"--full", "--recipe", "tiny", "-task", "copy,lm", "-scheme", "rope,alibi", "-seeds", "2", "-steps", "50"})
	if err != nil {
		t.Fatal(err)
	}
	args := gridArgs(o, "/shared/out", "/shared/w", "")
	back, err := parseFlags(append(args, "--cell", "0"))
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	if back.out != "/shared/out" || back.weights != "/shared/w" || back.ship != "" || back.seeds != 2 || back.steps != 50 ||
		back.cluster.recipe != "tiny" || strings.Join(back.tasks, ",") != "copy,lm" || strings.Join(back.schemes, ",") != "rope,alibi" {
		t.Errorf("gridArgs %v parsed back as %+v", args, back)
	}
}

// A task whose scripts were written for another cell list refuses before any work.
func TestGridFingerprintChecked(t *testing.T) {
	dir := t.TempDir()
	o, err := parseFlags([]string{"--full", "--recipe", "tiny", "-task", "copy", "-scheme", "rope", "-o", dir, "-weights", dir, "--cell", "0", "--grid", "000000000000"})
	if err != nil {
		t.Fatal(err)
	}
	err = run(o)
	if err == nil || !strings.Contains(err.Error(), "write them again") || strings.Contains(err.Error(), "\n") {
		t.Errorf("a stale --grid: %v", err)
	}
}
