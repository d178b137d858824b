// The speed benchmark: go run ./cmd/bench -speed. What it measures and how is benchmarks/speed's
// (load, first token, prefill, decode by position, batches, graphs after warm-up, peak memory);
// this file holds the flags and runs each model in its own child process (this binary
// re-executed with -speed-child), so that peak memory and the cold start belong to that model
// alone.
//
//	go run ./cmd/bench -speed                        # random weights, stories260K and 15M shapes
//	go run ./cmd/bench -speed -m ../shared/fixtures/stories260K.bin -o benchmarks
//
// Random models are written as llama2.c files (-make-llama2c, N(0, 0.02²) weights) into a
// temporary directory and loaded like any checkpoint.
package bench

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/posformer/posformer/benchmarks/speed"
	"github.com/posformer/posformer/cmd/internal/backendflag"
	"github.com/posformer/posformer/cmd/internal/cacheflag"
	"github.com/posformer/posformer/cmd/internal/intlist"
	"github.com/posformer/posformer/cmd/internal/memlimit"
	"github.com/posformer/posformer/cmd/internal/modelhome"
	"github.com/posformer/posformer/layers"
)

type speedOptions struct {
	models, shapes, prompts, batches string
	backend, out, cpuprofile, child  string
	weights                          string // --weights: the matrices' type in memory
	cache                            *cacheflag.Types
	n, ctxSize, reps                 int
}

func speedFlags(o *speedOptions) *flag.FlagSet {
	fs := flag.NewFlagSet("bench -speed", flag.ContinueOnError)
	fs.StringVar(&o.models, "m", "", "comma-separated models to measure: llama2.c .bin files, checkpoint directories or names in $POSFORMER_HOME")
	fs.StringVar(&o.shapes, "shape", "260K,15M", "comma-separated random models to measure when -m is not given: "+strings.Join(speed.ShapeNames(), ", "))
	fs.IntVar(&o.n, "n", 256, "tokens generated for the decode rate (greedy, from BOS)")
	fs.StringVar(&o.prompts, "prompts", "16,32,64,128,256,512", "prompt lengths for the prefill rate (those that fit the context)")
	fs.StringVar(&o.batches, "batches", "1,2,4,8", "batch sizes for batched decode")
	fs.IntVar(&o.ctxSize, "c", 0, "context size, the KV-cache capacity (0: the model's max_seq_len)")
	fs.IntVar(&o.reps, "reps", 3, "repetitions of each prefill measurement (the fastest is kept)")
	backendflag.Var(fs, &o.backend, "")
	fs.StringVar(&o.weights, "weights", "", "type of the weight matrices in memory: "+layers.WeightTypes+" (default: as the checkpoint stores them)")
	o.cache = cacheflag.Register(fs)
	fs.StringVar(&o.out, "o", "", "directory for speed.csv, speed-positions.csv and speed.png (default: none written)")
	fs.StringVar(&o.cpuprofile, "cpuprofile", "", "write a CPU profile of the measurements to FILE (with several models: FILE.<model>)")
	fs.StringVar(&o.child, "speed-child", "", "internal: measure this one model and print the result as JSON")
	return fs
}

// runSpeed is the -speed mode of cmd/bench.
func runSpeed(args []string) error {
	var o speedOptions
	fs := speedFlags(&o)
	if help, err := parseMode(fs, "speed", args); help || err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("-speed: unexpected argument %q", fs.Arg(0))
	}
	prompts, err := parseInts("-prompts", o.prompts)
	if err != nil {
		return err
	}
	batches, err := parseInts("-batches", o.batches)
	if err != nil {
		return err
	}
	switch {
	case o.n < 1:
		return fmt.Errorf("-n must be >= 1, got %d", o.n)
	case o.reps < 1:
		return fmt.Errorf("-reps must be >= 1, got %d", o.reps)
	case o.ctxSize < 0:
		return fmt.Errorf("-c must be >= 0, got %d", o.ctxSize)
	}
	if o.weights != "" {
		if _, err := layers.ParseWeightType(o.weights); err != nil {
			return fmt.Errorf("--weights %w", err)
		}
	}
	if o.child != "" {
		return measureChild(o, prompts, batches)
	}

	var targets []string
	if o.models != "" {
		for _, m := range strings.Split(o.models, ",") {
			m, err := modelhome.Resolve(m)
			if err != nil {
				return err
			}
			if _, err := os.Stat(m); err != nil {
				return fmt.Errorf("-m %s: %w", m, err)
			}
			targets = append(targets, m)
		}
	} else {
		tmp, err := os.MkdirTemp("", "posformer-bench-")
		if err != nil {
			return fmt.Errorf("-speed: %w", err)
		}
		defer os.RemoveAll(tmp)
		for _, s := range strings.Split(o.shapes, ",") {
			cfg, ok := speed.Shapes[s]
			if !ok {
				return fmt.Errorf("-shape %q: unknown (valid: %s)", s, strings.Join(speed.ShapeNames(), ", "))
			}
			path := filepath.Join(tmp, "random-"+s+".bin")
			if err := writeRandomLlama2c(path, cfg, 1, 0.02, 0); err != nil {
				return err
			}
			targets = append(targets, path)
		}
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("-speed: finding this program to run each model in its own process: %w", err)
	}
	var results []speed.Result
	for _, t := range targets {
		childArgs := append(append(slices.Clone(ChildPrefix), "-speed"), args...)
		childArgs = append(childArgs, "-speed-child", t)
		if o.cpuprofile != "" && len(targets) > 1 {
			childArgs = append(childArgs, "-cpuprofile", o.cpuprofile+"."+speed.Label(t))
		}
		fmt.Fprintf(os.Stderr, "bench: measuring %s ...\n", speed.Label(t))
		cmd := exec.Command(self, childArgs...)
		cmd.Stderr = os.Stderr
		outb, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("measuring %s: %w", t, err)
		}
		// The result is the child's last line (a backend may print before it).
		lines := strings.Split(strings.TrimSpace(string(outb)), "\n")
		var r speed.Result
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil {
			return fmt.Errorf("measuring %s: reading the child's result: %w", t, err)
		}
		results = append(results, r)
	}
	speed.WriteTable(os.Stdout, results)
	if o.out == "" {
		return nil
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return fmt.Errorf("-o: %w", err)
	}
	return speed.WriteFiles(o.out, results)
}

// measureChild is -speed-child: it measures the one model and prints its result as JSON, the
// last line of its output.
func measureChild(o speedOptions, prompts, batches []int) error {
	so := speed.Options{
		Backend: o.backend, Context: o.ctxSize, Weights: o.weights, CacheK: o.cache.K, CacheV: o.cache.V,
		Decode: o.n, Prompts: prompts, Batches: batches, Reps: o.reps,
		Memory: speed.Memory{
			Limit: func(extra int64) { memlimit.Set(memlimit.Base(), extra) },
			Off:   memlimit.Off,
		},
	}
	if o.cpuprofile != "" {
		f, err := os.Create(o.cpuprofile)
		if err != nil {
			return fmt.Errorf("-cpuprofile: %w", err)
		}
		defer f.Close()
		so.CPUProfile = f
	}
	r, err := speed.Measure(o.child, so)
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(r)
}

func parseInts(flagName, s string) ([]int, error) {
	out, _, ok := intlist.Parse(s, func(v int) bool { return v >= 1 })
	if !ok {
		return nil, fmt.Errorf("%s: want comma-separated positive integers, got %q", flagName, s)
	}
	return out, nil
}
