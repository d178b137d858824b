package infer

// Running a GGUF file as llama.cpp's llama-cli does: the file carries its tokenizer
// (tokenizer.ggml.*, read by cmd/internal/gguftok), so `infer -m model.gguf -p "..."` needs
// nothing else. The prompt starts with BOS when the file says so (add_bos_token; llama.cpp's
// default is yes for SentencePiece vocabularies, no for GPT-2 ones), generation stops at the
// file's EOS, and -z replaces the file's tokenizer (a llama2.c tokenizer.bin, read as run.c
// reads it, or any tokenizer cmd/tokenize takes). A file without a vocabulary takes
// --prompt-ids and prints ids.

import (
	"fmt"
	"io"
	"time"

	"github.com/posformer/posformer/cmd/internal/gguftok"
	"github.com/posformer/posformer/cmd/internal/memlimit"
	"github.com/posformer/posformer/engine"
)

func runGGUF(o options, out io.Writer) error {
	memlimit.ForLoading(engine.CheckpointBytes(o.model))
	start := time.Now()
	e, err := o.load()
	if err != nil {
		return err
	}
	sp, err := ggufTokenizer(o, e.Model.Config.VocabSize)
	if err != nil {
		return err
	}
	tok := sp.Tok
	load := time.Since(start)
	memlimit.Set(memlimit.Base(), e.SessionBytes(1))

	var prompt []int
	if sp.AddBOS && sp.BOS >= 0 {
		prompt = append(prompt, sp.BOS)
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
	if sp.EOS >= 0 && !o.ignoreEOS {
		stop = append(stop, sp.EOS)
	}

	emit := printIDs(out)
	if tok != nil && o.promptIDs == "" {
		fmt.Fprint(out, o.prompt)
		emit = printText(out, tok, prompt)
	}
	st, err := o.generate(e, prompt, o.n, sm, stop, emit)
	fmt.Fprintln(out)
	if err != nil {
		return err
	}
	printStats(load, st, e)
	return nil
}

// ggufTokenizer is -z's tokenizer, else the file's (Tok nil when it has none), checked against
// the model: a file's own vocabulary must match its token_embd.weight, and a file without one
// must name BOS and EOS within it.
func ggufTokenizer(o options, vocab int) (gguftok.Loaded, error) {
	l, err := gguftok.Load(o.model, o.tokenizer, vocab)
	switch {
	case err != nil:
		return l, err
	case l.Tok == nil:
		if l.BOS >= vocab || l.EOS >= vocab {
			return l, fmt.Errorf("loading %s: BOS %d or EOS %d is not below the vocabulary size %d", o.model, l.BOS, l.EOS, vocab)
		}
		return l, nil
	case o.tokenizer == "" && l.Tok.VocabSize() != vocab:
		return l, fmt.Errorf("loading %s: the vocabulary has %d tokens but token_embd.weight %d rows", o.model, l.Tok.VocabSize(), vocab)
	case l.Tok.VocabSize() > vocab:
		return l, fmt.Errorf("-z: the tokenizer has %d tokens but the model only %d", l.Tok.VocabSize(), vocab)
	}
	return l, nil
}

// printIDs prints each generated id, for a model without a tokenizer.
func printIDs(out io.Writer) func(int) {
	return func(t int) { fmt.Fprintf(out, "%d ", t) }
}
