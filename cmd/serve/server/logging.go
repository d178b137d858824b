package server

// One structured line per request (log/slog, to stderr; --log-format text or json, --quiet
// for none): method, path, status, tokens in and out, time to first token and total time,
// and the request's fields the server ignored. The same pass counts the request in
// /metrics. Handlers fill in what only they know (tokens, the first token's time) through
// the requestInfo the request's context carries.

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/posformer/posformer/cmd/internal/templateflag"
)

// requestInfo is what a handler reports about its request for the log line and the metrics.
type requestInfo struct {
	start                         time.Time // the request's arrival
	promptTokens, generatedTokens int
	ttft                          time.Duration // 0: no token was generated
	ignored                       []string      // body fields the server does not read
}

type infoKey struct{}

// infoOf is the requestInfo of r's context, or a throwaway one outside ServeHTTP (handlers
// called directly by tests).
func infoOf(r *http.Request) *requestInfo {
	if info, ok := r.Context().Value(infoKey{}).(*requestInfo); ok {
		return info
	}
	return &requestInfo{start: time.Now()}
}

// statusRecorder remembers the status a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (w *statusRecorder) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusRecorder) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the writer below (flushes, deadlines).
func (w *statusRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// newLogger is the request logger for --log-format ("text" or "json"); nil with --quiet.
func newLogger(w io.Writer, format string, quiet bool) (*slog.Logger, error) {
	if quiet {
		return nil, nil
	}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, nil)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, nil)), nil
	}
	return nil, fmt.Errorf("--log-format must be text or json, got %q", format)
}

// routeLabel is the route a request matched, without its method, for the metrics' path label:
// unknown paths share one label, so that a scan of random URLs cannot grow the series
// without bound.
func routeLabel(r *http.Request) string {
	p := r.Pattern
	if _, path, ok := strings.Cut(p, " "); ok {
		p = path
	}
	if p == "" || p == "/" {
		return "other"
	}
	return p
}

// record logs the request's line and counts it in the metrics.
func (s *server) record(r *http.Request, status int, info *requestInfo, took time.Duration) {
	if status == 0 {
		status = http.StatusOK // a handler that wrote nothing (a client gone before the answer)
	}
	s.metrics.requests.WithLabelValues(routeLabel(r), strconv.Itoa(status)).Inc()
	if s.cfg.logger == nil {
		return
	}
	attrs := []slog.Attr{
		slog.String("method", r.Method),
		slog.String("path", r.URL.Path),
		slog.Int("status", status),
		slog.Int("tokens_in", info.promptTokens),
		slog.Int("tokens_out", info.generatedTokens),
		slog.Float64("ttft_ms", float64(info.ttft.Microseconds())/1000),
		slog.Float64("total_ms", float64(took.Microseconds())/1000),
	}
	if len(info.ignored) > 0 {
		attrs = append(attrs, slog.Any("ignored_fields", info.ignored))
	}
	s.cfg.logger.LogAttrs(context.Background(), slog.LevelInfo, "request", attrs...)
}

// templateFallbackLog reports, even with --quiet, each conversation the checkpoint's Jinja
// template failed to render in the engine (the family's Go layout served it instead).
func templateFallbackLog(w io.Writer, format string) func(error) {
	logger, err := newLogger(w, format, false)
	if err != nil {
		return nil
	}
	return func(err error) {
		logger.Warn("the chat template failed; its family's layout rendered the conversation", "error", err.Error())
	}
}

// registerServerFlags adds the flags of the request log and the chat template.
func registerServerFlags(fs *flag.FlagSet, o *options) {
	fs.StringVar(&o.logFormat, "log-format", "text", "request log lines on stderr: text (key=value) or json")
	fs.BoolVar(&o.quiet, "quiet", false, "no request log lines (the start-up and shutdown lines stay)")
	templateflag.Var(fs, &o.chatTemplate)
}
