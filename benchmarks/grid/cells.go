package grid

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/posformer/posformer/models"
)

// A cell is also a unit of work that a cluster's scheduler hands out by number: its ID is its
// index in the grid's canonical list (the recipe's models, then the baselines, as cmd/bench
// builds it from the same flags), so that a Slurm array task or a Kubernetes completion index
// names one cell, and every process given the same flags agrees on which.

// NeedsOf lists the IDs of the cells c waits on: its -init base (Init) and the cells whose
// results set its command (After: a learning-rate sweep). It is the one place that reads both,
// so that the cluster's dependency levels and --cell's checks see every dependency.
func NeedsOf(c Cell) []string {
	var out []string
	if c.Init != "" {
		out = append(out, c.Task+"/"+c.Init)
	}
	return append(out, c.After...)
}

// Fingerprint names a cell list: the first 12 hex digits of the SHA-256 of its IDs in order.
// The scripts a scheduler runs carry it (--grid), so that a task started after the recipe or the
// flags changed, when its number may name another cell, refuses to run.
func Fingerprint(cells []Cell) string {
	h := sha256.New()
	for _, c := range cells {
		h.Write([]byte(c.ID() + "\n"))
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// Select reads a cell selection: an index ("7"), a range ("4-9"), a name ("copy/rope-seed2"),
// or a comma-separated list of those, and returns the indices into cells in the order given,
// without repeats.
func Select(cells []Cell, spec string) ([]int, error) {
	byID := map[string]int{}
	for i, c := range cells {
		byID[c.ID()] = i
	}
	bad := func(part, why string) error {
		return fmt.Errorf("cell %q: %s; the grid has cells 0-%d (see --full -plan for their ids and names)", part, why, len(cells)-1)
	}
	var out []int
	seen := map[int]bool{}
	add := func(i int) {
		if !seen[i] {
			seen[i] = true
			out = append(out, i)
		}
	}
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if i, ok := byID[part]; ok {
			add(i)
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, errA := strconv.Atoi(lo)
		b, errB := a, error(nil)
		if isRange {
			b, errB = strconv.Atoi(hi)
		}
		switch {
		case errA != nil || errB != nil:
			return nil, bad(part, "want an index, a range A-B or a name task/model")
		case a < 0 || b >= len(cells) || a > b:
			return nil, bad(part, "out of range")
		}
		for i := a; i <= b; i++ {
			add(i)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no cell selected by %q; want an index, a range A-B or a name task/model", spec)
	}
	return out, nil
}

// Ranges writes indices as Slurm writes an array: "0-3,7,9-10" (sorted).
func Ranges(ids []int) string {
	ids = slices.Clone(ids)
	sort.Ints(ids)
	var parts []string
	for i := 0; i < len(ids); {
		j := i
		for j+1 < len(ids) && ids[j+1] == ids[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, strconv.Itoa(ids[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", ids[i], ids[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// State is where a cell stands, for -plan.
type State struct {
	Done    bool
	Step    int      // the last step of an interrupted training (0: not begun)
	Failed  string   // the error a failure marker records ("" if none)
	Waiting []string // the IDs of the cells it starts from that are not done
	Holder  *Holder  // the process running it now (a lock), if any
}

func (s State) String() string {
	switch {
	case s.Done:
		return "done"
	case s.Holder != nil:
		return "running (held by " + s.Holder.String() + ")"
	}
	var parts []string
	if s.Failed != "" {
		parts = append(parts, "failed: "+s.Failed)
	}
	if s.Step > 0 {
		parts = append(parts, fmt.Sprintf("begun at step %d", s.Step))
	}
	if len(s.Waiting) > 0 {
		parts = append(parts, "waiting on "+strings.Join(s.Waiting, ", "))
	}
	if len(parts) == 0 {
		return "to run"
	}
	return strings.Join(parts, "; ")
}

// States is the state of every cell.
func States(out string, cells []Cell) []State {
	finished := Finished(out, cells)
	states := make([]State, len(cells))
	for i, c := range cells {
		s := &states[i]
		if s.Done = finished[c.ID()]; s.Done {
			continue
		}
		if !c.Baseline {
			s.Step = LastStep(c.Dir)
		}
		s.Failed = readFailure(out, c)
		for _, n := range NeedsOf(c) {
			if !finished[n] {
				s.Waiting = append(s.Waiting, n)
			}
		}
		if h, err := readHolder(LockPath(out, c)); err == nil && !h.stale(lockStaleAfter) {
			s.Holder = &h
		}
	}
	return states
}

// PlanCells lists every cell with its id, state and estimate: what --cell takes.
func PlanCells(w io.Writer, out string, cells []Cell) {
	states := States(out, cells)
	width := len(strconv.Itoa(len(cells) - 1))
	for i, c := range cells {
		est := ""
		if !states[i].Done {
			est = "  [" + duration(c.Seconds()) + "]"
		}
		fmt.Fprintf(w, "%*d  %-28s %s%s\n", width, i, c.ID(), states[i], est)
	}
}

// FailurePath is a cell's failure marker: the error of its last --cell run, so that a
// scheduler's failed task shows in -plan. It is removed when the cell succeeds.
func FailurePath(out string, c Cell) string {
	return strings.TrimSuffix(CellPath(out, c), ".csv") + ".failed"
}

func readFailure(out string, c Cell) string {
	data, err := os.ReadFile(FailurePath(out, c))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

// runMarked is runCell under the cell's lock, for the whole-grid run: a cell that a --cell
// process (a scheduler's task) runs now is left to it and counts as failed here, to be retried
// by the next run.
func (r *Runner) runMarked(c Cell, procs int, progress func(frac float64, phase string)) error {
	lock, holder, err := TryLock(LockPath(r.Out, c))
	if err != nil {
		return err
	}
	if lock == nil {
		return fmt.Errorf("%w (%s)", ErrHeld, holder)
	}
	defer lock.Unlock()
	return r.runAndMark(c, procs, progress)
}

// runAndMark is runCell that leaves a failure marker when the cell fails and removes it when it
// succeeds.
func (r *Runner) runAndMark(c Cell, procs int, progress func(frac float64, phase string)) error {
	err := r.runCell(c, procs, progress)
	path := FailurePath(r.Out, c)
	if err == nil {
		os.Remove(path)
		return nil
	}
	host, _ := os.Hostname()
	line := fmt.Sprintf("%s (on %s, %s)", strings.ReplaceAll(err.Error(), "\n", " "), host, time.Now().UTC().Format(time.RFC3339))
	if mkErr := os.MkdirAll(filepath.Dir(path), 0o755); mkErr == nil {
		models.WriteFileAtomic(path, []byte(line+"\n")) // best effort: the error itself is returned
	}
	return err
}

// ErrHeld is returned by RunOne for a cell another process is running.
var ErrHeld = errors.New("held by another process")

// RunOne runs one cell (cells[i]) in this process on all of r.Cores: trains it (resuming from
// its checkpoint), evaluates it and writes its results and curve, under the cell's lock. A cell
// already done is skipped (nil); one whose base is not done fails with an error naming the base;
// one another process holds is left to it (an error wrapping ErrHeld, naming the holder).
func (r *Runner) RunOne(cells []Cell, i int) error {
	c := cells[i]
	if Finished(r.Out, cells)[c.ID()] {
		return nil
	}
	for _, n := range NeedsOf(c) {
		if !Finished(r.Out, cells)[n] {
			return fmt.Errorf("%s starts from %s, which is not done; run that cell first (%s)", c.ID(), n, indexOf(cells, n))
		}
	}
	lock, holder, err := TryLock(LockPath(r.Out, c))
	if err != nil {
		return err
	}
	if lock == nil {
		return fmt.Errorf("%s: %w (%s)", c.ID(), ErrHeld, holder)
	}
	defer lock.Unlock()
	// Checked again under the lock: another process may have finished it since.
	if Finished(r.Out, cells)[c.ID()] {
		return nil
	}
	// The base's checkpoint may be gone with another machine while its shipped copy is there.
	var mine []Cell
	for _, d := range cells {
		if d.ID() == c.ID() || slices.Contains(NeedsOf(c), d.ID()) {
			mine = append(mine, d)
		}
	}
	if err := restoreShipped(r.Out, mine); err != nil {
		return err
	}
	total := c.Seconds()
	return r.runAndMark(c, max(r.Cores, 1), func(frac float64, phase string) {
		if r.Progress != nil {
			r.Progress(frac*total, total, c.ID()+" "+phase)
		}
	})
}

func indexOf(cells []Cell, id string) string {
	for i, c := range cells {
		if c.ID() == id {
			return "--cell " + strconv.Itoa(i)
		}
	}
	return "it is not in this grid: run without -task/-scheme filters"
}

// Levels groups the cells not done by how long a chain of cells not done they wait on: level 0
// needs nothing that is not done, level 1 needs a cell of level 0, and so on. A scheduler runs
// each level after the one before (a Slurm job array per level).
func Levels(out string, cells []Cell) [][]int {
	finished := Finished(out, cells)
	byID := map[string]int{}
	for i, c := range cells {
		byID[c.ID()] = i
	}
	level := map[int]int{}
	var depth func(i int, seen map[int]bool) int
	depth = func(i int, seen map[int]bool) int {
		if l, ok := level[i]; ok {
			return l
		}
		if seen[i] {
			return 0 // a cycle: the recipe's bug, reported by RunOne's dependency check
		}
		seen[i] = true
		l := 0
		for _, n := range NeedsOf(cells[i]) {
			if j, ok := byID[n]; ok && !finished[n] {
				l = max(l, depth(j, seen)+1)
			}
		}
		level[i] = l
		return l
	}
	var levels [][]int
	for i, c := range cells {
		if finished[c.ID()] {
			continue
		}
		l := depth(i, map[int]bool{})
		for len(levels) <= l {
			levels = append(levels, nil)
		}
		levels[l] = append(levels[l], i)
	}
	return levels
}

// duration writes an estimate to the unit that fits it: "40 s", "12 min", "1.5 h".
func duration(seconds float64) string {
	switch {
	case seconds < 60:
		return fmt.Sprintf("%.0f s", seconds)
	case seconds < 3600:
		return fmt.Sprintf("%.0f min", seconds/60)
	}
	return fmt.Sprintf("%.1f h", seconds/3600)
}
