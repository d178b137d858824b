package tasks

import "github.com/posformer/posformer/engine"

// BOSID is the byte tokenizer's <s>. A model trained with a BOS token (cmd/train -bos) reads it
// first in every sequence, at position 0, the sequence's own tokens at positions 1..n: one
// token more than its length. NoPE's way of recovering positions leans on a fixed first
// token (Kazemnejad et al. 2023 train every task with one); the position hooks see nothing else.
const BOSID = 256

// PrependBOS returns the batch with BOS in front of every row: its position 0 (every other
// position moves up by one), its target the row's first input token for a decoder (the first
// byte is then predicted from BOS alone, as a language model with BOS does) and weight 0, so that
// the scored tokens, and what they are scored on, stay those of the batch without it.
func PrependBOS(b engine.Batch) engine.Batch {
	out := engine.Batch{}
	for i := range b.Inputs {
		first := int32(PadID)
		if len(b.Inputs[i]) > 0 {
			first = b.Inputs[i][0]
		}
		out.Inputs = append(out.Inputs, append([]int32{BOSID}, b.Inputs[i]...))
		out.Targets = append(out.Targets, append([]int32{first}, b.Targets[i]...))
		pos := make([]int32, len(b.Positions[i])+1)
		for j, p := range b.Positions[i] {
			pos[j+1] = p + 1
		}
		out.Positions = append(out.Positions, pos)
		out.Weights = append(out.Weights, append([]float32{0}, b.Weights[i]...))
	}
	return out
}

// WithBOS scores a model trained with -bos: every row it is given gets BOS in front, at
// position 0 and the row's positions moved up by one, and the logits of BOS are dropped, so that
// callers see one logit row per token they passed, as from any model.
func WithBOS(f Forwarder) Forwarder { return bosForwarder{f} }

type bosForwarder struct{ f Forwarder }

func (b bosForwarder) Forward(tokens, positions [][]int) ([][][]float32, error) {
	tk, ps := make([][]int, len(tokens)), make([][]int, len(positions))
	for i := range tokens {
		tk[i] = append([]int{BOSID}, tokens[i]...)
	}
	for i := range positions {
		ps[i] = make([]int, len(positions[i])+1)
		for j, p := range positions[i] {
			ps[i][j+1] = p + 1
		}
	}
	logits, err := b.f.Forward(tk, ps)
	if err != nil {
		return nil, err
	}
	for i := range logits {
		logits[i] = logits[i][1:]
	}
	return logits, nil
}
