package recipe

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/posformer/posformer/engine/train"
	"github.com/posformer/posformer/engine/train/tasks"
	"github.com/posformer/posformer/models"
)

// TrainInfo is what cmd/train writes to train.json that the benchmark reads.
type TrainInfo struct {
	Task            string         `json:"task"`
	TaskVersion     int            `json:"task_version"` // 0 (absent): written before versions, i.e. version 1
	Scheme          string         `json:"scheme"`
	Kind            string         `json:"kind"`
	Steps           int            `json:"steps"`
	StepCap         int            `json:"step_cap"`
	Stop            string         `json:"stop"`
	Batch           int            `json:"batch"`
	SeqLen          int            `json:"seq_len"`
	Seed            int            `json:"seed"`
	WallSeconds     float64        `json:"wall_seconds"`
	ThreadCPU       float64        `json:"thread_cpu_seconds"` // the training thread's CPU time (0: not measured)
	GOMAXPROCS      int            `json:"gomaxprocs"`
	MicroBatch      int            `json:"micro_batch"` // sequences a pass (0 or Batch: one pass); of the last run, if resumed
	FinalLoss       Loss           `json:"final_loss"`
	FinalEvalLoss   Loss           `json:"final_eval_loss"`
	DivergedAt      int            `json:"diverged_at"` // the step the loss became NaN or infinite (0: never)
	Command         string         `json:"command"`
	Positional      map[string]any `json:"positional"`
	RandomPositions int            `json:"random_positions"`
	PoSE            int            `json:"pose"`
	BOS             bool           `json:"bos"`
	GoVersion       string         `json:"go_version"`
	ValidationSHA   string         `json:"validation_sha256"`

	dir  string // the checkpoint's folder, whose name carries a recipe variant's tag
	Init string `json:"init"`
}

// Plateaued reports whether the stopping rule ended the run, rather than its step cap
// (train.Plateaued: the training package writes the stop).
func (ti TrainInfo) Plateaued() bool { return train.Plateaued(ti.Stop) }

// ParseTrainInfo decodes a train.json.
func ParseTrainInfo(data []byte) (*TrainInfo, error) {
	var ti TrainInfo
	if err := json.Unmarshal(data, &ti); err != nil {
		return nil, err
	}
	return &ti, nil
}

// Loss is a loss in nats as train.json and MANIFEST.json hold it: null where it was not finite
// (a diverged run; JSON has no NaN), read back as NaN, never as the 0 that null would otherwise
// leave, which would rank a diverged run best.
type Loss float64

func (l Loss) MarshalJSON() ([]byte, error) {
	if math.IsNaN(float64(l)) || math.IsInf(float64(l), 0) {
		return []byte("null"), nil
	}
	return json.Marshal(float64(l))
}

func (l *Loss) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*l = Loss(math.NaN())
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	*l = Loss(f)
	return nil
}

// CoreSeconds is what training the model cost in seconds of one core: the training thread's CPU
// time where it trained on one thread and the whole run was measured (true), else its wall time,
// which also counts any time the process waited: stopped, or its core shared.
func (t TrainInfo) CoreSeconds() (float64, bool) {
	return CoreSeconds(t.ThreadCPU, t.WallSeconds, t.GOMAXPROCS)
}

// CoreSeconds is a run's cost in seconds of one core from its thread's CPU time (0: not
// measured), its wall time and its threads: the CPU time where it ran on one thread and was
// measured (true), else the wall time.
func CoreSeconds(threadCPU, wall float64, threads int) (float64, bool) {
	if threadCPU > 0 && threads == 1 {
		return threadCPU, true
	}
	return wall, false
}

// ReadTrainInfo reads dir/train.json; a checkpoint without one was not trained to the end.
func ReadTrainInfo(dir string) (*TrainInfo, error) {
	data, err := os.ReadFile(filepath.Join(dir, "train.json"))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s has no train.json: not a finished cmd/train checkpoint (train it with go run ./cmd/bench --full)", dir)
		}
		return nil, fmt.Errorf("reading %s: %w", dir, err)
	}
	ti, err := ParseTrainInfo(data)
	if err != nil {
		return nil, fmt.Errorf("reading %s/train.json: %w", dir, err)
	}
	ti.dir = dir
	if ti.TaskVersion == 0 {
		ti.TaskVersion = 1
	}
	if ti.Task == "" {
		// Before -task existed, cmd/train trained plain next-byte (decoder) or masked-byte
		// (encoder) prediction on the Go-source corpus, which is what the lm and mlm tasks train.
		switch ti.Kind {
		case models.Decoder:
			ti.Task = tasks.LM
		case models.Encoder:
			ti.Task = tasks.MLM
		}
	}
	return ti, nil
}

