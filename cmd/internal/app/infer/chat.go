package infer

// Conversation mode (-cnv, posformer chat), as llama-cli's: each line read is a turn, the
// model's reply follows it, and the KV cache is kept between turns. A turn feeds only its own
// tokens to the session (the previous turns are in the cache already), so a turn costs what
// it adds, not the whole conversation. A chat model (one whose checkpoint carries a chat
// template: a GGUF file's tokenizer.chat_template, a Hugging Face folder's
// tokenizer_config.json) gets each turn wrapped by its template (tokenizer/chat) and its reply
// ends at the template's end-of-turn token; a base model (the shipped decoders) continues
// the text as typed. -p is, as in llama-cli, the system message of a chat model (a base model's
// text before the first line). "/exit" or the end of input (Ctrl-D) ends the conversation.
// With --context-shift, a full cache drops old tokens as generation does (StreamingLLM: the
// first --keep stay) and the conversation goes on; without it, a full cache ends it.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/posformer/posformer/cmd/internal/memlimit"
	"github.com/posformer/posformer/cmd/internal/sampleflag"
	"github.com/posformer/posformer/engine"
	"github.com/posformer/posformer/models/gguf"
	"github.com/posformer/posformer/models/hf"
	"github.com/posformer/posformer/tokenizer"
	"github.com/posformer/posformer/tokenizer/chat"
)

// chatModel is what a conversation needs besides the engine.
type chatModel struct {
	tok      tokenizer.Tokenizer
	bos      int // prepended to the first turn (-1: none)
	stop     []int
	template *chat.Template // nil: a base model, continued as typed
	system   string         // -p: a chat model's system message, or a base model's text before the first line
}

// turn is what one turn did, for the summary and for tests: the tokens fed to the session
// (the new text, plus the last reply's token not yet in the cache), the tokens generated,
// and the session's length after the turn.
type turn struct {
	fed, generated, used int
	shifts               int // context shifts during the turn (--context-shift)
}

func runChat(o options, in io.Reader, out, errw io.Writer) error {
	if engine.IsLlama2C(o.model) && !gguf.IsFile(o.model) {
		return fmt.Errorf("-cnv needs a model that carries its tokenizer (a checkpoint folder or a GGUF file); %s is a llama2.c file", o.model)
	}
	if err := sampleflag.Check(o.sampling); err != nil {
		return err
	}
	memlimit.ForLoading(engine.CheckpointBytes(o.model))
	start := time.Now()
	e, err := o.load()
	if err != nil {
		return err
	}
	if !e.Model.Config.Causal() {
		return fmt.Errorf("%s is an encoder: it fills masks and cannot chat; use a decoder", o.model)
	}
	m, err := o.chatModel(e)
	if err != nil {
		return err
	}
	memlimit.Set(memlimit.Base(), e.SessionBytes(1))
	kind := "base model: each line is continued as typed"
	if m.template != nil {
		kind = "chat template " + m.template.Name
	}
	fmt.Fprintf(errw, "infer: %s loaded in %.2f s (%s); /exit or Ctrl-D ends\n", o.name, time.Since(start).Seconds(), kind)
	turns, err := converse(e, m, o, in, out)
	if len(turns) > 0 {
		last := turns[len(turns)-1]
		fmt.Fprintf(errw, "infer: %d turns · %d tokens in the KV cache · %d graphs compiled · %s\n", len(turns), last.used, e.Compilations(), engine.BackendSummary(e.Backend))
	}
	return err
}

// chatModel loads the tokenizer, the stop tokens and the chat template of o.model.
func (o options) chatModel(e *engine.Engine) (chatModel, error) {
	m := chatModel{bos: -1}
	var jinja string
	if gguf.IsFile(o.model) {
		l, err := ggufTokenizer(o, e.Model.Config.VocabSize)
		if err != nil {
			return m, err
		}
		if l.Tok == nil {
			return m, fmt.Errorf("%s has no vocabulary: pass a tokenizer with -z", o.model)
		}
		m.tok, jinja = l.Tok, l.ChatTemplate
		if l.AddBOS && l.BOS >= 0 {
			m.bos = l.BOS
		}
		if l.EOS >= 0 {
			m.stop = append(m.stop, l.EOS)
		}
	} else {
		tok, err := loadTokenizer(o.model, e.Model.Config)
		if err != nil {
			return m, err
		}
		m.tok = tok
		if eos := tok.Special().EOS; eos >= 0 {
			m.stop = append(m.stop, eos)
		}
		if hf.IsDir(o.model) {
			if jinja, err = chat.HFTemplate(o.model); err != nil {
				return m, err
			}
		}
	}
	if o.ignoreEOS {
		m.stop = nil
	}
	if o.set["p"] || o.set["prompt"] {
		m.system = o.prompt
	}
	if jinja != "" {
		t := chat.Pick(jinja)
		m.template = &t
		m.stop = append(m.stop, t.EndOfTurnIDs(m.tok)...)
	}
	return m, nil
}

