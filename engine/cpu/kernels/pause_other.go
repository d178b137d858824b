//go:build !amd64

package kernels

// Pause is the CPU's spin-wait hint; off amd64 it does nothing.
func Pause() {}
