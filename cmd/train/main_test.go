package main

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/posformer/posformer/models"
)

func TestSchedule(t *testing.T) {
	o := options{lr: 1e-3, warmup: 10, steps: 110}
	if got := schedule(0, o); math.Abs(got-1e-4) > 1e-12 {
		t.Errorf("first warm-up step lr %g, want 1e-4", got)
	}
	if got := schedule(10, o); math.Abs(got-1e-3) > 1e-12 {
		t.Errorf("peak lr %g, want 1e-3", got)
	}
	if got := schedule(110, o); math.Abs(got-1e-4) > 1e-12 {
		t.Errorf("final lr %g, want 10%% of peak", got)
	}
}

func TestMakeBatch(t *testing.T) {
	in := [][]int32{make([]int32, 4000)}
	tgt := [][]int32{make([]int32, 4000)}
	for i := range in[0] {
		in[0][i], tgt[0][i] = int32(i%200), int32((i+1)%200)
	}
	dec := makeBatch(models.Decoder, in, tgt, 0.15, rand.New(rand.NewPCG(1, 1)), 259)
	if dec.Targets[0][7] != 8 || dec.Weights[0][7] != 1 || dec.Positions[0][7] != 7 {
		t.Errorf("decoder batch: target %d weight %g pos %d", dec.Targets[0][7], dec.Weights[0][7], dec.Positions[0][7])
	}
	enc := makeBatch(models.Encoder, in, tgt, 0.15, rand.New(rand.NewPCG(1, 1)), 259)
	chosen, masked := 0, 0
	for j, w := range enc.Weights[0] {
		if enc.Targets[0][j] != in[0][j] {
			t.Fatalf("encoder target %d is not the input byte", j)
		}
		if w == 0 {
			if enc.Inputs[0][j] != in[0][j] {
				t.Fatalf("unchosen byte %d was changed", j)
			}
			continue
		}
		chosen++
		if enc.Inputs[0][j] == 259 {
			masked++
		}
	}
	if rate := float64(chosen) / 4000; rate < 0.12 || rate > 0.18 {
		t.Errorf("chose %.3f of bytes, want about 0.15", rate)
	}
	if frac := float64(masked) / float64(chosen); frac < 0.72 || frac > 0.88 {
		t.Errorf("%.3f of chosen bytes became <mask>, want about 0.8", frac)
	}
}
