package sampleflag

import (
	"flag"
	"strings"
	"testing"

	"github.com/posformer/posformer/engine"
)

func TestDefaultsAndChecks(t *testing.T) {
	var s engine.Sampling
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	Register(fs, &s, "")
	if err := fs.Parse([]string{"--top-k", "7"}); err != nil {
		t.Fatal(err)
	}
	want := engine.Sampling{Temp: 0.8, TopK: 7, TopP: 0.95, RepeatPenalty: 1.1, RepeatLastN: 64}
	if s != want {
		t.Fatalf("parsed %+v, want %+v", s, want)
	}
	if err := Check(s); err != nil {
		t.Fatalf("defaults rejected: %v", err)
	}
	for _, c := range []struct {
		mutate func(*engine.Sampling)
		flag   string
	}{
		{func(s *engine.Sampling) { s.Temp = -1 }, "--temp"},
		{func(s *engine.Sampling) { s.TopK = -1 }, "--top-k"},
		{func(s *engine.Sampling) { s.TopP = 0 }, "--top-p"},
		{func(s *engine.Sampling) { s.TopP = 1.5 }, "--top-p"},
		{func(s *engine.Sampling) { s.RepeatPenalty = 0 }, "--repeat-penalty"},
		{func(s *engine.Sampling) { s.RepeatLastN = -1 }, "--repeat-last-n"},
	} {
		bad := want
		c.mutate(&bad)
		if err := Check(bad); err == nil || !strings.HasPrefix(err.Error(), c.flag+" must be") {
			t.Errorf("%+v: want an error naming %s, got %v", bad, c.flag, err)
		}
	}
}
