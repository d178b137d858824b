//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package cpu

import "syscall"

// mapArena returns n zeroed bytes mapped outside the Go heap, for an arena. An arena is
// working memory with a known lifetime (lent to one call at a time by the backend's pool, given
// back when the pool drops it), like the KV cache rather than like garbage. On the Go heap it
// counted toward the process's soft memory limit (cmd/infer and cmd/serve set one a little above
// weights and cache), so a long prompt's arena put the heap over the limit and the collector
// ran back to back for the whole prefill: 512-token prefills of the 15M shape took 20-50%
// longer than without the limit. Mapped here, the collector neither counts nor scans it. Where
// mapping fails the bytes come from the heap, as before.
func mapArena(n int) []byte {
	if n == 0 {
		return []byte{}
	}
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return alloc(n)
	}
	hugePages(b)
	return b
}

// unmapArena releases an arena the pool drops. syscall.Munmap unmaps only what syscall.Mmap
// mapped (it refuses any other slice, a heap fallback of mapArena's included), and only
// whole: the pool hands back the full slice.
func unmapArena(b []byte) {
	_ = syscall.Munmap(b)
}
