package cpu

import "testing"

// hugeRange covers exactly the whole 2 MiB pages inside a buffer, and nothing of small ones.
func TestHugeRange(t *testing.T) {
	const M = hugePage
	for _, c := range []struct {
		start  uintptr
		n      int
		lo, hi int
	}{
		{0, 4 * M, 0, 4 * M},
		{M, 4*M + 5, 0, 4 * M},
		{M + 64, 4 * M, M - 64, 4*M - 64},
		{M + 64, 2*M - 64, 0, 0}, // under two huge pages
		{64, 2 * M, M - 64, 2*M - 64},
		{64, 3 * M, M - 64, 3*M - 64},
		{64, M, 0, 0},
	} {
		lo, hi := hugeRange(c.start, c.n)
		if hi <= lo {
			lo, hi = 0, 0
		}
		if lo != c.lo || hi != c.hi {
			t.Errorf("hugeRange(%#x, %d) = [%d, %d), want [%d, %d)", c.start, c.n, lo, hi, c.lo, c.hi)
		}
		if hi > lo && ((c.start+uintptr(lo))%M != 0 || (c.start+uintptr(hi))%M != 0 || hi > c.n) {
			t.Errorf("hugeRange(%#x, %d) = [%d, %d) is not whole pages inside the buffer", c.start, c.n, lo, hi)
		}
	}
	// A large buffer from alloc is zero and writable whatever the kernel did with the advice.
	b := alloc(5 * M)
	for i := 0; i < len(b); i += 4096 {
		if b[i] != 0 {
			t.Fatalf("alloc: byte %d = %d", i, b[i])
		}
		b[i] = 1
	}
}
