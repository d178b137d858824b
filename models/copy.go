package models

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/posformer/posformer/models/safetensors"
)

// CopyCheckpoint copies the checkpoint folder src to dst with its weights stored as dtype:
// "F32", or "F16"/"BF16" for half the bytes (the loader widens them to float32). The config
// goes along, and so do the tokenizer file the config names and the training record
// (train.json, loss.csv) when src has them; the optimizer's state (train_state.safetensors)
// stays behind, as it is no part of a model. It writes a temporary folder beside dst and
// renames it over dst, so dst is never half a checkpoint. A weight beyond float16's range is
// refused for F16 rather than stored as infinity.
func CopyCheckpoint(src, dst, dtype string) error {
	if err := copyCheckpoint(src, dst, dtype); err != nil {
		return fmt.Errorf("copying %s to %s: %w", src, dst, err)
	}
	return nil
}

func copyCheckpoint(src, dst, dtype string) error {
	switch dtype {
	case "F32", "F16", "BF16":
	default:
		return fmt.Errorf("weights as %q: a checkpoint stores F32, F16 or BF16", dtype)
	}
	// Only the tokenizer's file is read from the config: the copy is of files, not a model.
	var cfg struct {
		Tokenizer string `json:"tokenizer"`
	}
	data, err := os.ReadFile(filepath.Join(src, ConfigFile))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return fmt.Errorf("reading %s: %w", ConfigFile, err)
	}
	f, err := safetensors.Open(filepath.Join(src, WeightsFile))
	if err != nil {
		return err
	}
	defer f.Close()
	var ts []safetensors.Tensor
	for _, info := range f.Infos() {
		data, err := f.ReadFloat32(info.Name)
		if err != nil {
			return err
		}
		if dtype == "F16" {
			for _, x := range data {
				if math.Abs(float64(x)) > 65504 {
					return fmt.Errorf("tensor %s holds %g, beyond float16's range: store it as F32 or BF16", info.Name, x)
				}
			}
		}
		ts = append(ts, safetensors.Tensor{Name: info.Name, Shape: info.Shape, Data: data, DType: dtype})
	}
	files := []string{ConfigFile, "train.json", "loss.csv"}
	switch tok := cfg.Tokenizer; {
	case tok == "" || tok == "byte":
	case filepath.IsLocal(tok):
		files = append(files, tok)
	default:
		return fmt.Errorf("the config's tokenizer %s lies outside the folder: copy it in and name it relative to the folder", tok)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp) // after the rename, nothing is left there
	if err := safetensors.Write(filepath.Join(tmp, WeightsFile), ts, f.Metadata()); err != nil {
		return err
	}
	for _, name := range files {
		from := filepath.Join(src, name)
		if _, err := os.Stat(from); os.IsNotExist(err) && name != ConfigFile {
			continue // a checkpoint trained elsewhere may have no record of its training
		}
		to := filepath.Join(tmp, name)
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return err
		}
		if err := CopyFileAtomic(from, to); err != nil {
			return err
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	if err := os.RemoveAll(dst); err != nil {
		return fmt.Errorf("replacing %s: %w", dst, err)
	}
	return os.Rename(tmp, dst)
}
