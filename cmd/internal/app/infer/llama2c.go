package infer

// Running a llama2.c checkpoint as llama2.c's run.c does (github.com/karpathy/llama2.c, run.c:
// main and generate): the prompt is encoded with BOS (id 1) first, -n counts steps (positions,
// prompt included; 0 or more than seq_len means seq_len), generation stops early when the model
// emits BOS, and every token after BOS is printed through run.c's decode and safe_printf, the
// prompt's own tokens included. Flags not given take run.c's defaults: temperature 1, top-p 0.9,
// no top-k, no repetition penalty, 256 steps, empty prompt. Greedy (--temp 0) output equals
// run.c's; sampled output does not (run.c's xorshift generator is not reproduced).
//
// Without -z there is no tokenizer (stories260K's tok512.bin, say, is not at hand): the prompt
// is given as ids with --prompt-ids and the ids are printed, space-separated.

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/posformer/posformer/cmd/internal/intlist"
	"github.com/posformer/posformer/cmd/internal/memlimit"
	"github.com/posformer/posformer/engine"
	"github.com/posformer/posformer/tokenizer"
)

// run.c's defaults for flags not given.
const (
	runcSteps = 256
	runcTemp  = 1.0
	runcTopP  = 0.9
	runcBOS   = 1
)

func runLlama2C(o options, out io.Writer) error {
	given := func(names ...string) bool {
		for _, n := range names {
			if o.set[n] {
				return true
			}
		}
		return false
	}
	if !given("temp") {
		o.sampling.Temp = runcTemp
	}
	if !given("top-p") {
		o.sampling.TopP = runcTopP
	}
	if !given("top-k") {
		o.sampling.TopK = 0
	}
	if !given("repeat-penalty") {
		o.sampling.RepeatPenalty = 1
	}
	if !given("n", "n-predict") {
		o.n = runcSteps
	}
	textPrompt := given("p", "prompt")
	if !textPrompt {
		o.prompt = ""
	}
	switch {
	case textPrompt && o.promptIDs != "":
		return fmt.Errorf("give the prompt either as text (-p) or as ids (--prompt-ids), not both")
	case textPrompt && o.prompt != "" && o.tokenizer == "":
		return fmt.Errorf("a text prompt needs the model's tokenizer: pass -z tokenizer.bin, or give token ids with --prompt-ids")
	}

	memlimit.ForLoading(engine.CheckpointBytes(o.model))
	start := time.Now()
	e, err := o.load()
	if err != nil {
		return err
	}
	memlimit.Set(memlimit.Base(), e.SessionBytes(1))
	vocab := e.Model.Config.VocabSize
	var tok *tokenizer.Llama2C
	if o.tokenizer != "" {
		// run.c reads exactly vocab_size tokens from the file.
		if tok, err = tokenizer.LoadLlama2C(o.tokenizer, vocab); err != nil {
			return fmt.Errorf("-z: %w", err)
		}
	}
	load := time.Since(start)

	prompt := []int{runcBOS}
	if o.promptIDs != "" {
		ids, err := parseIDs(o.promptIDs, vocab)
		if err != nil {
			return err
		}
		prompt = append(prompt, ids...)
	} else if tok != nil {
		ids, err := tok.Encode(o.prompt)
		if err != nil {
			return err
		}
		prompt = append(prompt, ids...)
	}

	steps := o.n
	if steps <= 0 || steps > e.Model.Config.MaxSeqLen {
		steps = e.Model.Config.MaxSeqLen
	}
	if steps > e.Capacity {
		return fmt.Errorf("-n %d steps exceed the context size %d; raise -c or lower -n", steps, e.Capacity)
	}
	if len(prompt) > steps {
		return fmt.Errorf("the prompt is %d tokens with BOS but -n allows %d steps; raise -n or shorten the prompt", len(prompt), steps)
	}

	sm, err := o.sampler()
	if err != nil {
		return err
	}

	prev := runcBOS
	emit := func(t int) {
		if tok == nil {
			fmt.Fprintf(out, "%d ", t)
		} else {
			safePrint(out, tok.Piece(prev, t))
		}
		prev = t
	}
	for _, t := range prompt[1:] {
		emit(t)
	}
	// run.c runs steps positions; the last sampled token is printed but never fed back.
	stop := []int{runcBOS}
	if o.ignoreEOS {
		stop = nil
	}
	st, err := o.generate(e, prompt, steps-len(prompt)+1, sm, stop, emit)
	fmt.Fprintln(out)
	if err != nil {
		return err
	}
	printStats(load, st, e)
	return nil
}

// parseIDs reads "5,17,300" as token ids, each in [0, vocab).
func parseIDs(s string, vocab int) ([]int, error) {
	ids, bad, ok := intlist.Parse(s, func(id int) bool { return id >= 0 && id < vocab })
	if !ok {
		return nil, fmt.Errorf("--prompt-ids: %q is not a token id in [0, %d); give comma-separated ids such as 5,17,300", bad, vocab)
	}
	return ids, nil
}

// safePrint is run.c's safe_printf: a piece that is one byte is printed only if it is a
// printable ASCII character or whitespace, since raw byte pieces may be control codes.
func safePrint(out io.Writer, piece string) {
	if piece == "" {
		return
	}
	if len(piece) == 1 {
		c := piece[0]
		if !(c >= 0x20 && c < 0x7f) && !strings.ContainsRune(" \t\n\v\f\r", rune(c)) {
			return
		}
	}
	io.WriteString(out, piece)
}
