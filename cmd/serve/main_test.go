package main

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// Bad flags are one-line errors naming the flag.
func TestFlagErrors(t *testing.T) {
	for args, says := range map[string]string{
		"--parallel 0":         "--parallel",
		"-np -2":               "--parallel",
		"--port 70000":         "--port",
		"--top-p 1.5":          "--top-p",
		"--temp -1":            "--temp",
		"-n 0":                 "-n",
		"--queue -1":           "--queue",
		"--weights int3":       "--weights",
		"--timeout 0s":         "--timeout",
		"--no-such-flag":       "no-such-flag",
		"-m x extra":           "unexpected argument",
		"--max-body 0":         "--max-body",
		"--batch-size 0":       "--batch-size",
		"--repeat-penalty 0":   "--repeat-penalty",
		"--repeat-last-n -1":   "--repeat-last-n",
		"-c -5":                "-c",
		"--top-k -1":           "--top-k",
		"--parallel notanumbr": "parallel",
	} {
		_, _, err := parseFlags(strings.Fields(args))
		if err == nil || !strings.Contains(err.Error(), says) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want a one-line error naming %s", args, err, says)
		}
	}
	if _, _, err := loadModelFrom(t, "-m", "/nonexistent/model"); err == nil || !strings.Contains(err.Error(), "pass -m") {
		t.Errorf("a missing model: %v", err)
	}
}

func loadModelFrom(t *testing.T, args ...string) (*model, bool, error) {
	o, help, err := parseFlags(args)
	if err != nil {
		return nil, help, err
	}
	m, err := loadModel(o)
	return m, help, err
}

// lineWriter hands run's log lines to the test.
type lineWriter struct {
	mu    sync.Mutex
	lines chan string
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, l := range strings.Split(strings.TrimSpace(string(p)), "\n") {
		select {
		case w.lines <- l:
		default:
		}
	}
	return len(p), nil
}

// startRun runs the command on a free port and returns its base URL and its result.
func startRun(t *testing.T, ctx context.Context, args ...string) (string, chan error) {
	t.Helper()
	o, _, err := parseFlags(append([]string{"-m", decoderPath, "--port", "0", "--warmup=false"}, args...))
	if err != nil {
		t.Fatal(err)
	}
	o.stepDelay = time.Millisecond // requests outlive the test's signal
	w := &lineWriter{lines: make(chan string, 16)}
	done := make(chan error, 1)
	go func() { done <- run(ctx, o, w) }()
	addr := regexp.MustCompile(`listening on (http://\S+)`)
	for {
		select {
		case line := <-w.lines:
			if m := addr.FindStringSubmatch(line); m != nil {
				return m[1], done
			}
		case err := <-done:
			t.Fatalf("the server stopped before listening: %v", err)
		case <-time.After(20 * time.Second):
			t.Fatal("the server did not start")
		}
	}
}

// On SIGINT/SIGTERM (the context ending) a running request finishes within the grace period,
// then the server stops; past the grace period, running requests end with an error event.
func TestShutdown(t *testing.T) {
	body := map[string]any{"prompt": "func main() {", "max_tokens": 300, "stream": true, "ignore_eos": true, "temperature": 0}
	t.Run("finishes", func(t *testing.T) {
		ctx, stop := context.WithCancel(context.Background())
		url, done := startRun(t, ctx, "--shutdown-grace", "20s")
		resp := stream(t, context.Background(), url+"/v1/completions", body)
		stop() // as a signal would, while the request runs (its handler has answered 200)
		chunks, complete := readStream(t, resp)
		if _, finish := streamText(t, chunks); !complete || finish != "length" {
			t.Errorf("the running request ended with finish %q, [DONE] %v; want it finished", finish, complete)
		}
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
		if _, err := http.Get(url + "/health"); err == nil {
			t.Error("the server still answers after shutting down")
		}
	})
	t.Run("cancels", func(t *testing.T) {
		ctx, stop := context.WithCancel(context.Background())
		url, done := startRun(t, ctx, "--shutdown-grace", "1ns", "-c", "1024")
		resp := stream(t, context.Background(), url+"/v1/completions", map[string]any{"prompt": "x", "max_tokens": 1000, "stream": true, "ignore_eos": true})
		r := newSSEReader(resp.Body)
		if r.next(t) == "" {
			t.Fatal("no first chunk")
		}
		stop()
		last := ""
		for data := r.next(t); data != ""; data = r.next(t) {
			last = data
		}
		resp.Body.Close()
		if !strings.Contains(last, "shutting down") {
			t.Errorf("the cancelled stream's last event is %q, want an error saying the server is shutting down", last)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("run: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("run did not return after the grace period")
		}
	})
}
