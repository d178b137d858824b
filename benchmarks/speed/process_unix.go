//go:build unix

package speed

import (
	"syscall"
	"time"
)

// CPUTime is the CPU time this process has used, all threads: on a shared machine it is
// disturbed less than the wall time by other processes.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// MinorFaults is the process's minor page faults so far: first touches of fresh memory, which
// a step that reuses its buffers does not make (0 where getrusage does not count them).
func MinorFaults() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return int64(ru.Minflt)
}
