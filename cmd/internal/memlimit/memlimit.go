// Package memlimit sets Go's soft memory limit for a process that holds a model: the heap in
// use once the weights are loaded, plus the KV cache it will grow, plus some slack.
//
// Why: the weights are a large heap that lives as long as the process. With Go's default
// pacing (GOGC=100) the garbage made while decoding may grow to the size of the live heap
// before a collection, so the process would peak near twice the weights. A soft limit
// (runtime/debug.SetMemoryLimit) makes the collector run as the total approaches it instead;
// if a step needs more (a long prompt), the process collects more often, it does not fail.
package memlimit

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
)

// Slack is the memory allowed above weights and cache for a step's temporary buffers and
// not-yet-collected garbage. The cpu backend keeps a pool of recycled buffers on the heap (its
// arenas, a step's working memory, are mapped outside it and not counted); when the arenas
// were on the heap too (about 8 MB for the 15M shape's decoding), 8 MiB of slack left no room
// for garbage and the collector ran at every other token (15M decode 296 tok/s; 480 with 16
// MiB, peak RSS 105 MB against 101; 448 and 148 MB with no limit), and a 512-token prompt's
// arena kept the heap over the limit for the whole prefill.
const Slack = 16 << 20

// Base reads the memory the Go runtime holds now (what the limit counts: every mapped span,
// not only the heap in use, less what was returned to the system): call it right after
// loading the model.
func Base() int64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.Sys - ms.HeapReleased)
}

// Set limits the process to base + kvBytes + Slack and a sixteenth of base + kvBytes, unless
// GOMEMLIMIT is set (the user's choice wins) or base is 0.
//
// The sixteenth is for the runtime's own memory, which the limit counts (the collector aims the
// heap at the limit less that memory) and which grows with the heap: span and GC metadata,
// partly filled spans. For the 110M shape in float32 (428 MiB after loading, a reserved cache of
// 139 MiB) it took 14 MiB of the slack once the cache was allocated, and the collector ran at
// every token (1,769 collections in 512 tokens, 42 against 70 tok/s with 17 MiB more).
func Set(base, kvBytes int64) {
	if os.Getenv("GOMEMLIMIT") != "" || base <= 0 {
		return
	}
	debug.SetMemoryLimit(base + kvBytes + Slack + (base+kvBytes)/16)
}

// ForLoading limits the process while it reads a checkpoint of the given size (bytes on disk,
// about the weights in memory), so that the reader's buffers are collected as it goes.
func ForLoading(checkpointBytes int64) { Set(Base(), checkpointBytes) }

// Off removes the limit.
func Off() { debug.SetMemoryLimit(math.MaxInt64) }
