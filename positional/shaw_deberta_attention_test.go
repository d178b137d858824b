package positional_test

// Shaw's and DeBERTa's attention seen whole through layers.Attention, against a plain-Go
// attention written from the papers: Shaw's e_ij = q_i·(k_j + a^K_ij)/sqrt(d) and
// z_i = Σ_j α_ij (v_j + a^V_ij); DeBERTa's three terms over sqrt(3d). Grouped queries, gaps in
// the positions, distances past k, causal and bidirectional.

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/backends/simplego"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/posformer/posformer/layers"
	"github.com/posformer/posformer/models"
	"github.com/posformer/posformer/positional"
)

const (
	shawDebertaDim, shawDebertaHeads, shawDebertaKV, shawDebertaHD = 16, 4, 2, 4
	shawDebertaK                                                   = 2
)

// shawDebertaMat is a random [rows, cols] matrix, std 0.5 so that logits are O(1) and the
// logit scale matters to the softmax.
func shawDebertaMat(r *rand.Rand, rows, cols int) [][]float64 {
	m := make([][]float64, rows)
	for i := range m {
		m[i] = make([]float64, cols)
		for j := range m[i] {
			m[i][j] = 0.5 * r.NormFloat64()
		}
	}
	return m
}

func shawDebertaTensor(m [][]float64) *tensors.Tensor {
	flat := make([]float32, 0, len(m)*len(m[0]))
	for _, row := range m {
		for _, v := range row {
			flat = append(flat, float32(v))
		}
	}
	return tensors.FromFlatDataAndDimensions(flat, len(m), len(m[0]))
}

// shawDebertaSplit returns x·Wᵀ split into heads: [n][seq][hd], W stored [out, in].
func shawDebertaSplit(x, w [][]float64, n int) [][][]float64 {
	out := make([][][]float64, n)
	for h := range n {
		out[h] = make([][]float64, len(x))
		for i := range x {
			out[h][i] = make([]float64, shawDebertaHD)
			for d := range shawDebertaHD {
				for c := range x[i] {
					out[h][i][d] += x[i][c] * w[h*shawDebertaHD+d][c]
				}
			}
		}
	}
	return out
}

