package recipe

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/posformer/posformer/models"
	"github.com/posformer/posformer/models/safetensors"
)

// fakeCheckpoint writes what cmd/train leaves in a finished folder: weights, config, train.json
// (trained by args) and a loss curve.
func fakeCheckpoint(t *testing.T, dir string, args []string, data []float32) {
	t.Helper()
	os.MkdirAll(dir, 0o755)
	ts := []safetensors.Tensor{{Name: "w", Shape: []int{len(data)}, Data: data}}
	if err := safetensors.Write(filepath.Join(dir, models.WeightsFile), ts, map[string]string{"format": "posformer"}); err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(map[string]any{"task": "lm", "scheme": "rope", "command": "go run ./cmd/train " + strings.Join(args, " ")})
	os.WriteFile(filepath.Join(dir, "train.json"), js, 0o644)
	os.WriteFile(filepath.Join(dir, models.ConfigFile), []byte(`{"kind":"decoder"}`), 0o644)
	os.WriteFile(filepath.Join(dir, "loss.csv"), []byte("step,train_loss\n100,2.5\n"), 0o644)
}

// A shipped checkpoint holds the same weights to float16's rounding (relative 2^-11), the same
// config, train.json and curve; it counts as shipped for the same command trained in another
// folder, not for another command; a weight beyond float16's range is refused by name.
func TestShip(t *testing.T) {
	root := t.TempDir()
	m := V2.Models(filepath.Join(root, "grid"), []string{"lm"}, []string{"rope"}, 1)[1] // the PI fine-tune: -o and -init
	data := []float32{0, 1, -1, 0.1, 3.14159, -1e-3, 12345.6, 6e-5}
	fakeCheckpoint(t, m.Dir, m.Args, data)
	dst := filepath.Join(root, "weights", "bench", m.Task, m.Name)
	if err := Ship(m.Dir, dst); err != nil {
		t.Fatal(err)
	}
	f, err := safetensors.Open(filepath.Join(dst, models.WeightsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if info, _ := f.Info("w"); info.DType != "F16" {
		t.Errorf("stored as %s, want F16", info.DType)
	}
	got, err := f.ReadFloat32("w")
	if err != nil {
		t.Fatal(err)
	}
	for i, x := range data {
		if d := math.Abs(float64(got[i] - x)); d > math.Abs(float64(x))/2048 {
			t.Errorf("w[%d] = %g after shipping, want %g within float16's rounding", i, got[i], x)
		}
	}
	for _, name := range []string{models.ConfigFile, "train.json", "loss.csv"} {
		a, _ := os.ReadFile(filepath.Join(m.Dir, name))
		b, err := os.ReadFile(filepath.Join(dst, name))
		if err != nil || string(a) != string(b) {
			t.Errorf("%s not copied: %v", name, err)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(dst), ".*")); len(left) > 0 {
		t.Errorf("temporary folders left: %v", left)
	}
	elsewhere := V2.Models("/other/machine", []string{"lm"}, []string{"rope"}, 1)[1]
	if !Shipped(dst, elsewhere.Args) {
		t.Error("the same command trained in another folder does not count as shipped")
	}
	// A run resumed before cmd/train left -resume out of its command is the same model.
	ti, _ := ReadTrainInfo(dst)
	js, _ := json.Marshal(map[string]any{"task": "lm", "scheme": "rope", "command": ti.Command + " -resume"})
	os.WriteFile(filepath.Join(dst, "train.json"), js, 0o644)
	if !Shipped(dst, m.Args) || !SameCommand(ti.Command+" -resume", m.Args) {
		t.Error("a recorded -resume makes another command")
	}
	seed2 := V2.Models(filepath.Join(root, "grid"), []string{"lm"}, []string{"rope"}, 2)[3]
	if seed2.Seed != 2 || Shipped(dst, seed2.Args) {
		t.Errorf("seed %d's command counts as shipped", seed2.Seed)
	}
	fakeCheckpoint(t, m.Dir, m.Args, []float32{1, 1e6})
	if err := Ship(m.Dir, dst); err == nil || !strings.Contains(err.Error(), "tensor w") || !strings.Contains(err.Error(), "float16") {
		t.Errorf("a weight of 1e6: %v", err)
	}
	if !Shipped(dst, m.Args) {
		t.Error("a refused ship replaced the checkpoint already there")
	}
}

// One seed of lm and passkey ships, its variants included; nothing else does.
func TestShips(t *testing.T) {
	n := 0
	for _, m := range V2.Models("w", []string{"lm", "passkey", "copy"}, V2.Schemes, 0) {
		want := m.Seed == 1 && m.Task != "copy"
		if V2.Ships(m) != want {
			t.Errorf("Ships(%s seed %d) = %v", m.ID(), m.Seed, !want)
		}
		if want {
			n++
		}
	}
	if n != 30 {
		t.Errorf("%d shipped models, want 30 (14 schemes and a PI fine-tune, two tasks)", n)
	}
}

// CurveEnd reads the last line's step and seconds; an empty curve or a header alone is zeros.
func TestCurveEnd(t *testing.T) {
	if step, sec := CurveEnd(nil); step != 0 || sec != 0 {
		t.Errorf("no curve: %d, %v; want zeros", step, sec)
	}
	if step, sec := CurveEnd([]byte("step,train_loss,eval_loss,lr,seconds\n100,3,2.5,0.001,60.5\n200,1,0.5,0.001,487.2\n")); step != 200 || sec != 487.2 {
		t.Errorf("got %d, %v; want 200, 487.2", step, sec)
	}
	if step, sec := CurveEnd([]byte("step,train_loss,eval_loss,lr,seconds\n")); step != 0 || sec != 0 {
		t.Errorf("header only: got %d, %v; want zeros", step, sec)
	}
}
