// Package server is the serve command (cmd/serve, posformer serve). It runs a posformer model
// behind an OpenAI-compatible HTTP API, as llama.cpp's llama-server does: POST /v1/completions,
// /v1/chat/completions (streamed as server-sent events with "stream": true) and, for encoder
// models, /v1/embeddings; GET /v1/models and /health; llama-server's /tokenize, /detokenize,
// /apply-template, /props and /slots; and GET /metrics for Prometheus. Chat runs the
// checkpoint's Jinja template (tokenizer/chat).
// Up to --parallel requests are decoded together, one batched step for all of them
// (continuous batching, engine/serve); more wait in a queue of --queue, and past that the
// server answers 503. A client that stalls cannot hold a connection (conn.go's deadlines),
// and at most --max-connections are held at once.
//
//	go run ./cmd/serve                                   # the shipped decoder on 127.0.0.1:8080
//	go run ./cmd/serve -m weights/sinusoidal-encoder     # embeddings
//	curl -s localhost:8080/v1/completions -d '{"prompt": "func main() {", "max_tokens": 32, "temperature": 0}'
//
// Flags follow llama-server's; the sampling flags are the defaults of requests that do not
// set those fields. It lives under cmd/serve so that the race-detector run of ./cmd/serve/...
// covers it.
package server

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"syscall"
	"time"

	"github.com/posformer/posformer/cmd/internal/backendflag"
	"github.com/posformer/posformer/cmd/internal/cacheflag"
	"github.com/posformer/posformer/cmd/internal/flaghelp"
	"github.com/posformer/posformer/cmd/internal/memlimit"
	"github.com/posformer/posformer/cmd/internal/modelhome"
	"github.com/posformer/posformer/cmd/internal/ropeflags"
	"github.com/posformer/posformer/cmd/internal/sampleflag"
	"github.com/posformer/posformer/cmd/internal/weightflag"
	"github.com/posformer/posformer/engine"
	"github.com/posformer/posformer/engine/serve"
	"github.com/posformer/posformer/layers/quant"
	"github.com/posformer/posformer/models"
	"github.com/posformer/posformer/weights"
)

// serveSlack is the memory allowed, above the weights, two KV caches and the logits of a few
// steps, for the server's own garbage (see run).
const serveSlack = 64 << 20

// The largest values the flags take. Past them a typing slip would allocate until the machine
// runs out of memory (--parallel 100000) or compile graphs for windows no machine holds
// (-c 1099511627776); the memory check after loading (checkModel) is the finer bound.
const (
	maxParallel    = 1024
	maxQueue       = 4096 // each waiting job holds its request and room for all its tokens
	maxCtx         = 1 << 24
	maxBodyBytes   = 64 << 20 // a prompt of maxCtx token ids is about 128 MiB of JSON; of text, a fraction
	maxConnections = 1 << 16
)

// DefaultModel is -m's default: the shipped RoPE decoder, built into the binary (package
// weights; cmd/internal/modelhome finds it), as cmd/infer's.
const DefaultModel = weights.DefaultName

type options struct {
	model, tokenizer, alias, host string
	backend, weights, cpuprofile  string
	port                          int
	parallel, queue, batch        int
	maxConns                      int
	ctxSize, nPredict             int
	contextShift                  bool // --context-shift: rows generate past -c (StreamingLLM)
	keep                          int  // --keep: the tokens a context shift never drops
	maxBody                       int64
	timeout, grace                time.Duration
	cache                         *cacheflag.Types // --cache-type-k, --cache-type-v
	sampling                      engine.Sampling  // the defaults of requests; Seed unused (seed)
	seed                          int64
	warmup                        bool
	rope                          *ropeflags.Flags
	chatTemplate                  string        // --chat-template-file
	logFormat                     string        // --log-format: text or json
	quiet                         bool          // --quiet: no request log lines
	stepDelay                     time.Duration // tests only (config.stepDelay), no flag
}

