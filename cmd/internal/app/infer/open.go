package infer

import (
	"errors"
	"fmt"
	"io"
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

// Open loads the model at path (a checkpoint directory, a GGUF file or a llama2.c .bin, already resolved by
// modelhome.Resolve) on backend with a context of ctxSize tokens (0: the model's
// max_seq_len). tok is -z: a GGUF file's replacement tokenizer, a llama2.c model's tokenizer.bin. A context the model cannot
// hold is a flag error (IsFlagError).
func Open(path, backend, tok string, ctxSize int) (Opened, error) {
	o := options{model: path, backend: backend, ctxSize: ctxSize, tokenizer: tok}
	isGGUF := gguf.IsFile(path)
	switch {
	case !isGGUF && engine.IsLlama2C(path):
		return openLlama2C(o)
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
		t, err := loadTokenizer(path, e.Model.Config)
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

// openLlama2C loads a llama2.c .bin with -z's tokenizer.bin; a text starts with BOS, as run.c's
// prompts do.
func openLlama2C(o options) (Opened, error) {
	if o.tokenizer == "" {
		return Opened{}, fmt.Errorf("%s is a llama2.c .bin file: pass its tokenizer.bin with -z", o.model)
	}
	memlimit.ForLoading(engine.CheckpointBytes(o.model))
	e, err := o.load()
	if err != nil {
		return Opened{}, err
	}
	tok, err := tokenizer.LoadLlama2C(o.tokenizer, e.Model.Config.VocabSize)
	if err != nil {
		return Opened{}, fmt.Errorf("-z: %w", err)
	}
	return Opened{Engine: e, Tok: tok, BOS: runcBOS}, nil
}

// IsFlagError reports whether err is a flag the command should refuse with exit 2.
func IsFlagError(err error) bool { return errors.As(err, new(flagError)) }

// ReadText reads -f's file, or stdin when file is "-"; what names the text in the error.
func ReadText(file string, stdin io.Reader, what string) (string, error) {
	if file == "-" {
		data, err := io.ReadAll(stdin)
		if err != nil {
			return "", fmt.Errorf("reading %s from standard input: %w", what, err)
		}
		return string(data), nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("-f: %w", err)
	}
	return string(data), nil
}
