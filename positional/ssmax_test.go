package positional

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
)

// With s at its start, 1/ln L, a query that sees n = L keys keeps its logits (the identity); one
// that sees n keys has them multiplied by ln n / ln L; hidden keys do not count.
func TestSSMaxScale(t *testing.T) {
	const L, heads, keys = 16, 2, 20
	m, err := NewSSMax(map[string]any{"ssmax": true}, Arch{TrainLen: L})
	if err != nil || m == nil {
		t.Fatalf("NewSSMax: %v, %v", m, err)
	}
	r := rand.New(rand.NewPCG(51, 52))
	logits := randomTensor(r, 1, heads, 3, keys)
	// Query 0 sees the first L keys, query 1 the first 4, query 2 one.
	visible := make([][][][]bool, 1)
	visible[0] = make([][][]bool, 1)
	visible[0][0] = make([][]bool, 3)
	for q, n := range []int{L, 4, 1} {
		visible[0][0][q] = make([]bool, keys)
		for k := range n {
			visible[0][0][q][k] = true
		}
	}
	out := context.MustExecOnce(backend(t), context.New(), func(ctx *context.Context, z, vis *Node) *Node {
		return m.Scale(ctx, z, vis)
	}, logits, visible)
	got, in := tensors.MustCopyFlatData[float32](out), tensors.MustCopyFlatData[float32](logits)
	for h := range heads {
		for q, n := range []float64{L, 4, 1} {
			factor := math.Log(n) / math.Log(L)
			for k := range keys {
				i := (h*3+q)*keys + k
				if want := float64(in[i]) * factor; math.Abs(float64(got[i])-want) > 1e-5*max(1, math.Abs(want)) {
					t.Fatalf("head %d, query seeing %v keys, key %d: %g, want %g (factor %g)", h, n, k, got[i], want, factor)
				}
			}
		}
	}
	for _, c := range []struct {
		raw  map[string]any
		arch Arch
		want string
	}{
		{map[string]any{"ssmax": "yes"}, Arch{TrainLen: L}, "true or false"},
		{map[string]any{"ssmax": true}, Arch{}, "train_seq_len"},
	} {
		if _, err := NewSSMax(c.raw, c.arch); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error mentioning %q", c.raw, err, c.want)
		}
	}
	if m, err := NewSSMax(map[string]any{"ssmax": false}, Arch{TrainLen: L}); m != nil || err != nil {
		t.Errorf("ssmax false: %v, %v", m, err)
	}
	// Every scheme accepts the option (New leaves it to NewSSMax).
	if _, err := New("alibi", map[string]any{"ssmax": true}, Arch{Dim: 32, NumHeads: 2, NumKVHeads: 2, HeadDim: 16, TrainLen: L}); err != nil {
		t.Errorf("alibi with ssmax: %v", err)
	}
}
