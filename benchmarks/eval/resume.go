package eval

// An evaluation that takes up where it stopped. A cell of the grid evaluates its model on every
// row at every length, an hour and more of one core for a language model with RoPE's scaling
// rows, and a grid stopped midway (a kill, a machine taken back) would lose all of it: the cell
// counts as done only with its results. Resume keeps each finished (row, length) pair's
// results in a file beside the model, written through a temporary file and a rename after every
// pair; an evaluation given it skips the pairs the file holds. The file names the model's
// weights (their size and modification time), so a model trained again starts over.

import (
	"bytes"
	"encoding/gob"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/posformer/posformer/benchmarks/report"
	"github.com/posformer/posformer/models"
)

// ResumeFile is the name of the file, in the model's folder.
const ResumeFile = "eval.resume"

// Resume is the finished pairs of one model's evaluation (nil: none kept).
type Resume struct {
	path string
	kept resumeFile
}

type resumeFile struct {
	Weights string // the model's weights when the pairs were scored
	Pairs   map[string]resumedPair
}

type resumedPair struct {
	Results []report.Result
	Doc     *DocScore
}

// OpenResume reads the finished pairs of the model in dir, if its file names the model's
// current weights; otherwise it starts empty (a file it cannot read is started over, with a
// line on stderr: it only ever saves time).
func OpenResume(dir string) (*Resume, error) {
	info, err := os.Stat(filepath.Join(dir, models.WeightsFile))
	if err != nil {
		return nil, fmt.Errorf("resuming the evaluation of %s: %w", dir, err)
	}
	r := &Resume{path: filepath.Join(dir, ResumeFile)}
	weights := fmt.Sprintf("%d bytes, modified %s", info.Size(), info.ModTime().UTC().Format("2006-01-02T15:04:05.000000000"))
	data, err := os.ReadFile(r.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("resuming the evaluation of %s: %w", dir, err)
	default:
		if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&r.kept); err != nil {
			fmt.Fprintf(os.Stderr, "bench: %s: %v; evaluating from the start\n", r.path, err)
			r.kept = resumeFile{}
		}
	}
	if r.kept.Weights != weights {
		r.kept = resumeFile{Weights: weights}
	}
	if r.kept.Pairs == nil {
		r.kept.Pairs = map[string]resumedPair{}
	}
	return r, nil
}

// Pairs is how many finished pairs r holds.
func (r *Resume) Pairs() int {
	if r == nil {
		return 0
	}
	return len(r.kept.Pairs)
}

// Remove deletes the file: the evaluation is done and its results are written.
func (r *Resume) Remove() error {
	if r == nil {
		return nil
	}
	if err := os.Remove(r.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

func (r *Resume) get(key string) (resumedPair, bool) {
	if r == nil {
		return resumedPair{}, false
	}
	p, ok := r.kept.Pairs[key]
	return p, ok
}

func (r *Resume) put(key string, rs []report.Result, ds *DocScore) error {
	if r == nil {
		return nil
	}
	r.kept.Pairs[key] = resumedPair{Results: rs, Doc: ds}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(&r.kept); err != nil {
		return fmt.Errorf("saving the evaluation's progress: %w", err)
	}
	return models.WriteFileAtomic(r.path, buf.Bytes())
}

// pairKey names a (row, length) pair of a task's evaluation.
func pairKey(task string, r Row, length int) string {
	return fmt.Sprintf("%s|%s|%s|%d|%d", task, r.Model, label(r), r.TrainLen, length)
}
