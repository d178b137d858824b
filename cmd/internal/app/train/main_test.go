package train

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/posformer/posformer/engine/train"
	"github.com/posformer/posformer/models"
)

// TestMain lets a test run this command as a process (to see its exit status and stderr).
func TestMain(m *testing.M) {
	if args := os.Getenv("TRAIN_TEST_ARGS"); args != "" {
		os.Exit(Main(strings.Split(args, " ")))
	}
	os.Exit(m.Run())
}

func trainProcess(t *testing.T, args ...string) (stderr string, code int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "TRAIN_TEST_ARGS="+strings.Join(args, " "))
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), 0
}

// A tiny run with -plateau stops at its cool-down's end, records its loss curve and why it
// stopped; -resume on it, as a process, says it is finished and exits 0; a fine-tune from it
// with -init and --rope-scaling keeps the trained length as the original context.
func TestPlateauRunResumeAndInit(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a tiny model")
	}
	dir := t.TempDir()
	args := []string{"-task", "reverse", "-scheme", "rope", "-dim", "16", "-layers", "1", "-heads", "2", "-kv-heads", "1", "-hidden", "16",
		"-seq", "16", "-batch", "2", "-steps", "60", "-warmup", "2", "-eval-every", "5", "-save-every", "5", "-eval-windows", "2",
		"-plateau", "1", "-plateau-tol", "0.5", "-o", dir}
	if out, code := trainProcess(t, args...); code != 0 {
		t.Fatalf("training exited %d:\n%s", code, out)
	}
	var info struct {
		Steps       int
		Stop        string
		TaskVersion int `json:"task_version"`
	}
	data, err := os.ReadFile(filepath.Join(dir, "train.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &info); err != nil || info.TaskVersion != 1 {
		t.Fatalf("train.json: %v, task_version %d", err, info.TaskVersion)
	}
	curve, err := train.ReadCurve(dir, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	// Tolerance 50% with a window of one evaluation: the first evaluation that does not halve
	// the loss starts a cool-down of max(5, 0.2·step) steps.
	if !strings.HasPrefix(info.Stop, "plateau at step ") || info.Steps >= 60 || len(curve) == 0 || curve[len(curve)-1].Step != info.Steps {
		t.Fatalf("stopped at %d (%q), curve ends at %v", info.Steps, info.Stop, curve[len(curve)-1])
	}
	for i, c := range curve {
		if c.Step != 5*(i+1) && c.Step != info.Steps || math.IsNaN(c.TrainLoss) || math.IsNaN(c.EvalLoss) {
			t.Fatalf("curve point %d: %+v", i, c)
		}
	}
	out, code := trainProcess(t, append(args, "-resume")...)
	if code != 0 || !strings.Contains(out, "already finished at step") || strings.Contains(out, "NaN") {
		t.Errorf("resuming a finished run: exit %d, output:\n%s", code, out)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "train.json")); string(after) != string(data) {
		t.Errorf("resuming a finished run rewrote train.json")
	}
	// The grid removes a finished model's optimizer state: resuming it is still nothing to do
	// for a run its plateau ended, or one at its -steps; asked to go past a cap, it fails in one
	// line that names -init.
	if err := os.Remove(filepath.Join(dir, train.StateFile)); err != nil {
		t.Fatal(err)
	}
	if out, code := trainProcess(t, append(args, "-steps", "1000", "-resume")...); code != 0 || !strings.Contains(out, "already finished at step") {
		t.Errorf("resuming a plateaued run without its state: exit %d, output:\n%s", code, out)
	}
	capped := t.TempDir()
	short := append(slices.Clone(args[:len(args)-6]), "-steps", "4", "-o", capped)
	if out, code := trainProcess(t, short...); code != 0 {
		t.Fatalf("training exited %d:\n%s", code, out)
	}
	if err := os.Remove(filepath.Join(capped, train.StateFile)); err != nil {
		t.Fatal(err)
	}
	if out, code := trainProcess(t, append(short, "-resume")...); code != 0 || !strings.Contains(out, "already finished at step 4") {
		t.Errorf("resuming a capped run without its state: exit %d, output:\n%s", code, out)
	}
	out, code = trainProcess(t, append(short, "-steps", "8", "-resume")...)
	if code == 0 || !strings.Contains(out, "-init "+capped) || strings.Contains(out, "goroutine") {
		t.Errorf("resuming past a capped run without its state: exit %d, output:\n%s", code, out)
	}
	ft := t.TempDir()
	out, code = trainProcess(t, "-task", "reverse", "-init", dir, "--rope-scaling", "linear", "--rope-scale", "2", "-seq", "32",
		"-batch", "2", "-steps", "2", "-warmup", "1", "-eval-every", "2", "-save-every", "2", "-eval-windows", "2", "-o", ft)
	if code != 0 {
		t.Fatalf("fine-tune exited %d:\n%s", code, out)
	}
	var cfg models.Config
	data, _ = os.ReadFile(filepath.Join(ft, models.ConfigFile))
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	block, _ := cfg.Positional["rope_scaling"].(map[string]any)
	if cfg.TrainSeqLen != 32 || cfg.Dim != 16 || block["rope_type"] != "linear" || block["factor"] != 2.0 || block["original_max_position_embeddings"] != 16.0 {
		t.Errorf("fine-tune config: train_seq_len %d, dim %d, rope_scaling %v; want 32, 16, linear 2 from 16", cfg.TrainSeqLen, cfg.Dim, block)
	}
	if out, code := trainProcess(t, "-o", dir, "-plateau", "-1"); code == 0 || strings.Count(strings.TrimSpace(out), "\n") > 0 || !strings.Contains(out, "-plateau") {
		t.Errorf("bad -plateau: exit %d, %q", code, out)
	}
	if out, code := trainProcess(t, "-o", dir, "-batch", "4", "-micro-batch", "3"); code == 0 || strings.Count(strings.TrimSpace(out), "\n") > 0 || !strings.Contains(out, "-micro-batch 3 must divide -batch 4") {
		t.Errorf("bad -micro-batch: exit %d, %q", code, out)
	}
}