// parseFlags reads the command line; help is true for -h.
func parseFlags(args []string) (o *options, help bool, err error) {
	o = &options{}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	for _, name := range []string{"m", "model"} {
		fs.StringVar(&o.model, name, DefaultModel, "checkpoint directory, GGUF file, llama2.c .bin file, or the name of a model in $POSFORMER_HOME (posformer list)")
	}
	fs.StringVar(&o.tokenizer, "z", "", "tokenizer replacing the checkpoint's (a llama2.c .bin model needs its tokenizer.bin)")
	fs.StringVar(&o.alias, "alias", "", "model id in /v1/models and responses (default: the checkpoint's file name)")
	fs.StringVar(&o.host, "host", "127.0.0.1", "address to listen on")
	fs.IntVar(&o.port, "port", 8080, "port to listen on (0: any free port, printed at start)")
	for _, name := range []string{"np", "parallel"} {
		fs.IntVar(&o.parallel, name, 4, "requests decoded together, each in a row of one batched session")
	}
	fs.IntVar(&o.queue, "queue", 64, "requests that may wait for a free row; past that the server answers 503 with Retry-After")
	for _, name := range []string{"b", "batch-size"} {
		fs.IntVar(&o.batch, name, 256, "prompt tokens a request feeds per step while it joins (longer prompts take several steps)")
	}
	for _, name := range []string{"c", "ctx-size"} {
		fs.IntVar(&o.ctxSize, name, 0, "context size per request, the KV-cache capacity of each row (0: the model's max_seq_len)")
	}
	for _, name := range []string{"n", "n-predict"} {
		fs.IntVar(&o.nPredict, name, -1, "max_tokens of requests that give none (-1: up to the context)")
	}
	fs.BoolVar(&o.contextShift, "context-shift", false, "let a request generate past -c: when its row is full, drop half of the tokens after the first --keep and go on (StreamingLLM attention sinks); max_tokens may then exceed the context")
	fs.IntVar(&o.keep, "keep", 0, "with --context-shift: the first tokens of each request never dropped, the attention sinks (-1: the whole prompt)")
	fs.IntVar(&o.maxConns, "max-connections", 256, "connections held at once, idle keep-alive ones included; past it a new connection gets a 503 and is closed")
	fs.Int64Var(&o.maxBody, "max-body", 1<<20, "largest request body in bytes (413 past it)")
	for _, name := range []string{"to", "timeout"} {
		fs.DurationVar(&o.timeout, name, 10*time.Minute, "longest a request may take, waiting included (504 past it)")
	}
	fs.DurationVar(&o.grace, "shutdown-grace", 10*time.Second, "on SIGINT/SIGTERM, how long running requests may take to finish before they are cancelled")
	sampleflag.Register(fs, &o.sampling, "default ")
	fs.Int64Var(&o.seed, "seed", -1, "default seed of requests without one (-1: from the clock)")
	backendflag.Var(fs, &o.backend, backendflag.ShortUsage)
	weightflag.Var(fs, &o.weights, weightflag.Usage)
	o.cache = cacheflag.Register(fs)
	fs.StringVar(&o.cpuprofile, "cpuprofile", "", "write a CPU profile of the whole run to this file")
	fs.BoolVar(&o.warmup, "warmup", true, "compile the decoding graphs before listening (--warmup=false: on first use)")
	o.rope = ropeflags.Register(fs)
	registerServerFlags(fs, o)
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(os.Stderr)
			fmt.Fprintln(os.Stderr, "usage: serve [-m MODEL] [--host 127.0.0.1] [--port 8080] [--parallel N] [-c N] [--temp T] ...")
			flaghelp.PrintDefaults(fs)
			fmt.Fprintf(os.Stderr, "Connections: a client has %.0f s to send a request's headers and %.0f s its body, and %.0f s to take each write of the answer (a stream lives as long as it produces); an idle keep-alive connection closes after %.0f s.\n",
				headerTimeout.Seconds(), bodyTimeout.Seconds(), writeTimeout.Seconds(), idleTimeout.Seconds())
			return nil, true, nil
		}
		return nil, false, fmt.Errorf("%w (run with -h for the flags)", err)
	}
	if fs.NArg() > 0 {
		return nil, false, fmt.Errorf("unexpected argument %q; the model goes after -m", fs.Arg(0))
	}
	return o, false, o.check()
}

