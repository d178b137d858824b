//go:build linux

package train

import (
	"time"

	"golang.org/x/sys/unix"
)

// ThreadCPU is the CPU time the calling thread has used, and true where the system counts it per
// thread (Linux). The caller locks its goroutine to its thread (runtime.LockOSThread) for the
// figure to be its own. A process stopped or sharing its cores accrues none while it waits,
// unlike the wall clock.
func ThreadCPU() (time.Duration, bool) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}
