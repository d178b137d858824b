package positional

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
)

var (
	_ Bias     = (*T5)(nil)
	_ Bucketed = (*T5)(nil)
)

func t5New(t *testing.T, opts map[string]any, arch Arch) *T5 {
	t.Helper()
	s, err := New("t5", opts, arch)
	if err != nil {
		t.Fatal(err)
	}
	return s.(*T5)
}

// t5MeshTF is Mesh TensorFlow's _relative_position_bucket transcribed, with its own sign
// convention (n = query - memory) and its float32 tensor arithmetic.
func t5MeshTF(relativePosition int, bidirectional bool, numBuckets, maxDistance int) int {
	ret := 0
	n := -relativePosition
	if bidirectional {
		numBuckets /= 2
		if n < 0 {
			ret += numBuckets
		}
		if n < 0 {
			n = -n
		}
	} else if n < 0 {
		n = 0
	}
	maxExact := numBuckets / 2
	if n < maxExact {
		return ret + n
	}
	nf := float32(n) / float32(maxExact)                               // tf.to_float(n) / max_exact
	logN := float32(math.Log(float64(nf)))                             // tf.log
	div := float32(math.Log(float64(maxDistance) / float64(maxExact))) // math.log(max_distance / max_exact)
	valIfLarge := maxExact + int(logN/div*float32(numBuckets-maxExact))
	if valIfLarge > numBuckets-1 {
		valIfLarge = numBuckets - 1
	}
	return ret + valIfLarge
}

// Buckets of T5's defaults (32 buckets, max_distance 128), worked out by hand.
// Bidirectional: 16 per direction, 8 exact, then 8 + ⌊8·log(n/8)/log 16⌋ = 8 + ⌊2·log2(n/8)⌋,
// so bucket 9 from n = 12 (2·log2 1.5 = 1.17), 10 from 16, 11 from 23 (2·log2(23/8) = 3.05;
// 22 gives 2.92), 12 from 32, 13 from 46, 14 from 64, 15 from 91 (2·log2(91/8) = 7.02;
// 90 gives 6.98); later keys (j > i) add 16.
// Causal: 32 buckets, 16 exact, then 16 + ⌊16·log(n/16)/log 8⌋: 18 → 16 (0.91), 19 → 17 (1.32),
// 32 → 21 (16/3), 64 → 26 (32/3), 127 → 31 (15.94); later keys all share bucket 0.
func TestT5BucketHandValues(t *testing.T) {
	bidir := map[int]int{
		0: 0, -1: 1, -7: 7, -8: 8, -11: 8, -12: 9, -15: 9, -16: 10, -22: 10, -23: 11, -32: 12,
		-45: 12, -46: 13, -63: 13, -64: 14, -90: 14, -91: 15, -127: 15, -128: 15, -100000: 15,
		1: 17, 7: 23, 8: 24, 16: 26, 90: 30, 91: 31, 5000: 31,
	}
	causal := map[int]int{
		0: 0, 1: 0, 1000: 0, -1: 1, -15: 15, -16: 16, -18: 16, -19: 17, -20: 17, -24: 19, -32: 21,
		-64: 26, -100: 30, -127: 31, -128: 31, -1 << 20: 31,
	}
	for _, c := range []struct {
		bidirectional bool
		want          map[int]int
	}{{true, bidir}, {false, causal}} {
		for rel, want := range c.want {
			if got := T5Bucket(rel, c.bidirectional, 32, 128); got != want {
				t.Errorf("bidirectional=%v: bucket(%d) = %d, want %d", c.bidirectional, rel, got, want)
			}
			if got := t5MeshTF(rel, c.bidirectional, 32, 128); got != want {
				t.Errorf("bidirectional=%v: reference bucket(%d) = %d, want %d", c.bidirectional, rel, got, want)
			}
		}
	}
	// 18 buckets, bidirectional: 9 per direction, 4 exact, then 4 + ⌊5·log(n/4)/log 32⌋, which is
	// 4 + ⌊log2(n/4)⌋ exactly: 5 from n = 8, 6 from 16, 7 from 32, 8 (the last) from 64. float32
	// lands on the integers; float64 falls just short at 8, 16 and 64 (5·log 16/log 32 =
	// 3.9999999999999996) and would give one bucket less there.
	for n, want := range map[int]int{7: 4, 8: 5, 15: 5, 16: 6, 63: 7, 64: 8, 127: 8, 128: 8} {
		if got := T5Bucket(-n, true, 18, 128); got != want {
			t.Errorf("18 buckets: bucket(%d) = %d, want %d", -n, got, want)
		}
	}
}

