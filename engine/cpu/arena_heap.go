//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package cpu

// mapArena: where anonymous mappings are not at hand, arenas live on the Go heap (see
// arena_mmap.go for what that costs under a memory limit).
func mapArena(n int) []byte { return alloc(n) }

func unmapArena([]byte) {}