// converse runs the conversation: one turn per line of in until "/exit" or the end of in.
func converse(e *engine.Engine, m chatModel, o options, in io.Reader, out io.Writer) ([]turn, error) {
	sm, err := o.sampler()
	if err != nil {
		return nil, err
	}
	limit := e.SequenceLimit()
	if o.contextShift {
		if err := e.CanShift(); err != nil {
			return nil, err
		}
	}
	s := e.NewSession(1)
	defer s.Close()
	if err := s.Reserve(limit); err != nil {
		return nil, err
	}
	// makeRoom frees the cache for need more tokens with --context-shift, as generation does
	// (engine.ContextShift: the first --keep tokens stay, half of the rest goes; --keep -1
	// keeps the first turn), and counts the shifts in t.
	firstTurn := 0
	makeRoom := func(need int, t *turn) error {
		if s.Used[0]+need < limit {
			return nil
		}
		if !o.contextShift {
			return fmt.Errorf("the conversation has filled the context of %d tokens; start again, with a larger -c if the model allows, or add --context-shift to drop old turns", limit)
		}
		keep, discard, err := engine.ContextShift{Keep: o.keep}.Resolve(limit, firstTurn)
		if err != nil {
			return err
		}
		for s.Used[0]+need >= limit {
			d := min(discard, s.Used[0]-keep)
			if d <= 0 {
				return fmt.Errorf("a turn of %d tokens does not fit in the context of %d tokens with %d kept; type less at a time, lower --keep or raise -c", need, limit, keep)
			}
			if err := s.Shift(0, keep, d); err != nil {
				return err
			}
			t.shifts++
		}
		return nil
	}
	var (
		turns   []turn
		pending []int // chosen tokens not yet in the cache: the last reply's last one
		r       = bufio.NewReader(in)
	)
	for {
		fmt.Fprint(out, "\n> ")
		line, readErr := r.ReadString('\n')
		if readErr != nil && !errors.Is(readErr, io.EOF) {
			return turns, fmt.Errorf("reading standard input: %w", readErr)
		}
		text := strings.TrimRight(line, "\r\n")
		if text == "/exit" || (line == "" && readErr != nil) {
			fmt.Fprintln(out)
			return turns, nil
		}
		system := ""
		if s.Used[0] == 0 && len(pending) == 0 {
			system = m.system
		}
		ids, err := m.encodeTurn(system, text, line, s.Used[0] == 0 && len(pending) == 0)
		if err != nil {
			return turns, err
		}
		feed := append(pending, ids...)
		pending = nil
		if len(feed) == 0 {
			continue
		}
		t := turn{fed: len(feed)}
		if err := makeRoom(len(feed), &t); err != nil {
			return turns, err
		}
		if firstTurn == 0 {
			firstTurn = len(feed)
		}
		last, err := s.AppendLast([][]int{feed}, [][]int{positions(s.Used[0], len(feed))})
		if err != nil {
			return turns, err
		}
		logits := last[0]
		emit := printText(out, m.tok, feed)
		for o.n < 0 || t.generated < o.n {
			tok := sm.Next(logits)
			if slices.Contains(m.stop, tok) {
				if m.template != nil {
					pending = []int{tok} // the end of the turn belongs to the conversation
				}
				break
			}
			emit(tok)
			t.generated++
			if (s.Used[0]+1 >= limit && !o.contextShift) || (o.n >= 0 && t.generated >= o.n) {
				pending = []int{tok}
				break
			}
			if err := makeRoom(1, &t); err != nil {
				return turns, err
			}
			if last, err = s.AppendLast([][]int{{tok}}, [][]int{{s.Used[0]}}); err != nil {
				return turns, err
			}
			logits = last[0]
		}
		t.used = s.Used[0]
		turns = append(turns, t)
		if readErr != nil {
			fmt.Fprintln(out)
			return turns, nil
		}
	}
}

// encodeTurn is the tokens of one typed line: for a chat model, the user's message in the
// template, after the system message on the first turn; for a base model, the line as typed,
// newline included, after the -p text on the first turn. The first turn starts with BOS where
// the model wants one.
func (m chatModel) encodeTurn(system, text, line string, first bool) ([]int, error) {
	bos := -1
	if first {
		bos = m.bos
	}
	if m.template != nil {
		if text == "" {
			return nil, nil
		}
		var msgs []chat.Message
		if system != "" {
			msgs = append(msgs, chat.Message{Role: "system", Content: system})
		}
		return m.template.Encode(m.tok, append(msgs, chat.Message{Role: "user", Content: text}), bos)
	}
	ids, err := m.tok.Encode(system + line)
	if err != nil {
		return nil, err
	}
	if bos >= 0 {
		ids = append([]int{bos}, ids...)
	}
	return ids, nil
}

// positions are n consecutive positions from from: where a turn's tokens go in the sequence.
func positions(from, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = from + i
	}
	return out
}
