package server

// The HTTP side: routing, the request checks that need the model (lengths, vocabulary), and
// the answers, whole or streamed as server-sent events. Every handler turns bad input into
// OpenAI's error object; nothing a client sends can stop the server (net/http recovers a
// handler's panic, and the scheduler recovers the engine's).

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"time"

	"github.com/posformer/posformer/engine"
	"github.com/posformer/posformer/engine/serve"
)

// config is what the server needs besides the model: limits and sampling defaults (from the
// command line, as llama-server's flags set its defaults).
type config struct {
	parallel, queue, chunk int
	maxBody                int64
	timeout                time.Duration
	nPredict               int // max_tokens when a request gives none (-1: up to the context)
	defaults               engine.Sampling
	seed                   int64         // -1: a request without a seed gets one from the clock
	stepDelay              time.Duration // tests only: slows each decoding step
	// Connection bounds (conn.go): the deadlines for a request's headers, its body, each
	// write of the answer, and an idle keep-alive connection; the connections held at once.
	headerTimeout, bodyTimeout, writeTimeout, idleTimeout time.Duration
	maxConns                                              int
	// logger writes one line per request (logging.go); nil: none (--quiet).
	logger       *slog.Logger
	contextShift *engine.ContextShift // nil: max_tokens fits in the context
}

// maxShiftedTokens bounds max_tokens under --context-shift, where the context no longer does: a
// job holds a buffer of max_tokens events (serve.NewJob), 40 bytes each.
const maxShiftedTokens = 1 << 16

// server serves one model.
type server struct {
	m       *model
	cfg     config
	sched   *serve.Scheduler // decoders
	embed   *serve.Embedder  // encoders
	created int64
	mux     *http.ServeMux
	metrics *metrics
	// base is cancelled when the server gives up on in-flight requests (shutdown past its
	// grace period).
	base context.Context
}

func newServer(base context.Context, m *model, cfg config) *server {
	s := &server{m: m, cfg: cfg, created: time.Now().Unix(), base: base}
	if m.encoder() {
		s.embed = serve.NewEmbedder(m.e, cfg.queue)
	} else {
		s.sched = serve.NewScheduler(m.e, serve.Config{Parallel: cfg.parallel, Queue: cfg.queue, Chunk: cfg.chunk, StepDelay: cfg.stepDelay, ContextShift: cfg.contextShift})
	}
	s.metrics = newMetrics(s)
	s.mux = http.NewServeMux()
	for _, rt := range []struct {
		method, path string
		handler      func(http.ResponseWriter, *http.Request) error
	}{
		{http.MethodGet, "/health", s.health},
		{http.MethodGet, "/v1/models", s.models},
		{http.MethodPost, "/v1/completions", s.completions},
		{http.MethodPost, "/v1/chat/completions", s.chat},
		{http.MethodPost, "/v1/embeddings", s.embeddings},
		{http.MethodPost, "/tokenize", s.tokenize},
		{http.MethodPost, "/detokenize", s.detokenize},
		{http.MethodPost, "/apply-template", s.applyTemplate},
		{http.MethodGet, "/props", s.props},
		{http.MethodGet, "/slots", s.slots},
	} {
		s.mux.HandleFunc(rt.method+" "+rt.path, func(w http.ResponseWriter, r *http.Request) {
			if err := rt.handler(w, r); err != nil {
				writeError(w, err)
			}
		})
		s.mux.HandleFunc(rt.path, methodNotAllowed(rt.method))
	}
	s.mux.Handle("GET /metrics", s.metrics.handler())
	s.mux.HandleFunc("/metrics", methodNotAllowed(http.MethodGet))
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &apiError{Status: http.StatusNotFound, Type: "invalid_request_error", Code: "unknown_url",
			Message: fmt.Sprintf("unknown path %s %s; the server has /v1/completions, /v1/chat/completions, /v1/embeddings, /v1/models, /health, /metrics, /props, /slots, /tokenize, /detokenize and /apply-template", r.Method, r.URL.Path)})
	})
	return s
}

// close stops the scheduler (its running jobs end with serve.ErrShutdown).
func (s *server) close() {
	if s.sched != nil {
		s.sched.Stop()
	}
}

// methodNotAllowed answers the methods a path does not take. It is registered on the path
// without a method, which matches the methods the path's "METHOD /path" pattern does not (that
// one is more specific): OpenAI's error object instead of ServeMux's plain-text 405.
func methodNotAllowed(method string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", method)
		writeError(w, &apiError{Status: http.StatusMethodNotAllowed, Type: "invalid_request_error",
			Message: fmt.Sprintf("%s takes %s, not %s", r.URL.Path, method, r.Method)})
	}
}

