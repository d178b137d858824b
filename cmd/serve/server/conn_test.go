package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// startConnServer serves a fresh copy of the decoder as run does (the command's http.Server
// and its connection limit), with cfg edited by edit.
func startConnServer(t *testing.T, edit func(*config)) (*httptest.Server, *server) {
	t.Helper()
	m := loadTestModel(t, decoderPath, true)
	cfg := testOptions(t, decoderPath).config()
	if edit != nil {
		edit(&cfg)
	}
	base, cancel := context.WithCancel(context.Background())
	s := newServer(base, m, cfg)
	ts := httptest.NewUnstartedServer(s)
	ts.Config = s.httpServer(io.Discard)
	ts.Listener = newLimitListener(ts.Listener, cfg.maxConns)
	ts.Start()
	t.Cleanup(func() {
		cancel()
		ts.Close()
		s.close()
	})
	return ts, s
}

// dial opens a raw connection to ts, which the test reads for at most 10 s.
func dial(t *testing.T, ts *httptest.Server) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	t.Cleanup(func() { c.Close() })
	return c
}

// closedBy reads c until the server closes it, failing if that takes past limit.
func closedBy(t *testing.T, c net.Conn, r io.Reader, start time.Time, limit time.Duration, what string) {
	t.Helper()
	_, err := io.Copy(io.Discard, r)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("%s: the server still held the connection after 10 s", what)
	}
	if took := time.Since(start); took > limit {
		t.Errorf("%s: the server closed the connection after %s, want within %s", what, took, limit)
	}
}

// A client that sends its headers and part of its body, then stalls, has its connection
// closed once the body deadline passes: with a 408 where the handler reads the body, after the
// answer where it does not (net/http then reads what is left of the body).
func TestStalledBodyIsClosed(t *testing.T) {
	const deadline = 200 * time.Millisecond
	ts, _ := startConnServer(t, func(c *config) { c.bodyTimeout = deadline })
	for _, c := range []struct {
		request string
		status  int
	}{
		{"POST /v1/completions", http.StatusRequestTimeout},
		{"GET /health", http.StatusOK},
	} {
		conn := dial(t, ts)
		start := time.Now()
		io.WriteString(conn, c.request+" HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"prompt\": \"func")
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%s: no answer to a stalled body: %v", c.request, err)
		}
		var out map[string]any
		json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Errorf("%s with a stalled body: %d %v, want %d", c.request, resp.StatusCode, out, c.status)
		}
		if e, _ := out["error"].(map[string]any); c.status == http.StatusRequestTimeout && e["code"] != "request_timeout" {
			t.Errorf("%s with a stalled body: %v, want the code request_timeout", c.request, out)
		}
		closedBy(t, conn, br, start, deadline+2*time.Second, c.request+" with a stalled body")
		if took := time.Since(start); took < deadline {
			t.Errorf("%s: closed after %s, before the body deadline of %s", c.request, took, deadline)
		}
	}
}

