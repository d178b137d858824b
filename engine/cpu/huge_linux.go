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
		_ = syscall.Madvise(b[lo:hi], madvHugePage)
	}
}

// hugePagesAround backs the whole 2 MiB pages that a long-lived buffer on the Go heap touches
// (beyond its ends too: its neighbours are other heap objects) with transparent huge pages now,
// by MADV_COLLAPSE (Linux 6.1 and later; elsewhere it fails and nothing changes), after
// MADV_HUGEPAGE so that the kernel keeps them. A model's weight matrices, a few hundred KB to a
// few MB each, otherwise sit on 4 KiB pages: hugePages takes only buffers holding whole huge
// pages, and heap memory already touched keeps its pages. Decoding streams every weight once a
// token, and at every 4 KiB page the hardware prefetcher stops and the TLB misses: the 110M
// shape's Q8_0 decoding ran 1.10x faster with its weights collapsed (benchmarks/SPEED.md,
// "Memory"). It is called once per buffer made from the host, when an executable first reads it
// without donating it (exec.go): weights, not the KV cache's windows (donated, many, and
// allocated ahead: collapsing them all took 0.4 s of a 110M session's start) nor the buffers
// executables return. The copy is paid by that first call. It reports whether the kernel
// collapsed the range.
func hugePagesAround(b []byte) bool {
	if len(b) < minHugeAround {
		return false
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	lo := start &^ (hugePage - 1)
	hi := (start + uintptr(len(b)) + hugePage - 1) &^ (hugePage - 1)
	_, _, _ = syscall.Syscall(syscall.SYS_MADVISE, lo, hi-lo, madvHugePage)
	_, _, errno := syscall.Syscall(syscall.SYS_MADVISE, lo, hi-lo, madvCollapse)
	return errno == 0
}

const (
	madvHugePage = 14
	madvCollapse = 25
)

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