// Variant is the trained variant of a checkpoint: the v3 recipe's label when its folder's name
// carries one of the recipe's tags (VariantOf), else what train.json records: randomized
// positions, or a fine-tune with a rope_scaling block (position interpolation); "" for a plain
// model.
func (ti *TrainInfo) Variant() string {
	if ti.dir != "" {
		if v := V3.VariantOf(ti.Scheme, filepath.Base(ti.dir), ti.Seed); v != "" {
			return v
		}
	}
	if ti.RandomPositions > 0 {
		return RandPosVariant
	}
	if block, ok := ti.Positional["rope_scaling"].(map[string]any); ok && ti.Init != "" {
		if typ, _ := block["rope_type"].(string); typ == "linear" {
			f, _ := block["factor"].(float64)
			return PIVariant(int(math.Round(f)))
		}
		return fmt.Sprintf("%v s=%v ft", block["rope_type"], block["factor"])
	}
	return ""
}

// CurveEnd reads the last line of a loss curve (cmd/train's loss.csv): its step and its
// "seconds", the training wall time counted over resumptions; zeros for an empty or header-only
// curve. In the grid's early checkpoints train.json's wall_seconds counted only the last
// resumption, so readers take the larger of the two.
func CurveEnd(data []byte) (step int, seconds float64) {
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) < 2 {
		return 0, 0
	}
	fields := strings.Split(lines[len(lines)-1], ",")
	step, _ = strconv.Atoi(fields[0])
	if len(fields) >= 5 {
		seconds, _ = strconv.ParseFloat(fields[4], 64)
	}
	return step, seconds
}

// CheckTask is the one-line refusal to score a checkpoint on a task it was not trained for.
func CheckTask(dir, task string) (*TrainInfo, error) {
	ti, err := ReadTrainInfo(dir)
	if err != nil {
		return nil, err
	}
	switch {
	case ti.Task == "":
		return nil, fmt.Errorf("%s records no task (trained without cmd/train -task); retrain it with -task %s", dir, task)
	case ti.Task != task:
		return nil, fmt.Errorf("%s was trained for task %s, not %s; pick -task %s or a %s checkpoint", dir, ti.Task, task, ti.Task, task)
	}
	return ti, nil
}

// ManifestEntry is one checkpoint in <weights>/MANIFEST.json.
type ManifestEntry struct {
	Task          string  `json:"task"`
	Scheme        string  `json:"scheme"`
	Variant       string  `json:"variant,omitempty"`
	Dir           string  `json:"dir"`
	Steps         int     `json:"steps"`
	Stop          string  `json:"stop,omitempty"`
	Seed          int     `json:"seed"`
	WallSeconds   float64 `json:"wall_seconds"`
	Cores         int     `json:"cores,omitempty"`
	FinalLoss     Loss    `json:"final_loss"`
	FinalEvalLoss Loss    `json:"final_eval_loss"`
	Bytes         int64   `json:"bytes"`
	Command       string  `json:"command"`
}

// ReadManifest reads <weights>/MANIFEST.json (nil if there is none).
func ReadManifest(weights string) []ManifestEntry {
	var es []ManifestEntry
	data, err := os.ReadFile(filepath.Join(weights, "MANIFEST.json"))
	if err == nil {
		json.Unmarshal(data, &es) // A damaged manifest only costs the ETA its history.
	}
	return es
}

