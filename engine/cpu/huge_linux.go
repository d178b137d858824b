package cpu

import (
	"syscall"
	"unsafe"
)

// hugePages asks the kernel to back the 2 MiB-aligned interior of a large buffer with
// transparent huge pages (Linux's "madvise" mode, the default of many distributions, gives
// them only to regions that ask). A training step's arena is hundreds of megabytes streamed by
// every op: with 4 KiB pages each op walks thousands of them, and the first touch of each is a
// page fault, slow on virtual machines. Measured on the v2-lm training step: the steps' summed
// time 3.40 → 3.10 s (benchmarks/SPEED.md, "Memory"). Errors are ignored: without huge
// pages the buffer works the same.
func hugePages(b []byte) {
	lo, hi := hugeRange(uintptr(unsafe.Pointer(unsafe.SliceData(b))), len(b))
	if hi > lo {
		_ = syscall.Madvise(b[lo:hi], 14) // MADV_HUGEPAGE
	}
}

// hugePage is the size of an x86-64 (and arm64 4K-granule) transparent huge page.
const hugePage = 2 << 20

// hugeRange is the offsets [lo, hi) of the whole huge pages inside n bytes at address start;
// hi <= lo when the buffer is too small to be worth it (under two huge pages).
func hugeRange(start uintptr, n int) (lo, hi int) {
	if n < 2*hugePage {
		return 0, 0
	}
	first := (start + hugePage - 1) &^ (hugePage - 1)
	last := (start + uintptr(n)) &^ (hugePage - 1)
	if last <= first {
		return 0, 0
	}
	return int(first - start), int(last - start)
}
