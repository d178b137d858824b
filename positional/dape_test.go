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

// DAPE's MLP against its formula in float64: per pair (b, i, j), x = [Z_·ij; B_·ij] (2h values),
// f = W₂·LeakyReLU(W₁ᵀx + b₁) + b₂ (slope 0.01).
func TestDAPEMLP(t *testing.T) {
	const b, h, s, tk, D = 1, 2, 3, 4, 5
	r := rand.New(rand.NewPCG(81, 82))
	random := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		return v
	}
	z, bias, w1, b1, w2, b2 := random(b*h*s*tk), random(b*h*s*tk), random(2*h*D), random(D), random(D*h), random(h)
	out := MustExecOnce(backend(t), dapeMLP,
		tensors.FromFlatDataAndDimensions(z, b, h, s, tk), tensors.FromFlatDataAndDimensions(bias, b, h, s, tk),
		tensors.FromFlatDataAndDimensions(w1, 2*h, D), tensors.FromFlatDataAndDimensions(b1, D),
		tensors.FromFlatDataAndDimensions(w2, D, h), tensors.FromFlatDataAndDimensions(b2, h))
	got := tensors.MustCopyFlatData[float32](out)
	for i := range s {
		for j := range tk {
			x := make([]float64, 2*h)
			for hh := range h {
				x[hh] = float64(z[(hh*s+i)*tk+j])
				x[h+hh] = float64(bias[(hh*s+i)*tk+j])
			}
			hid := make([]float64, D)
			for d := range D {
				v := float64(b1[d])
				for k := range 2 * h {
					v += x[k] * float64(w1[k*D+d])
				}
				hid[d] = math.Max(v, 0.01*v)
			}
			for hh := range h {
				want := float64(b2[hh])
				for d := range D {
					want += hid[d] * float64(w2[d*h+hh])
				}
				if g := float64(got[(hh*s+i)*tk+j]); math.Abs(g-want) > 1e-4*max(1, math.Abs(want)) {
					t.Errorf("head %d, pair (%d, %d): %g, want %g", hh, i, j, g, want)
				}
			}
		}
	}
}

// At its start (W₂ and the biases zero) DAPE's term is exactly its bias scheme's, whatever the
// logits: here ALiBi's −m_h·(i−j).
func TestDAPEStartsAsItsBias(t *testing.T) {
	arch := Arch{Dim: 16, NumHeads: 2, NumKVHeads: 2, HeadDim: 8, Causal: true}
	s, err := New("dape", nil, arch)
	if err != nil {
		t.Fatal(err)
	}
	alibi, err := New("alibi", nil, arch)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(83, 84))
	logits := randomTensor(r, 1, 2, 5, 5)
	pos := [][]int32{{0, 1, 2, 3, 4}}
	be := backend(t)
	got := context.MustExecOnce(be, context.New(), func(ctx *context.Context, z, qp, kp *Node) *Node {
		return s.(Contextual).ContextualLogits(ctx, 0, nil, z, nil, qp, kp)
	}, logits, pos, pos)
	want := context.MustExecOnce(be, context.New(), func(ctx *context.Context, qp, kp *Node) *Node {
		return alibi.(Bias).Bias(ctx, 0, qp, kp, 2)
	}, pos, pos)
	g, w := tensors.MustCopyFlatData[float32](got), tensors.MustCopyFlatData[float32](want)
	for i := range g {
		if g[i] != w[i] {
			t.Fatalf("element %d: %g, want ALiBi's %g", i, g[i], w[i])
		}
	}
	if _, err := New("dape", map[string]any{"bias": "rope"}, arch); err == nil || !strings.Contains(err.Error(), "alibi") {
		t.Errorf("bias rope: %v, want an error listing the valid biases", err)
	}
}

// The options DAPE does not read go to its bias scheme, which refuses those it does not know.
func TestDAPEPassesOptionsToItsBias(t *testing.T) {
	arch := Arch{Dim: 16, NumHeads: 2, NumKVHeads: 2, HeadDim: 8, Causal: true}
	s, err := New("dape", map[string]any{"name": "dape", "bias": "fire", "init_l": 32.0, "mlp_width": 8.0}, arch)
	if err != nil {
		t.Fatal(err)
	}
	d := s.(*DAPE)
	if f, ok := d.Base.(*FIRE); !ok || f.InitL != 32 || d.Width != 8 {
		t.Errorf("DAPE over FIRE: base %T %+v, width %d; want FIRE with init_l 32", d.Base, d.Base, d.Width)
	}
	if _, err := New("dape", map[string]any{"bias": "alibi", "init_l": 32.0}, arch); err == nil || !strings.Contains(err.Error(), "init_l") {
		t.Errorf("ALiBi given FIRE's init_l through DAPE: %v", err)
	}
}
