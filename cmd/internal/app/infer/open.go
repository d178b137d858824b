package infer

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/posformer/posformer/cmd/internal/memlimit"
	"github.com/posformer/posformer/engine"
	"github.com/posformer/posformer/models"
	"github.com/posformer/posformer/models/gguf"
	"github.com/posformer/posformer/tokenizer"
)

// Opened is a model loaded for another command (posformer perplexity) as run loads it: the
// engine, its tokenizer, and the BOS a text starts with (-1: none, as for the project's own
// checkpoints, whose prompts run without one).
type Opened struct {
	Engine *engine.Engine
	Tok    tokenizer.Tokenizer
	BOS    int
}

// Open loads the model at path (a checkpoint directory or a GGUF file, already resolved by
// modelhome.Resolve) on backend with a context of ctxSize tokens (0: the model's
// max_seq_len). tok replaces a GGUF file's tokenizer, as -z does. A context the model cannot
// hold is a flag error (IsFlagError).
func Open(path, backend, tok string, ctxSize int) (Opened, error) {
	o := options{model: path, backend: backend, ctxSize: ctxSize, tokenizer: tok}
	isGGUF := gguf.IsFile(path)
	switch {
	case !isGGUF && engine.IsLlama2C(path):
		return Opened{}, fmt.Errorf("%s is a llama2.c .bin file; convert it with posformer export, or pass a checkpoint directory or a GGUF file", path)
	case !isGGUF && tok != "":
		return Opened{}, fmt.Errorf("-z is for GGUF models; %s is a checkpoint directory with its own tokenizer", path)
	case !isGGUF:
		if _, err := os.Stat(filepath.Join(path, models.ConfigFile)); err != nil {
			return Opened{}, fmt.Errorf("no model at %s (want a directory with %s and %s, or a GGUF file); pass -m DIR", path, models.ConfigFile, models.WeightsFile)
		}
	}
	memlimit.ForLoading(engine.CheckpointBytes(path))
	e, err := o.load()
	if err != nil {
		return Opened{}, err
	}
	if !isGGUF {
		t, err := loadTokenizer(path, e.Model.Config.Tokenizer)
		if err != nil {
			return Opened{}, err
		}
		return Opened{Engine: e, Tok: t, BOS: -1}, nil
	}
	sp, err := ggufTokenizer(o, e.Model.Config.VocabSize)
	if err != nil {
		return Opened{}, err
	}
	if sp.Tok == nil {
		return Opened{}, fmt.Errorf("%s has no vocabulary: pass a tokenizer with -z", path)
	}
	bos := -1
	if sp.AddBOS && sp.BOS >= 0 {
		bos = sp.BOS
	}
	return Opened{Engine: e, Tok: sp.Tok, BOS: bos}, nil
}

// IsFlagError reports whether err is a flag the command should refuse with exit 2.
func IsFlagError(err error) bool { return errors.As(err, new(flagError)) }