// ServeHTTP routes by method and path (ServeMux patterns), answering unknown paths and
// methods with OpenAI's error object, and logs and counts every request (logging.go). The
// request's body must arrive within bodyTimeout, and each write of the answer within
// writeTimeout. The read deadline also bounds what net/http reads of a body the handler left
// unread; once a body is read whole, net/http lifts it.
func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	if s.cfg.bodyTimeout > 0 {
		http.NewResponseController(w).SetReadDeadline(time.Now().Add(s.cfg.bodyTimeout))
	}
	if s.cfg.writeTimeout > 0 {
		w = newDeadlineWriter(w, s.cfg.writeTimeout)
	}
	rec := &statusRecorder{ResponseWriter: w}
	info := &requestInfo{start: start}
	r = r.WithContext(context.WithValue(r.Context(), infoKey{}, info))
	s.mux.ServeHTTP(rec, r) // sets r.Pattern, the route the metrics label
	s.record(r, rec.status, info, time.Since(start))
}

func (s *server) health(w http.ResponseWriter, r *http.Request) error {
	out := map[string]any{"status": "ok"}
	if s.sched != nil {
		busy := s.sched.Busy()
		out["slots_idle"] = s.cfg.parallel - busy
		out["slots_processing"] = busy
		out["queued"] = s.sched.Queued()
		out["session_rows"] = s.sched.SessionRows() // rows each step computes (see engine/serve)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *server) models(w http.ResponseWriter, r *http.Request) error {
	c := s.m.e.Model.Config
	writeJSON(w, http.StatusOK, map[string]any{
		"object": "list",
		"data": []any{map[string]any{
			"id": s.m.name, "object": "model", "created": s.created, "owned_by": "posformer",
			"meta": map[string]any{"kind": c.Kind, "n_ctx": s.m.e.Capacity, "n_vocab": c.VocabSize, "n_embd": c.Dim,
				"positional": c.SchemeName(), "chat_template": s.m.template.Describe()},
		}},
	})
	return nil
}

// generation is a checked generation request, ready for the scheduler.
type generation struct {
	prompt  []int
	max     int
	sampler *engine.Sampler
	stop    []int
	stops   []string
	stream  bool
	usage   bool // stream_options.include_usage
}

// prepare checks what completions and chat share, given the prompt's tokens.
func (s *server) prepare(r *genRequest, promptParam string, prompt []int, extraStops []string) (*generation, error) {
	if err := r.unsupported(); err != nil {
		return nil, err
	}
	limit := s.sched.Limit()
	if len(prompt) == 0 {
		return nil, invalid(promptParam, "the prompt is empty and this model adds no BOS token; send at least one character")
	}
	if len(prompt) >= limit {
		return nil, &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: promptParam, Code: "context_length_exceeded",
			Message: fmt.Sprintf("the prompt is %d tokens but the context holds %d (--ctx-size), with room for at least one generated token; shorten the prompt or restart the server with a larger -c", len(prompt), limit)}
	}
	g := &generation{prompt: prompt, stream: r.Stream, usage: r.StreamOptions != nil && r.StreamOptions.IncludeUsage}
	maxTokens := r.MaxTokens
	if maxTokens == nil {
		maxTokens = r.MaxCompletionTokens
	}
	room := limit - len(prompt)
	switch {
	case maxTokens == nil && s.cfg.nPredict > 0:
		g.max = min(s.cfg.nPredict, room)
	case maxTokens == nil:
		g.max = room
	case *maxTokens < 1:
		return nil, invalid("max_tokens", "max_tokens must be at least 1, got %d", *maxTokens)
	case s.cfg.contextShift != nil && *maxTokens > maxShiftedTokens:
		return nil, invalid("max_tokens", "with --context-shift, max_tokens is at most %d, got %d", maxShiftedTokens, *maxTokens)
	case *maxTokens > room && s.cfg.contextShift == nil:
		return nil, &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: "max_tokens", Code: "context_length_exceeded",
			Message: fmt.Sprintf("the prompt (%d tokens) plus max_tokens (%d) exceeds the context of %d tokens (--ctx-size); ask for at most %d tokens", len(prompt), *maxTokens, limit, room)}
	default:
		g.max = *maxTokens
	}
	sp := s.cfg.defaults
	if r.Temperature != nil {
		if *r.Temperature < 0 {
			return nil, invalid("temperature", "temperature must be >= 0 (0 is greedy), got %g", *r.Temperature)
		}
		sp.Temp = *r.Temperature
	}
	if r.TopP != nil {
		if *r.TopP <= 0 || *r.TopP > 1 {
			return nil, invalid("top_p", "top_p must be in (0, 1], got %g", *r.TopP)
		}
		sp.TopP = *r.TopP
	}
	if r.TopK != nil {
		if *r.TopK < 0 {
			return nil, invalid("top_k", "top_k must be >= 0 (0: off), got %d", *r.TopK)
		}
		sp.TopK = *r.TopK
	}
	if r.RepeatPenalty != nil {
		if *r.RepeatPenalty <= 0 {
			return nil, invalid("repeat_penalty", "repeat_penalty must be > 0 (1: off), got %g", *r.RepeatPenalty)
		}
		sp.RepeatPenalty = *r.RepeatPenalty
	}
	if r.RepeatLastN != nil {
		if *r.RepeatLastN < 0 {
			return nil, invalid("repeat_last_n", "repeat_last_n must be >= 0, got %d", *r.RepeatLastN)
		}
		sp.RepeatLastN = *r.RepeatLastN
	}
	seed := s.cfg.seed
	if r.Seed != nil {
		seed = *r.Seed
	}
	if seed < 0 {
		seed = time.Now().UnixNano()
	}
	sp.Seed = uint64(seed)
	var err error
	if g.sampler, err = engine.NewSampler(sp); err != nil {
		return nil, invalid("", "%v", err)
	}
	if !r.IgnoreEOS {
		g.stop = s.m.stop
	}
	if g.stops, err = r.stops(); err != nil {
		return nil, err
	}
	g.stops = append(g.stops, extraStops...)
	return g, nil
}

