package kernels

import (
	"syscall"
	"unsafe"
)

// hugeFloats is make([]float32, n) backed by transparent huge pages where the kernel gives them
// on request ("madvise" mode), as the backend's large buffers are (engine/cpu's hugePages): a
// bandwidth measured on 4 KiB pages pays TLB misses that decoding the weights does not.
func hugeFloats(n int) []float32 {
	const huge = 2 << 20
	b, err := syscall.Mmap(-1, 0, (4*n+huge-1)&^(huge-1), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return make([]float32, n)
	}
	_ = syscall.Madvise(b, 14) // MADV_HUGEPAGE
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b))), n)
}
