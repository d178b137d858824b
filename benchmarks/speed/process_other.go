//go:build !unix

package speed

import "time"

// CPUTime is the process's CPU time where getrusage exists; elsewhere 0 (the figures that use
// it then read 0).
func CPUTime() time.Duration { return 0 }

// MinorFaults is 0 where getrusage does not exist.
func MinorFaults() int64 { return 0 }