func (s *server) completions(w http.ResponseWriter, r *http.Request) error {
	var req completionRequest
	if err := decodeBody(w, r, s.cfg.maxBody, &req); err != nil {
		return err
	}
	if err := s.checkModel(req.Model); err != nil {
		return err
	}
	if s.sched == nil {
		return invalid("", "%s is an encoder: it serves /v1/embeddings only", s.m.name)
	}
	text, ids, err := req.prompt(s.m.e.Model.Config.VocabSize)
	if err != nil {
		return err
	}
	if ids == nil {
		if ids, err = s.m.encodePrompt(text); err != nil {
			return invalid("prompt", "%v", err)
		}
	}
	g, err := s.prepare(&req.genRequest, "prompt", ids, nil)
	if err != nil {
		return err
	}
	return s.generate(w, r, g, "cmpl-", "text_completion", "text_completion", false)
}

func (s *server) chat(w http.ResponseWriter, r *http.Request) error {
	var req chatRequest
	if err := decodeBody(w, r, s.cfg.maxBody, &req); err != nil {
		return err
	}
	if s.sched == nil {
		return invalid("", "%s is an encoder: it serves /v1/embeddings only", s.m.name)
	}
	msgs, o, err := s.chatInput(&req)
	if err != nil {
		return err
	}
	ids, err := s.m.encodeChatWith(msgs, o)
	if err != nil {
		return invalid("messages", "%v", err)
	}
	g, err := s.prepare(&req.genRequest, "messages", ids, s.m.template.Stops)
	if err != nil {
		return err
	}
	return s.generate(w, r, g, "chatcmpl-", "chat.completion", "chat.completion.chunk", true)
}

