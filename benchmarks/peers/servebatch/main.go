// Command servebatch times posformer's batched serving the way llamacpp_batched.c times
// llama.cpp's: N streams submitted at once to engine/serve's scheduler (the loop behind
// cmd/serve, without HTTP), each a prompt of P token ids continued greedily by G tokens without
// stopping at EOS, and prints the aggregate generated tokens per second from the first
// submission to the last token.
//
//	go run ./benchmarks/peers/servebatch -m r15m-f32.gguf -streams 1,4,16 -prompt 16 -gen 128
//
// The prompt of stream s is BOS followed by the ids 100+s, 101+s, ...: the same ids
// llamacpp_batched.c feeds, so that both engines prefill the same tokens.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/posformer/posformer/engine"
	"github.com/posformer/posformer/engine/serve"
)

func main() {
	model := flag.String("m", "", "model file (a GGUF file, or any checkpoint cmd/serve reads)")
	backend := flag.String("backend", "cpu", "backend, as cmd/serve's --backend")
	streams := flag.String("streams", "1,4,16", "comma-separated numbers of concurrent streams")
	prompt := flag.Int("prompt", 16, "prompt tokens per stream (BOS included)")
	gen := flag.Int("gen", 128, "tokens generated per stream")
	reps := flag.Int("reps", 1, "timed repetitions of each stream count (after one untimed)")
	flag.Parse()
	if err := run(*model, *backend, *streams, *prompt, *gen, *reps); err != nil {
		fmt.Fprintln(os.Stderr, "servebatch:", err)
		os.Exit(1)
	}
}

func run(model, backend, streams string, prompt, gen, reps int) error {
	if model == "" {
		return fmt.Errorf("no model: pass -m FILE (a GGUF file written by cmd/export, say)")
	}
	var counts []int
	for _, f := range strings.Split(streams, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return fmt.Errorf("-streams %q: want positive integers separated by commas", streams)
		}
		counts = append(counts, n)
	}
	if prompt < 1 || gen < 1 {
		return fmt.Errorf("-prompt and -gen must be >= 1, got %d and %d", prompt, gen)
	}
	e, err := engine.LoadAs(model, backend, 0, engine.StoredWeightType(model))
	if err != nil {
		return fmt.Errorf("loading %s: %w", model, err)
	}
	if prompt+gen > e.SequenceLimit() {
		return fmt.Errorf("-prompt %d + -gen %d exceed the model's %d positions", prompt, gen, e.SequenceLimit())
	}
	for _, n := range counts {
		// A scheduler of n rows, as cmd/serve --parallel n, and a prompt chunk of the whole
		// prompt (its --batch-size default, 256, holds it).
		s := serve.NewScheduler(e, serve.Config{Parallel: n, Queue: n, Chunk: 256})
		for r := 0; r <= reps; r++ { // the first round compiles the graphs of every batch size
			secs, err := round(s, n, prompt, gen)
			if err != nil {
				s.Stop()
				return err
			}
			if r > 0 {
				fmt.Printf("posformer streams=%d prompt=%d gen=%d tok/s=%.1f\n", n, prompt, gen, float64(n*gen)/secs)
			}
		}
		s.Stop()
	}
	return nil
}

// round submits n jobs at once and waits for all of them; it returns the seconds from the first
// submission to the last event.
func round(s *serve.Scheduler, n, prompt, gen int) (float64, error) {
	jobs := make([]*serve.Job, n)
	start := time.Now()
	for i := range jobs {
		p := make([]int, prompt)
		p[0] = 1 // BOS
		for k := 1; k < prompt; k++ {
			p[k] = 100 + i + k - 1
		}
		sm, err := engine.NewSampler(engine.Sampling{}) // greedy
		if err != nil {
			return 0, err
		}
		jobs[i] = serve.NewJob(context.Background(), p, gen, sm, nil)
		if err := s.Submit(jobs[i]); err != nil {
			return 0, fmt.Errorf("submitting stream %d: %w", i, err)
		}
	}
	for i, j := range jobs {
		got := 0
		for ev := range j.Events() {
			if ev.Err != nil {
				return 0, fmt.Errorf("stream %d: %w", i, ev.Err)
			}
			if ev.Finish != "" {
				break
			}
			got++
		}
		if got != gen {
			return 0, fmt.Errorf("stream %d generated %d tokens, want %d", i, got, gen)
		}
	}
	return time.Since(start).Seconds(), nil
}
