package benchmarks

import (
	"os"
	"testing"

	"github.com/posformer/posformer/engine/cpu"
)

// TestMain prints the cpu backend's per-step times after the benchmarks when they were turned
// on ($POSFORMER_STEP_TIMES): which ops, on which shapes, took a benchmark's time.
func TestMain(m *testing.M) {
	code := m.Run()
	if cpu.StepTimesEnabled() {
		cpu.WriteStepTimes(os.Stdout, 40)
	}
	os.Exit(code)
}
