package recipe

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/posformer/posformer/engine/train/tasks"
)

// Every model of a task gets the same cmd/train command but for its scheme, seed, folder and
// its variant's own flag; the grid holds every (task, scheme, seed) and the variants.
func TestModelsShareOneCommand(t *testing.T) {
	ms := V2.Models("w", tasks.Names(), V2.Schemes, 0)
	count := map[string]int{}
	strip := func(args []string) string {
		var keep []string
		for i := 0; i < len(args); i++ {
			switch args[i] {
			case "-scheme", "-seed", "-o", "-pe", "-random-positions":
				i++
				continue
			}
			keep = append(keep, args[i])
		}
		return strings.Join(keep, " ")
	}
	want := map[string]string{}
	for _, m := range ms {
		count[m.Task+"/"+m.Variant]++
		if m.Variant != "" && m.Variant != RandPosVariant {
			continue
		}
		if w, ok := want[m.Task]; ok && w != strip(m.Args) {
			t.Errorf("%s: command differs from the task's others:\n%s\n%s", m.ID(), strip(m.Args), w)
		}
		want[m.Task] = strip(m.Args)
		if m.Args[len(m.Args)-1] != m.Dir || !slices.Contains(m.Args, "-plateau") {
			t.Errorf("%s: %v", m.ID(), m.Args)
		}
	}
	// 14 schemes × 3 seeds on decoder tasks, 13 on mlm (no xPos); randomized positions for two
	// schemes on copy and reverse; a PI fine-tune of each RoPE seed on lm and passkey.
	for task, n := range map[string]int{"lm/": 42, "copy/": 42, "mqar/": 42, "mlm/": 39, "copy/randpos": 6, "reverse/randpos": 6, "lm/PI s=4 ft": 3, "passkey/PI s=4 ft": 3} {
		if count[task] != n {
			t.Errorf("%s: %d models, want %d", task, count[task], n)
		}
	}
	if len(ms) != 42*5+39+12+6 {
		t.Errorf("%d models in the grid", len(ms))
	}
	for i, m := range ms {
		if m.Init != "" && !slices.ContainsFunc(ms[:i], func(b Model) bool { return b.Task == m.Task && b.Name == m.Init }) {
			t.Errorf("%s needs %s, which does not come before it", m.ID(), m.Init)
		}
	}
}

