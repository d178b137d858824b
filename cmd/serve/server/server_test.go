package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/posformer/posformer/tokenizer/chat"
)

// prompts are Go fragments of different lengths, the shipped decoder's kind of text; the last
// ones are longer than the test's prefill chunk, so they join over several steps.
var prompts = []string{
	"func main() {", "package main\n\nimport (\n", "for i := 0; i < n; i++ {", "if err != nil {\n\treturn",
	"type Reader interface {\n", "// Copy copies from src to dst", "x := make([]byte, ", "switch v := x.(type) {\n",
	"defer f.Close()\n", "go func() {\n", "var buf bytes.Buffer\n", "return fmt.Errorf(\"",
	"func (s *Server) Serve(l net.Listener) error {\n\tdefer l.Close()\n",
	"// Package strings implements simple functions to manipulate UTF-8 encoded strings.\npackage strings\n\n",
	"func TestMain(m *testing.M) {\n\tflag.Parse()\n\tos.Exit(m.Run())\n}\n\nfunc TestAdd(t *testing.T) {\n",
	"const (\n\tSeekStart   = 0 // seek relative to the origin of the file\n\tSeekCurrent = 1\n",
}

// Sixteen concurrent clients, each with its own prompt, length, settings and form (completion
// or chat, whole or streamed), each get exactly the continuation engine.Generate (cmd/infer's
// path) gives for that prompt on its own, greedy or sampled with the same seed. With 4 rows
// the others wait and join as rows free up; with 16 they all decode together. Prompts longer
// than the prefill chunk (16 tokens here) take several steps to join.
func TestConcurrentClientsGetTheirOwnContinuation(t *testing.T) {
	ref := newReference(t)
	for _, parallel := range []int{4, 16} {
		t.Run(fmt.Sprintf("parallel=%d", parallel), func(t *testing.T) {
			ts, s := startServer(t, decoderPath, func(c *config) { c.parallel, c.chunk = parallel, 16 })
			// The requests and their expected answers, computed one at a time beforehand (an
			// engine serves one goroutine).
			type client struct {
				url          string
				body         map[string]any
				prompt       int // tokens
				want, finish string
				n            int
			}
			clients := make([]client, len(prompts))
			for i, p := range prompts {
				c := &clients[i]
				c.body = map[string]any{"max_tokens": 20 + 3*i, "temperature": 0}
				sp := s.cfg.defaults
				sp.Temp = 0
				if i%4 == 3 { // sampled, seeded
					c.body["temperature"], c.body["seed"], c.body["top_k"] = 0.9, 100+i, 20
					sp.Temp, sp.Seed, sp.TopK = 0.9, uint64(100+i), 20
				}
				var ids []int
				var err error
				if i%3 == 1 {
					c.url = ts.URL + "/v1/chat/completions"
					c.body["messages"] = []map[string]string{{"role": "user", "content": p}}
					ids, err = ref.m.encodeChat([]chat.Message{{Role: "user", Content: p}})
				} else {
					c.url = ts.URL + "/v1/completions"
					c.body["prompt"] = p
					ids, err = ref.m.encodePrompt(p)
				}
				if err != nil {
					t.Fatal(err)
				}
				if i%2 == 0 {
					c.body["stream"] = true
					c.body["stream_options"] = map[string]any{"include_usage": true}
				}
				c.prompt = len(ids)
				c.want, c.n, c.finish = ref.generate(t, ids, 20+3*i, sp, ref.m.stop)
			}
			var wg sync.WaitGroup
			for i, c := range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					var got, finish string
					if c.body["stream"] == true {
						chunks, done := readStream(t, stream(t, context.Background(), c.url, c.body))
						if !done {
							t.Errorf("client %d: the stream did not end with [DONE]", i)
						}
						got, finish = streamText(t, chunks)
						if u, ok := chunks[len(chunks)-1]["usage"].(map[string]any); !ok || int(u["completion_tokens"].(float64)) != c.n {
							t.Errorf("client %d: last chunk's usage %v, want %d completion tokens", i, chunks[len(chunks)-1]["usage"], c.n)
						}
					} else {
						status, out, _ := post(t, c.url, c.body)
						if status != http.StatusOK {
							t.Errorf("client %d: status %d: %v", i, status, out)
							return
						}
						got, finish = answerText(t, out)
						u := out["usage"].(map[string]any)
						if int(u["prompt_tokens"].(float64)) != c.prompt || int(u["completion_tokens"].(float64)) != c.n {
							t.Errorf("client %d: usage %v, want %d prompt and %d completion tokens", i, u, c.prompt, c.n)
						}
					}
					if got != c.want || finish != c.finish {
						t.Errorf("client %d (%s): got %q (%s), engine.Generate gives %q (%s)", i, c.url, got, finish, c.want, c.finish)
					}
				}()
			}
			wg.Wait()
			if s.sched.Busy() != 0 {
				t.Errorf("%d rows still busy after every client finished", s.sched.Busy())
			}
			// Clients come and go: running rows moved between session sizes on the way.
			if s.sched.Resizes() < 2 {
				t.Errorf("the session was resized %d times; the test means to move running rows", s.sched.Resizes())
			}
		})
	}
}