// check validates the flags, each error naming its flag.
func (o *options) check() error {
	switch {
	case o.port < 0 || o.port > 65535:
		return fmt.Errorf("--port must be in [0, 65535], got %d", o.port)
	case o.parallel < 1:
		return fmt.Errorf("--parallel must be >= 1, got %d", o.parallel)
	case o.parallel > maxParallel:
		return fmt.Errorf("--parallel must be at most %d, got %d", maxParallel, o.parallel)
	case o.queue < 0:
		return fmt.Errorf("--queue must be >= 0, got %d", o.queue)
	case o.queue > maxQueue:
		return fmt.Errorf("--queue must be at most %d, got %d", maxQueue, o.queue)
	case o.batch < 1:
		return fmt.Errorf("--batch-size must be >= 1, got %d", o.batch)
	case o.batch > maxCtx:
		return fmt.Errorf("--batch-size must be at most %d (a prompt chunk is never longer than -c), got %d", maxCtx, o.batch)
	case o.keep < -1:
		return fmt.Errorf("--keep must be >= -1, got %d", o.keep)
	case o.ctxSize < 0:
		return fmt.Errorf("-c must be >= 0, got %d", o.ctxSize)
	case o.ctxSize > maxCtx:
		return fmt.Errorf("-c must be at most %d tokens, got %d", maxCtx, o.ctxSize)
	case o.nPredict < -1 || o.nPredict == 0:
		return fmt.Errorf("-n must be -1 or >= 1, got %d", o.nPredict)
	case o.maxConns < 1:
		return fmt.Errorf("--max-connections must be >= 1, got %d", o.maxConns)
	case o.maxConns > maxConnections:
		return fmt.Errorf("--max-connections must be at most %d, got %d", maxConnections, o.maxConns)
	case o.maxBody < 1:
		return fmt.Errorf("--max-body must be >= 1 byte, got %d", o.maxBody)
	case o.maxBody > maxBodyBytes:
		return fmt.Errorf("--max-body must be at most %d bytes (64 MiB), got %d", maxBodyBytes, o.maxBody)
	case o.timeout <= 0:
		return fmt.Errorf("--timeout must be > 0, got %s", o.timeout)
	case o.grace < 0:
		return fmt.Errorf("--shutdown-grace must be >= 0, got %s", o.grace)
	}
	if _, err := newLogger(io.Discard, o.logFormat, false); err != nil {
		return err
	}
	if err := sampleflag.Check(o.sampling); err != nil {
		return err
	}
	_, err := o.weightType()
	return err
}

// checkModel bounds the flags that depend on the loaded model, before any KV cache exists:
// -c against the positions the model's encoding reaches, and the memory the server will hold
// for --parallel rows of -c tokens against avail, the memory available (< 0: unknown, no
// check). An encoder holds no cache.
func (o *options) checkModel(e *engine.Engine, avail int64) error {
	if lim := e.SequenceLimit(); o.ctxSize > lim {
		return fmt.Errorf("-c %d is past the %d positions this model's positional encoding reaches; use -c %d or less", o.ctxSize, lim, lim)
	}
	if o.contextShift && e.Model.Config.Causal() {
		if err := e.CanShift(); err != nil {
			return err
		}
		if _, _, err := o.shift().Resolve(e.SequenceLimit(), 0); err != nil {
			return err
		}
	}
	if !e.Model.Config.Causal() || avail < 0 {
		return nil
	}
	if need := serveMemory(e, o.parallel); need > avail {
		return fmt.Errorf("--parallel %d rows of %d tokens (-c) need %s (two KV caches of %s while rows move between sessions, and room for the steps) but %s is available; lower --parallel or -c",
			o.parallel, e.Capacity, memlimit.Size(need), memlimit.Size(e.KVBytes(o.parallel)), memlimit.Size(avail))
	}
	return nil
}

// serveMemory is what the server holds above the weights for parallel rows: two KV caches
// while the scheduler moves its rows into a larger session, plus room for requests,
// responses and per-step garbage. With memlimit's own slack alone (16 MiB) the collector ran
// all the time under 16 clients (4k instead of 9k tok/s on the shipped model). Each step
// copies every row's logits twice (the engine's AppendLast, the sampler's repeat penalty):
// room for 32 steps of them.
func serveMemory(e *engine.Engine, parallel int) int64 {
	logits := int64(parallel) * int64(e.Model.Config.VocabSize) * 4
	return 2*e.KVBytes(parallel) + serveSlack + 64*logits
}

// flagError is a flag refused once the model is loaded (checkModel): the command exits 2, as
// for the flags refused before.
type flagError struct{ error }

func (e flagError) Unwrap() error { return e.error }

// weightType parses --weights (default: the type the checkpoint stores).
func (o *options) weightType() (quant.Type, error) { return weightflag.Type(o.weights, o.model) }

// edits are the RoPE-scaling flags as a configuration change.
func (o *options) edits() []models.Edit {
	if o.rope == nil || !o.rope.Given() {
		return nil
	}
	return []models.Edit{o.rope.Edit()}
}