// A PI fine-tune starts from its seed's RoPE model at 4L with linear scaling by 4; the learned
// table covers 16L; the names are v1's for seed 1.
func TestVariantsAndNames(t *testing.T) {
	ms := V2.Models("w", []string{tasks.LM}, []string{"rope", "learned"}, 2)
	var pi Model
	for _, m := range ms {
		if m.Variant == PIVariant(4) && m.Seed == 2 {
			pi = m
		}
		if m.Scheme == "learned" && !strings.Contains(strings.Join(m.Args, " "), "-pe max_positions=2048") {
			t.Errorf("learned lm: %v", m.Args)
		}
	}
	got := strings.Join(pi.Args, " ")
	// lm trains with bf16 products, its fine-tunes too, and so do passkey and mqar; copy and
	// reverse, begun in float32, do not.
	if !strings.Contains(got, "--backend cpu:bf16dot=true") {
		t.Errorf("PI fine-tune of lm without the task's backend: %s", got)
	}
	for _, task := range []string{tasks.Copy, tasks.Reverse, tasks.Passkey, tasks.MQAR} {
		bf16 := task == tasks.Passkey || task == tasks.MQAR
		for _, m := range V2.Models("w", []string{task}, []string{"rope"}, 1) {
			if strings.Contains(strings.Join(m.Args, " "), "--backend cpu:bf16dot=true") != bf16 {
				t.Errorf("%s (bf16 products: %v): %v", task, bf16, m.Args)
			}
		}
	}
	if d := V2.Describe(); !strings.Contains(d, "(one per 100 steps; for mlm not before step 2,500)") {
		t.Errorf("Describe does not give mlm's plateau floor from TaskStop: %s", d)
	}
	for n, want := range map[int]string{0: "0", 999: "999", 2500: "2,500", 1234567: "1,234,567", -2500: "-2,500"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
	if d := V2.Describe(); !strings.Contains(d, "; lm, passkey, mqar and mlm train with bfloat16") {
		t.Errorf("Describe does not name the bf16 tasks: %s", d)
	}
	// v3 trains everything in float32, and says so.
	for _, task := range tasks.Names() {
		for _, m := range V3.Models("w", []string{task}, []string{"rope"}, 1) {
			if strings.Contains(strings.Join(m.Args, " "), "bf16dot") {
				t.Errorf("v3 %s %s: %v", task, m.Name, m.Args)
			}
		}
	}
	if d := V3.Describe(); !strings.Contains(d, "every model trains in float32") {
		t.Errorf("v3's Describe does not give the precision: %s", d)
	}
	if pi.Name != "rope-pi4-seed2" || pi.Init != "rope-seed2" || !strings.Contains(got, "-init "+filepath.Join("w", "lm", "rope-seed2")) ||
		!strings.Contains(got, "--rope-scaling linear --rope-scale 4 -seq 512") {
		t.Errorf("PI model %s needs %s: %s", pi.Name, pi.Init, got)
	}
	if n := ModelName("rope", "", 1); n != "rope" {
		t.Errorf("seed 1 name %q", n)
	}
	if !SameCommand("go run ./cmd/train -a 1 -o x", []string{"-a", "1", "-o", "x"}) || SameCommand("go run ./cmd/train -a 2", []string{"-a", "1"}) {
		t.Error("SameCommand")
	}
	if f := V2.EvalFactors(tasks.LM, "alibi"); slices.Max(f) != 32 || slices.Max(V2.EvalFactors(tasks.LM, "rope")) != 16 {
		t.Errorf("eval factors %v", f)
	}
}

// train.json's variant: randomized positions, or a rope_scaling fine-tune; v1 files count as
// task version 1 and, without a task, as lm or mlm by kind.
func TestTrainInfo(t *testing.T) {
	dir := t.TempDir()
	write := func(v map[string]any) *TrainInfo {
		js, _ := json.Marshal(v)
		os.WriteFile(filepath.Join(dir, "train.json"), js, 0o644)
		ti, err := ReadTrainInfo(dir)
		if err != nil {
			t.Fatal(err)
		}
		return ti
	}
	if ti := write(map[string]any{"kind": "encoder", "scheme": "rope"}); ti.Task != tasks.MLM || ti.TaskVersion != 1 || ti.Variant() != "" {
		t.Errorf("v1 encoder: %+v", ti)
	}
	if ti := write(map[string]any{"task": "copy", "random_positions": 1024, "task_version": 1}); ti.Variant() != RandPosVariant {
		t.Errorf("randpos: %q", ti.Variant())
	}
	pe := map[string]any{"name": "rope", "rope_scaling": map[string]any{"rope_type": "linear", "factor": 4.0}}
	if ti := write(map[string]any{"task": "lm", "init": "w/lm/rope", "positional": pe}); ti.Variant() != "PI s=4 ft" {
		t.Errorf("PI: %q", ti.Variant())
	}
	if _, err := CheckTask(dir, tasks.Copy); err == nil || !strings.Contains(err.Error(), "trained for task lm, not copy") {
		t.Errorf("wrong task: %v", err)
	}
	if _, err := CheckTask(t.TempDir(), tasks.LM); err == nil || !strings.Contains(err.Error(), "no train.json") {
		t.Errorf("no train.json: %v", err)
	}
}

// A model's cost on one core is its training thread's CPU time where it trained on one thread
// and the time was measured; otherwise its wall time.
func TestCoreSeconds(t *testing.T) {
	for _, c := range []struct {
		ti   TrainInfo
		want float64
		cpu  bool
	}{
		{TrainInfo{WallSeconds: 900, ThreadCPU: 300, GOMAXPROCS: 1}, 300, true},
		{TrainInfo{WallSeconds: 900, ThreadCPU: 300, GOMAXPROCS: 2}, 900, false}, // the other threads' work is not in it
		{TrainInfo{WallSeconds: 900, GOMAXPROCS: 1}, 900, false},                 // trained before it was recorded
	} {
		if got, cpu := c.ti.CoreSeconds(); got != c.want || cpu != c.cpu {
			t.Errorf("%+v: %g, %v; want %g, %v", c.ti, got, cpu, c.want, c.cpu)
		}
	}
}
