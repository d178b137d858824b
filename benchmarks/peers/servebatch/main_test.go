package main

import (
	"strings"
	"testing"
)

// Bad flags are refused with an error naming the flag, before any model is read.
func TestRunRefusesBadFlags(t *testing.T) {
	for _, c := range []struct {
		model, streams string
		prompt, gen    int
		want           string
	}{
		{"", "1", 16, 128, "-m"},
		{"missing.gguf", "1,x", 16, 128, "-streams"},
		{"missing.gguf", "0", 16, 128, "-streams"},
		{"missing.gguf", "4", 0, 128, "-prompt"},
		{"missing.gguf", "4", 16, 0, "-gen"},
	} {
		err := run(c.model, "cpu", c.streams, c.prompt, c.gen, 1)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("run(%q, streams %q, prompt %d, gen %d) = %v, want an error naming %s", c.model, c.streams, c.prompt, c.gen, err, c.want)
		}
	}
}
