package train

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/posformer/posformer/models"
)

func TestSchedule(t *testing.T) {
	o := Options{LR: 1e-3, Warmup: 10, Steps: 110}
	if got := schedule(0, o); math.Abs(got-1e-4) > 1e-12 {
		t.Errorf("first warm-up step lr %g, want 1e-4", got)
	}
	if got := schedule(10, o); math.Abs(got-1e-3) > 1e-12 {
		t.Errorf("peak lr %g, want 1e-3", got)
	}
	if got := schedule(110, o); math.Abs(got-1e-4) > 1e-12 {
		t.Errorf("final lr %g, want 10%% of peak", got)
	}
}

func TestMakeBatch(t *testing.T) {
	in := [][]int32{make([]int32, 4000)}
	tgt := [][]int32{make([]int32, 4000)}
	for i := range in[0] {
		in[0][i], tgt[0][i] = int32(i%200), int32((i+1)%200)
	}
	dec := makeBatch(models.Decoder, in, tgt, 0.15, rand.New(rand.NewPCG(1, 1)), 259)
	if dec.Targets[0][7] != 8 || dec.Weights[0][7] != 1 || dec.Positions[0][7] != 7 {
		t.Errorf("decoder batch: target %d weight %g pos %d", dec.Targets[0][7], dec.Weights[0][7], dec.Positions[0][7])
	}
	enc := makeBatch(models.Encoder, in, tgt, 0.15, rand.New(rand.NewPCG(1, 1)), 259)
	chosen, masked := 0, 0
	for j, w := range enc.Weights[0] {
		if enc.Targets[0][j] != in[0][j] {
			t.Fatalf("encoder target %d is not the input byte", j)
		}
		if w == 0 {
			if enc.Inputs[0][j] != in[0][j] {
				t.Fatalf("unchosen byte %d was changed", j)
			}
			continue
		}
		chosen++
		if enc.Inputs[0][j] == 259 {
			masked++
		}
	}
	if rate := float64(chosen) / 4000; rate < 0.12 || rate > 0.18 {
		t.Errorf("chose %.3f of bytes, want about 0.15", rate)
	}
	if frac := float64(masked) / float64(chosen); frac < 0.72 || frac > 0.88 {
		t.Errorf("%.3f of chosen bytes became <mask>, want about 0.8", frac)
	}
}

// A few steps of a tiny copy model: the checkpoint records its task, and -task sets the kind.
func TestTaskIsRecorded(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a tiny model for 2 steps")
	}
	dir := t.TempDir()
	o := Options{Task: "copy", Kind: "decoder", Scheme: "rope", Out: dir, PE: map[string]any{}, Dim: 16, Layers: 1, Heads: 2, KV: 1,
		Hidden: 16, Ctx: 64, Steps: 2, Batch: 2, Seq: 16, LR: 1e-3, Warmup: 1, Seed: 1, EvalEvery: 1, SaveEvery: 2,
		EvalWindows: 2, MaxBytes: 4096, MaskRate: 0.15}
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "train.json"))
	if err != nil {
		t.Fatal(err)
	}
	var info struct{ Task, Kind string }
	if err := json.Unmarshal(data, &info); err != nil || info.Task != "copy" || info.Kind != "decoder" {
		t.Errorf("train.json task %q kind %q (err %v), want copy decoder", info.Task, info.Kind, err)
	}
	// Resuming a run that reached -steps has nothing to do and is no error; its train.json
	// (which zero steps overwrote with NaN losses) stays as it was.
	o.Resume = true
	if _, err := Run(context.Background(), o); err != nil {
		t.Errorf("resuming a finished run: %v", err)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "train.json")); string(after) != string(data) {
		t.Errorf("resuming a finished run rewrote train.json:\n%s", after)
	}
	o.Resume = false
	o.Task, o.Out = "lmx", t.TempDir()
	if _, err := Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), "valid: lm, copy, reverse, passkey, mqar, mlm") {
		t.Errorf("unknown task: %v", err)
	}
}

// The default pass holds at most 512 tokens (the largest divisor of the batch that fits, at
// least one sequence), or the whole batch for a scheme with shared positional work (FIRE); a
// given -micro-batch must divide the batch.
func TestMicroBatch(t *testing.T) {
	for _, c := range []struct {
		flag, batch, seq int
		shared           bool
		want             int
	}{
		{0, 32, 128, false, 4}, {0, 32, 64, false, 8}, {0, 8, 512, false, 1}, {0, 8, 2048, false, 1}, {0, 4, 16, false, 4},
		{0, 6, 100, false, 3}, {8, 32, 128, false, 8}, {0, 32, 128, true, 32}, {8, 32, 128, true, 8},
	} {
		if got, err := microBatch(c.flag, c.batch, c.seq, c.shared); err != nil || got != c.want {
			t.Errorf("microBatch(%d, %d, %d, %v) = %d, %v; want %d", c.flag, c.batch, c.seq, c.shared, got, err, c.want)
		}
	}
	for _, c := range []struct{ flag, batch int }{{-1, 32}, {5, 32}} {
		if _, err := microBatch(c.flag, c.batch, 64, false); err == nil || !strings.Contains(err.Error(), "-micro-batch") {
			t.Errorf("microBatch(%d, %d): error %v, want one naming -micro-batch", c.flag, c.batch, err)
		}
	}
}

// Runs keep their state to themselves: two trained at once in one process (as the grid's lanes
// are) end with the weights and loss curve of the same run alone, to the bit.
func TestConcurrentRunsShareNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("trains three tiny models")
	}
	o := Options{Task: "copy", Scheme: "rope", PE: map[string]any{}, Dim: 16, Layers: 1, Heads: 2, KV: 1, Hidden: 16, Ctx: 64,
		Steps: 4, Batch: 4, Seq: 16, LR: 1e-3, Warmup: 1, Seed: 3, EvalEvery: 2, SaveEvery: 4, EvalWindows: 2, MaskRate: 0.15, Cores: 1}
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	o.Out = dirs[0]
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 2)
	for _, dir := range dirs[1:] {
		go func() {
			p := o
			p.Out = dir
			_, err := Run(context.Background(), p)
			errs <- err
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	read := func(dir, name string) string {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	alone := read(dirs[0], models.WeightsFile)
	for _, dir := range dirs[1:] {
		if read(dir, models.WeightsFile) != alone {
			t.Errorf("a run beside another trained other weights than alone")
		}
		curve, err := ReadCurve(dir, 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := ReadCurve(dirs[0], 1<<30)
		for i := range want {
			if curve[i].TrainLoss != want[i].TrainLoss || curve[i].EvalLoss != want[i].EvalLoss {
				t.Errorf("loss curve beside another %+v, alone %+v", curve[i], want[i])
			}
		}
	}
}

// A cancelled context stops a run before its next step, with the context's error.
func TestRunStopsWhenCancelled(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a tiny model")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	o := Options{Task: "copy", Scheme: "rope", Dim: 16, Layers: 1, Heads: 2, KV: 1, Hidden: 16, Ctx: 64,
		Steps: 4, Batch: 2, Seq: 16, LR: 1e-3, Warmup: 1, Seed: 1, EvalEvery: 2, SaveEvery: 4, EvalWindows: 2, Out: t.TempDir()}
	if _, err := Run(ctx, o); !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "step 0") {
		t.Errorf("cancelled run: %v", err)
	}
}
