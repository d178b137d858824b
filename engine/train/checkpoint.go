package train

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/posformer/posformer/models"
	"github.com/posformer/posformer/models/atomicfile"
	"github.com/posformer/posformer/models/safetensors"
)

// A checkpoint is three files, each replaced atomically on its own (atomicfile): the weights,
// the config, then the optimizer state. A kill between two of them leaves a set from two
// steps, so the step is recorded in both safetensors files' metadata and -resume compares them
// (checkSet). The config is the same at every save of a run; a run that replaces another
// (-force) first removes the old set, so that nothing of it can pair with the new one.
//
// Recording the step was chosen over writing the set into a fresh folder and swapping it in:
// the checkpoint folder also holds loss.csv, train.json and init.json, and other programs read
// model.safetensors in it by name, so a swap would need two renames of the folder (a window of
// its own) or a change of layout for every reader.

// StateFile holds what resuming needs beyond the weights: optimizer moments, global step.
const StateFile = "train_state.safetensors"

// stepKey is the safetensors metadata key of the step a weights or state file was saved at.
const stepKey = "step"

// secondsKey is the state file's metadata key of the run's training wall time up to the save:
// a resumed run counts on from there, not from its last evaluation (loss.csv), which may lie
// several saves before.
const secondsKey = "seconds"

// cpuSecondsKey is the state file's metadata key of the training thread's CPU time up to the
// save (ThreadCPU), absent where it was not measured over the whole run so far.
const cpuSecondsKey = "cpu_seconds"

// setFiles are the files of a checkpoint, in the order save writes them.
var setFiles = []string{models.WeightsFile, models.ConfigFile, StateFile}

// runFiles are all the files a run writes into its folder: the checkpoint and the run's records.
var runFiles = append(append([]string(nil), setFiles...), CurveFile, InfoFile, initFile, TokenizerFile)

// save writes the checkpoint of step to dir, trained for seconds of wall time so far, first
// removing the temporary files of writes that a killed run left there.
func save(dir string, cfg models.Config, ctx *context.Context, step int, seconds, cpuSeconds float64) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("saving checkpoint: %w", err)
	}
	if _, err := atomicfile.RemoveOrphans(dir, runFiles...); err != nil {
		return fmt.Errorf("saving checkpoint: %w", err)
	}
	stamp := strconv.Itoa(step)
	if err := saveModel(dir, cfg, ctx, stamp); err != nil {
		return err
	}
	var ts []safetensors.Tensor
	// The other keys are variables, whose names start with "/".
	meta := map[string]string{stepKey: stamp, secondsKey: strconv.FormatFloat(seconds, 'f', 1, 64)}
	if cpuSeconds >= 0 {
		meta[cpuSecondsKey] = strconv.FormatFloat(cpuSeconds, 'f', 1, 64)
	}
	for v := range ctx.IterVariables() {
		if strings.HasPrefix(v.Scope(), "/"+models.Scope) {
			continue
		}
		value, err := v.Value()
		if err != nil {
			return fmt.Errorf("saving %s: %w", v.ScopeAndName(), err)
		}
		var data []float32
		switch v.DType() {
		case dtypes.Float32:
			data = tensors.MustCopyFlatData[float32](value)
		case dtypes.Int64:
			// Step counters: exact in float32 up to 2^24 steps.
			for _, x := range tensors.MustCopyFlatData[int64](value) {
				data = append(data, float32(x))
			}
		default:
			// The context's random-number state: training draws no in-graph randomness.
			continue
		}
		ts = append(ts, safetensors.Tensor{Name: v.ScopeAndName(), Shape: v.Shape().Dimensions, Data: data})
		meta[v.ScopeAndName()] = v.DType().String()
	}
	if err := safetensors.Write(filepath.Join(dir, StateFile), ts, meta); err != nil {
		return fmt.Errorf("saving training state: %w", err)
	}
	return nil
}

// saveModel is models.Save with the step in the weights' metadata: the weights, then the config.
func saveModel(dir string, cfg models.Config, ctx *context.Context, step string) error {
	return models.SaveWithMetadata(dir, cfg, ctx, map[string]string{stepKey: step})
}