// T5Bucket equals the transcribed reference for every offset in a wide window and far ones,
// for the defaults and for other accepted options; at the defaults float64 arithmetic agrees too.
func TestT5BucketReference(t *testing.T) {
	rels := []int{1 << 24, -(1 << 24), 1<<30 - 1, -(1<<30 - 1)}
	for rel := -3000; rel <= 3000; rel++ {
		rels = append(rels, rel)
	}
	for _, c := range []struct {
		bidirectional bool
		nb, md        int
	}{
		{true, 32, 128}, {false, 32, 128}, {true, 4, 3}, {false, 2, 2}, {false, 31, 40},
		{true, 18, 128}, {false, 9, 128}, {true, 64, 1000}, {false, 128, 2048},
	} {
		for _, rel := range rels {
			got, want := T5Bucket(rel, c.bidirectional, c.nb, c.md), t5MeshTF(rel, c.bidirectional, c.nb, c.md)
			if got != want {
				t.Fatalf("%+v: bucket(%d) = %d, reference %d", c, rel, got, want)
			}
			if got < 0 || got >= c.nb {
				t.Fatalf("%+v: bucket(%d) = %d out of [0, %d)", c, rel, got, c.nb)
			}
		}
	}
	for _, bidirectional := range []bool{true, false} {
		for rel := -3000; rel <= 3000; rel++ {
			nb, n, off := 32, max(-rel, 0), 0
			if bidirectional {
				nb, n = 16, max(rel, -rel)
				if rel > 0 {
					off = 16
				}
			}
			want := n
			if me := nb / 2; n >= me {
				want = min(nb-1, me+int(math.Log(float64(n)/float64(me))/math.Log(128/float64(me))*float64(nb-me)))
			}
			if got := T5Bucket(rel, bidirectional, 32, 128); got != off+want {
				t.Errorf("bidirectional=%v: bucket(%d) = %d, float64 formula %d", bidirectional, rel, got, off+want)
			}
		}
	}
}

// The graph's buckets equal T5Bucket for every (query, key) pair of a window that includes
// both directions, exact and logarithmic distances, edges, and distances far past max_distance.
func TestT5GraphMatchesGo(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skips comparing the bucket graph with T5Bucket for eight option sets (about 15 s); run it with go test ./positional -run TestT5GraphMatchesGo")
	}
	var pos []int32
	for p := range int32(70) {
		pos = append(pos, p)
	}
	pos = append(pos, 90, 91, 127, 128, 129, 200, 255, 256, 257, 1000, 4095, 100000, 1<<24, 1<<24+1, 1<<29)
	for _, c := range []struct {
		opts   map[string]any
		causal bool
	}{
		{nil, true}, {nil, false},
		{map[string]any{"bidirectional": true}, true},
		{map[string]any{"num_buckets": 18, "max_distance": 128}, false},
		{map[string]any{"num_buckets": 9, "max_distance": 128}, true},
		{map[string]any{"num_buckets": 4, "max_distance": 3}, false},
		{map[string]any{"num_buckets": 2, "max_distance": 2}, true},
		{map[string]any{"num_buckets": 64, "max_distance": 1 << 24}, false},
	} {
		s := t5New(t, c.opts, Arch{NumHeads: 2, Causal: c.causal})
		out := MustExecOnce(backend(t), func(g *Graph) *Node {
			return s.BucketGraph(Const(g, [][]int32{pos}), Const(g, [][]int32{pos}))
		})
		got := tensors.MustCopyFlatData[int32](out)
		n := len(pos)
		bad := 0
		for i, qp := range pos {
			for j, kp := range pos {
				want := T5Bucket(int(kp-qp), s.Bidirectional, s.NumBuckets, s.MaxDistance)
				if s.Bucket(int(qp), int(kp)) != want {
					t.Fatalf("%v: Bucket(%d, %d) = %d, T5Bucket = %d", c.opts, qp, kp, s.Bucket(int(qp), int(kp)), want)
				}
				if int(got[i*n+j]) != want && bad < 5 {
					bad++
					t.Errorf("%v causal=%v: graph bucket(q=%d, k=%d) = %d, T5Bucket = %d", c.opts, c.causal, qp, kp, got[i*n+j], want)
				}
			}
		}
	}
}

