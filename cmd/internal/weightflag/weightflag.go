// Package weightflag registers --weights, the type the weight matrices take in memory
// (converted at load: f32, bf16, q8_0 or q4_0, layers.WeightTypes), and reads it the same way
// in every command: no flag means the type the checkpoint stores.
//
// A command calls Register(fs) (or Var to land the value in a field of its options, with its
// own help text when it has more to say), then Type(value, model) once it knows the model.
package weightflag

import (
	"flag"
	"fmt"

	"github.com/posformer/posformer/engine"
	"github.com/posformer/posformer/layers"
	"github.com/posformer/posformer/layers/quant"
)

// Name is the flag's name.
const Name = "weights"

// Usage is the flag's help text.
const Usage = "type of the weight matrices in memory: " + layers.WeightTypes + " (default: as stored)"

// Register adds --weights to fs with Usage and returns where its value lands ("": as stored).
func Register(fs *flag.FlagSet) *string {
	p := new(string)
	Var(fs, p, Usage)
	return p
}

// Var adds --weights to fs with the help text usage ("": Usage), its value landing in p.
func Var(fs *flag.FlagSet, p *string, usage string) {
	if usage == "" {
		usage = Usage
	}
	fs.StringVar(p, Name, "", usage)
}

// Type parses a --weights value for the checkpoint at model: "" is the type it stores.
func Type(weights, model string) (quant.Type, error) {
	if weights == "" {
		return engine.StoredWeightType(model), nil
	}
	t, err := layers.ParseWeightType(weights)
	if err != nil {
		return 0, fmt.Errorf("--weights %w", err)
	}
	return t, nil
}
