package train

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/posformer/posformer/models"
	"github.com/posformer/posformer/models/safetensors"
)

// tinyRun is a copy-task decoder small enough to train in a test, saving every 2 steps.
func tinyRun(dir string, steps int) Options {
	return Options{Task: "copy", Scheme: "rope", Out: dir, PE: map[string]any{}, Dim: 16, Layers: 1, Heads: 2, KV: 1,
		Hidden: 16, Ctx: 64, Steps: steps, Batch: 2, Seq: 16, LR: 1e-3, Warmup: 1, Seed: 1, EvalEvery: 2, SaveEvery: 2,
		EvalWindows: 2, MaxBytes: 4096, MaskRate: 0.15}
}

func mustRun(t *testing.T, o Options) Result {
	t.Helper()
	r, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Both safetensors files of a checkpoint record its step; a set whose weights and optimizer
// state come from two saves (a kill between the files of one save, made here by putting back
// one file of the save before) is refused by -resume, in one line naming both steps and what to
// do, and nothing is trained.
func TestResumeRefusesMixedSet(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a tiny model")
	}
	dir, old := t.TempDir(), t.TempDir()
	mustRun(t, tinyRun(dir, 2))
	for _, name := range []string{models.WeightsFile, StateFile} {
		copyFile(t, filepath.Join(dir, name), filepath.Join(old, name))
	}
	resumed := tinyRun(dir, 4)
	resumed.Resume = true
	if r := mustRun(t, resumed); r.Steps != 4 {
		t.Fatalf("resumed to step %d, want 4", r.Steps)
	}
	for _, name := range []string{models.WeightsFile, StateFile} {
		if step, ok, err := savedStep(filepath.Join(dir, name)); err != nil || !ok || step != 4 {
			t.Errorf("%s records step %d (%v, %v), want 4", name, step, ok, err)
		}
	}
	further := tinyRun(dir, 6)
	further.Resume = true
	for _, c := range []struct {
		older                  string
		weightsStep, stateStep string
	}{
		{StateFile, "step 4", "step 2"},          // killed after the weights of step 4
		{models.WeightsFile, "step 2", "step 4"}, // the other way round
	} {
		saved := filepath.Join(t.TempDir(), c.older)
		copyFile(t, filepath.Join(dir, c.older), saved)
		copyFile(t, filepath.Join(old, c.older), filepath.Join(dir, c.older))
		before, _ := os.ReadFile(filepath.Join(dir, models.WeightsFile))
		_, err := Run(context.Background(), further)
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		want := models.WeightsFile + " is from " + c.weightsStep + " but its optimizer state (" + StateFile + ") from " + c.stateStep
		if !strings.Contains(msg, want) || !strings.Contains(msg, "-force") || !strings.Contains(msg, "-init "+dir) || strings.Contains(msg, "\n") {
			t.Errorf("resuming with an older %s: error %q\nwant one line with %q, -force and -init", c.older, msg, want)
		}
		if after, _ := os.ReadFile(filepath.Join(dir, models.WeightsFile)); string(after) != string(before) {
			t.Errorf("a refused resume changed the weights")
		}
		copyFile(t, saved, filepath.Join(dir, c.older))
	}
	if r := mustRun(t, further); r.Steps != 6 {
		t.Errorf("the set put back together resumed to step %d, want 6", r.Steps)
	}
}

