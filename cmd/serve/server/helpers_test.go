package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/posformer/posformer/engine"
)

// The shipped models, from this package's directory.
const (
	decoderPath = "../../../weights/rope-decoder"
	encoderPath = "../../../weights/sinusoidal-encoder"
)

// testOptions are the command's defaults for a test server (no warm-up: graphs compile on first
// use, which keeps short tests short).
func testOptions(t *testing.T, path string) *options {
	t.Helper()
	o, _, err := parseFlags([]string{"-m", path, "--warmup=false"})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

var (
	modelsMu sync.Mutex
	loaded   = map[string]*model{}
)

// loadTestModel loads a shipped model once per test binary per path. Tests that serve
// concurrently each get their own (an engine belongs to one scheduler).
func loadTestModel(t *testing.T, path string, fresh bool) *model {
	t.Helper()
	modelsMu.Lock()
	defer modelsMu.Unlock()
	if m, ok := loaded[path]; ok && !fresh {
		return m
	}
	m, err := loadModel(testOptions(t, path))
	if err != nil {
		t.Fatal(err)
	}
	if !fresh {
		loaded[path] = m
	}
	return m
}

// startServer serves a fresh copy of the model at path through httptest, with cfg edited by
// edit.
func startServer(t *testing.T, path string, edit func(*config)) (*httptest.Server, *server) {
	t.Helper()
	m := loadTestModel(t, path, true)
	cfg := testOptions(t, path).config()
	if edit != nil {
		edit(&cfg)
	}
	base, cancel := context.WithCancel(context.Background())
	s := newServer(base, m, cfg)
	ts := httptest.NewServer(s)
	t.Cleanup(func() {
		cancel()
		ts.Close()
		s.close()
	})
	return ts, s
}

// post sends body (marshalled unless it is a string) and returns the status, the decoded JSON
// answer and the headers.
func post(t *testing.T, url string, body any) (int, map[string]any, http.Header) {
	t.Helper()
	data, ok := body.(string)
	if !ok {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		data = string(b)
	}
	resp, err := http.Post(url, "application/json", strings.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("POST %s: the answer is not a JSON object: %v: %q", url, err, raw)
	}
	return resp.StatusCode, out, resp.Header
}

func get(t *testing.T, url string) map[string]any {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

// stream posts a streaming request and returns the response; events reads its events.
func stream(t *testing.T, ctx context.Context, url string, body any) *http.Response {
	t.Helper()
	data, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// sseReader reads "data: ..." events; next returns the payload, or "" at the end.
type sseReader struct{ sc *bufio.Scanner }

func newSSEReader(r io.Reader) *sseReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	return &sseReader{sc}
}

func (r *sseReader) next(t *testing.T) string {
	t.Helper()
	for r.sc.Scan() {
		line := r.sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("stream line %q is not a data event", line)
		}
		return data
	}
	return ""
}

// readStream collects a whole stream: the decoded chunks, and whether it ended with [DONE].
func readStream(t *testing.T, resp *http.Response) (chunks []map[string]any, done bool) {
	t.Helper()
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("stream Content-Type %q, want text/event-stream", ct)
	}
	r := newSSEReader(resp.Body)
	for {
		data := r.next(t)
		switch data {
		case "":
			return chunks, false
		case "[DONE]":
			if extra := r.next(t); extra != "" {
				t.Fatalf("event %q after [DONE]", extra)
			}
			return chunks, true
		}
		var c map[string]any
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("event %q is not JSON: %v", data, err)
		}
		chunks = append(chunks, c)
	}
}

// streamText joins the text of a stream's chunks (completions' text, chat's delta content)
// and returns the finish reason of the last choice.
func streamText(t *testing.T, chunks []map[string]any) (text, finish string) {
	t.Helper()
	var b strings.Builder
	for _, c := range chunks {
		if e, ok := c["error"]; ok {
			t.Fatalf("stream error event: %v", e)
		}
		for _, ch := range c["choices"].([]any) {
			ch := ch.(map[string]any)
			if s, ok := ch["text"].(string); ok {
				b.WriteString(s)
			}
			if d, ok := ch["delta"].(map[string]any); ok {
				if s, ok := d["content"].(string); ok {
					b.WriteString(s)
				}
			}
			if f, ok := ch["finish_reason"].(string); ok {
				finish = f
			}
		}
	}
	return b.String(), finish
}

// answerText is the text and finish reason of a whole (not streamed) answer.
func answerText(t *testing.T, out map[string]any) (text, finish string) {
	t.Helper()
	choices, ok := out["choices"].([]any)
	if !ok || len(choices) != 1 {
		t.Fatalf("answer has no single choice: %v", out)
	}
	c := choices[0].(map[string]any)
	if s, ok := c["text"].(string); ok {
		text = s
	} else {
		text = c["message"].(map[string]any)["content"].(string)
	}
	finish, _ = c["finish_reason"].(string)
	return text, finish
}

// reference is an independent engine that generates one sequence at a time, as cmd/infer does.
type reference struct {
	m *model
}

func newReference(t *testing.T) *reference {
	return &reference{m: loadTestModel(t, decoderPath, true)}
}

// generate returns the text engine.Generate produces for prompt with these settings, the
// number of tokens and the finish reason.
func (r *reference) generate(t *testing.T, prompt []int, max int, sp engine.Sampling, stop []int) (string, int, string) {
	t.Helper()
	sm, err := engine.NewSampler(sp)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int
	st, err := r.m.e.Generate(prompt, max, sm, stop, func(tok int) { ids = append(ids, tok) })
	if err != nil {
		t.Fatal(err)
	}
	finish := "length"
	if st.StopReason == "stop token" {
		finish = "stop"
	}
	return r.m.tok.Decode(ids), len(ids), finish
}

// waitFor polls cond every few milliseconds for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// span is n positions from from, as the scheduler feeds them.
func span(from, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = from + i
	}
	return out
}
