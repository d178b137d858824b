// Package sampleflag registers llama.cpp's sampling flags on a command and checks them, so that
// cmd/infer and cmd/serve share their names, defaults and errors:
//
//	--temp T            temperature (0: greedy)
//	--top-k K           keep the K most likely tokens (0: off)
//	--top-p P           keep the smallest set whose probability reaches P (1: off)
//	--repeat-penalty R  divide the logits of the last --repeat-last-n tokens by R (1: off)
//	--repeat-last-n N   how many generated tokens the penalty looks back on
//
// The defaults are llama.cpp's but for the repeat penalty: 1.1 rather than off, because the
// project's byte-level models fall into runs of tabs without it.
package sampleflag

import (
	"flag"
	"fmt"
	"math"

	"github.com/posformer/posformer/engine"
)

// Register adds the flags to fs, their values landing in s (its Seed is the command's own);
// what prefixes each usage line ("default " for a server, whose requests may override them).
func Register(fs *flag.FlagSet, s *engine.Sampling, what string) {
	fs.Float64Var(&s.Temp, "temp", 0.8, what+"temperature (0: greedy)")
	fs.IntVar(&s.TopK, "top-k", 40, what+"top-k (0: off)")
	fs.Float64Var(&s.TopP, "top-p", 0.95, what+"top-p (1: off)")
	fs.Float64Var(&s.RepeatPenalty, "repeat-penalty", 1.1, what+"penalty on tokens repeated within the last --repeat-last-n (1: off)")
	fs.IntVar(&s.RepeatLastN, "repeat-last-n", 64, "tokens the repeat penalty looks back on")
}

// Check returns a one-line error naming the first flag out of its range.
func Check(s engine.Sampling) error {
	switch {
	case s.Temp < 0 || math.IsNaN(s.Temp):
		return fmt.Errorf("--temp must be >= 0, got %g", s.Temp)
	case s.TopK < 0:
		return fmt.Errorf("--top-k must be >= 0, got %d", s.TopK)
	case !(s.TopP > 0 && s.TopP <= 1):
		return fmt.Errorf("--top-p must be in (0, 1], got %g", s.TopP)
	case !(s.RepeatPenalty > 0):
		return fmt.Errorf("--repeat-penalty must be > 0, got %g", s.RepeatPenalty)
	case s.RepeatLastN < 0:
		return fmt.Errorf("--repeat-last-n must be >= 0, got %d", s.RepeatLastN)
	}
	return nil
}