// The same -seed trains the same model, to the bit (initial weights, batches, every step on
// one machine); another seed, another model.
func TestSameSeedSameModel(t *testing.T) {
	if testing.Short() {
		t.Skip("trains tiny models")
	}
	weights := func(seed string) []byte {
		dir := t.TempDir()
		if out, code := trainProcess(t, "-task", "copy", "-scheme", "rope", "-dim", "16", "-layers", "1", "-heads", "2", "-kv-heads", "1",
			"-hidden", "16", "-seq", "16", "-batch", "2", "-steps", "3", "-warmup", "1", "-eval-every", "3", "-save-every", "3",
			"-eval-windows", "2", "-seed", seed, "-micro-batch", "1", "-o", dir); code != 0 { // two passes a step
			t.Fatalf("training exited %d:\n%s", code, out)
		}
		var info struct {
			WeightsSeed *int64 `json:"weights_seed"`
		}
		data, err := os.ReadFile(filepath.Join(dir, "train.json"))
		if err != nil || json.Unmarshal(data, &info) != nil || info.WeightsSeed == nil || fmt.Sprint(*info.WeightsSeed) != seed {
			t.Fatalf("train.json does not record weights_seed %s: %s", seed, data)
		}
		w, err := os.ReadFile(filepath.Join(dir, "model.safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	a, b, c := weights("5"), weights("5"), weights("6")
	if !bytes.Equal(a, b) {
		t.Error("two runs with -seed 5 trained different weights")
	}
	if bytes.Equal(a, c) {
		t.Error("-seed 5 and -seed 6 trained the same weights")
	}
}

// Training into a folder that holds a checkpoint exits 1 with one line naming -resume and
// -force; -force replaces the checkpoint, -resume continues it.
func TestTrainIntoCheckpointFolder(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a tiny model")
	}
	dir := t.TempDir()
	args := []string{"-task", "copy", "-scheme", "rope", "-dim", "16", "-layers", "1", "-heads", "2", "-kv-heads", "1", "-hidden", "16",
		"-seq", "16", "-batch", "2", "-steps", "2", "-warmup", "1", "-eval-every", "2", "-save-every", "2", "-eval-windows", "2", "-o", dir}
	if out, code := trainProcess(t, args...); code != 0 {
		t.Fatalf("training exited %d:\n%s", code, out)
	}
	out, code := trainProcess(t, args...)
	if want := "train: -o " + dir + " holds a checkpoint (model.safetensors): add -resume to continue training it, or -force to replace it\n"; code != 1 || out != want {
		t.Errorf("training into a trained folder: exit %d, %q; want exit 1, %q", code, out, want)
	}
	if out, code := trainProcess(t, append(args, "-force")...); code != 0 || !strings.Contains(out, "train: done") {
		t.Errorf("-force: exit %d:\n%s", code, out)
	}
	var info struct{ Command string }
	data, _ := os.ReadFile(filepath.Join(dir, "train.json"))
	if err := json.Unmarshal(data, &info); err != nil || strings.Contains(info.Command, "force") {
		t.Errorf("train.json records the command %q (%v), want it without -force", info.Command, err)
	}
	if out, code := trainProcess(t, append(args, "-steps", "4", "-resume")...); code != 0 || !strings.Contains(out, "train: done") {
		t.Errorf("-resume: exit %d:\n%s", code, out)
	}
}
