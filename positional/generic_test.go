package positional

// Properties every registered scheme must have, checked generically so that a new scheme is
// covered the moment it registers.

import (
	"math"
	"math/rand/v2"
	"testing"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
)

// genericOptions are the options a scheme needs beyond its defaults here.
var genericOptions = map[string]map[string]any{
	"learned": {"max_positions": 160},
}

// notShiftInvariant lists relative schemes that are, by design, not functions of i-j alone.
var notShiftInvariant = map[string]string{
	"fire": "FIRE normalizes the distance by the query position, ψ(i-j)/ψ(max(L, i))",
}

func genericScheme(t *testing.T, name string, arch Arch) Scheme {
	t.Helper()
	s, err := New(name, genericOptions[name], arch)
	if err != nil {
		t.Fatalf("New(%q) with default options: %v", name, err)
	}
	return s
}

func randomTensor(r *rand.Rand, dims ...int) *tensors.Tensor {
	n := 1
	for _, d := range dims {
		n *= d
	}
	data := make([]float32, n)
	for i := range data {
		data[i] = float32(r.NormFloat64())
	}
	return tensors.FromFlatDataAndDimensions(data, dims...)
}

// Relative schemes (Bias, Relative, QueryKey) give attention scores that depend on i-j only:
// shifting every query and key position by the same constant leaves them unchanged.
func TestRelativeSchemesDependOnOffsetOnly(t *testing.T) {
	const heads, hd, seq, shift = 4, 8, 12, 37
	arch := Arch{Dim: heads * hd, NumHeads: heads, NumKVHeads: heads, HeadDim: hd, NumLayers: 2, Causal: true}
	r := rand.New(rand.NewPCG(11, 12))
	// Tensors are made afresh for each run: a tensor stays bound to the backend it was sent to.
	seed := r.Uint64()
	inputs := func() (q, k, probs *tensors.Tensor) {
		r := rand.New(rand.NewPCG(seed, 1))
		return randomTensor(r, 1, heads, seq, hd), randomTensor(r, 1, heads, seq, hd), randomTensor(r, 1, heads, seq, seq)
	}
	pos := make([]int32, seq)
	for i := range pos {
		pos[i] = int32(3 * i) // gaps: positions are data, not an iota
	}
	shifted := make([]int32, seq)
	for i := range pos {
		shifted[i] = pos[i] + shift
	}
	checked := 0
	for _, name := range Names() {
		if why, ok := notShiftInvariant[name]; ok {
			t.Logf("%s: skipped: %s", name, why)
			continue
		}
		s := genericScheme(t, name, arch)
		_, qk := s.(QueryKey)
		_, rel := s.(Relative)
		_, bias := s.(Bias)
		if !qk && !rel && !bias {
			continue
		}
		terms := func(ctx *context.Context, q, k, probs, p *Node) []*Node {
			var out []*Node
			if h, ok := s.(QueryKey); ok {
				q2, k2 := h.QueryKey(ctx, 1, q, k, p, p)
				out = append(out, Einsum("bhsd,bhtd->bhst", q2, k2))
			}
			if h, ok := s.(Relative); ok {
				out = append(out, h.RelativeLogits(ctx, 1, q, k, p, p))
				if v := h.RelativeValues(ctx, 1, probs, p, p); v != nil {
					out = append(out, v)
				}
			}
			if h, ok := s.(Bias); ok {
				b := h.Bias(ctx, 1, p, p, heads)
				out = append(out, BroadcastToDims(b, 1, heads, seq, seq))
			}
			return out
		}
		ctx := context.New().Checked(false)
		q, k, probs := inputs()
		outs := context.MustExecOnceN(backend(t), ctx, func(ctx *context.Context, q, k, probs, p, ps *Node) []*Node {
			a, b := terms(ctx, q, k, probs, p), terms(ctx, q, k, probs, ps)
			return append(a, b...)
		}, q, k, probs, [][]int32{pos}, [][]int32{shifted})
		checked++
		half := len(outs) / 2
		for i := range half {
			a := tensors.MustCopyFlatData[float32](outs[i])
			b := tensors.MustCopyFlatData[float32](outs[half+i])
			worst, scale := 0.0, 0.0
			for j := range a {
				worst = max(worst, math.Abs(float64(a[j]-b[j])))
				scale = max(scale, math.Abs(float64(a[j])))
			}
			if worst > 1e-4*max(1, scale) {
				t.Errorf("%s: term %d changes by %g (of %g) when all positions shift by %d", name, i, worst, scale, shift)
			}
		}
	}
	if checked < 2 {
		t.Errorf("only %d relative schemes checked", checked)
	}
}

// Absolute schemes give every position up to a trained length its own code.
func TestAbsoluteSchemesDistinguishPositions(t *testing.T) {
	const dim, n = 32, 160
	arch := Arch{Dim: dim, NumHeads: 4, NumKVHeads: 4, HeadDim: dim / 4, NumLayers: 2, Causal: true}
	pos := make([]int32, n)
	for i := range pos {
		pos[i] = int32(i)
	}
	checked := 0
	for _, name := range Names() {
		s, ok := genericScheme(t, name, arch).(Absolute)
		if !ok {
			continue
		}
		checked++
		ctx := context.New().Checked(false)
		out := context.MustExecOnce(backend(t), ctx, func(ctx *context.Context, p *Node) *Node {
			return s.Code(ctx, p, dim)
		}, [][]int32{pos})
		flat := tensors.MustCopyFlatData[float32](out)
		closest := math.Inf(1)
		for i := range n {
			for j := i + 1; j < n; j++ {
				d := 0.0
				for c := range dim {
					x := float64(flat[i*dim+c] - flat[j*dim+c])
					d += x * x
				}
				closest = min(closest, math.Sqrt(d))
			}
		}
		if closest < 1e-3 {
			t.Errorf("%s: two of positions 0..%d have codes %g apart", name, n-1, closest)
		}
	}
	if checked < 2 {
		t.Errorf("only %d absolute schemes checked", checked)
	}
}
