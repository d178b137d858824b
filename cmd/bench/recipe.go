// The training recipe: one model per (task, scheme, seed), identical except for the scheme, each
// trained by cmd/train (built once, then run as a subprocess so its progress bar, checkpoints
// and -resume are the ones users already know). A model records its task in train.json; the
// manifest (weights/bench/MANIFEST.md) is rebuilt from those files after every run.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/posformer/posformer/benchmarks/tasks"
	"github.com/posformer/posformer/models"
	"github.com/posformer/posformer/positional"
)

// trainLens is L per task, in tokens the model reads: copy trains on strings of up to 16
// letters (inputs of up to 32 tokens), the others on 64 tokens.
var trainLens = map[string]int{tasks.LM: 64, tasks.Copy: 32, tasks.Passkey: 64, tasks.MLM: 64}

// common are the cmd/train flags every model shares: a 2-layer, 64-wide decoder or encoder
// (~0.1 M parameters) that trains in 2-6 minutes on one core (see MANIFEST.md for each).
var common = []string{
	"-dim", "64", "-layers", "2", "-heads", "4", "-kv-heads", "2", "-hidden", "128", "-ctx", "1024",
	"-batch", "16", "-lr", "3e-3", "-warmup", "50",
	"-eval-every", "100", "-save-every", "100", "-eval-windows", "64",
}

// taskSteps are the optimizer steps per task; seedsPerTask how many seeds --full trains.
var (
	taskSteps    = map[string]int{tasks.LM: 500, tasks.Copy: 1500, tasks.Passkey: 500, tasks.MLM: 800}
	seedsPerTask = map[string]int{tasks.Copy: 3}
)

// trainArgs is the cmd/train command line for one model.
func trainArgs(task, scheme string, seed int, dir string) []string {
	args := []string{"-task", task, "-scheme", scheme}
	if scheme == "learned" {
		// The table must cover the longest evaluated length; rows past L stay at their
		// initialization, which is exactly what the benchmark shows.
		args = append(args, "-pe", "max_positions=1024")
	}
	args = append(args, common...)
	return append(args, "-seq", strconv.Itoa(trainLens[task]), "-steps", strconv.Itoa(taskSteps[task]), "-seed", strconv.Itoa(seed), "-o", dir)
}

// applies reports whether a scheme can be trained for a task (xPos is decoder-only).
func applies(task, scheme string) bool {
	return !(scheme == "xpos" && tasks.Kind(task) == models.Encoder)
}

func taskNames() []string { return tasks.Names() }

func pickTasks(list string) ([]string, error) {
	if list == "" {
		return tasks.Names(), nil
	}
	var out []string
	for _, t := range strings.Split(list, ",") {
		t = strings.TrimSpace(t)
		if err := tasks.Check(t); err != nil {
			return nil, fmt.Errorf("-task: %w", err)
		}
		out = append(out, t)
	}
	return out, nil
}

func pickSchemes(list string) ([]string, error) {
	if list == "" {
		return positional.Names(), nil
	}
	var out []string
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		if !slices.Contains(positional.Names(), s) {
			return nil, fmt.Errorf("-scheme: unknown scheme %q (valid: %s)", s, strings.Join(positional.Names(), ", "))
		}
		out = append(out, s)
	}
	return out, nil
}

// modelDir is where a model lives: <weights>/<task>/<scheme>, or <scheme>-seedN past seed 1.
func modelDir(weights, task, scheme string, seed int) string {
	name := scheme
	if seed != 1 {
		name += "-seed" + strconv.Itoa(seed)
	}
	return filepath.Join(weights, task, name)
}

// trainJob is one model to train.
type trainJob struct {
	task, scheme string
	seed         int
	dir          string
}

// trainInfo is what cmd/train writes to train.json that the benchmark reads.
type trainInfo struct {
	Task          string         `json:"task"`
	Scheme        string         `json:"scheme"`
	Kind          string         `json:"kind"`
	Steps         int            `json:"steps"`
	Batch         int            `json:"batch"`
	SeqLen        int            `json:"seq_len"`
	Seed          int            `json:"seed"`
	WallSeconds   float64        `json:"wall_seconds"`
	GOMAXPROCS    int            `json:"gomaxprocs"`
	FinalLoss     float64        `json:"final_loss"`
	FinalEvalLoss float64        `json:"final_eval_loss"`
	Command       string         `json:"command"`
	Positional    map[string]any `json:"positional"`
}

// readTrainInfo reads dir/train.json; a checkpoint without one was not trained to the end.
func readTrainInfo(dir string) (*trainInfo, error) {
	data, err := os.ReadFile(filepath.Join(dir, "train.json"))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s has no train.json: not a finished cmd/train checkpoint (train it with go run ./cmd/bench --full)", dir)
		}
		return nil, fmt.Errorf("reading %s: %w", dir, err)
	}
	var ti trainInfo
	if err := json.Unmarshal(data, &ti); err != nil {
		return nil, fmt.Errorf("reading %s/train.json: %w", dir, err)
	}
	return &ti, nil
}

