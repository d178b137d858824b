package chat

import (
	"fmt"
	"slices"
	"strings"

	"github.com/posformer/posformer/tokenizer"
)

// Encode renders msgs with the template, the assistant's turn opened, and tokenizes them (see
// EncodeWith).
func (t Template) Encode(tok tokenizer.Tokenizer, msgs []Message, bos int) ([]int, error) {
	return t.EncodeWith(tok, msgs, bos, Options{AddGenerationPrompt: true})
}

// EncodeWith renders msgs with the template and tokenizes them: its markers are parsed as
// special tokens, the messages' text is not (a user cannot smuggle in control tokens). The
// prompt starts with bos (-1: none), once.
func (t Template) EncodeWith(tok tokenizer.Tokenizer, msgs []Message, bos int, o Options) ([]int, error) {
	segs, err := t.Apply(msgs, o)
	if err != nil {
		return nil, err
	}
	if t.program != nil && len(segs) == 1 && segs[0].Special { // a Jinja rendering, not a fallback
		segs = splitText(tok, segs[0].Text, msgs)
	}
	var ids []int
	for i, seg := range segs {
		part, err := tokenizer.EncodeWith(tok, seg.Text, tokenizer.EncodeOptions{ParseSpecial: seg.Special})
		if err != nil {
			return nil, fmt.Errorf("tokenizing the messages: %w", err)
		}
		// Templates that write BOS themselves (Llama 2 and 3, Gemma) must not get a second.
		if i == 0 && bos >= 0 && !(len(part) > 0 && part[0] == bos) {
			ids = append(ids, bos)
		}
		ids = append(ids, part...)
	}
	return ids, nil
}

// EndOfTurnIDs are the ids of the template's end-of-turn tokens (<|im_end|>, <|eot_id|>, ...)
// that tok has as one token each: sampling one ends a reply.
func (t Template) EndOfTurnIDs(tok tokenizer.Tokenizer) []int {
	var out []int
	for _, lit := range t.EndOfTurn {
		if id, ok := specialID(tok, lit); ok {
			out = append(out, id)
		}
	}
	return out
}

// specialID is the id of a special-token literal such as "<|im_end|>", when the tokenizer has
// it as one token.
func specialID(tok tokenizer.Tokenizer, literal string) (int, bool) {
	ids, err := tokenizer.EncodeWith(tok, literal, tokenizer.EncodeOptions{ParseSpecial: true})
	if err != nil || len(ids) != 1 {
		return 0, false
	}
	return ids[0], true
}

// splitText finds, in a Jinja rendering, the text of the messages that hold a special-token
// literal, so that Encode keeps it text. The template's output is one string, so the text is
// found by searching each such message's content (or, as templates trim it, its trimmed
// content) after the previous one; text the template rewrote otherwise (Qwen3 splits an
// assistant's <think> block off) is not found and is parsed like the markup. Messages without
// a special-token literal tokenize the same either way and are left in the markup, so that
// the common prompt is one piece, tokenized as Hugging Face and llama.cpp tokenize it.
func splitText(tok tokenizer.Tokenizer, rendered string, msgs []Message) []Segment {
	var out []Segment
	at := 0
	for _, m := range msgs {
		if !holdsSpecial(tok, m.Content) {
			continue
		}
		for _, text := range []string{m.Content, strings.TrimSpace(m.Content)} {
			i := strings.Index(rendered[at:], text)
			if i < 0 || text == "" {
				continue
			}
			if i > 0 {
				out = append(out, Segment{Text: rendered[at : at+i], Special: true})
			}
			out = append(out, Segment{Text: text})
			at += i + len(text)
			break
		}
	}
	if at < len(rendered) {
		out = append(out, Segment{Text: rendered[at:], Special: true})
	}
	return out
}

// holdsSpecial reports whether text encodes differently when its special-token literals are
// parsed.
func holdsSpecial(tok tokenizer.Tokenizer, text string) bool {
	plain, err1 := tokenizer.EncodeWith(tok, text, tokenizer.EncodeOptions{})
	special, err2 := tokenizer.EncodeWith(tok, text, tokenizer.EncodeOptions{ParseSpecial: true})
	return err1 == nil && err2 == nil && !slices.Equal(plain, special)
}