// generate runs g on the scheduler and answers, whole or as a stream.
func (s *server) generate(w http.ResponseWriter, r *http.Request, g *generation, idPrefix, object, chunkObject string, chat bool) error {
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.timeout)
	defer cancel() // ends the job (and frees its row) whatever way the handler returns
	// The base context ends requests a shutdown gives up on.
	stopBase := context.AfterFunc(s.base, cancel)
	defer stopBase()
	j := serve.NewJob(ctx, g.prompt, g.max, g.sampler, g.stop)
	switch err := s.sched.Submit(j); {
	case errors.Is(err, serve.ErrQueueFull), errors.Is(err, serve.ErrShutdown):
		return &apiError{Status: http.StatusServiceUnavailable, Type: "unavailable_error", RetryAfter: 1,
			Message: fmt.Sprintf("the server is busy: %d requests are decoding and %d waiting (--parallel, --queue); retry shortly", s.cfg.parallel, s.cfg.queue)}
	case err != nil: // not reached: prepare checked the job already
		return invalid("", "%v", err)
	}
	resp := response{ID: idPrefix + newID(), Object: object, Created: time.Now().Unix(), Model: s.m.name}
	text := newTextStream(s.m.tok, g.prompt, g.stops)
	var sse *eventStream
	if g.stream {
		sse = newEventStream(w)
	}
	emit := func(piece, finish string) {
		if sse == nil {
			return
		}
		c := choice{Logprobs: nil}
		if finish != "" {
			c.FinishReason = &finish
		}
		if chat {
			c.Delta = &message{}
			if piece != "" {
				c.Delta.Content = &piece
			}
		} else {
			c.Text = &piece
		}
		chunk := resp
		chunk.Object = chunkObject
		chunk.Choices = []choice{c}
		sse.send(chunk)
	}
	if chat && sse != nil { // OpenAI's first chunk names the role
		empty := ""
		chunk := resp
		chunk.Object = chunkObject
		chunk.Choices = []choice{{Delta: &message{Role: "assistant", Content: &empty}}}
		sse.send(chunk)
	}
	var all []byte
	generated := 0
	finish := ""
	info := infoOf(r)
	info.promptTokens = len(g.prompt)
	s.metrics.promptTokens.Add(float64(len(g.prompt)))
	arrived, last := info.start, time.Time{}
	defer func() { info.generatedTokens = generated }()
	for finish == "" {
		var ev serve.Event
		select {
		case ev = <-j.Events():
		case <-ctx.Done():
			ev = serve.Event{Err: ctx.Err()}
		}
		var piece string
		switch {
		case ev.Err != nil:
			return s.failed(sse, ev.Err)
		case ev.Finish != "":
			finish = ev.Finish
			piece = text.flush()
		default:
			generated++
			now := time.Now()
			if last.IsZero() {
				info.ttft = now.Sub(arrived)
				s.metrics.ttft.Observe(info.ttft.Seconds())
			} else {
				s.metrics.perToken.Observe(now.Sub(last).Seconds())
			}
			last = now
			s.metrics.generatedTokens.Inc()
			var stopped bool
			if piece, stopped = text.push(ev.Token); stopped {
				finish = "stop"
				cancel() // the scheduler frees the row at its next step
			}
		}
		all = append(all, piece...)
		if piece != "" && finish == "" {
			emit(piece, "")
		} else if finish != "" {
			emit(piece, finish)
		}
	}
	u := &usage{PromptTokens: len(g.prompt), CompletionTokens: generated, TotalTokens: len(g.prompt) + generated}
	if sse != nil {
		if g.usage {
			chunk := resp
			chunk.Object, chunk.Choices, chunk.Usage = chunkObject, []choice{}, u
			sse.send(chunk)
		}
		sse.done()
		return nil
	}
	out := string(all)
	c := choice{FinishReason: &finish}
	if chat {
		c.Message = &message{Role: "assistant", Content: &out}
	} else {
		c.Text = &out
	}
	resp.Choices, resp.Usage = []choice{c}, u
	writeJSON(w, http.StatusOK, resp)
	return nil
}

// failed reports a job that ended without finishing: as the response, or, once a stream has
// started, as a last event carrying the error (what OpenAI's clients raise).
func (s *server) failed(sse *eventStream, err error) error {
	var ae *apiError
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		ae = &apiError{Status: http.StatusGatewayTimeout, Type: "timeout_error",
			Message: fmt.Sprintf("the request took longer than %s (--timeout); ask for fewer tokens or raise --timeout", s.cfg.timeout)}
	case errors.Is(err, context.Canceled) && s.base.Err() == nil:
		return nil // the client went away: nobody to answer
	case errors.Is(err, context.Canceled), errors.Is(err, serve.ErrShutdown):
		ae = &apiError{Status: http.StatusServiceUnavailable, Type: "unavailable_error", RetryAfter: 1, Message: serve.ErrShutdown.Error() + "; retry on a running server"}
	default:
		log.Printf("serve: %v", err)
		ae = &apiError{Status: http.StatusInternalServerError, Type: "server_error", Message: err.Error()}
	}
	if sse == nil {
		return ae
	}
	sse.send(map[string]any{"error": ae})
	return nil
}

// eventStream writes server-sent events as OpenAI does: "data: {json}\n\n" per chunk, then
// "data: [DONE]\n\n".
type eventStream struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func newEventStream(w http.ResponseWriter) *eventStream {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // proxies such as nginx would otherwise hold chunks
	w.WriteHeader(http.StatusOK)
	return &eventStream{w: w, rc: http.NewResponseController(w)}
}

// send writes one event and flushes it to the client. A write error means the client is gone;
// the request's context ends with it, which frees the row.
func (e *eventStream) send(v any) {
	data, err := json.Marshal(v)
	if err != nil {
		data = []byte(`{"error":{"message":"encoding a chunk failed","type":"server_error","param":null,"code":null}}`)
	}
	fmt.Fprintf(e.w, "data: %s\n\n", data)
	e.rc.Flush()
}

func (e *eventStream) done() {
	fmt.Fprint(e.w, "data: [DONE]\n\n")
	e.rc.Flush()
}

// newID is a random hex id for a response.
func newID() string {
	b := make([]byte, 12)
	rand.Read(b)
	return hex.EncodeToString(b)
}
