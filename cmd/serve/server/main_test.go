package server

import (
	"context"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/posformer/posformer/cmd/internal/memlimit"
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
		// Past the bounds, before anything is allocated.
		"--parallel 100000":         "--parallel must be at most 1024",
		"-c 1099511627776":          "-c must be at most",
		"--ctx-size 16777217":       "-c must be at most",
		"--queue 1000000":           "--queue must be at most",
		"--max-body 10000000000":    "--max-body must be at most",
		"--batch-size 99999999":     "--batch-size must be at most",
		"--max-connections 0":       "--max-connections",
		"--max-connections 1000000": "--max-connections must be at most",
		"--shutdown-grace -1s":      "--shutdown-grace",
		"-ctk q8_0":                 "unknown KV cache type \"q8_0\"; use one of bf16, f16, f32",
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

// --cache-type-k and --cache-type-v reach the loaded engine; a type the backend cannot hold is
// refused when the model loads.
func TestCacheTypeFlags(t *testing.T) {
	m, _, err := loadModelFrom(t, "-m", decoderPath, "-ctk", "f16", "--cache-type-v", "bf16")
	if err != nil {
		t.Fatal(err)
	}
	if k, v := m.e.CacheTypes(); k != dtypes.Float16 || v != dtypes.BFloat16 {
		t.Errorf("cache types %s, %s; want Float16, BFloat16", k, v)
	}
	if _, _, err := loadModelFrom(t, "-m", decoderPath, "-ctk", "f16", "--backend", "go"); err == nil || !strings.Contains(err.Error(), "cannot hold a KV cache of Float16") {
		t.Errorf("float16 on the go backend: %v", err)
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

// The bounds that need the model: -c against the positions a learned table holds, and the
// memory of --parallel rows of -c tokens against what is available.
func TestModelBounds(t *testing.T) {
	o, _, err := parseFlags([]string{"-m", "../../../weights/bench/lm/learned", "-c", "3000"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := loadModel(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.checkModel(m.e, -1); err == nil || !strings.Contains(err.Error(), "-c 3000 is past the 2048 positions") {
		t.Errorf("-c 3000 on a table of 2048 positions: %v", err)
	}

	// The shipped decoder's cache holds 3 layers x 2 KV heads x 24 dims, K and V, float32,
	// and a position (int32) and a validity flag (a byte) per slot: 1157 bytes a token a row.
	o, _, err = parseFlags([]string{"-m", decoderPath, "-c", "65536", "--parallel", "64"})
	if err != nil {
		t.Fatal(err)
	}
	if m, err = loadModel(o); err != nil {
		t.Fatal(err)
	}
	if got, want := m.e.KVBytes(64), int64(1157*65536*64); got != want {
		t.Fatalf("KVBytes(64) at -c 65536: %d, want %d", got, want)
	}
	need := serveMemory(m.e, 64)
	err = o.checkModel(m.e, need-1)
	if err == nil || !strings.Contains(err.Error(), "--parallel 64 rows of 65536 tokens (-c) need 9.1 GiB") || strings.Contains(err.Error(), "\n") {
		t.Errorf("a byte short of the memory needed: %v", err)
	}
	for _, avail := range []int64{need, -1} {
		if err := o.checkModel(m.e, avail); err != nil {
			t.Errorf("with %d bytes available: %v, want no error", avail, err)
		}
	}
}

// A context no machine holds is refused after loading, before the KV caches and the warm-up
// (which compiles a graph per window size up to -c), as a flag error (exit 2).
func TestHugeContextRefusedBeforeWarmup(t *testing.T) {
	if _, ok := memlimit.Available(); !ok {
		t.Skip("no /proc/meminfo: the memory check is off")
	}
	o, _, err := parseFlags([]string{"-m", decoderPath, "--port", "0", "-c", "16777216", "--parallel", "1024"})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = run(context.Background(), o, io.Discard)
	if !errors.As(err, new(flagError)) || !strings.Contains(err.Error(), "lower --parallel or -c") {
		t.Errorf("-c 16777216 --parallel 1024 (36 TiB of caches): %v, want a flag error", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("refusing took %s", took)
	}
}
