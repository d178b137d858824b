package chat

import (
	"fmt"

	"github.com/posformer/posformer/tokenizer"
)

// Encode renders msgs with the template and tokenizes them: its markers are parsed as special
// tokens, the messages' text is not (a user cannot smuggle in control tokens). The prompt
// starts with bos (-1: none), once.
func (t Template) Encode(tok tokenizer.Tokenizer, msgs []Message, bos int) ([]int, error) {
	var ids []int
	for i, seg := range t.Render(msgs) {
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
