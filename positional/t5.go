package positional

// T5 relative position buckets (Raffel et al. 2020, "Exploring the Limits of Transfer Learning
// with a Unified Text-to-Text Transformer", §2.1; bucketing of Mesh TensorFlow, as in Hugging
// Face's _relative_position_bucket):
//
//	logits_hij = q_i·k_j/sqrt(d) + B[bucket(j - i), h]     B: [num_buckets, heads], one table for all layers
//
//	bidirectional: nb = num_buckets/2, one half per direction: offset nb when j > i;  n = |j - i|
//	causal:        nb = num_buckets;  n = max(i - j, 0)  (later keys are masked anyway)
//	max_exact = nb/2
//	n < max_exact:  bucket n                                       one bucket per distance nearby
//	otherwise:      min(nb-1, max_exact + ⌊log(n/max_exact) / log(max_distance/max_exact) · (nb - max_exact)⌋)
//
// Exact nearby, logarithmic further out, flat from max_distance on: 200 and 2000 tokens away
// look the same. Options: num_buckets (32), max_distance (128), bidirectional (true in an
// encoder, false in a decoder, as in T5's own encoder and decoder). T5 itself does not scale
// q·k (it folds 1/sqrt(d) into the initialisation); here the bias is added after the scaling,
// so it is still the last term of the logits.
//
// The logarithm is taken in float32 like the reference code: where the formula hits an integer
// exactly (n = 8, 16, 64 with 18 bidirectional buckets, say) float64 can land one bucket lower.
// At the defaults both agree.
//
// The graph does not recompute logarithms: from max_distance on every distance is in the last
// bucket, so the buckets of the distances 0 .. 2·max_distance, found once in Go with T5Bucket,
// are a table the graph reads at min(n, 2·max_distance). It agrees with T5Bucket at every
// distance, on every backend, and costs one lookup per query-key pair.

import (
	"fmt"
	"math"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/gomlx/pkg/ml/context/initializers"
)

func init() {
	Register("t5", func(opts *Options, arch Arch) (Scheme, error) {
		t := &T5{
			NumBuckets:    opts.Int("num_buckets", 32),
			MaxDistance:   opts.Int("max_distance", 128),
			Bidirectional: opts.Bool("bidirectional", !arch.Causal),
		}
		nb := t.NumBuckets
		if t.Bidirectional {
			if nb < 4 || nb%2 != 0 {
				return nil, fmt.Errorf("bidirectional num_buckets must be even and >= 4 (half for each direction), got %d", nb)
			}
			nb /= 2
		} else if nb < 2 {
			return nil, fmt.Errorf("num_buckets must be >= 2, got %d", nb)
		}
		if maxExact := nb / 2; t.MaxDistance <= maxExact || t.MaxDistance > t5MaxDistanceLimit {
			return nil, fmt.Errorf("max_distance must be in (%d, %d] (above the %d exact buckets), got %d", maxExact, t5MaxDistanceLimit, maxExact, t.MaxDistance)
		}
		t.buckets = t5Buckets(nb, t.MaxDistance)
		return t, nil
	})
}

// t5MaxDistanceLimit keeps distances where float32 still counts integers exactly.
const t5MaxDistanceLimit = 1 << 24

// T5 adds a learned per-head bias chosen by the bucket of the relative position.
type T5 struct {
	NumBuckets    int
	MaxDistance   int
	Bidirectional bool
	buckets       []int32 // the distance part's bucket of n = 0 .. 2·max_distance (nb halved when bidirectional)
}

// Name implements Scheme.
func (*T5) Name() string { return "t5" }

// Bucket implements Bucketed.
func (t *T5) Bucket(qPos, kPos int) int {
	return T5Bucket(kPos-qPos, t.Bidirectional, t.NumBuckets, t.MaxDistance)
}

// T5Bucket is the bucket of the relative position rel = key - query, for options the
// constructor accepts.
func T5Bucket(rel int, bidirectional bool, numBuckets, maxDistance int) int {
	bucket, n := 0, max(-rel, 0)
	if bidirectional {
		numBuckets /= 2
		if rel > 0 {
			bucket = numBuckets
		}
		n = max(rel, -rel)
	}
	maxExact := numBuckets / 2
	if n < maxExact {
		return bucket + n
	}
	// float32 throughout, in the reference code's order of operations.
	logRatio := float32(math.Log(float64(float32(n) / float32(maxExact))))
	logRange := float32(math.Log(float64(maxDistance) / float64(maxExact)))
	large := maxExact + int(logRatio/logRange*float32(numBuckets-maxExact))
	return bucket + min(large, numBuckets-1)
}

// t5Buckets returns the causal bucket (nb buckets) of every distance n = 0 .. 2·maxDistance;
// past maxDistance every distance is in the last bucket.
func t5Buckets(nb, maxDistance int) []int32 {
	buckets := make([]int32, 2*maxDistance+1)
	for n := range buckets {
		buckets[n] = int32(T5Bucket(-n, false, nb, maxDistance))
	}
	return buckets
}

// Bias implements the Bias hook: B[bucket(j - i), h] as [batch, heads, seq_q, seq_k].
func (t *T5) Bias(ctx *context.Context, layer int, qPos, kPos *Node, numHeads int) *Node {
	// Every layer of one graph reads the table: unchecked, later layers reuse what the first
	// created instead of failing in a checked context.
	shared := ctx.Checked(false)
	table := shared.WithInitializer(initializers.RandomNormalFn(shared, 0.02)).
		VariableWithShape("relative_attention_bias", shapes.Make(dtypes.Float32, t.NumBuckets, numHeads)).ValueGraph(qPos.Graph())
	bucket := t.BucketGraph(qPos, kPos)
	b, s, k := bucket.Shape().Dim(0), bucket.Shape().Dim(1), bucket.Shape().Dim(2)
	// Flat indices: the backend's Gather rejects an index axis past the table's rank.
	bias := Reshape(Gather(table, Reshape(bucket, b*s*k, 1)), b, s, k, numHeads)
	return TransposeAllAxes(bias, 0, 3, 1, 2)
}

// BucketGraph returns the buckets [batch, seq_q, seq_k] (int32) of positions qPos [batch, seq_q]
// and kPos [batch, seq_k].
func (t *T5) BucketGraph(qPos, kPos *Node) *Node {
	g := qPos.Graph()
	rel := Sub(ExpandAxes(kPos, 1), ExpandAxes(qPos, -1)) // j - i: [b, s, t]
	var n, offset *Node
	if t.Bidirectional {
		n = Abs(rel)
		offset = Where(GreaterThan(rel, ZerosLike(rel)), Scalar(g, dtypes.Int32, t.NumBuckets/2), ScalarZero(g, dtypes.Int32))
	} else {
		n = MaxScalar(Neg(rel), 0)
	}
	b, q, k := n.Shape().Dim(0), n.Shape().Dim(1), n.Shape().Dim(2)
	last := len(t.buckets) - 1
	table := Reshape(Const(g, t.buckets), last+1, 1)
	bucket := Reshape(Gather(table, Reshape(MinScalar(n, float64(last)), b*q*k, 1)), b, q, k)
	if offset != nil {
		bucket = Add(bucket, offset)
	}
	return bucket
}