// The full-size temporary file a kill leaves mid-write is removed by the next resume, and by
// the next save of a run into that folder; other files stay.
func TestOrphanTempFilesRemoved(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a tiny model")
	}
	dir := t.TempDir()
	orphans := []string{"." + models.WeightsFile + ".2604235117.tmp", "." + StateFile + ".12.tmp", "." + CurveFile + ".3.tmp"}
	keep := "notes.tmp"
	for _, name := range append(orphans, keep) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("half a file"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mustRun(t, tinyRun(dir, 2))
	for _, name := range orphans {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			t.Errorf("%s survived the next save", name)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, keep)); err != nil {
		t.Errorf("%s, not a temporary file of the run's, was removed: %v", keep, err)
	}
	orphan := filepath.Join(dir, orphans[0])
	if err := os.WriteFile(orphan, []byte("half a file"), 0o644); err != nil {
		t.Fatal(err)
	}
	resumed := tinyRun(dir, 2) // finished: the resume loads the folder and saves nothing
	resumed.Resume = true
	if r := mustRun(t, resumed); !r.AlreadyFinished {
		t.Fatalf("resume of a finished run: %+v", r)
	}
	if _, err := os.Stat(orphan); err == nil {
		t.Errorf("%s survived the next resume", orphans[0])
	}
}

// A run into a folder holding a checkpoint is refused in one line naming -resume and -force,
// leaving the folder as it was; -force replaces the checkpoint, its old optimizer state and
// summary first; -resume continues it.
func TestTrainIntoCheckpointFolder(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a tiny model")
	}
	dir := t.TempDir()
	mustRun(t, tinyRun(dir, 4))
	weights := filepath.Join(dir, models.WeightsFile)
	before, _ := os.ReadFile(weights)
	_, err := Run(context.Background(), tinyRun(dir, 2))
	if err == nil || !strings.Contains(err.Error(), "holds a checkpoint ("+models.WeightsFile+")") || !strings.Contains(err.Error(), "-resume to continue") ||
		!strings.Contains(err.Error(), "-force to replace") || strings.Contains(err.Error(), "\n") {
		t.Errorf("training into a trained folder: error %v, want one line naming -resume and -force", err)
	}
	if after, _ := os.ReadFile(weights); string(after) != string(before) {
		t.Errorf("a refused run changed the weights")
	}
	resumed := tinyRun(dir, 6)
	resumed.Resume = true
	if r := mustRun(t, resumed); r.Steps != 6 || r.AlreadyFinished {
		t.Errorf("-resume: %+v, want 6 steps trained", r)
	}
	forced := tinyRun(dir, 2)
	forced.Force, forced.SaveEvery, forced.EvalEvery = true, 100, 100 // one save, at the end
	if r := mustRun(t, forced); r.Steps != 2 {
		t.Errorf("-force: %+v, want a new run of 2 steps", r)
	}
	if step, _, _ := savedStep(weights); step != 2 {
		t.Errorf("after -force the weights are from step %d, want 2", step)
	}
	curve, err := ReadCurve(dir, 1<<30)
	if err != nil || len(curve) != 1 || curve[0].Step != 2 {
		t.Errorf("after -force the loss curve is %v (%v), want the new run's one point", curve, err)
	}
	// A first save killed before the optimizer state: the weights alone, nothing to resume;
	// the error names the flag that starts again, which then does.
	for _, name := range []string{StateFile, InfoFile} {
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	resumed.Steps = 2
	if _, err := Run(context.Background(), resumed); err == nil || !strings.Contains(err.Error(), "no "+StateFile+" to resume from; train it again with -force in place of -resume") {
		t.Errorf("-resume without optimizer state or train.json: %v", err)
	}
	mustRun(t, forced)
}