func shawDebertaDot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func TestShawDebertaThroughAttention(t *testing.T) {
	pos := []int32{2, 3, 5, 8, 9, 15}
	n := len(pos)
	group := shawDebertaHeads / shawDebertaKV
	for _, name := range []string{"shaw", "deberta"} {
		for _, causal := range []bool{true, false} {
			r := rand.New(rand.NewPCG(41, 42))
			arch := positional.Arch{Dim: shawDebertaDim, NumHeads: shawDebertaHeads, NumKVHeads: shawDebertaKV, HeadDim: shawDebertaHD, NumLayers: 1, Causal: causal}
			scheme, err := positional.New(name, map[string]any{"max_distance": float64(shawDebertaK)}, arch)
			if err != nil {
				t.Fatal(err)
			}
			x := shawDebertaMat(r, n, shawDebertaDim)
			wq := shawDebertaMat(r, shawDebertaHeads*shawDebertaHD, shawDebertaDim)
			wk := shawDebertaMat(r, shawDebertaKV*shawDebertaHD, shawDebertaDim)
			wv := shawDebertaMat(r, shawDebertaKV*shawDebertaHD, shawDebertaDim)
			wo := shawDebertaMat(r, shawDebertaDim, shawDebertaHeads*shawDebertaHD)

			ctx := context.New().Checked(false)
			for name, w := range map[string][][]float64{"wq": wq, "wk": wk, "wv": wv, "wo": wo} {
				ctx.In("attn").In(name).VariableWithValue("weight", shawDebertaTensor(w))
			}
			pctx := ctx.In("positional")
			// Relative terms as functions of the bucket, per head, in the papers' notation.
			var logitTerm func(h int, q, k []float64, i, j int) float64
			var valueTerm func(j, i int) []float64
			scale := 1 / math.Sqrt(shawDebertaHD)
			switch name {
			case "shaw":
				wK := shawDebertaMat(r, 2*shawDebertaK+1, shawDebertaHD)
				wV := shawDebertaMat(r, 2*shawDebertaK+1, shawDebertaHD)
				positional.LayerScope(pctx, 0).VariableWithValue("wk", shawDebertaTensor(wK))
				positional.LayerScope(pctx, 0).VariableWithValue("wv", shawDebertaTensor(wV))
				clip := func(i, j int) int { return min(max(j-i, -shawDebertaK), shawDebertaK) + shawDebertaK }
				logitTerm = func(h int, q, k []float64, i, j int) float64 { return shawDebertaDot(q, wK[clip(i, j)]) }
				valueTerm = func(j, i int) []float64 { return wV[clip(i, j)] }
			case "deberta":
				p := shawDebertaMat(r, 2*shawDebertaK, shawDebertaDim)
				wqr := shawDebertaMat(r, shawDebertaHeads*shawDebertaHD, shawDebertaDim) // stored [out, in]
				wkr := shawDebertaMat(r, shawDebertaHeads*shawDebertaHD, shawDebertaDim)
				pctx.VariableWithValue("p", shawDebertaTensor(p))
				positional.LayerScope(pctx, 0).VariableWithValue("wq_r", shawDebertaTensor(wqr))
				positional.LayerScope(pctx, 0).VariableWithValue("wk_r", shawDebertaTensor(wkr))
				qr := shawDebertaSplit(p, wqr, shawDebertaHeads) // [h][2k][hd]
				kr := shawDebertaSplit(p, wkr, shawDebertaHeads)
				delta := func(i, j int) int { // the paper's δ(i,j)
					switch {
					case i-j <= -shawDebertaK:
						return 0
					case i-j >= shawDebertaK:
						return 2*shawDebertaK - 1
					}
					return i - j + shawDebertaK
				}
				logitTerm = func(h int, q, k []float64, i, j int) float64 {
					return shawDebertaDot(q, kr[h][delta(i, j)]) + shawDebertaDot(k, qr[h][delta(j, i)])
				}
				scale = 1 / math.Sqrt(3*shawDebertaHD)
			}

			// Plain-Go attention at the given logit scale.
			attention := func(scale float64) [][]float64 {
				q := shawDebertaSplit(x, wq, shawDebertaHeads)
				k := shawDebertaSplit(x, wk, shawDebertaKV)
				v := shawDebertaSplit(x, wv, shawDebertaKV)
				out := make([][]float64, n)
				for i := range n {
					concat := make([]float64, 0, shawDebertaHeads*shawDebertaHD)
					for h := range shawDebertaHeads {
						kh, vh := k[h/group], v[h/group]
						logits := make([]float64, n)
						top := math.Inf(-1)
						for j := range n {
							logits[j] = math.Inf(-1)
							if causal && pos[j] > pos[i] {
								continue
							}
							logits[j] = (shawDebertaDot(q[h][i], kh[j]) + logitTerm(h, q[h][i], kh[j], int(pos[i]), int(pos[j]))) * scale
							top = max(top, logits[j])
						}
						sum := 0.0
						for j := range logits {
							logits[j] = math.Exp(logits[j] - top)
							sum += logits[j]
						}
						z := make([]float64, shawDebertaHD)
						for j := range n {
							a := logits[j] / sum
							for d := range z {
								z[d] += a * vh[j][d]
								if valueTerm != nil {
									z[d] += a * valueTerm(int(pos[j]), int(pos[i]))[d]
								}
							}
						}
						concat = append(concat, z...)
					}
					out[i] = make([]float64, shawDebertaDim)
					for o := range out[i] {
						out[i][o] = shawDebertaDot(concat, wo[o])
					}
				}
				return out
			}

			be, err := simplego.New("ops_sequential")
			if err != nil {
				t.Fatal(err)
			}
			cfg := layers.BlockConfig{Dim: shawDebertaDim, NumHeads: shawDebertaHeads, NumKVHeads: shawDebertaKV, HeadDim: shawDebertaHD, NumLayers: 1, Causal: causal}
			valid := make([]bool, n)
			for i := range valid {
				valid[i] = true
			}
			got := context.MustExecOnce(be, ctx, func(ctx *context.Context, x, p, valid *Node) *Node {
				out, _ := layers.Attention(ctx.In("attn"), 0, cfg, layers.Positional{Scheme: scheme, Ctx: ctx.In("positional")}, x,
					layers.AttentionInput{Pos: p, Valid: valid}, layers.InitStd)
				return out
			}, tensors.FromFlatDataAndDimensions(tensors.MustCopyFlatData[float32](shawDebertaTensor(x)), 1, n, shawDebertaDim), [][]int32{pos}, [][]bool{valid})
			flat := tensors.MustCopyFlatData[float32](got)
			gap := func(want [][]float64) float64 {
				worst := 0.0
				for i := range n {
					for o := range shawDebertaDim {
						worst = max(worst, math.Abs(float64(flat[i*shawDebertaDim+o])-want[i][o]))
					}
				}
				return worst
			}
			worst := gap(attention(scale))
			// The same attention at the other scale (1/sqrt(3d) for Shaw, 1/sqrt(d) for DeBERTa)
			// must be measurably off, or this test could not see a wrong scale.
			other := 1 / math.Sqrt(3*shawDebertaHD)
			if name == "deberta" {
				other = 1 / math.Sqrt(shawDebertaHD)
			}
			wrong := gap(attention(other))
			t.Logf("%s causal=%v: max |layers.Attention - paper| = %.3g (at the other scale %.3g)", name, causal, worst, wrong)
			if worst > 1e-4 {
				t.Errorf("%s causal=%v: attention differs from the paper's by %g", name, causal, worst)
			}
			if wrong < 1e-2 {
				t.Errorf("%s causal=%v: the wrong logit scale changes the output by only %g", name, causal, wrong)
			}
		}
	}
}