// checkTask is the one-line refusal to score a checkpoint on a task it was not trained for.
func checkTask(dir, task string) (*trainInfo, error) {
	ti, err := readTrainInfo(dir)
	if err != nil {
		return nil, err
	}
	if ti.Task == "" {
		// Before -task existed, cmd/train trained plain next-byte (decoder) or masked-byte
		// (encoder) prediction on the Go-source corpus, which is what the lm and mlm tasks train.
		switch ti.Kind {
		case "decoder":
			ti.Task = "lm"
		case "encoder":
			ti.Task = "mlm"
		default:
			return nil, fmt.Errorf("%s records no task (trained without cmd/train -task); retrain it with -task %s", dir, task)
		}
	}
	switch {
	case ti.Task != task:
		return nil, fmt.Errorf("%s was trained for task %s, not %s; pick -task %s or a %s checkpoint", dir, ti.Task, task, ti.Task, task)
	}
	return ti, nil
}

// train runs the jobs, -jobs at a time. These models are too small for the backend to spread
// one step over several cores well (a copy step: 115 ms on 1 core, 90 ms on 2), so by default
// each core trains its own model with GOMAXPROCS=1: 1.6x the throughput of one model on both.
// With one lane the trainer's own progress bar is shown; with more, each model's output goes to
// a log file and a line per finished model carries the ETA, estimated up front from the wall
// times of earlier runs where the manifest has them.
func train(o options, jobs []trainJob) error {
	if len(jobs) == 0 {
		return nil
	}
	lanes := min(max(o.jobs, 1), len(jobs))
	prev := previousWallTimes(o.weights)
	total := 0.0
	for _, j := range jobs {
		total += estimateWall(prev, j)
	}
	eta := func(seconds float64) time.Duration {
		return (time.Duration(seconds/float64(lanes)) * time.Second).Round(time.Minute)
	}
	fmt.Fprintf(os.Stderr, "bench: training %d models, %d at a time, ETA %s (from the manifest's wall times, or 3 min per model without one)\n",
		len(jobs), lanes, eta(total))
	bin := filepath.Join(os.TempDir(), fmt.Sprintf("posformer-bench-train-%d", os.Getpid()))
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/train").CombinedOutput(); err != nil {
		return fmt.Errorf("building cmd/train (run bench from the repository root): %v: %s", err, strings.TrimSpace(string(out)))
	}
	defer os.Remove(bin)
	logs := ""
	if lanes > 1 {
		var err error
		if logs, err = os.MkdirTemp("", "posformer-bench-logs-"); err != nil {
			return fmt.Errorf("creating a folder for the training logs: %w", err)
		}
		fmt.Fprintf(os.Stderr, "bench: each model's progress is in %s/<task>-<scheme>-seed<N>.log\n", logs)
	}
	procs := max(runtime.NumCPU()/lanes, 1)

	start := time.Now()
	var (
		mu       sync.Mutex
		left     = total
		done     int
		firstErr error
	)
	next := make(chan trainJob)
	var wg sync.WaitGroup
	for range lanes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range next {
				err := trainOne(o, bin, logs, procs, j)
				mu.Lock()
				done++
				left -= estimateWall(prev, j)
				status := "done"
				if err != nil {
					status = "FAILED"
					if firstErr == nil {
						firstErr = err
					}
				}
				fmt.Fprintf(os.Stderr, "bench: [%d/%d] %s %s seed %d %s (elapsed %s, about %s left)\n", done, len(jobs), j.task, j.scheme, j.seed,
					status, time.Since(start).Round(time.Second), eta(max(left, 0)))
				mu.Unlock()
			}
		}()
	}
	for _, j := range jobs {
		mu.Lock()
		failed := firstErr != nil
		mu.Unlock()
		if failed {
			break
		}
		next <- j
	}
	close(next)
	wg.Wait()
	return firstErr
}

// trainOne trains one model with cmd/train (binary bin), resuming it where -resume allows.
// With a logs folder, its output goes there; otherwise to our stderr.
func trainOne(o options, bin, logs string, procs int, j trainJob) error {
	args := trainArgs(j.task, j.scheme, j.seed, j.dir)
	if _, err := os.Stat(filepath.Join(j.dir, "train_state.safetensors")); err == nil && o.resume {
		args = append(args, "-resume")
	} else if err := os.RemoveAll(j.dir); err != nil {
		return fmt.Errorf("clearing %s: %w", j.dir, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(procs))
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	hint := ""
	if logs != "" {
		name := filepath.Join(logs, fmt.Sprintf("%s-%s-seed%d.log", j.task, j.scheme, j.seed))
		f, err := os.Create(name)
		if err != nil {
			return fmt.Errorf("creating the training log: %w", err)
		}
		defer f.Close()
		cmd.Stdout, cmd.Stderr = f, f
		hint = ", log in " + name
	}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("training %s %s seed %d: %w%s (rerun with --full -resume to continue)", j.task, j.scheme, j.seed, err, hint)
	}
	// The optimizer state doubles the checkpoint and is only needed to resume.
	os.Remove(filepath.Join(j.dir, "train_state.safetensors"))
	return nil
}

// previousWallTimes maps "task/scheme" to the shortest wall seconds the manifest records for
// it over seeds: the longer ones were usually measured with other runs on the same cores.
func previousWallTimes(weights string) map[string]float64 {
	out := map[string]float64{}
	for _, e := range readManifest(weights) {
		k := e.Task + "/" + e.Scheme
		if w, ok := out[k]; e.WallSeconds > 0 && (!ok || e.WallSeconds < w) {
			out[k] = e.WallSeconds
		}
	}
	return out
}

func estimateWall(prev map[string]float64, j trainJob) float64 {
	if w, ok := prev[j.task+"/"+j.scheme]; ok && w > 0 {
		return w
	}
	return 180
}
