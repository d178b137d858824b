//go:build unix

package server

import "syscall"

// openFileLimit is the soft limit on the process's open files (ulimit -n), 0 if unknown.
func openFileLimit() int {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil || r.Cur > 1<<30 {
		return 0
	}
	return int(r.Cur)
}
