package grid

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/posformer/posformer/benchmarks/recipe"
	"github.com/posformer/posformer/benchmarks/report"
)

// grid's cells, by index: 0 lm/rope, 1 lm/rope-pi4 (needs 0), 2 lm/alibi, 3 lm/rope-seed2,
// 4 lm/rope-pi4-seed2 (needs 3), 5 lm/alibi-seed2, 6 lm/_baselines.
func TestSelect(t *testing.T) {
	cells := grid(t.TempDir())
	if got := cells[4].ID(); got != "lm/rope-pi4-seed2" {
		t.Fatalf("the test's grid changed: cell 4 is %s", got)
	}
	cases := []struct {
		spec string
		want []int
	}{
		{"3", []int{3}},
		{"2-4", []int{2, 3, 4}},
		{"lm/alibi-seed2", []int{5}},
		{"6,0-1,lm/rope", []int{6, 0, 1}}, // the order given, without repeats
	}
	for _, c := range cases {
		got, err := Select(cells, c.spec)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("Select(%q) = %v, %v; want %v", c.spec, got, err, c.want)
		}
	}
	for _, bad := range []string{"7", "-1", "4-2", "x", "lm/nope", "", "1-x"} {
		_, err := Select(cells, bad)
		if err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("Select(%q): error %v, want one line", bad, err)
		}
	}
	if _, err := Select(cells, "9"); err == nil || !strings.Contains(err.Error(), "0-6") {
		t.Errorf("an index out of range does not give the grid's range: %v", err)
	}
}

func TestRanges(t *testing.T) {
	for _, c := range []struct {
		ids  []int
		want string
	}{{[]int{0, 1, 2, 3}, "0-3"}, {[]int{7, 0, 1, 9, 10, 4}, "0-1,4,7,9-10"}, {[]int{5}, "5"}} {
		if got := Ranges(c.ids); got != c.want {
			t.Errorf("Ranges(%v) = %q, want %q", c.ids, got, c.want)
		}
	}
	// Select reads back what Ranges writes (sorted).
	cells := grid(t.TempDir())
	back, err := Select(cells, Ranges([]int{6, 0, 1, 4}))
	if err != nil || !slices.Equal(back, []int{0, 1, 4, 6}) {
		t.Errorf("Select(Ranges) = %v, %v", back, err)
	}
}

// The levels: the cells that need nothing not done, then their fine-tunes; a fine-tune whose
// base is done is in the first level.
func TestLevels(t *testing.T) {
	dir := t.TempDir()
	cells := grid(filepath.Join(dir, "weights"))
	want := [][]int{{0, 2, 3, 5, 6}, {1, 4}}
	if got := Levels(dir, cells); !equalLevels(got, want) {
		t.Errorf("Levels = %v, want %v", got, want)
	}
	r := fakeRunner(dir, newFake())
	if err := r.RunOne(cells, 3); err != nil {
		t.Fatal(err)
	}
	want = [][]int{{0, 2, 4, 5, 6}, {1}}
	if got := Levels(dir, cells); !equalLevels(got, want) {
		t.Errorf("with cell 3 done, Levels = %v, want %v", got, want)
	}
}

func equalLevels(a, b [][]int) bool {
	return slices.EqualFunc(a, b, func(x, y []int) bool { return slices.Equal(x, y) })
}

func fakeRunner(dir string, f *fake) *Runner {
	return &Runner{Out: dir, Jobs: 1, Cores: 1, Train: f.train, Evaluate: f.evaluate,
		Baselines: func(task string) ([]report.Result, error) {
			return []report.Result{{Task: task, Model: "unigram", Scheme: "unigram", Depth: math.NaN(), Metric: "bits_per_byte", Value: 5}}, nil
		}}
}

// RunOne: a fine-tune before its base is a one-line error naming the base and its id; the base,
// then the fine-tune, then the base again (done: nothing to do).
func TestRunOne(t *testing.T) {
	dir := t.TempDir()
	cells := grid(filepath.Join(dir, "weights"))
	f := newFake()
	r := fakeRunner(dir, f)
	err := r.RunOne(cells, 1)
	if err == nil || !strings.Contains(err.Error(), "starts from lm/rope, which is not done") || !strings.Contains(err.Error(), "--cell 0") {
		t.Errorf("fine-tune before its base: %v", err)
	}
	for _, i := range []int{0, 1, 0, 6} {
		if err := r.RunOne(cells, i); err != nil {
			t.Fatalf("cell %d: %v", i, err)
		}
	}
	if want := []string{"lm/rope", "lm/rope-pi4"}; !slices.Equal(f.trained, want) {
		t.Errorf("trained %v, want %v (a done cell is skipped)", f.trained, want)
	}
	for _, i := range []int{0, 1, 6} {
		if !Done(dir, cells[i]) {
			t.Errorf("cell %d has no results", i)
		}
	}
	if _, err := os.Stat(CurvePath(dir, cells[1])); err != nil {
		t.Errorf("the fine-tune's curve was not kept: %v", err)
	}
	if _, err := os.Stat(LockPath(dir, cells[0])); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the lock outlived its run: %v", err)
	}
}

