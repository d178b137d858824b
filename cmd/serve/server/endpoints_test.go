package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/posformer/posformer/tokenizer/chat"
)

// startServerWith is startServer with the loaded model edited first (its chat template, say).
func startServerWith(t *testing.T, path string, editModel func(*model), edit func(*config)) (*httptest.Server, *server) {
	t.Helper()
	m := loadTestModel(t, path, true)
	if editModel != nil {
		editModel(m)
	}
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

// scrape reads /metrics into series name{labels} -> value.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("/metrics: status %d, Content-Type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("/metrics line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

// The counters of /metrics move by what the requests did: one request counted under its
// route and status, its prompt and generated tokens (the usage it answered), one time to
// first token and a time per token for each later token; an unknown path counts as "other".
func TestMetricsCount(t *testing.T) {
	ts, _ := startServer(t, decoderPath, nil)
	before := scrape(t, ts.URL)
	for _, name := range []string{"posformer_queue_depth", "posformer_active_slots", "posformer_slots"} {
		if _, ok := before[name]; !ok {
			t.Errorf("/metrics has no %s", name)
		}
	}
	if before["posformer_slots"] != 4 {
		t.Errorf("posformer_slots %v, want --parallel's 4", before["posformer_slots"])
	}
	status, out, _ := post(t, ts.URL+"/v1/completions", map[string]any{"prompt": "func main() {", "max_tokens": 5, "temperature": 0, "ignore_eos": true})
	if status != 200 {
		t.Fatalf("completion: %d %v", status, out)
	}
	u := out["usage"].(map[string]any)
	post(t, ts.URL+"/v1/completions", map[string]any{"prompt": "x", "model": "nope"})
	http.Get(ts.URL + "/nowhere")
	after := scrape(t, ts.URL)
	moved := func(series string) float64 { return after[series] - before[series] }
	for series, want := range map[string]float64{
		`posformer_requests_total{path="/v1/completions",status="200"}`: 1,
		`posformer_requests_total{path="/v1/completions",status="404"}`: 1,
		`posformer_requests_total{path="other",status="404"}`:           1,
		`posformer_requests_total{path="/metrics",status="200"}`:        1, // the first scrape
		"posformer_prompt_tokens_total":                                 u["prompt_tokens"].(float64),
		"posformer_generated_tokens_total":                              u["completion_tokens"].(float64),
		"posformer_time_to_first_token_seconds_count":                   1,
		"posformer_time_per_output_token_seconds_count":                 u["completion_tokens"].(float64) - 1,
	} {
		if got := moved(series); got != want {
			t.Errorf("%s moved by %v, want %v", series, got, want)
		}
	}
	if after["posformer_time_to_first_token_seconds_sum"] <= 0 {
		t.Errorf("time to first token sums to %v", after["posformer_time_to_first_token_seconds_sum"])
	}
}

// A model the server does not serve gets OpenAI's 404 object on every endpoint that names
// one; the served id, the -m path and no model at all are accepted.
func TestModelNames(t *testing.T) {
	ts, s := startServer(t, decoderPath, nil)
	msgs := []map[string]any{{"role": "user", "content": "hi"}}
	for _, path := range []string{"/v1/completions", "/v1/chat/completions", "/apply-template"} {
		status, out, _ := post(t, ts.URL+path, map[string]any{"model": "nope", "prompt": "x", "messages": msgs, "max_tokens": 1})
		want := map[string]any{
			"message": "The model `nope` does not exist: this server serves `rope-decoder` (GET /v1/models); send that or leave model out",
			"type":    "invalid_request_error", "param": "model", "code": "model_not_found",
		}
		e, _ := out["error"].(map[string]any)
		if status != 404 || len(e) != len(want) {
			t.Errorf("%s with model nope: %d %v, want 404 and %v", path, status, out, want)
			continue
		}
		for k, v := range want {
			if e[k] != v {
				t.Errorf("%s: error.%s = %v, want %v", path, k, e[k], v)
			}
		}
		for _, name := range []any{nil, "rope-decoder", s.m.path} {
			body := map[string]any{"prompt": "x", "messages": msgs, "max_tokens": 1}
			if name != nil {
				body["model"] = name
			}
			if status, out, _ := post(t, ts.URL+path, body); status != 200 {
				t.Errorf("%s with model %v: %d %v", path, name, status, out)
			}
		}
	}
}

// /tokenize and /detokenize are inverses (special-token literals parsed by default, written
// out again); with_pieces gives each token's text, and the bytes of a piece that is part of a
// character.
func TestTokenizeRoundTrip(t *testing.T) {
	ts, s := startServer(t, decoderPath, nil)
	text := "func main() { fmt.Println(\"héllo\") } </s>"
	status, out, _ := post(t, ts.URL+"/tokenize", map[string]any{"content": text})
	if status != 200 {
		t.Fatalf("/tokenize: %d %v", status, out)
	}
	var ids []int
	for _, v := range out["tokens"].([]any) {
		ids = append(ids, int(v.(float64)))
	}
	want, _ := s.m.tok.Encode("func main() { fmt.Println(\"héllo\") } ")
	want = append(want, s.m.tok.Special().EOS) // </s> parsed: the byte tokenizer's EOS
	if !equalInts(ids, want) {
		t.Errorf("/tokenize: %v, want %v", ids, want)
	}
	status, out, _ = post(t, ts.URL+"/detokenize", map[string]any{"tokens": ids})
	if status != 200 || out["content"] != text {
		t.Errorf("/detokenize of /tokenize: %d %q, want %q", status, out["content"], text)
	}
	status, out, _ = post(t, ts.URL+"/tokenize", map[string]any{"content": "é!", "with_pieces": true, "add_special": true, "parse_special": false})
	pieces, _ := out["tokens"].([]any)
	if status != 200 || len(pieces) != 4 {
		t.Fatalf("/tokenize é! with pieces and BOS: %d %v, want 4 tokens", status, out)
	}
	first := pieces[0].(map[string]any)
	if int(first["id"].(float64)) != s.m.tok.Special().BOS {
		t.Errorf("add_special: first token %v, want BOS %d", first, s.m.tok.Special().BOS)
	}
	if b, ok := pieces[1].(map[string]any)["piece"].([]any); !ok || len(b) != 1 || b[0] != float64(0xC3) {
		t.Errorf("the first byte of é: piece %v, want [195]", pieces[1])
	}
	if p := pieces[3].(map[string]any)["piece"]; p != "!" {
		t.Errorf("piece of !: %v", p)
	}
	if status, out, _ := post(t, ts.URL+"/detokenize", map[string]any{"tokens": []int{1, 99999}}); status != 400 || !strings.Contains(out["error"].(map[string]any)["message"].(string), "99999") {
		t.Errorf("/detokenize of an id outside the vocabulary: %d %v", status, out)
	}
	if status, _, _ := post(t, ts.URL+"/tokenize", map[string]any{}); status != 400 {
		t.Errorf("/tokenize without content: %d, want 400", status)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// llama3Template is Llama 3's template as the checkpoints ship it.
func llama3Template(t *testing.T) string {
	t.Helper()
	src, err := chat.FromFile("../../../tokenizer/chat/testdata/llama3.jinja")
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// /apply-template renders a Llama 3 template as tokenizer/chat does, both its Jinja and the
// Go layout of the family, and generates nothing; /props carries the template and the
// model's properties.
func TestApplyTemplateAndProps(t *testing.T) {
	src := llama3Template(t)
	ts, s := startServerWith(t, decoderPath, func(m *model) {
		m.bosText, m.eosText = "<|begin_of_text|>", "<|end_of_text|>"
		m.template = chat.New(src, m.bosText, m.eosText)
	}, nil)
	msgs := []chat.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: " Hi "}, {Role: "assistant", Content: "Hello."}, {Role: "user", Content: "Bye"}}
	status, out, _ := post(t, ts.URL+"/apply-template", map[string]any{"messages": msgs})
	var layout strings.Builder
	for _, seg := range chat.Pick(src).Render(msgs) {
		layout.WriteString(seg.Text)
	}
	want := "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>" +
		"<|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nBye<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
	if status != 200 || out["prompt"] != want || layout.String() != want {
		t.Errorf("/apply-template: %d\n%q\nthe llama3 layout\n%q\nwant\n%q", status, out["prompt"], layout.String(), want)
	}
	if s.sched.Steps() != 0 {
		t.Errorf("/apply-template ran %d decoding steps", s.sched.Steps())
	}

	props := get(t, ts.URL+"/props")
	settings, _ := props["default_generation_settings"].(map[string]any)
	if props["chat_template"] != src || props["bos_token"] != "<|begin_of_text|>" || props["eos_token"] != "<|end_of_text|>" ||
		props["total_slots"] != 4.0 || props["model_path"] != decoderPath || settings["n_ctx"] != 1024.0 {
		t.Errorf("/props: %v", props)
	}
	if params, _ := settings["params"].(map[string]any); params["temperature"] == nil || params["top_k"] == nil {
		t.Errorf("/props' default_generation_settings.params: %v", settings["params"])
	}
}

// Tools reach a Jinja template (Qwen3's writes them into the system turn) and are refused,
// naming the field, where the template is a Go layout; response_format's JSON modes are
// refused by name and text is accepted.
func TestToolsAndResponseFormat(t *testing.T) {
	qwen, err := chat.FromFile("../../../tokenizer/chat/testdata/qwen3.jinja")
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := startServerWith(t, decoderPath, func(m *model) { m.template = chat.New(qwen, "", "<|im_end|>") }, nil)
	// Raw JSON: the template writes a tool's keys in the order the client sent them.
	tools := json.RawMessage(`[{"type": "function", "function": {"name": "now", "parameters": {"type": "object"}}}]`)
	msgs := []map[string]any{{"role": "user", "content": "time?"}}
	status, out, _ := post(t, ts.URL+"/apply-template", map[string]any{"messages": msgs, "tools": tools, "chat_template_kwargs": map[string]any{"enable_thinking": false}})
	prompt, _ := out["prompt"].(string)
	if status != 200 || !strings.Contains(prompt, `{"type": "function", "function": {"name": "now", "parameters": {"type": "object"}}}`) ||
		!strings.HasSuffix(prompt, "<|im_start|>assistant\n<think>\n\n</think>\n\n") {
		t.Errorf("Qwen3 with tools, thinking off: %d %q", status, prompt)
	}
	plain, _ := startServer(t, decoderPath, nil)
	for _, c := range []struct {
		url   string
		body  map[string]any
		param string
	}{
		{plain.URL + "/v1/chat/completions", map[string]any{"messages": msgs, "tools": tools}, "tools"},
		{ts.URL + "/v1/chat/completions", map[string]any{"messages": msgs, "response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{}}}, "response_format"},
		{ts.URL + "/v1/completions", map[string]any{"prompt": "x", "response_format": map[string]any{"type": "json_object"}}, "response_format"},
	} {
		status, out, _ := post(t, c.url, c.body)
		e, _ := out["error"].(map[string]any)
		if status != 400 || e["param"] != c.param || !strings.Contains(e["message"].(string), c.param) {
			t.Errorf("%v: %d %v, want a 400 naming %s", c.body, status, out, c.param)
		}
	}
	if status, out, _ := post(t, ts.URL+"/v1/completions", map[string]any{"prompt": "x", "max_tokens": 1, "response_format": map[string]any{"type": "text"}}); status != 200 {
		t.Errorf("response_format text: %d %v", status, out)
	}
}

// /slots lists --parallel slots, idle when nothing runs.
func TestSlotsEndpoint(t *testing.T) {
	ts, _ := startServer(t, decoderPath, func(c *config) { c.parallel = 2 })
	resp, err := http.Get(ts.URL + "/slots")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var slots []map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&slots); err != nil {
		t.Fatal(err)
	}
	if len(slots) != 2 {
		t.Fatalf("/slots: %v, want 2 slots", slots)
	}
	for i, sl := range slots {
		if sl["id"] != float64(i) || sl["n_ctx"] != 1024.0 || sl["is_processing"] != false || sl["tokens_cached"] != 0.0 {
			t.Errorf("slot %d: %v", i, sl)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for the server's handlers and the test together.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Every request gets one JSON log line with its method, path, status, tokens, time to first
// token and total time, and the fields it sent that the server ignored.
func TestRequestLog(t *testing.T) {
	var buf syncBuffer
	logger, err := newLogger(&buf, "json", false)
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := startServer(t, decoderPath, func(c *config) { c.logger = logger })
	status, out, _ := post(t, ts.URL+"/v1/completions", map[string]any{"prompt": "abc", "max_tokens": 4, "ignore_eos": true, "user": "me", "x_other": 1})
	if status != 200 {
		t.Fatalf("%d %v", status, out)
	}
	get(t, ts.URL+"/health")
	post(t, ts.URL+"/v1/completions", `{"prompt": `)
	ts.Close() // waits for the handlers, and so their log lines
	var lines []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var v map[string]any
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		lines = append(lines, v)
	}
	if len(lines) != 3 {
		t.Fatalf("%d log lines for 3 requests:\n%s", len(lines), buf.String())
	}
	gen := lines[0]
	for k, want := range map[string]any{"msg": "request", "method": "POST", "path": "/v1/completions", "status": 200.0, "tokens_in": 3.0, "tokens_out": 4.0} {
		if gen[k] != want {
			t.Errorf("the completion's line: %s = %v, want %v (%v)", k, gen[k], want, gen)
		}
	}
	ttft, _ := gen["ttft_ms"].(float64)
	total, _ := gen["total_ms"].(float64)
	if ttft <= 0 || total < ttft {
		t.Errorf("ttft_ms %v, total_ms %v: want 0 < ttft <= total", gen["ttft_ms"], gen["total_ms"])
	}
	if ign, _ := json.Marshal(gen["ignored_fields"]); string(ign) != `["user","x_other"]` {
		t.Errorf("ignored_fields %s, want [user x_other]", ign)
	}
	if lines[1]["path"] != "/health" || lines[1]["status"] != 200.0 || lines[1]["method"] != "GET" {
		t.Errorf("the health check's line: %v", lines[1])
	}
	if lines[2]["status"] != 400.0 {
		t.Errorf("a bad request's line: %v", lines[2])
	}
	// The text format carries the same keys.
	var text bytes.Buffer
	tl, _ := newLogger(&text, "text", false)
	s := &server{cfg: config{logger: tl}, metrics: nil}
	s.metrics = newMetrics(s)
	req := httptest.NewRequest("GET", "/health", nil)
	s.record(req, 200, &requestInfo{}, 0)
	if !regexp.MustCompile(`msg=request method=GET path=/health status=200 tokens_in=0 tokens_out=0 ttft_ms=0 total_ms=0`).MatchString(text.String()) {
		t.Errorf("text line %q", text.String())
	}
	if _, err := newLogger(io.Discard, "yaml", false); err == nil {
		t.Error("--log-format yaml accepted")
	}
	if l, _ := newLogger(io.Discard, "json", true); l != nil {
		t.Error("--quiet still logs")
	}
}

// A chat request runs the Jinja template: with the byte tokenizer (a token per byte, the
// template's markers being no special tokens of it) its prompt is as many tokens as
// /apply-template's prompt has bytes; a conversation the template refuses (Gemma 3's roles
// must alternate) is a 400 carrying the template's message.
func TestChatRunsJinja(t *testing.T) {
	qwen, err := chat.FromFile("../../../tokenizer/chat/testdata/qwen3.jinja")
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := startServerWith(t, decoderPath, func(m *model) { m.template = chat.New(qwen, "", "<|im_end|>") }, nil)
	msgs := []map[string]any{{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+2?"}}
	_, out, _ := post(t, ts.URL+"/apply-template", map[string]any{"messages": msgs})
	prompt := out["prompt"].(string)
	if !strings.HasPrefix(prompt, "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n") {
		t.Fatalf("Qwen3's prompt: %q", prompt)
	}
	status, out, _ := post(t, ts.URL+"/v1/chat/completions", map[string]any{"messages": msgs, "max_tokens": 2})
	if status != 200 || out["usage"].(map[string]any)["prompt_tokens"] != float64(len(prompt)) {
		t.Errorf("chat: %d %v, want %d prompt tokens", status, out, len(prompt))
	}

	gemma, err := chat.FromFile("../../../tokenizer/chat/testdata/gemma3.jinja")
	if err != nil {
		t.Fatal(err)
	}
	gs, _ := startServerWith(t, decoderPath, func(m *model) { m.template = chat.New(gemma, "<bos>", "<end_of_turn>") }, nil)
	status, out, _ = post(t, gs.URL+"/v1/chat/completions", map[string]any{"messages": []map[string]any{{"role": "user", "content": "a"}, {"role": "user", "content": "b"}}})
	e, _ := out["error"].(map[string]any)
	if status != 400 || e["param"] != "messages" || !strings.Contains(e["message"].(string), "Conversation roles must alternate") {
		t.Errorf("Gemma 3 with two user turns: %d %v", status, out)
	}
}