// A checkpoint's parameter list is read off a graph built in a checked context, where asking
// twice for a variable is an error unless the scheme means it (Shaw's two hooks share w^K and
// w^V; every DeBERTa layer reads P). This is the path cmd/infer takes to load a checkpoint.
func TestShawDebertaParams(t *testing.T) {
	be, err := simplego.New("ops_sequential")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string][]int{
		"shaw": {
			"positional.layer_0.wk": {2*shawDebertaK + 1, shawDebertaHD}, "positional.layer_0.wv": {2*shawDebertaK + 1, shawDebertaHD},
			"positional.layer_1.wk": {2*shawDebertaK + 1, shawDebertaHD}, "positional.layer_1.wv": {2*shawDebertaK + 1, shawDebertaHD},
		},
		"deberta": {
			"positional.p":            {2 * shawDebertaK, shawDebertaDim},
			"positional.layer_0.wq_r": {shawDebertaHeads * shawDebertaHD, shawDebertaDim},
			"positional.layer_0.wk_r": {shawDebertaHeads * shawDebertaHD, shawDebertaDim},
			"positional.layer_1.wq_r": {shawDebertaHeads * shawDebertaHD, shawDebertaDim},
			"positional.layer_1.wk_r": {shawDebertaHeads * shawDebertaHD, shawDebertaDim},
		},
	}
	for name, vars := range want {
		for _, kind := range []string{models.Decoder, models.Encoder} {
			m, err := models.New(models.Config{
				Kind: kind, VocabSize: 260, Dim: shawDebertaDim, NumLayers: 2, NumHeads: shawDebertaHeads, NumKVHeads: shawDebertaKV,
				HiddenDim: 32, MaxSeqLen: 64, Positional: map[string]any{"name": name, "max_distance": float64(shawDebertaK)},
			})
			if err != nil {
				t.Fatal(err)
			}
			params, err := m.Params(be)
			if err != nil {
				t.Fatalf("%s %s: %v", name, kind, err)
			}
			found := map[string][]int{}
			for _, p := range params {
				if strings.HasPrefix(p.Name, "positional.") {
					found[p.Name] = p.Shape
				}
			}
			if len(found) != len(vars) {
				t.Errorf("%s %s: positional parameters %v, want %v", name, kind, found, vars)
			}
			for n, shape := range vars {
				if !slices.Equal(found[n], shape) {
					t.Errorf("%s %s: %s has shape %v, want %v", name, kind, n, found[n], shape)
				}
			}
		}
	}
}