// A failed cell leaves a marker that -plan shows with its error, and a later success removes it.
func TestFailureMarkerAndStates(t *testing.T) {
	dir := t.TempDir()
	cells := grid(filepath.Join(dir, "weights"))
	f := newFake()
	f.failOn = "lm/alibi"
	r := fakeRunner(dir, f)
	if err := r.RunOne(cells, 0); err != nil {
		t.Fatal(err)
	}
	if err := r.RunOne(cells, 2); err == nil {
		t.Fatal("lm/alibi was meant to fail")
	}
	// Cell 3 was begun: its curve ends at step 300.
	os.MkdirAll(cells[3].Dir, 0o755)
	os.WriteFile(filepath.Join(cells[3].Dir, "loss.csv"), []byte("step,train_loss\n100,3\n300,2\n"), 0o644)
	var b bytes.Buffer
	PlanCells(&b, dir, cells)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	want := []string{
		"0  lm/rope", "done",
		"1  lm/rope-pi4", "to run",
		"2  lm/alibi", "failed: boom (on ",
		"3  lm/rope-seed2", "begun at step 300",
		"4  lm/rope-pi4-seed2", "waiting on lm/rope-seed2",
	}
	for i := 0; i < len(want); i += 2 {
		if l := lines[i/2]; !strings.HasPrefix(l, want[i]) || !strings.Contains(l, want[i+1]) {
			t.Errorf("-plan line %d: %q, want %q ... %q", i/2, l, want[i], want[i+1])
		}
	}
	if strings.Contains(lines[0], "[") || !strings.Contains(lines[1], "[") {
		t.Errorf("estimates: on cells to run only, got %q and %q", lines[0], lines[1])
	}
	f.failOn = ""
	if err := r.RunOne(cells, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(FailurePath(dir, cells[2])); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the failure marker outlived the cell's success: %v", err)
	}
}

// Two runners given the same cell at once: one trains it, the other is a no-op naming the
// holder; the cell is trained once.
func TestRunOneTwiceAtOnce(t *testing.T) {
	dir := t.TempDir()
	cells := grid(filepath.Join(dir, "weights"))
	f := newFake()
	slow := func(m recipe.Model, resume bool, procs int, progress func(float64)) error {
		time.Sleep(100 * time.Millisecond)
		return f.train(m, resume, procs, progress)
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := fakeRunner(dir, f)
			r.Train = slow
			errs[i] = r.RunOne(cells, 2)
		}()
	}
	wg.Wait()
	held := 0
	for _, err := range errs {
		if errors.Is(err, ErrHeld) {
			held++
			if !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
				t.Errorf("the no-op does not name the holder: %v", err)
			}
		} else if err != nil {
			t.Errorf("unexpected error: %v", err)
		}
	}
	if held != 1 || len(f.trained) != 1 || !Done(dir, cells[2]) {
		t.Errorf("%d held, trained %v, done %v; want 1 held, the cell trained once and done", held, f.trained, Done(dir, cells[2]))
	}
}

// The whole-grid run leaves a cell that another process holds to it: it counts as failed (the
// next run retries it), the cells that start from it do not start, and the rest run.
func TestRunLeavesHeldCells(t *testing.T) {
	dir := t.TempDir()
	cells := grid(filepath.Join(dir, "weights"))[:3] // lm/rope, its fine-tune, lm/alibi
	lock, _, err := TryLock(LockPath(dir, cells[0]))
	if err != nil || lock == nil {
		t.Fatalf("taking the lock: %v", err)
	}
	f := newFake()
	r := fakeRunner(dir, f)
	r.Jobs = 2
	err = r.Run(cells)
	lock.Unlock()
	if err == nil || !strings.Contains(err.Error(), "lm/rope: held by another process") || !strings.Contains(err.Error(), "lm/rope-pi4: not started") {
		t.Errorf("Run over a held cell: %v", err)
	}
	if !slices.Equal(f.trained, []string{"lm/alibi"}) {
		t.Errorf("trained %v, want lm/alibi alone", f.trained)
	}
	if err := r.Run(cells); err != nil || len(f.trained) != 3 {
		t.Errorf("the next run: %v, trained %v", err, f.trained)
	}
}

// The fingerprint changes with the list: another cell, or the same cells in another order.
func TestFingerprint(t *testing.T) {
	cells := grid(t.TempDir())
	fp := Fingerprint(cells)
	if len(fp) != 12 || Fingerprint(grid(t.TempDir())) != fp {
		t.Errorf("fingerprint %q is not 12 hex digits, or depends on the weights folder", fp)
	}
	swapped := slices.Clone(cells)
	swapped[0], swapped[2] = swapped[2], swapped[0]
	if Fingerprint(swapped) == fp || Fingerprint(cells[:6]) == fp {
		t.Error("the fingerprint misses a reordered or shorter list")
	}
}

// A chain of three (a sweep, then a model that starts from it, then its fine-tune) is three
// levels; a cell is in the level after the longest chain it waits on.
func TestLevelsOfAChain(t *testing.T) {
	cells := []Cell{timed("ft", "b", 1), timed("a", "", 1), timed("b", "a", 1), timed("c", "", 1)}
	want := [][]int{{1, 3}, {2}, {0}}
	if got := Levels(t.TempDir(), cells); !equalLevels(got, want) {
		t.Errorf("Levels = %v, want %v", got, want)
	}
}