// checkSet refuses a checkpoint whose weights and optimizer state are from different steps: a
// save killed between the two files. A state written before steps were recorded has nothing to
// compare and passes, as such checkpoints always did.
func checkSet(dir string) error {
	stateStep, ok, err := savedStep(filepath.Join(dir, StateFile))
	if err != nil || !ok {
		return err
	}
	weights := filepath.Join(dir, models.WeightsFile)
	weightsStep, ok, err := savedStep(weights)
	if err != nil {
		return err
	}
	restart := fmt.Sprintf("start again with -force in place of -resume, or fine-tune from these weights with a fresh optimizer: -init %s -o NEW_DIR", dir)
	if !ok {
		return fmt.Errorf("resuming: %s records no step but its optimizer state (%s) is from step %d, so they are not one checkpoint; %s",
			weights, StateFile, stateStep, restart)
	}
	if weightsStep != stateStep {
		return fmt.Errorf("resuming: %s is from step %d but its optimizer state (%s) from step %d (a save was interrupted between the two); %s",
			weights, weightsStep, StateFile, stateStep, restart)
	}
	return nil
}

// savedStep is the step recorded in a safetensors file's metadata; ok is false for a file
// that records none.
func savedStep(path string) (step int, ok bool, err error) {
	return savedNumber(path, stepKey, strconv.Atoi)
}

// savedSeconds is the training wall time a state file records; ok is false for a file that
// records none (saved before the time was recorded).
func savedSeconds(path string) (seconds float64, ok bool, err error) {
	return savedNumber(path, secondsKey, func(s string) (float64, error) { return strconv.ParseFloat(s, 64) })
}

// savedCPUSeconds is the training thread's CPU time a state file records; ok is false for a
// file that records none.
func savedCPUSeconds(path string) (seconds float64, ok bool, err error) {
	return savedNumber(path, cpuSecondsKey, func(s string) (float64, error) { return strconv.ParseFloat(s, 64) })
}

// savedNumber parses the metadata entry key of the safetensors file at path; ok is false for a
// file without one.
func savedNumber[T int | float64](path, key string, parse func(string) (T, error)) (x T, ok bool, err error) {
	f, err := safetensors.Open(path)
	if err != nil {
		return x, false, fmt.Errorf("resuming: %w", err)
	}
	defer f.Close()
	s, ok := f.Metadata()[key]
	if !ok {
		return x, false, nil
	}
	if x, err = parse(s); err != nil {
		return x, false, fmt.Errorf("resuming: %s records %s %q, not a number", path, key, s)
	}
	return x, true, nil
}

// heldCheckpoint is the first file of a checkpoint that dir holds, "" if none.
func heldCheckpoint(dir string) string {
	for _, name := range setFiles {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return name
		}
	}
	return ""
}

// clearRun removes from dir the files of the run that -force replaces (init.json is rewritten
// by the new run, or ignored by a fine-tune; a BPE run writes its tokenizer.json afresh), and
// the unfinished writes it left.
func clearRun(dir string) error {
	if _, err := atomicfile.RemoveOrphans(dir, runFiles...); err != nil {
		return err
	}
	for _, name := range append(append([]string(nil), setFiles...), CurveFile, InfoFile, TokenizerFile) {
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("-force: %w", err)
		}
	}
	return nil
}

func loadState(path string, ctx *context.Context) error {
	f, err := safetensors.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	meta := f.Metadata()
	for _, info := range f.Infos() {
		data, err := f.ReadFloat32(info.Name)
		if err != nil {
			return err
		}
		var t *tensors.Tensor
		switch meta[info.Name] {
		case dtypes.Int64.String():
			t = tensors.FromShape(shapes.Make(dtypes.Int64, info.Shape...))
			tensors.MustMutableFlatData(t, func(flat []int64) {
				for i, x := range data {
					flat[i] = int64(x)
				}
			})
		default:
			t = tensors.FromFlatDataAndDimensions(data, info.Shape...)
		}
		scope, name := context.SplitScope(info.Name)
		ctx.InAbsPath(scope).Checked(false).VariableWithValue(name, t)
	}
	return nil
}