// A streamed chat answer has OpenAI's framing (a first chunk naming the role, content deltas,
// a last chunk with the finish reason, the usage chunk, [DONE]) and the text of the same
// request answered whole.
func TestChatStreamFraming(t *testing.T) {
	ts, _ := startServer(t, decoderPath, nil)
	body := map[string]any{"model": "rope-decoder", "messages": []map[string]any{{"role": "system", "content": "You write Go."}, {"role": "user", "content": "func add(a, b int) int {"}},
		"max_tokens": 30, "temperature": 0, "stream": true, "stream_options": map[string]any{"include_usage": true}}
	chunks, done := readStream(t, stream(t, context.Background(), ts.URL+"/v1/chat/completions", body))
	if !done || len(chunks) < 3 {
		t.Fatalf("stream of %d chunks, [DONE] %v", len(chunks), done)
	}
	id := chunks[0]["id"].(string)
	if !strings.HasPrefix(id, "chatcmpl-") {
		t.Errorf("id %q, want chatcmpl-...", id)
	}
	for i, c := range chunks {
		if c["id"] != id || c["object"] != "chat.completion.chunk" || c["model"] != "rope-decoder" || c["created"] == nil {
			t.Errorf("chunk %d: id %v object %v model %v created %v", i, c["id"], c["object"], c["model"], c["created"])
		}
	}
	first := chunks[0]["choices"].([]any)[0].(map[string]any)
	if first["delta"].(map[string]any)["role"] != "assistant" || first["finish_reason"] != nil || first["logprobs"] != nil {
		t.Errorf("first chunk %v, want a delta with role assistant, finish_reason and logprobs null", first)
	}
	last := chunks[len(chunks)-2]["choices"].([]any)[0].(map[string]any)
	if last["finish_reason"] != "length" {
		t.Errorf("finish chunk %v, want finish_reason length", last)
	}
	usage := chunks[len(chunks)-1]
	if len(usage["choices"].([]any)) != 0 || usage["usage"].(map[string]any)["completion_tokens"] != 30.0 {
		t.Errorf("usage chunk %v, want no choices and 30 completion tokens", usage)
	}
	text, _ := streamText(t, chunks)
	delete(body, "stream")
	delete(body, "stream_options")
	status, out, _ := post(t, ts.URL+"/v1/chat/completions", body)
	whole, finish := answerText(t, out)
	msg := out["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
	if status != 200 || out["object"] != "chat.completion" || msg["role"] != "assistant" || whole != text || finish != "length" {
		t.Errorf("whole answer %d %v: %q (%s), want the streamed %q", status, out["object"], whole, finish, text)
	}
}

// A completion stream has text_completion chunks whose text joins to the whole answer's.
func TestCompletionStream(t *testing.T) {
	ts, _ := startServer(t, decoderPath, nil)
	body := map[string]any{"prompt": "import \"fmt\"\n\nfunc main() {\n\tfmt.", "max_tokens": 25, "temperature": 0, "stream": true}
	chunks, done := readStream(t, stream(t, context.Background(), ts.URL+"/v1/completions", body))
	if !done {
		t.Fatal("no [DONE]")
	}
	for _, c := range chunks {
		if c["object"] != "text_completion" || c["usage"] != nil {
			t.Fatalf("chunk %v: want object text_completion and no usage (not asked for)", c)
		}
	}
	text, finish := streamText(t, chunks)
	body["stream"] = false
	_, out, _ := post(t, ts.URL+"/v1/completions", body)
	whole, _ := answerText(t, out)
	if text != whole || finish != "length" || out["object"] != "text_completion" {
		t.Errorf("stream %q (%s), whole %q (%v)", text, finish, whole, out["object"])
	}
}

// A client that goes away mid-stream frees its row long before its max_tokens, and the next
// request in that row gets the continuation of a fresh sequence.
func TestCancelMidStreamFreesRow(t *testing.T) {
	ref := newReference(t)
	// 1 ms a step: the request outlives the client's reading of its first chunks.
	ts, s := startServer(t, decoderPath, func(c *config) { c.parallel, c.stepDelay = 1, time.Millisecond })
	ctx, cancel := context.WithCancel(context.Background())
	resp := stream(t, ctx, ts.URL+"/v1/completions", map[string]any{"prompt": "func main() {", "max_tokens": 1000, "stream": true, "ignore_eos": true})
	r := newSSEReader(resp.Body)
	for range 3 {
		if r.next(t) == "" {
			t.Fatal("the stream ended early")
		}
	}
	cancel()
	resp.Body.Close()
	waitFor(t, "the row to be freed", func() bool { return s.sched.Busy() == 0 })
	// One step per token with one row: the row went long before 1000 tokens.
	if steps := s.sched.Steps(); steps > 500 {
		t.Errorf("the cancelled request ran %d steps of its 1000 tokens before its row was freed", steps)
	}
	if h := get(t, ts.URL+"/health"); h["slots_processing"] != 0.0 || h["slots_idle"] != 1.0 {
		t.Errorf("/health after the cancel: %v", h)
	}
	p := "if err != nil {\n\treturn"
	ids, _ := ref.m.encodePrompt(p)
	sp := s.cfg.defaults
	sp.Temp = 0
	want, _, _ := ref.generate(t, ids, 40, sp, ref.m.stop)
	_, out, _ := post(t, ts.URL+"/v1/completions", map[string]any{"prompt": p, "max_tokens": 40, "temperature": 0})
	if got, _ := answerText(t, out); got != want {
		t.Errorf("after the freed row: %q, want %q", got, want)
	}
}

// Stop strings cut the text right before their first occurrence, streamed or not, and end the
// request (finish_reason stop); a stop string split across tokens is never half sent.
func TestStopStrings(t *testing.T) {
	ref := newReference(t)
	ts, s := startServer(t, decoderPath, nil)
	p := "// Copy copies from src to dst"
	ids, _ := ref.m.encodePrompt(p)
	sp := s.cfg.defaults
	sp.Temp = 0
	full, _, _ := ref.generate(t, ids, 60, sp, ref.m.stop)
	if len(full) < 30 {
		t.Fatalf("reference continuation %q is too short for the test", full)
	}
	stop := full[20:23]
	want := full[:strings.Index(full, stop)]
	for _, streamed := range []bool{false, true} {
		body := map[string]any{"prompt": p, "max_tokens": 60, "temperature": 0, "stop": []string{"never generated \x00", stop}, "stream": streamed}
		var got, finish string
		if streamed {
			chunks, _ := readStream(t, stream(t, context.Background(), ts.URL+"/v1/completions", body))
			got, finish = streamText(t, chunks)
		} else {
			_, out, _ := post(t, ts.URL+"/v1/completions", body)
			got, finish = answerText(t, out)
		}
		if got != want || finish != "stop" {
			t.Errorf("stream %v, stop %q: %q (%s), want %q (stop)", streamed, stop, got, finish, want)
		}
	}
}

// Every limit answers with OpenAI's error object and the right status, naming the problem;
// fields of the wrong type are refused, unknown ones ignored; none of it stops the server.
func TestLimitsAndBadRequests(t *testing.T) {
	ts, _ := startServer(t, decoderPath, func(c *config) { c.maxBody = 4096 })
	long := strings.Repeat("x", 1100) // past the 1024-token context, inside the body limit
	cases := []struct {
		path   string
		body   any
		status int
		param  string
		says   string
	}{
		{"/v1/completions", map[string]any{"prompt": strings.Repeat("y", 5000)}, 413, "", "--max-body"},
		{"/v1/completions", map[string]any{"prompt": long}, 400, "prompt", "context holds 1024"},
		{"/v1/chat/completions", map[string]any{"messages": []map[string]string{{"role": "user", "content": long}}}, 400, "messages", "context holds 1024"},
		{"/v1/completions", map[string]any{"prompt": "abc", "max_tokens": 1022}, 400, "max_tokens", "at most 1021"},
		{"/v1/completions", map[string]any{"prompt": "abc", "max_tokens": "ten"}, 400, "max_tokens", "integer"},
		{"/v1/completions", map[string]any{"prompt": "abc", "max_tokens": 2.5}, 400, "max_tokens", "integer"},
		{"/v1/completions", map[string]any{"prompt": "abc", "temperature": "hot"}, 400, "temperature", "number"},
		{"/v1/completions", map[string]any{"prompt": "abc", "stream": 1}, 400, "stream", "true or false"},
		{"/v1/completions", map[string]any{"prompt": "abc", "seed": "7"}, 400, "seed", "integer"},
		{"/v1/completions", map[string]any{"prompt": "abc", "stop": 5}, 400, "stop", "string"},
		{"/v1/completions", map[string]any{"prompt": map[string]any{}}, 400, "prompt", "string"},
		{"/v1/completions", map[string]any{"prompt": []int{1, 999}}, 400, "prompt", "vocabulary"},
		{"/v1/completions", map[string]any{}, 400, "prompt", "missing"},
		{"/v1/completions", map[string]any{"prompt": "abc", "n": 2}, 400, "n", "n = 1"},
		{"/v1/completions", map[string]any{"prompt": "abc", "temperature": -1}, 400, "temperature", ">= 0"},
		{"/v1/completions", map[string]any{"prompt": "abc", "top_p": 0}, 400, "top_p", "(0, 1]"},
		{"/v1/completions", map[string]any{"prompt": "abc", "logprobs": 2}, 400, "logprobs", "not supported"},
		{"/v1/completions", map[string]any{"prompt": "abc", "logit_bias": map[string]any{"99": 1}}, 400, "logit_bias", "not supported"},
		{"/v1/chat/completions", map[string]any{"messages": []map[string]any{{"role": "user", "content": "hi"}}, "min_p": 0.1}, 400, "min_p", "not supported"},
		{"/v1/chat/completions", map[string]any{"messages": "hi"}, 400, "messages", "array"},
		{"/v1/chat/completions", map[string]any{"messages": []map[string]any{{"role": "wizard", "content": "hi"}}}, 400, "messages[0].role", "wizard"},
		{"/v1/chat/completions", map[string]any{"messages": []map[string]any{{"role": "user", "content": 7}}}, 400, "messages[0].content", "string"},
		{"/v1/chat/completions", map[string]any{"messages": []map[string]any{}}, 400, "messages", "at least one"},
		{"/v1/completions", `{"prompt": "abc",`, 400, "", "not valid JSON"},
		{"/v1/completions", `[1, 2]`, 400, "", "JSON object"},
		{"/v1/completions", `not json at all`, 400, "", "not valid JSON"},
		{"/v1/embeddings", map[string]any{"input": "abc"}, 400, "", "needs an encoder"},
	}
	var wg sync.WaitGroup
	for _, c := range cases {
		wg.Add(1)
		go func() { // all at once: bad requests beside each other must not disturb the server
			defer wg.Done()
			status, out, _ := post(t, ts.URL+c.path, c.body)
			e, ok := out["error"].(map[string]any)
			if status != c.status || !ok {
				t.Errorf("%s %v: status %d, answer %v; want %d with an error object", c.path, c.body, status, out, c.status)
				return
			}
			msg, _ := e["message"].(string)
			if !strings.Contains(msg, c.says) || e["type"] == nil || (c.param != "" && e["param"] != c.param) {
				t.Errorf("%s %v: error %v; want param %q and a message saying %q", c.path, c.body, e, c.param, c.says)
			}
			if _, ok := e["code"]; !ok {
				t.Errorf("error object %v has no code field", e)
			}
		}()
	}
	wg.Wait()
	// Unknown fields are ignored, and the server still serves.
	status, out, _ := post(t, ts.URL+"/v1/completions", map[string]any{"prompt": "abc", "max_tokens": 3, "user": "me", "x_unknown": map[string]any{"a": []int{1}}})
	if status != 200 || out["usage"].(map[string]any)["completion_tokens"] != 3.0 {
		t.Errorf("a request with unknown fields: %d %v", status, out)
	}
	for _, c := range []struct{ method, path string }{{"GET", "/v1/completions"}, {"POST", "/v1/models"}, {"POST", "/metrics"}, {"GET", "/tokenize"}, {"GET", "/nowhere"}} {
		req, _ := http.NewRequest(c.method, ts.URL+c.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if want := map[string]int{"/nowhere": 404}[c.path]; (want == 0 && resp.StatusCode != 405) || (want != 0 && resp.StatusCode != want) {
			t.Errorf("%s %s: status %d", c.method, c.path, resp.StatusCode)
		}
	}
	if h := get(t, ts.URL+"/health"); h["status"] != "ok" {
		t.Errorf("/health after the bad requests: %v", h)
	}
}

// With every row busy and the queue full, a request gets 503 with Retry-After; the queued one
// runs once a row frees.
func TestFullQueue(t *testing.T) {
	// 1 ms a step: the first request outlives the test.
	ts, s := startServer(t, decoderPath, func(c *config) { c.parallel, c.queue, c.stepDelay = 1, 1, time.Millisecond })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp := stream(t, ctx, ts.URL+"/v1/completions", map[string]any{"prompt": "func main() {", "max_tokens": 1000, "stream": true, "ignore_eos": true})
	defer resp.Body.Close()
	if newSSEReader(resp.Body).next(t) == "" {
		t.Fatal("the first request's stream ended")
	}
	queued := make(chan int)
	go func() {
		status, _, _ := post(t, ts.URL+"/v1/completions", map[string]any{"prompt": "abc", "max_tokens": 5})
		queued <- status
	}()
	waitFor(t, "the second request to wait in the queue", func() bool { return s.sched.Queued() == 1 })
	status, out, h := post(t, ts.URL+"/v1/completions", map[string]any{"prompt": "abc", "max_tokens": 5})
	e, _ := out["error"].(map[string]any)
	if status != http.StatusServiceUnavailable || h.Get("Retry-After") == "" || e == nil || !strings.Contains(e["message"].(string), "--queue") {
		t.Errorf("third request: status %d, Retry-After %q, %v; want 503 with Retry-After", status, h.Get("Retry-After"), out)
	}
	cancel() // the first client leaves: its row goes to the queued request
	if st := <-queued; st != http.StatusOK {
		t.Errorf("the queued request ended with status %d", st)
	}
}

// A request that outlives --timeout ends with 504 and OpenAI's error object.
func TestTimeout(t *testing.T) {
	ts, s := startServer(t, decoderPath, func(c *config) { c.timeout = 1 }) // one nanosecond
	status, out, _ := post(t, ts.URL+"/v1/completions", map[string]any{"prompt": "func main() {", "max_tokens": 1000, "ignore_eos": true})
	e, _ := out["error"].(map[string]any)
	if status != http.StatusGatewayTimeout || e == nil || !strings.Contains(e["message"].(string), "--timeout") {
		t.Errorf("status %d, %v; want 504 naming --timeout", status, out)
	}
	waitFor(t, "the timed-out request's row to be freed", func() bool { return s.sched.Busy() == 0 })
}

// /v1/models lists the model with its context; /health reports the rows.
func TestModelsAndHealth(t *testing.T) {
	ts, _ := startServer(t, decoderPath, func(c *config) { c.parallel = 3 })
	ms := get(t, ts.URL+"/v1/models")
	data := ms["data"].([]any)
	m := data[0].(map[string]any)
	if ms["object"] != "list" || len(data) != 1 || m["id"] != "rope-decoder" || m["object"] != "model" || m["meta"].(map[string]any)["n_ctx"] != 1024.0 {
		t.Errorf("/v1/models: %v", ms)
	}
	h := get(t, ts.URL+"/health")
	if h["status"] != "ok" || h["slots_idle"] != 3.0 || h["slots_processing"] != 0.0 || h["queued"] != 0.0 {
		t.Errorf("/health: %v", h)
	}
}

// The session has as many rows as the running requests need, rounded up to a power of two:
// it grows as requests join and shrinks once three quarters of its rows are empty.
func TestSessionFollowsLoad(t *testing.T) {
	// 2 ms a step: the requests outlive the test's checks.
	ts, s := startServer(t, decoderPath, func(c *config) { c.parallel, c.stepDelay = 16, 2*time.Millisecond })
	body := map[string]any{"prompt": "func main() {", "max_tokens": 1000, "stream": true, "ignore_eos": true}
	var cancels []context.CancelFunc
	open := func(n int) {
		for range n {
			ctx, cancel := context.WithCancel(context.Background())
			cancels = append(cancels, cancel)
			resp := stream(t, ctx, ts.URL+"/v1/completions", body)
			t.Cleanup(func() { resp.Body.Close() })
		}
	}
	rows := func(busy, size int) {
		t.Helper()
		waitFor(t, fmt.Sprintf("%d busy rows in a session of %d", busy, size), func() bool {
			h := get(t, ts.URL+"/health")
			return h["slots_processing"] == float64(busy) && h["session_rows"] == float64(size)
		})
	}
	defer func() {
		for _, c := range cancels {
			c()
		}
	}()
	open(1)
	rows(1, 1)
	open(5)
	rows(6, 8)
	for _, c := range cancels[:4] {
		c()
	}
	rows(2, 2)
	if s.sched.Resizes() < 2 {
		t.Errorf("%d resizes", s.sched.Resizes())
	}
}

// A request that arrives while another still feeds its prompt joins it in the prefill session
// (which grows from one row to two, moving the half-fed prompt), and both get exactly their
// own continuation.
func TestJoinWhilePrefilling(t *testing.T) {
	ref := newReference(t)
	// 8-token chunks at 2 ms a step: the long prompt takes about 100 ms to feed, the short one's
	// 100 tokens about 200 ms to decode, so both end up decoding together.
	ts, s := startServer(t, decoderPath, func(c *config) { c.chunk, c.stepDelay = 8, 2*time.Millisecond })
	long := prompts[len(prompts)-1] + prompts[len(prompts)-2] + prompts[len(prompts)-3]
	sp := s.cfg.defaults
	sp.Temp = 0
	var wg sync.WaitGroup
	for i, p := range []string{long, "func main() {"} {
		ids, _ := ref.m.encodePrompt(p)
		want, _, _ := ref.generate(t, ids, 100, sp, ref.m.stop)
		if i == 1 {
			waitFor(t, "the long prompt to be feeding", func() bool { return s.sched.Busy() == 1 })
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, out, _ := post(t, ts.URL+"/v1/completions", map[string]any{"prompt": p, "max_tokens": 100, "temperature": 0})
			if got, _ := answerText(t, out); got != want {
				t.Errorf("request %d: %q, want %q", i, got, want)
			}
		}()
	}
	wg.Wait()
	if s.sched.Resizes() < 2 {
		t.Errorf("%d session resizes; want the prefill session grown and the decoding one too", s.sched.Resizes())
	}
}
