package cpu

import (
	"fmt"
	"testing"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// BenchmarkSwiGLUGradient: SwiGLU's gradient trees (du = dh·g·σ(g), dg = dh·u·σ(g)·(1 +
// g·(1 − σ(g)))) over a 512-token pass's [4 128 512], one fused step, on one thread; its inputs
// in cache (one set) or from memory (12 sets of 3 MB, past the L3), as a training step's
// backward pass reads them.
func BenchmarkSwiGLUGradient(b *testing.B) {
	be, err := New("threads=1")
	if err != nil {
		b.Fatal(err)
	}
	defer be.Finalize()
	n := 4 * 128 * 512
	input := func() *tensors.Tensor {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(i%97)/50 - 1
		}
		t := tensors.FromFlatDataAndDimensions(v, 4, 128, 512)
		if err := t.MaterializeOnDevice(be, false, 0); err != nil {
			b.Fatal(err)
		}
		return t
	}
	grad := MustNewExec(be, func(g, u, dh *Node) (*Node, *Node) {
		s := Logistic(g)
		one := OnesLike(s)
		du := Mul(dh, Mul(g, s))
		dg := Mul(Mul(Mul(dh, u), s), Add(one, Mul(g, Sub(one, s))))
		return du, dg
	})
	for _, sets := range []int{1, 12} {
		var in [][3]*tensors.Tensor
		for range sets {
			in = append(in, [3]*tensors.Tensor{input(), input(), input()})
		}
		b.Run(fmt.Sprintf("sets=%d", sets), func(b *testing.B) {
			i := 0
			for b.Loop() {
				x := in[i%sets]
				i++
				out := grad.MustExec(x[0], x[1], x[2])
				out[0].FinalizeAll()
				out[1].FinalizeAll()
			}
		})
	}
}