// A run whose loss becomes NaN or infinite stops at that step instead of training NaN weights to
// its cap, and train.json says so: the step, the stop reason, and null losses (JSON has no NaN;
// before, the file was left empty and unreadable).
func TestDivergedRunStops(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a tiny model")
	}
	dir := t.TempDir()
	o := tinyRun(dir, 400)
	o.LR, o.Warmup, o.WD = 1e30, 1, 0 // far past any stable rate: the weights overflow
	if _, err := Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), "lower the learning rate") {
		t.Fatalf("without KeepDiverged: error %v, want one naming the fix", err)
	}
	o.KeepDiverged, o.Force = true, true
	r := mustRun(t, o)
	if r.DivergedAt == 0 || r.Steps != r.DivergedAt || r.Steps >= 400 {
		t.Fatalf("diverged at %d, stopped at step %d of 400", r.DivergedAt, r.Steps)
	}
	data, err := os.ReadFile(filepath.Join(dir, InfoFile))
	if err != nil {
		t.Fatal(err)
	}
	var info map[string]any
	if err := json.Unmarshal(data, &info); err != nil {
		t.Fatalf("train.json: %v", err)
	}
	if info["final_eval_loss"] != nil || info["diverged_at"] != float64(r.DivergedAt) || !strings.HasPrefix(info["stop"].(string), "diverged at step") {
		t.Errorf("train.json: final_eval_loss %v, diverged_at %v, stop %q", info["final_eval_loss"], info["diverged_at"], info["stop"])
	}
}

// statusBar keeps the statuses a run shows.
type statusBar struct{ statuses []string }

func (b *statusBar) Set(_ int, status string) { b.statuses = append(b.statuses, status) }
func (b *statusBar) Finish()                  {}

// The progress line says "eval –" until a run's first evaluation; a resumed run shows the
// latest evaluation before it from its first step (it showed NaN until its own).
func TestProgressShowsTheLatestEvaluation(t *testing.T) {
	dir := t.TempDir()
	o := tinyRun(dir, 4)
	o.EvalEvery, o.SaveEvery = 3, 1
	var fresh statusBar
	o.Bar = func(string, int) Bar { return &fresh }
	r := mustRun(t, o)
	if len(fresh.statuses) != 4 || !strings.Contains(fresh.statuses[0], "eval –") || !strings.Contains(fresh.statuses[2], fmt.Sprintf("eval %.3f", r.EvalLoss)) {
		t.Fatalf("fresh run's statuses %q: want eval – before step 3 and its evaluation after", fresh.statuses)
	}
	last := fresh.statuses[3]
	o.Steps, o.Resume = 8, true // step 5 evaluates nothing (every 3, and at the end)
	var resumed statusBar
	o.Bar = func(string, int) Bar { return &resumed }
	mustRun(t, o)
	want := strings.Split(last, " · ")[1] // "eval X": the latest evaluation when the run before ended
	if len(resumed.statuses) != 4 || !strings.Contains(resumed.statuses[0], want) {
		t.Fatalf("resumed run's statuses %q: want %q (the run before ended with %q)", resumed.statuses, want, last)
	}
}

// A resumed run counts its wall time on from the checkpoint's own record, not from the last
// evaluation in loss.csv: here the state file says 1,000 s were spent up to step 2 (saves and
// evaluations are timed by the clock, so the record is set by hand), and the curve and
// train.json go on from there.
func TestResumeCountsSavedWallTime(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a tiny model")
	}
	dir := t.TempDir()
	mustRun(t, tinyRun(dir, 2))
	state := filepath.Join(dir, StateFile)
	if s, ok, err := savedSeconds(state); err != nil || !ok || s < 0 || s > 600 {
		t.Fatalf("the state records %g s (%v, %v); want the run's few seconds", s, ok, err)
	}
	editMetadata(t, state, func(meta map[string]string) { meta[secondsKey] = "1000" })
	resumed := tinyRun(dir, 4)
	resumed.Resume = true
	r := mustRun(t, resumed)
	if r.WallSeconds < 1000 || r.WallSeconds > 1600 {
		t.Errorf("resumed run's wall time %g s, want 1,000 s and this run's", r.WallSeconds)
	}
	curve, err := ReadCurve(dir, 4)
	if err != nil {
		t.Fatal(err)
	}
	if last := curve[len(curve)-1]; last.Step != 4 || last.Seconds < 1000 {
		t.Errorf("loss.csv's last row: step %d at %g s, want step 4 after 1,000 s", last.Step, last.Seconds)
	}
	if s, _, _ := savedSeconds(state); s < 1000 {
		t.Errorf("the resumed run's checkpoint records %g s, want at least 1,000", s)
	}
}

