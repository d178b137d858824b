package main

// Running a GGUF file as llama.cpp's llama-cli does: the file carries its tokenizer
// (tokenizer.ggml.*), so `infer -m model.gguf -p "..."` needs nothing else. The prompt starts with
// BOS when the file says so (add_bos_token; llama.cpp's default is yes for SentencePiece
// vocabularies, no for GPT-2 ones), generation stops at the file's EOS, and -z replaces the
// file's tokenizer (a llama2.c tokenizer.bin, read as run.c reads it, or any tokenizer
// cmd/tokenize takes). A file without a vocabulary takes --prompt-ids and prints ids.

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/posformer/posformer/cmd/internal/memlimit"
	"github.com/posformer/posformer/engine"
	"github.com/posformer/posformer/models/gguf"
	"github.com/posformer/posformer/tokenizer"
)

func runGGUF(o options, out io.Writer) error {
	memlimit.ForLoading(engine.CheckpointBytes(o.model))
	start := time.Now()
	e, err := o.load()
	if err != nil {
		return err
	}
	tok, sp, err := ggufTokenizer(o, e.Model.Config.VocabSize)
	if err != nil {
		return err
	}
	load := time.Since(start)
	memlimit.Set(memlimit.Base(), e.KVBytes(1))

	var prompt []int
	if sp.addBOS && sp.bos >= 0 {
		prompt = append(prompt, sp.bos)
	}
	switch {
	case o.promptIDs != "" && (o.set["p"] || o.set["prompt"]):
		return fmt.Errorf("give the prompt either as text (-p) or as ids (--prompt-ids), not both")
	case o.promptIDs != "":
		ids, err := parseIDs(o.promptIDs, e.Model.Config.VocabSize)
		if err != nil {
			return err
		}
		prompt = append(prompt, ids...)
	case tok == nil:
		return fmt.Errorf("%s has no vocabulary: pass a tokenizer with -z, or the prompt as ids with --prompt-ids", o.model)
	default:
		ids, err := tok.Encode(o.prompt)
		if err != nil {
			return err
		}
		prompt = append(prompt, ids...)
	}
	if len(prompt) == 0 {
		return fmt.Errorf("the prompt is empty and the model adds no BOS: give a prompt with -p")
	}
	if !o.set["repeat-penalty"] {
		// llama.cpp's default (repeat penalty off since 2024); 1.1 is for the project's own
		// byte-level models, which fall into runs of tabs without it.
		o.sampling.RepeatPenalty = 1
	}
	sm, err := o.sampler()
	if err != nil {
		return err
	}
	var stop []int
	if sp.eos >= 0 && !o.ignoreEOS {
		stop = append(stop, sp.eos)
	}

	emit := printIDs(out)
	if tok != nil && o.promptIDs == "" {
		fmt.Fprint(out, o.prompt)
		emit = printText(out, tok, prompt)
	}
	st, err := e.Generate(prompt, o.n, sm, stop, emit)
	fmt.Fprintln(out)
	if err != nil {
		return err
	}
	printStats(load, st, e)
	return nil
}

// specials are what generation needs of a tokenizer: whether a prompt starts with BOS, and
// the ids of BOS and EOS (-1: none), which a file without a vocabulary may still name.
type specials struct {
	addBOS   bool
	bos, eos int
}

// ggufTokenizer is -z's tokenizer, else the file's (nil when it has none).
func ggufTokenizer(o options, vocab int) (tokenizer.Tokenizer, specials, error) {
	none := specials{bos: -1, eos: -1}
	f, err := gguf.Open(o.model)
	if err != nil {
		return nil, none, fmt.Errorf("loading %s: %w", o.model, err)
	}
	defer f.Close()
	v, err := gguf.ReadVocab(f)
	if err != nil {
		return nil, none, fmt.Errorf("loading %s: %w", o.model, err)
	}
	var tok tokenizer.Tokenizer
	addBOS := v.AddBOS
	switch {
	case strings.HasSuffix(o.tokenizer, ".bin"):
		// run.c reads exactly vocab_size tokens from the file, and starts with BOS.
		if tok, err = tokenizer.LoadLlama2C(o.tokenizer, vocab); err != nil {
			return nil, none, fmt.Errorf("-z: %w", err)
		}
		addBOS = true
	case o.tokenizer != "":
		if tok, err = tokenizer.Load(o.tokenizer); err != nil {
			return nil, none, fmt.Errorf("-z: %w", err)
		}
	case v.Model == "":
		if v.BOS >= vocab || v.EOS >= vocab {
			return nil, none, fmt.Errorf("loading %s: BOS %d or EOS %d is not below the vocabulary size %d", o.model, v.BOS, v.EOS, vocab)
		}
		return nil, specials{addBOS: v.AddBOS, bos: v.BOS, eos: v.EOS}, nil
	default:
		if tok, err = tokenizer.NewGGUF(tokenizer.GGUFVocab(v)); err != nil {
			return nil, none, fmt.Errorf("loading %s: %w", o.model, err)
		}
		if tok.VocabSize() != vocab {
			return nil, none, fmt.Errorf("loading %s: the vocabulary has %d tokens but token_embd.weight %d rows", o.model, tok.VocabSize(), vocab)
		}
	}
	if tok.VocabSize() > vocab {
		return nil, none, fmt.Errorf("-z: the tokenizer has %d tokens but the model only %d", tok.VocabSize(), vocab)
	}
	return tok, specials{addBOS: addBOS, bos: tok.Special().BOS, eos: tok.Special().EOS}, nil
}

// printIDs prints each generated id, for a model without a tokenizer.
func printIDs(out io.Writer) func(int) {
	return func(t int) { fmt.Fprintf(out, "%d ", t) }
}
