package pe

import (
	"fmt"
	"math"
	"strings"
	"testing"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/posformer/posformer/engine"
	"github.com/posformer/posformer/models"
)

// With -pe ssmax=true, pe reports s = 1/ln L (untrained) and its factor s·ln len, and the scores
// are the scheme's own multiplied, row by row, by s·ln n: n = i + 1 keys for query i of a
// decoder, len for every query of an encoder.
func TestSSMaxFlags(t *testing.T) {
	const n = 8
	for _, kind := range []string{models.Decoder, models.Encoder} {
		args := []string{"-scheme", "rope", "-len", fmt.Sprint(n), "-dim", "8", "-heads", "2", "-kind", kind}
		plain := peJSON(t, args...)
		got := peJSON(t, append(args, "-pe", "ssmax=true", "-train-len", "4")...)
		ss, ok := got["ssmax"].(map[string]any)
		if !ok {
			t.Fatalf("%s: no ssmax object in %v", kind, got)
		}
		s, factor := vector(ss["s"]), vector(ss["factor"])
		for h := range 2 {
			if math.Abs(s[h]-1/math.Log(4)) > 1e-6 || math.Abs(factor[h]-math.Log(n)/math.Log(4)) > 1e-6 {
				t.Errorf("%s head %d: s %g and factor %g, want 1/ln 4 and ln 8/ln 4 = 1.5", kind, h, s[h], factor[h])
			}
		}
		if hooks := fmt.Sprint(got["hooks"]); !strings.Contains(hooks, "ssmax") {
			t.Errorf("%s: hooks %s do not list ssmax", kind, hooks)
		}
		want, scaled := plain["scores"].([]any), got["scores"].([]any)
		for h := range want {
			w, g := matrix(t, want[h]), matrix(t, scaled[h])
			for i := range n {
				keys := n
				if kind == models.Decoder {
					keys = i + 1
				}
				f := s[h] * math.Log(float64(keys))
				for j := range n {
					if math.Abs(g[i][j]-f*w[i][j]) > 1e-5 {
						t.Fatalf("%s head %d score [%d][%d] is %g, want %g·%g", kind, h, i, j, g[i][j], f, w[i][j])
					}
				}
			}
		}
	}
	// Without a QueryKey hook the scores are shown anyway: ALiBi's bias plus the unit q·k,
	// scaled.
	got := peJSON(t, "-scheme", "alibi", "-len", "4", "-dim", "8", "-heads", "2", "-pe", "ssmax=true")
	if got["scores"] == nil || got["bias"] == nil {
		t.Errorf("alibi with ssmax: scores %v, bias %v; want both", got["scores"] != nil, got["bias"] != nil)
	}
	for _, bad := range [][]string{{"-scheme", "rope", "-train-len", "1"}, {"-scheme", "rope", "-pe", "ssmax=3"}} {
		if _, err := pe(bad...); err == nil {
			t.Errorf("pe %v: accepted", bad)
		}
	}
}

// A trained SSMax model's s is read from the checkpoint (-m), per head, and the scores carry it.
func TestSSMaxCheckpoint(t *testing.T) {
	const n = 8
	cfg := models.Config{
		Kind: models.Decoder, VocabSize: 8, Dim: 8, NumLayers: 1, NumHeads: 2, HiddenDim: 8, MaxSeqLen: n, TrainSeqLen: 4,
		Positional: map[string]any{"name": "alibi", "ssmax": true},
	}
	m, err := models.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	backend, err := engine.NewBackend("")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.New()
	ctx.SetParam(context.ParamInitialSeed, int64(1))
	if _, err := context.ExecOnce(backend, ctx, func(ctx *context.Context, tok, pos, valid *Node) *Node {
		logits, _ := m.Forward(ctx, tok, pos, valid, nil)
		return logits
	}, [][]int32{{1}}, [][]int32{{0}}, [][]bool{{true}}); err != nil {
		t.Fatal(err)
	}
	v := ctx.GetVariableByScopeAndName("/"+models.Scope+"/"+models.LayerScope(0)+"/attn", "ssmax")
	if v == nil {
		t.Fatal("no ssmax variable")
	}
	trained := []float32{0.5, 2}
	if err := v.SetValue(tensors.FromFlatDataAndDimensions(trained, 2)); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := models.Save(dir, cfg, ctx); err != nil {
		t.Fatal(err)
	}
	got := peJSON(t, "-m", dir, "-len", fmt.Sprint(n))
	ss := got["ssmax"].(map[string]any)
	s, factor := vector(ss["s"]), vector(ss["factor"])
	if ss["train_len"].(float64) != 4 {
		t.Errorf("train_len %v, want 4", ss["train_len"])
	}
	bias, scores := got["bias"].([]any), got["scores"].([]any)
	for h := range 2 {
		if s[h] != float64(trained[h]) || math.Abs(factor[h]-float64(trained[h])*math.Log(n)) > 1e-6 {
			t.Errorf("head %d: s %g, factor %g; want the saved %g and %g·ln 8", h, s[h], factor[h], trained[h], trained[h])
		}
		b, sc := matrix(t, bias[h]), matrix(t, scores[h])
		for i := range n {
			f := s[h] * math.Log(float64(i+1))
			for j := range n {
				// Unit q and k: q·k/sqrt(head_dim) = 1/2 (head dim 4), plus the bias.
				if want := f * (0.5 + b[i][j]); math.Abs(sc[i][j]-want) > 1e-5 {
					t.Fatalf("head %d score [%d][%d] is %g, want %g", h, i, j, sc[i][j], want)
				}
			}
		}
	}
	if _, err := pe("-m", dir, "-train-len", "16"); err == nil || !strings.Contains(err.Error(), "-train-len cannot be combined with -m") {
		t.Errorf("-train-len with -m: %v", err)
	}
}
