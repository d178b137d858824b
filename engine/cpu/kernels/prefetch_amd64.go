package kernels

// Prefetch asks the CPU to bring b's cache lines into its caches (PREFETCHT0 on each), without
// waiting for them: a thread with nothing else to do pulls in memory that it will read soon.
func Prefetch(b []byte) {
	if len(b) > 0 {
		prefetchLines(&b[0], (len(b)+63)/64)
	}
}

func prefetchLines(p *byte, lines int)