// WriteManifest rebuilds MANIFEST.json and MANIFEST.md from every finished checkpoint's train.json.
func WriteManifest(weights string) error {
	var es []ManifestEntry
	for _, task := range tasks.Names() {
		entries, _ := os.ReadDir(filepath.Join(weights, task))
		for _, e := range entries {
			dir := filepath.Join(weights, task, e.Name())
			ti, err := ReadTrainInfo(dir)
			if err != nil || !e.IsDir() {
				continue
			}
			var size int64
			for _, f := range []string{models.ConfigFile, models.WeightsFile, "train.json", "loss.csv"} {
				if st, err := os.Stat(filepath.Join(dir, f)); err == nil {
					size += st.Size()
				}
			}
			curve, _ := os.ReadFile(filepath.Join(dir, "loss.csv")) // none: train.json's time alone
			_, curveWall := CurveEnd(curve)
			wall := max(ti.WallSeconds, curveWall)
			es = append(es, ManifestEntry{Task: ti.Task, Scheme: ti.Scheme, Variant: ti.Variant(), Dir: filepath.ToSlash(filepath.Join(task, e.Name())),
				Steps: ti.Steps, Stop: ti.Stop, Seed: ti.Seed, WallSeconds: wall, Cores: ti.GOMAXPROCS, FinalLoss: ti.FinalLoss,
				FinalEvalLoss: ti.FinalEvalLoss, Bytes: size, Command: ti.Command})
		}
	}
	if len(es) == 0 {
		return nil
	}
	taskIndex := func(t string) int {
		for i, n := range tasks.Names() {
			if n == t {
				return i
			}
		}
		return len(tasks.Names())
	}
	sort.SliceStable(es, func(i, j int) bool {
		a, b := es[i], es[j]
		if a.Task != b.Task {
			return taskIndex(a.Task) < taskIndex(b.Task)
		}
		if a.Scheme != b.Scheme {
			return SchemeOrder(a.Scheme) < SchemeOrder(b.Scheme)
		}
		if a.Variant != b.Variant {
			return a.Variant < b.Variant
		}
		return a.Seed < b.Seed
	})
	js, err := json.MarshalIndent(es, "", "  ")
	if err != nil {
		return fmt.Errorf("writing the manifest: %w", err)
	}
	if err := models.WriteFileAtomic(filepath.Join(weights, "MANIFEST.json"), append(js, '\n')); err != nil {
		return err
	}
	var b strings.Builder
	var totalBytes int64
	var totalWall float64
	b.WriteString("# Benchmark checkpoints\n\nWritten by `go run ./cmd/bench` from each checkpoint's `train.json` (also as MANIFEST.json).\n" +
		"Every model of a task was trained by the same `cmd/train` command except for `-scheme`, `-seed` and a variant's own flag\n" +
		"(see `benchmarks/recipe`); each folder keeps its loss curve as `loss.csv`. Wall times are on `cores` cores (GOMAXPROCS;\n" +
		"`-`: not recorded) of a 2-core machine, and vary with the load.\n" +
		"Losses are nats per scored token (synthetic tasks: the scored answer tokens only).\n\n")
	b.WriteString("| task | checkpoint | scheme | variant | steps | stop | seed | wall s | cores | final loss | final eval loss | size KB |\n" +
		"| --- | --- | --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, e := range es {
		cores := "-"
		if e.Cores > 0 {
			cores = strconv.Itoa(e.Cores)
		}
		fmt.Fprintf(&b, "| %s | `%s` | `%s` | %s | %d | %s | %d | %.0f | %s | %.3f | %.3f | %d |\n", e.Task, e.Dir, e.Scheme, e.Variant, e.Steps, e.Stop,
			e.Seed, e.WallSeconds, cores, e.FinalLoss, e.FinalEvalLoss, e.Bytes/1024)
		totalBytes += e.Bytes
		totalWall += e.WallSeconds
	}
	fmt.Fprintf(&b, "\n%d checkpoints, %.1f MB, %.0f min of training in total.\n", len(es), float64(totalBytes)/1e6, math.Round(totalWall/60))
	// The recorded -o is where the grid trained the model, a path of that machine's; the manifest
	// shows where the checkpoint lives beside it instead.
	cmd := strings.Fields(es[0].Command)
	for i := 0; i+1 < len(cmd); i++ {
		if cmd[i] == "-o" {
			cmd[i+1] = es[0].Dir
		}
	}
	fmt.Fprintf(&b, "\nCommand of the first, its -o relative to this page (the others differ in -task, -scheme, -seed, -o, and a variant's flag):\n\n```sh\n%s\n```\n", strings.Join(cmd, " "))
	return models.WriteFileAtomic(filepath.Join(weights, "MANIFEST.md"), []byte(b.String()))
}
