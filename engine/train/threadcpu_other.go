//go:build !linux

package train

import "time"

// ThreadCPU is the CPU time the calling thread has used; false: this system's is not read.
func ThreadCPU() (time.Duration, bool) { return 0, false }