// bias[b,h,i,j] = B[bucket(kPos_j - qPos_i), h], so it depends on positions only through j - i.
func TestT5BiasRelative(t *testing.T) {
	const H, NB = 3, 32
	for _, causal := range []bool{true, false} {
		s := t5New(t, nil, Arch{NumHeads: H, Causal: causal})
		r := rand.New(rand.NewPCG(31, 32))
		table := make([][]float32, NB)
		for i := range table {
			table[i] = toFloat32(xlRandom(r, H))
		}
		qPos := [][]int32{{4, 9, 200}, {0, 2, 50}}
		kPos := [][]int32{{0, 4, 9, 6, 15, 300}, {2, 1, 0, 7, 3, 3000}}
		shift := func(p [][]int32, by int32) [][]int32 {
			out := make([][]int32, len(p))
			for i := range p {
				for _, v := range p[i] {
					out[i] = append(out[i], v+by)
				}
			}
			return out
		}
		ctx := context.New().Checked(false)
		ctx.VariableWithValue("relative_attention_bias", table)
		outs := context.MustExecOnceN(backend(t), ctx, func(ctx *context.Context, q, k, qs, ks *Node) []*Node {
			return []*Node{s.Bias(ctx, 0, q, k, H), s.Bias(ctx, 1, qs, ks, H)}
		}, qPos, kPos, shift(qPos, 1000), shift(kPos, 1000))
		if dims := outs[0].Shape().Dimensions; !slices.Equal(dims, []int{2, H, 3, 6}) {
			t.Fatalf("bias shape %v, want [2 %d 3 6]", dims, H)
		}
		base := tensors.MustCopyFlatData[float32](outs[0])
		shifted := tensors.MustCopyFlatData[float32](outs[1])
		for b := range 2 {
			for h := range H {
				for i := range 3 {
					for j := range 6 {
						idx := ((b*H+h)*3+i)*6 + j
						want := table[T5Bucket(int(kPos[b][j]-qPos[b][i]), !causal, NB, 128)][h]
						if base[idx] != want {
							t.Errorf("causal=%v: bias[%d,%d,%d,%d] = %g, want %g", causal, b, h, i, j, base[idx], want)
						}
						if shifted[idx] != base[idx] {
							t.Errorf("causal=%v: bias[%d,%d,%d,%d] changes from %g to %g when positions shift by 1000", causal, b, h, i, j, base[idx], shifted[idx])
						}
					}
				}
			}
		}
	}
}

// One [num_buckets, heads] table serves every layer, as in T5.
func TestT5SharedTable(t *testing.T) {
	const H = 4
	s := t5New(t, map[string]any{"num_buckets": 16}, Arch{NumHeads: H, NumLayers: 3, Causal: true})
	ctx := context.New().Checked(false)
	pos := [][]int32{{0, 3, 7, 40}}
	outs := context.MustExecOnceN(backend(t), ctx, func(ctx *context.Context, p *Node) []*Node {
		return []*Node{s.Bias(ctx, 0, p, p, H), s.Bias(ctx, 1, p, p, H), s.Bias(ctx, 2, p, p, H)}
	}, pos)
	var vars []string
	for v := range ctx.IterVariables() {
		if strings.HasPrefix(v.Name(), "#") { // the context's own random-number state
			continue
		}
		vars = append(vars, v.ScopeAndName())
		if dims := v.Shape().Dimensions; !slices.Equal(dims, []int{16, H}) {
			t.Errorf("%s has shape %v, want [16 %d]", v.ScopeAndName(), dims, H)
		}
	}
	if len(vars) != 1 || !strings.HasSuffix(vars[0], "/relative_attention_bias") || strings.Contains(vars[0], "layer_") {
		t.Errorf("variables %v, want one shared relative_attention_bias", vars)
	}
	first := tensors.MustCopyFlatData[float32](outs[0])
	for l, out := range outs[1:] {
		if !slices.Equal(tensors.MustCopyFlatData[float32](out), first) {
			t.Errorf("layer %d's bias differs from layer 0's", l+1)
		}
	}
}

func TestT5Options(t *testing.T) {
	dec := Arch{NumHeads: 4, Causal: true}
	enc := Arch{NumHeads: 4}
	if s := t5New(t, nil, dec); s.Bidirectional || s.NumBuckets != 32 || s.MaxDistance != 128 {
		t.Errorf("decoder defaults %+v, want 32 buckets, max_distance 128, causal", *s)
	}
	if s := t5New(t, nil, enc); !s.Bidirectional {
		t.Errorf("encoder default is not bidirectional")
	}
	t5New(t, map[string]any{"num_buckets": 31}, dec) // odd is fine when causal
	for _, c := range []struct {
		opts map[string]any
		arch Arch
		want string
	}{
		{map[string]any{"num_buckets": 31}, enc, "bidirectional num_buckets must be even"},
		{map[string]any{"num_buckets": 2}, enc, "bidirectional num_buckets must be even and >= 4"},
		{map[string]any{"num_buckets": 1}, dec, "num_buckets must be >= 2"},
		{map[string]any{"num_buckets": -8}, dec, "num_buckets must be >= 2"},
		{map[string]any{"max_distance": 16}, dec, "max_distance must be in (16,"},
		{map[string]any{"max_distance": 8}, enc, "max_distance must be in (8,"},
		{map[string]any{"max_distance": 0}, enc, "max_distance"},
		{map[string]any{"max_distance": 1<<24 + 1}, enc, "max_distance"},
		{map[string]any{"bidirectional": 1.0}, enc, `"bidirectional" must be true or false`},
		{map[string]any{"buckets": 8}, enc, "unknown option buckets"},
	} {
		_, err := New("t5", c.opts, c.arch)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: error %v, want one line mentioning %q", c.opts, err, c.want)
		}
	}
}