// editMetadata rewrites the metadata of the safetensors file at path with edit.
func editMetadata(t *testing.T, path string, edit func(meta map[string]string)) {
	t.Helper()
	f, err := safetensors.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var ts []safetensors.Tensor
	for _, info := range f.Infos() {
		data, err := f.ReadFloat32(info.Name)
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, safetensors.Tensor{Name: info.Name, Shape: info.Shape, Data: data})
	}
	meta := f.Metadata()
	f.Close()
	edit(meta)
	if err := safetensors.Write(path, ts, meta); err != nil {
		t.Fatal(err)
	}
}

// ThreadCPU counts the thread's work and not its waiting: 50 ms asleep add (almost) nothing,
// 50 ms of spinning add about 50.
func TestThreadCPUCountsWorkNotWaiting(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	t0, ok := ThreadCPU()
	if !ok {
		t.Skip("no per-thread CPU clock on this system")
	}
	time.Sleep(50 * time.Millisecond)
	t1, _ := ThreadCPU()
	for start := time.Now(); time.Since(start) < 50*time.Millisecond; {
	}
	t2, _ := ThreadCPU()
	if slept := t1 - t0; slept > 10*time.Millisecond {
		t.Errorf("50 ms asleep took %v of CPU", slept)
	}
	if spun := t2 - t1; spun < 25*time.Millisecond || spun > 80*time.Millisecond {
		t.Errorf("50 ms of spinning took %v of CPU", spun)
	}
}

// train.json records the training thread's CPU time, summed over resumptions from the state
// file's record (set by hand here), and not at all when an earlier part of the run was not
// measured (a state saved without the record).
func TestTrainRecordsThreadCPUTime(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a tiny model")
	}
	if _, ok := ThreadCPU(); !ok {
		t.Skip("no per-thread CPU clock on this system")
	}
	dir := t.TempDir()
	r := mustRun(t, tinyRun(dir, 2))
	state := filepath.Join(dir, StateFile)
	s, ok, err := savedCPUSeconds(state)
	if err != nil || !ok || s < 0 || s > r.WallSeconds+0.5 {
		t.Fatalf("the state records %g s of CPU (%v, %v); want the run's, at most its wall time %g s", s, ok, err, r.WallSeconds)
	}
	info := readInfo(t, dir)
	if cpu, ok := info["thread_cpu_seconds"].(float64); !ok || cpu < 0 || cpu > math.Round(r.WallSeconds)+1 {
		t.Errorf("train.json's thread_cpu_seconds %v, want the run's (wall %g s)", info["thread_cpu_seconds"], r.WallSeconds)
	}

	editMetadata(t, state, func(meta map[string]string) { meta[cpuSecondsKey] = "500" })
	resumed := tinyRun(dir, 4)
	resumed.Resume = true
	mustRun(t, resumed)
	if cpu, _ := readInfo(t, dir)["thread_cpu_seconds"].(float64); cpu < 500 || cpu > 600 {
		t.Errorf("resumed run's thread_cpu_seconds %g, want 500 and this run's", cpu)
	}

	dir = t.TempDir()
	mustRun(t, tinyRun(dir, 2))
	editMetadata(t, filepath.Join(dir, StateFile), func(meta map[string]string) { delete(meta, cpuSecondsKey) })
	resumed = tinyRun(dir, 4)
	resumed.Resume = true
	mustRun(t, resumed)
	if cpu, ok := readInfo(t, dir)["thread_cpu_seconds"]; ok {
		t.Errorf("a run resumed from a state without its CPU time records %v", cpu)
	}
}

// readInfo is the train.json in dir.
func readInfo(t *testing.T, dir string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, InfoFile))
	if err != nil {
		t.Fatal(err)
	}
	var info map[string]any
	if err := json.Unmarshal(data, &info); err != nil {
		t.Fatal(err)
	}
	return info
}
