//go:build !unix

package grid

import "os"

// processAlive reports whether a process with this pid runs on this host: where there is no
// signal 0, whether the system finds it (Windows opens a handle to a live process only).
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	_ = p.Release()
	return true
}
