// Command loadgen measures a running cmd/serve (or any OpenAI-compatible server) under
// concurrent streaming clients: for each client count it runs that many clients, each sending
// streamed completions one after the other, and prints a Markdown table row with the aggregate
// generated tokens per second and the time to first token. Every level is bounded in requests
// (-rounds per client) and in time (-max-time: no new request starts after it).
//
//	go run ./cmd/serve --parallel 16 &
//	go run ./cmd/serve/loadgen -clients 1,4,16 -max-tokens 128
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/posformer/posformer/cmd/internal/intlist"
)

type options struct {
	url, prompt    string
	clients        []int
	rounds, tokens int
	maxTime        time.Duration
	warmup         bool
}

// result is one request's measurements.
type result struct {
	ttft, total time.Duration
	tokens      int
	err         error
}

func main() {
	var o options
	var clients string
	flag.StringVar(&o.url, "url", "http://127.0.0.1:8080", "server base URL (loopback: the numbers measure the server, not a network)")
	flag.StringVar(&clients, "clients", "1,4,16", "comma-separated numbers of concurrent clients, one table row each")
	flag.IntVar(&o.rounds, "rounds", 4, "requests each client sends in turn, per row")
	flag.IntVar(&o.tokens, "max-tokens", 128, "tokens generated per request (ignore_eos: always that many, unless the context ends first)")
	flag.StringVar(&o.prompt, "prompt", "func main() {\n", "prompt of every request")
	flag.DurationVar(&o.maxTime, "max-time", 2*time.Minute, "per row, no request starts after this")
	flag.BoolVar(&o.warmup, "warmup", true, "send one request before measuring (graphs compile on first use)")
	flag.Parse()
	var bad string
	var ok bool
	if o.clients, bad, ok = intlist.Parse(clients, func(n int) bool { return n >= 1 }); !ok {
		fmt.Fprintf(os.Stderr, "loadgen: -clients: %q is not a positive number; give e.g. 1,4,16\n", bad)
		os.Exit(2)
	}
	if err := run(o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

func run(o options, out io.Writer) error {
	if o.warmup {
		if r := request(o); r.err != nil {
			return fmt.Errorf("warm-up request: %w", r.err)
		}
	}
	fmt.Fprintln(out, "| clients | requests | tokens | wall s | aggregate tok/s | TTFT p50 ms | TTFT p90 ms | TTFT max ms | per-stream tok/s p50 |")
	fmt.Fprintln(out, "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, n := range o.clients {
		results, wall := level(o, n)
		var ttfts []float64
		var rates []float64
		tokens := 0
		for _, r := range results {
			if r.err != nil {
				return fmt.Errorf("%d clients: %w", n, r.err)
			}
			tokens += r.tokens
			ttfts = append(ttfts, float64(r.ttft.Microseconds())/1000)
			if d := (r.total - r.ttft).Seconds(); d > 0 && r.tokens > 1 {
				rates = append(rates, float64(r.tokens-1)/d)
			}
		}
		fmt.Fprintf(out, "| %d | %d | %d | %.2f | %.0f | %.1f | %.1f | %.1f | %.0f |\n", n, len(results), tokens, wall.Seconds(),
			float64(tokens)/wall.Seconds(), quantile(ttfts, 0.5), quantile(ttfts, 0.9), quantile(ttfts, 1), quantile(rates, 0.5))
	}
	return nil
}

// level runs n clients for o.rounds requests each (or until o.maxTime) and returns every
// request's result and the wall time.
func level(o options, n int) ([]result, time.Duration) {
	start := time.Now()
	deadline := start.Add(o.maxTime)
	var mu sync.Mutex
	var results []result
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range o.rounds {
				if time.Now().After(deadline) {
					return
				}
				r := request(o)
				mu.Lock()
				results = append(results, r)
				mu.Unlock()
				if r.err != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	return results, time.Since(start)
}

// request sends one streamed completion and times its first text and its end.
func request(o options) result {
	body, _ := json.Marshal(map[string]any{
		"prompt": o.prompt, "max_tokens": o.tokens, "temperature": 0, "stream": true, "ignore_eos": true,
		"stream_options": map[string]any{"include_usage": true},
	})
	ctx, cancel := context.WithTimeout(context.Background(), o.maxTime+time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(o.url, "/")+"/v1/completions", bytes.NewReader(body))
	if err != nil {
		return result{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return result{err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(resp.Body)
		return result{err: fmt.Errorf("status %d: %s", resp.StatusCode, bytes.TrimSpace(msg))}
	}
	var r result
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			r.total = time.Since(start)
			if r.tokens == 0 {
				r.err = errors.New("the stream carried no usage chunk")
			}
			return r
		}
		var chunk struct {
			Choices []struct{ Text string }
			Usage   *struct {
				CompletionTokens int `json:"completion_tokens"`
			}
			Error *struct{ Message string }
		}
		if err := json.Unmarshal([]byte(data), &chunk); err != nil {
			return result{err: fmt.Errorf("chunk %q: %w", data, err)}
		}
		switch {
		case chunk.Error != nil:
			return result{err: errors.New(chunk.Error.Message)}
		case chunk.Usage != nil:
			r.tokens = chunk.Usage.CompletionTokens
		case r.ttft == 0 && len(chunk.Choices) > 0 && chunk.Choices[0].Text != "":
			r.ttft = time.Since(start)
		}
	}
	return result{err: fmt.Errorf("the stream ended without [DONE]: %v", sc.Err())}
}

// quantile of xs (nearest rank; 0 when empty).
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}
