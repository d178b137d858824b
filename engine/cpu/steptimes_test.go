package cpu

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

// With the timers on, each step of an executable compiled then is counted under its label;
// WriteStepTimes lists them and resets; executables compiled with the timers off stay untimed.
func TestStepTimes(t *testing.T) {
	EnableStepTimes()
	defer DisableStepTimes()
	be := mustBackend(t, "")
	op := must[backends.Op](t)
	bld := be.Builder("timed")
	s := shapes.Make(dtypes.Float32, 4, 300)
	x := op(bld.Parameter("x", s, nil))
	y := op(bld.Cos(op(bld.Mul(x, x))))
	exe := must[backends.Executable](t)(bld.Compile([]backends.Op{y}, nil)).(*Executable)
	r := rand.New(rand.NewPCG(1, 2))
	for range 3 {
		must[[]backends.Buffer](t)(exe.Execute([]backends.Buffer{randomBuffer(t, be, r, 4, 300)}, nil, 0))
	}
	var out strings.Builder
	WriteStepTimes(&out, 10)
	if !strings.Contains(out.String(), "      3  fused1 Cos (Float32)[4 300] <- (Float32)[4 300]") {
		t.Errorf("report:\n%s", out.String())
	}
	out.Reset()
	WriteStepTimes(&out, 10)
	if strings.Contains(out.String(), "Cos") {
		t.Errorf("not reset:\n%s", out.String())
	}
	DisableStepTimes()
	bld2 := be.Builder("untimed")
	z := op(bld2.Parameter("x", s, nil))
	if exe2 := must[backends.Executable](t)(bld2.Compile([]backends.Op{op(bld2.Neg(z))}, nil)).(*Executable); exe2.stepLabels != nil {
		t.Error("compiled with the timers off, yet labelled")
	}
}
