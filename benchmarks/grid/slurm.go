package grid

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/posformer/posformer/models"
)

// Slurm describes the batch jobs that run the grid's cells on a Slurm cluster: one job array per
// dependency level (Levels), each task of it one cell (`--cell $SLURM_ARRAY_TASK_ID`, the cell's
// index), each array starting after the one before has ended (afterany: a failed cell leaves a
// failure marker for -plan and fails only the cells that start from it, with an error naming
// it), then one job that writes the report.
type Slurm struct {
	// Command is the bench binary and the flags that rebuild the same cell list, with absolute
	// paths on the storage every node shares (-o, -weights).
	Command []string
	// Grid is the cell list's fingerprint (Fingerprint), passed to each task with --grid.
	Grid string
	// Dir is where the scripts and the jobs' logs go (shared too); Workdir is where the jobs run.
	Dir, Workdir string
	JobName      string
	Partition    string // "" for the cluster's default
	Time         string // per cell, e.g. 2:00:00
	Mem          string // per cell, e.g. 4G
	CPUsPerTask  int
	ArrayLimit   int // at most this many tasks of an array at once (Slurm's %K), 0 for no limit
}

// Script names in Slurm.Dir.
const (
	SlurmCellScript   = "cell.sbatch"
	SlurmReportScript = "report.sbatch"
	SlurmSubmit       = "submit.sh"
)

// Write writes the cell and report batch scripts and submit.sh, which submits the levels'
// arrays (with sbatch --parsable, each depending on the one before) and the report, and prints
// the job ids. levels holds the cells' indices (Levels); it returns submit.sh's path.
func (s Slurm) Write(levels [][]int) (string, error) {
	if len(levels) == 0 {
		return "", fmt.Errorf("every cell is done: nothing to submit (--report writes the report)")
	}
	if err := os.MkdirAll(filepath.Join(s.Dir, "logs"), 0o755); err != nil {
		return "", fmt.Errorf("creating the Slurm folder: %w", err)
	}
	logs := filepath.Join(s.Dir, "logs")
	cell := s.header(s.JobName, filepath.Join(logs, "%x-%A_%a.out")) +
		"# One cell of the grid: the array index is the cell's id (bench --full -plan lists them).\n" +
		"exec " + shellJoin(s.Command) + " --grid " + shellQuote(s.Grid) + " --cell \"$SLURM_ARRAY_TASK_ID\"\n"
	report := s.header(s.JobName+"-report", filepath.Join(logs, "%x-%j.out")) +
		"exec " + shellJoin(s.Command) + " --report\n"
	var b strings.Builder
	b.WriteString("#!/bin/sh\n# Submits the grid's cells not done, one job array per dependency level, then its report.\n" +
		"# Run it again to resubmit what failed or was cancelled: finished cells are not in it.\nset -e\n")
	fmt.Fprintf(&b, "cd %s\n", shellQuote(s.Dir))
	prev := ""
	for i, ids := range levels {
		array := Ranges(ids)
		if s.ArrayLimit > 0 {
			array += "%" + strconv.Itoa(s.ArrayLimit)
		}
		dep := ""
		if prev != "" {
			dep = " --dependency=afterany:" + prev
		}
		v := "level" + strconv.Itoa(i)
		fmt.Fprintf(&b, "%s=$(sbatch --parsable --array=%s%s %s)\necho \"level %d: job $%s, %d cells\"\n", v, array, dep, SlurmCellScript, i, v, len(ids))
		prev = "$" + v
	}
	fmt.Fprintf(&b, "report=$(sbatch --parsable --dependency=afterany:%s %s)\necho \"report: job $report\"\n", prev, SlurmReportScript)
	files := []struct{ name, text string }{{SlurmCellScript, cell}, {SlurmReportScript, report}, {SlurmSubmit, b.String()}}
	for _, f := range files {
		path := filepath.Join(s.Dir, f.name)
		if err := models.WriteFileAtomic(path, []byte(f.text)); err != nil {
			return "", fmt.Errorf("writing %s: %w", path, err)
		}
		if err := os.Chmod(path, 0o755); err != nil {
			return "", err
		}
	}
	return filepath.Join(s.Dir, SlurmSubmit), nil
}

func (s Slurm) header(name, output string) string {
	var b strings.Builder
	b.WriteString("#!/bin/sh\n")
	line := func(k, v string) {
		if v != "" && v != "0" {
			fmt.Fprintf(&b, "#SBATCH --%s=%s\n", k, v)
		}
	}
	line("job-name", name)
	line("partition", s.Partition)
	line("time", s.Time)
	line("mem", s.Mem)
	line("cpus-per-task", strconv.Itoa(s.CPUsPerTask))
	line("chdir", s.Workdir)
	line("output", output)
	return b.String()
}

// shellQuote quotes a word for sh: as is when it is plain, else in single quotes.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " ")
}
