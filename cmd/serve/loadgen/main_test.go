package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A fake server streams max_tokens one-token chunks, then the usage chunk and [DONE]; the load
// generator counts every request of every client and all their tokens.
func TestLoadgenCounts(t *testing.T) {
	var requests atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			MaxTokens int  `json:"max_tokens"`
			Stream    bool `json:"stream"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || !req.Stream || r.URL.Path != "/v1/completions" {
			http.Error(w, "bad request", 400)
			return
		}
		requests.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		for range req.MaxTokens {
			fmt.Fprintf(w, "data: {\"choices\":[{\"text\":\"x\"}]}\n\n")
			w.(http.Flusher).Flush()
			time.Sleep(time.Millisecond)
		}
		fmt.Fprintf(w, "data: {\"choices\":[],\"usage\":{\"completion_tokens\":%d}}\n\ndata: [DONE]\n\n", req.MaxTokens)
	}))
	defer ts.Close()
	var out strings.Builder
	o := options{url: ts.URL, prompt: "p", clients: []int{1, 3}, rounds: 2, tokens: 5, maxTime: time.Minute}
	if err := run(o, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| 1 | 2 | 10 |", "| 3 | 6 | 30 |"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks a row starting %q:\n%s", want, out.String())
		}
	}
	if got := requests.Load(); got != 8 {
		t.Errorf("%d requests reached the server, want 8", got)
	}
}

// A server error ends the run with its status.
func TestLoadgenReportsErrors(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":{"message":"busy"}}`, http.StatusServiceUnavailable)
	}))
	defer ts.Close()
	err := run(options{url: ts.URL, clients: []int{1}, rounds: 1, tokens: 1, maxTime: time.Minute}, &strings.Builder{})
	if err == nil || !strings.Contains(err.Error(), "503") {
		t.Errorf("error %v, want the 503", err)
	}
}

func TestQuantile(t *testing.T) {
	xs := []float64{5, 1, 4, 2, 3}
	for q, want := range map[float64]float64{0.5: 3, 0.9: 5, 1: 5, 0.2: 1} {
		if got := quantile(xs, q); got != want {
			t.Errorf("quantile %g of 1..5: %g, want %g", q, got, want)
		}
	}
	if quantile(nil, 0.5) != 0 {
		t.Error("quantile of nothing")
	}
}
