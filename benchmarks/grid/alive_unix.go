//go:build unix

package grid

import (
	"errors"
	"syscall"
)

// processAlive reports whether a process with this pid runs on this host (signal 0 checks
// without sending; EPERM means it runs as another user).
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