// shift is --context-shift's setting, nil when off.
func (o *options) shift() *engine.ContextShift {
	if !o.contextShift {
		return nil
	}
	return &engine.ContextShift{Keep: o.keep}
}

// config is the server's part of the options.
func (o *options) config() config {
	return config{
		parallel: o.parallel, queue: o.queue, chunk: o.batch, maxBody: o.maxBody, timeout: o.timeout, nPredict: o.nPredict,
		defaults: o.sampling,
		seed:     o.seed, stepDelay: o.stepDelay,
		headerTimeout: headerTimeout, bodyTimeout: bodyTimeout, writeTimeout: writeTimeout, idleTimeout: idleTimeout,
		maxConns: o.maxConns, contextShift: o.shift(),
	}
}

// Main runs the command with args (the arguments after the command's name) and returns its
// exit status: 2 for a bad flag, 1 for a failure.
func Main(args []string) int {
	o, help, err := parseFlags(args)
	if help {
		return 0
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		return 2
	}
	given := o.model
	if o.model, err = modelhome.Resolve(o.model); err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		return 1
	}
	if o.alias == "" && o.model != given {
		o.alias = given // a name in $POSFORMER_HOME, or the built-in model's, not the folder it names
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // a second signal during the grace period kills the process
	}()
	if err := run(ctx, o, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		if errors.As(err, new(flagError)) {
			return 2
		}
		return 1
	}
	return 0
}

// run loads the model, listens, and serves until ctx ends (a signal); then it stops taking
// connections, lets running requests finish for --shutdown-grace, cancels the rest, and
// returns. Its one line of log on stderr names the address it listens on.
func run(ctx context.Context, o *options, logw io.Writer) error {
	if o.cpuprofile != "" {
		f, err := os.Create(o.cpuprofile)
		if err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	memlimit.ForLoading(engine.CheckpointBytes(o.model))
	start := time.Now()
	m, err := loadModel(o)
	if err != nil {
		return err
	}
	avail, ok := memlimit.Available()
	if !ok {
		avail = -1
	}
	if err := o.checkModel(m.e, avail); err != nil {
		return flagError{err}
	}
	memlimit.Set(memlimit.Base(), serveMemory(m.e, o.parallel))
	if o.warmup && !m.encoder() {
		// Every session size the scheduler may use (powers of two up to --parallel).
		for _, rows := range serve.SessionSizes(o.parallel) {
			if err := m.e.Warmup(rows, o.batch); err != nil {
				return err
			}
		}
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(o.host, strconv.Itoa(o.port)))
	if err != nil {
		return fmt.Errorf("listening: %w (is another server on port %d? pick one with --port)", err, o.port)
	}
	base, cancelBase := context.WithCancel(context.Background())
	defer cancelBase()
	cfg := o.config()
	cfg.logger, _ = newLogger(logw, o.logFormat, o.quiet) // parseFlags checked the format
	m.template.OnFallback = templateFallbackLog(logw, o.logFormat)
	s := newServer(base, m, cfg)
	defer s.close()
	srv := s.httpServer(logw)
	kind := fmt.Sprintf("%d rows of %d tokens, chat template %s", o.parallel, m.e.Capacity, m.template.Describe())
	if m.encoder() {
		kind = fmt.Sprintf("encoder, embeddings of %d", m.e.Model.Config.Dim)
	}
	fmt.Fprintf(logw, "serve: %s (%s) ready in %.2f s · listening on http://%s · %s\n",
		m.name, kind, time.Since(start).Seconds(), ln.Addr(), engine.BackendSummary(m.e.Backend))

	if m.template.Fallback != "" {
		fmt.Fprintln(logw, "serve:", m.template.Fallback)
	}
	maxConns, note := fitToFiles(o.maxConns, openFileLimit())
	if note != "" {
		fmt.Fprintln(logw, note)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(newLimitListener(ln, maxConns)) }()
	select {
	case err := <-served:
		return fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
	}
	fmt.Fprintf(logw, "serve: shutting down (running requests have %s to finish)\n", o.grace)
	graceCtx, cancel := context.WithTimeout(context.Background(), o.grace)
	defer cancel()
	if err := srv.Shutdown(graceCtx); err != nil {
		// Past the grace period: cancel what still runs, and give the handlers a moment to
		// send their last event.
		cancelBase()
		s.close()
		closeCtx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := srv.Shutdown(closeCtx); err != nil {
			srv.Close()
		}
	}
	return nil
}
