package server

import (
	"strings"
	"testing"

	"github.com/posformer/posformer/engine"
)

// --context-shift lets max_tokens run past the context (up to maxShiftedTokens); without it the
// same request is refused. The flags parse, and a bad --keep is refused.
func TestContextShiftServesPastTheContext(t *testing.T) {
	ts, s := startServer(t, decoderPath, func(c *config) { c.contextShift = &engine.ContextShift{Keep: 4} })
	limit := s.sched.Limit()
	req := map[string]any{"prompt": "func main() {", "max_tokens": limit + 40, "temperature": 0, "ignore_eos": true}
	status, out, _ := post(t, ts.URL+"/v1/completions", req)
	if status != 200 {
		t.Fatalf("status %d: %v", status, out)
	}
	u, _ := out["usage"].(map[string]any)
	if got, _ := u["completion_tokens"].(float64); int(got) != limit+40 {
		t.Errorf("%v completion tokens past a context of %d, want %d", u["completion_tokens"], limit, limit+40)
	}
	req["max_tokens"] = maxShiftedTokens + 1
	if status, _, _ := post(t, ts.URL+"/v1/completions", req); status != 400 {
		t.Errorf("max_tokens %d answered %d, want 400", maxShiftedTokens+1, status)
	}
	plain, _ := startServer(t, decoderPath, nil)
	req["max_tokens"] = limit + 40
	if status, _, _ := post(t, plain.URL+"/v1/completions", req); status != 400 {
		t.Errorf("without --context-shift, max_tokens past the context answered %d, want 400", status)
	}

	o, _, err := parseFlags([]string{"-m", decoderPath, "--context-shift", "--keep", "4"})
	if err != nil || o.shift() == nil || o.shift().Keep != 4 {
		t.Fatalf("--context-shift --keep 4: %v, %+v", err, o.shift())
	}
	if _, _, err := parseFlags([]string{"--keep", "-2"}); err == nil || !strings.Contains(err.Error(), "--keep") {
		t.Errorf("--keep -2: %v, want an error naming --keep", err)
	}
}
