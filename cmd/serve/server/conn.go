package server

// The connection side: how long a client may take to send a request or to read an answer, how
// long an idle keep-alive connection stays open, and how many connections the server holds at
// once. Each bound keeps a client that stalls (on purpose or not) from holding a file
// descriptor and a goroutine for ever.

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"sync"
	"time"
)

// The connection deadlines (llama-server's --timeout is one read/write timeout; here --timeout
// is the whole request, so these are constants):
const (
	// headerTimeout is how long a client has to send a request's headers.
	headerTimeout = 30 * time.Second
	// bodyTimeout is how long a client has to send a request's body once its headers are in;
	// the generation that follows is bounded by --timeout instead.
	bodyTimeout = 60 * time.Second
	// writeTimeout is how long a client has to take each write of the answer: a stream lives
	// as long as it produces and its client reads, each event starting a new deadline.
	writeTimeout = 60 * time.Second
	// idleTimeout is how long a keep-alive connection may wait for its next request.
	idleTimeout = 60 * time.Second
	// refuseTimeout is how long a connection past --max-connections has to take its 503.
	refuseTimeout = time.Second
	// maxRefusing bounds the connections being answered 503 at once; past it the server closes
	// new connections without an answer rather than spend more goroutines on them.
	maxRefusing = 64
)

// httpServer is the HTTP server for s, its deadlines taken from s's configuration.
func (s *server) httpServer(logw io.Writer) *http.Server {
	return &http.Server{
		Handler:           s,
		ReadHeaderTimeout: s.cfg.headerTimeout,
		IdleTimeout:       s.cfg.idleTimeout,
		ErrorLog:          log.New(logw, "serve: ", 0),
	}
}

// deadlineWriter moves the connection's write deadline writeTimeout past each write and flush,
// so that a client which stops reading frees its handler, while one that keeps reading may
// take as long as the answer does.
type deadlineWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

func newDeadlineWriter(w http.ResponseWriter, timeout time.Duration) *deadlineWriter {
	return &deadlineWriter{ResponseWriter: w, rc: http.NewResponseController(w), timeout: timeout}
}

func (w *deadlineWriter) extend() { w.rc.SetWriteDeadline(time.Now().Add(w.timeout)) }

func (w *deadlineWriter) WriteHeader(status int) {
	w.extend()
	w.ResponseWriter.WriteHeader(status)
}

func (w *deadlineWriter) Write(p []byte) (int, error) {
	w.extend()
	return w.ResponseWriter.Write(p)
}

func (w *deadlineWriter) FlushError() error {
	w.extend()
	return w.rc.Flush()
}

// Unwrap lets http.ResponseController reach the connection's own writer.
func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// limitListener holds at most cap(slots) connections at once. A connection past that gets a 503
// with OpenAI's error object and Connection: close, then is closed: a client sees why, and
// retries, instead of a reset or a connection that hangs in the kernel's backlog.
type limitListener struct {
	net.Listener
	slots    chan struct{} // one per open connection
	refusing chan struct{} // one per connection being answered 503
	refusal  []byte        // the whole 503 response
}

func newLimitListener(ln net.Listener, max int) *limitListener {
	body := fmt.Sprintf(`{"error":{"message":"the server holds %d connections already (--max-connections); retry shortly","type":"unavailable_error","param":null,"code":null}}`+"\n", max)
	resp := fmt.Sprintf("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: %d\r\nRetry-After: 1\r\nConnection: close\r\n\r\n%s", len(body), body)
	return &limitListener{Listener: ln, slots: make(chan struct{}, max), refusing: make(chan struct{}, maxRefusing), refusal: []byte(resp)}
}

// Accept returns the next connection there is room for, refusing the others.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.slots <- struct{}{}:
			return &limitConn{Conn: c, release: func() { <-l.slots }}, nil
		default:
			l.refuse(c)
		}
	}
}

// refuse answers c 503 and closes it, off the accepting goroutine, within refuseTimeout. It
// answers once the request's headers are in (an answer before the request confuses clients:
// Go's calls it an unsolicited response and fails), and reads what else the client sent before
// closing: closing a socket with unread input resets the connection, and the client would see
// the reset instead of the answer.
func (l *limitListener) refuse(c net.Conn) {
	select {
	case l.refusing <- struct{}{}:
	default:
		c.Close()
		return
	}
	go func() {
		defer func() { <-l.refusing }()
		defer c.Close()
		c.SetDeadline(time.Now().Add(refuseTimeout))
		r := bufio.NewReader(io.LimitReader(c, 64<<10))
		for {
			line, err := r.ReadSlice('\n')
			if err != nil || len(bytes.TrimSpace(line)) == 0 {
				break // the blank line after the headers, or no more to wait for
			}
		}
		if _, err := c.Write(l.refusal); err != nil {
			return
		}
		if tc, ok := c.(interface{ CloseWrite() error }); ok {
			tc.CloseWrite()
		}
		io.Copy(io.Discard, r)
	}()
}

// limitConn gives its slot back when closed.
type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// filesReserved are the descriptors the process holds besides its connections: standard
// streams, the listener, the poller, the model's files while loading, a margin.
const filesReserved = 32

// fitToFiles lowers a connection cap that the open-file limit could not hold: every held
// connection and every one being refused takes a descriptor, and a process out of them cannot
// accept even the connection that would be refused (accept4: too many open files), so clients,
// health checks included, hang instead of getting a 503. It returns the cap and, when lowered,
// a line saying so.
func fitToFiles(maxConns, fileLimit int) (int, string) {
	if fileLimit <= 0 {
		return maxConns, ""
	}
	fit := max(1, fileLimit-filesReserved-maxRefusing)
	if maxConns <= fit {
		return maxConns, ""
	}
	return fit, fmt.Sprintf("serve: --max-connections lowered from %d to %d: the process may hold %d open files (ulimit -n); raise that limit to hold more", maxConns, fit, fileLimit)
}