// An idle keep-alive connection is closed after the idle deadline.
func TestIdleConnectionIsClosed(t *testing.T) {
	const deadline = 200 * time.Millisecond
	ts, _ := startConnServer(t, func(c *config) { c.idleTimeout = deadline })
	c := dial(t, ts)
	io.WriteString(c, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusOK || resp.Close {
		t.Fatalf("GET /health on a keep-alive connection: %v %v", resp, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	start := time.Now()
	closedBy(t, c, br, start, deadline+2*time.Second, "an idle connection")
	if took := time.Since(start); took < deadline/2 {
		t.Errorf("the idle connection closed after %s, well before the idle deadline of %s", took, deadline)
	}
}

// Connections past --max-connections get a 503 with OpenAI's error object and are closed;
// once a connection closes, a new one is served.
func TestConnectionsPastTheLimitAreRefused(t *testing.T) {
	ts, _ := startConnServer(t, func(c *config) { c.maxConns = 2 })
	var held []net.Conn
	for range 2 { // held open after one request each: keep-alive
		c := dial(t, ts)
		io.WriteString(c, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("a connection within the limit: %v %v", resp, err)
		}
		resp.Body.Close()
		held = append(held, c)
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get(ts.URL + "/health")
	if err != nil {
		t.Fatalf("a connection past the limit got no answer: %v", err)
	}
	var out map[string]map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	msg, _ := out["error"]["message"].(string)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !strings.Contains(msg, "--max-connections") {
		t.Errorf("a connection past the limit: %d %v, want 503 with Retry-After naming --max-connections", resp.StatusCode, out)
	}
	held[0].Close()
	waitFor(t, "a freed connection to be served", func() bool {
		resp, err := client.Get(ts.URL + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// The deadlines bound a client's pauses, not the answer: a generation that takes longer than
// the body and write deadlines finishes, whole and streamed.
func TestLongAnswersOutliveTheDeadlines(t *testing.T) {
	const deadline = 100 * time.Millisecond
	ts, _ := startConnServer(t, func(c *config) {
		c.bodyTimeout, c.writeTimeout, c.stepDelay = deadline, deadline, 20*time.Millisecond
	})
	body := map[string]any{"prompt": "func main() {", "max_tokens": 15, "ignore_eos": true, "temperature": 0}
	start := time.Now()
	status, out, _ := post(t, ts.URL+"/v1/completions", body)
	if _, finish := answerText(t, out); status != http.StatusOK || finish != "length" {
		t.Errorf("a whole answer: %d %v, want 200 finishing at length", status, out)
	}
	if took := time.Since(start); took < 2*deadline {
		t.Fatalf("the answer took %s, not past the deadlines of %s: the test proves nothing", took, deadline)
	}
	body["stream"] = true
	resp := stream(t, context.Background(), ts.URL+"/v1/completions", body)
	defer resp.Body.Close()
	chunks, done := readStream(t, resp)
	if _, finish := streamText(t, chunks); !done || finish != "length" {
		t.Errorf("a stream: done %v, finish %q, want [DONE] after finishing at length", done, finish)
	}
}

// A client that stops reading a stream frees its handler and its connection once a write has
// waited past the write deadline (without one, the handler would wait on the write for ever).
func TestStalledReaderIsClosed(t *testing.T) {
	const deadline = 200 * time.Millisecond
	closed := make(chan struct{}, 4)
	m := loadTestModel(t, decoderPath, true)
	cfg := testOptions(t, decoderPath).config()
	cfg.writeTimeout = deadline
	base, cancel := context.WithCancel(context.Background())
	s := newServer(base, m, cfg)
	ts := httptest.NewUnstartedServer(s)
	ts.Config = s.httpServer(io.Discard)
	ts.Config.ConnState = func(c net.Conn, st http.ConnState) {
		switch st {
		case http.StateNew:
			// Small socket buffers on both ends (the client's below): the answer, about 180
			// bytes an event and a thousand events, soon fills them, and the server's writes
			// wait, as a longer answer's would with the kernel's own sizes.
			c.(*net.TCPConn).SetWriteBuffer(4096)
		case http.StateClosed:
			closed <- struct{}{}
		}
	}
	ts.Start()
	t.Cleanup(func() {
		cancel()
		ts.Close()
		s.close()
	})

	c := dial(t, ts)
	c.(*net.TCPConn).SetReadBuffer(4096)
	body := `{"prompt": "func main() {", "stream": true, "ignore_eos": true}`
	start := time.Now()
	io.WriteString(c, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body)
	select {
	case <-closed:
		if took := time.Since(start); took < deadline {
			t.Errorf("closed after %s, before the write deadline of %s", took, deadline)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server still held a connection whose client stopped reading after 10 s")
	}
	waitFor(t, "the row to be freed", func() bool { return s.sched.Busy() == 0 })
}

// A connection cap the open-file limit cannot hold is lowered so that the held connections, the
// ones being refused and the process's own files fit; an unknown or ample limit leaves it.
func TestFitToFiles(t *testing.T) {
	for _, c := range []struct{ conns, limit, want int }{
		{256, 0, 256},
		{256, 1 << 20, 256},
		{256, 128, 128 - filesReserved - maxRefusing},
		{8, 128, 8},
		{256, 50, 1},
	} {
		got, note := fitToFiles(c.conns, c.limit)
		if got != c.want || (got != c.conns) != (note != "") {
			t.Errorf("fitToFiles(%d, %d) = %d, %q; want %d, and a note exactly when lowered", c.conns, c.limit, got, note, c.want)
		}
	}
}
