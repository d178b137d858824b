// Package gguftok builds the tokenizer a GGUF file runs with, as llama.cpp does: the file
// carries its own (the tokenizer.ggml.* keys), so `-m model.gguf` needs nothing else, and -z
// replaces it (a llama2.c tokenizer.bin, read as run.c reads it, or any tokenizer
// tokenizer.Load takes). cmd/infer and cmd/serve share it; each adds the checks its own use
// needs (cmd/infer runs a file without a vocabulary on token ids, cmd/serve cannot).
package gguftok

import (
	"fmt"
	"strings"

	"github.com/posformer/posformer/models/gguf"
	"github.com/posformer/posformer/tokenizer"
)

// Loaded is a GGUF file's tokenizer and what generation needs besides it.
type Loaded struct {
	// Tok is -z's tokenizer, else the file's; nil when the file has no vocabulary and -z
	// gives none.
	Tok tokenizer.Tokenizer
	// AddBOS: a prompt starts with BOS (the file's add_bos_token; llama.cpp's default is yes
	// for SentencePiece vocabularies, no for GPT-2 ones; always for a tokenizer.bin, as run.c).
	AddBOS bool
	// BOS and EOS are Tok's special ids, or the file's when Tok is nil (-1: none).
	BOS, EOS int
	// ChatTemplate is the file's tokenizer.chat_template, a Jinja program ("" if none).
	ChatTemplate string
}

// Load reads the tokenizer of the GGUF file at path, or override's in its place ("": the
// file's own). vocab is the model's vocabulary size, which run.c's tokenizer.bin format needs
// to be read.
func Load(path, override string, vocab int) (Loaded, error) {
	l := Loaded{BOS: -1, EOS: -1}
	f, err := gguf.Open(path)
	if err != nil {
		return l, fmt.Errorf("loading %s: %w", path, err)
	}
	defer f.Close()
	v, err := gguf.ReadVocab(f)
	if err != nil {
		return l, fmt.Errorf("loading %s: %w", path, err)
	}
	if t, ok := f.Get("tokenizer.chat_template"); ok {
		// The raw text: Value.String quotes it and cuts it for messages.
		l.ChatTemplate, _ = t.V.(string)
	}
	l.AddBOS = v.AddBOS
	switch {
	case strings.HasSuffix(override, ".bin"):
		// run.c reads exactly vocab_size tokens from the file, and starts with BOS.
		if l.Tok, err = tokenizer.LoadLlama2C(override, vocab); err != nil {
			return l, fmt.Errorf("-z: %w", err)
		}
		l.AddBOS = true
	case override != "":
		if l.Tok, err = tokenizer.Load(override); err != nil {
			return l, fmt.Errorf("-z: %w", err)
		}
	case v.Model == "":
		l.BOS, l.EOS = v.BOS, v.EOS
		return l, nil
	default:
		if l.Tok, err = tokenizer.NewGGUF(tokenizer.GGUFVocab(v)); err != nil {
			return l, fmt.Errorf("loading %s: %w", path, err)
		}
	}
	l.BOS, l.EOS = l.Tok.Special().BOS, l.Tok.Special().EOS
	return l, nil
}
