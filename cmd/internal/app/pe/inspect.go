package pe

import (
	"fmt"
	"math"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/posformer/posformer/models"
	"github.com/posformer/posformer/positional"
)

// Introspection interfaces: what a scheme can tell about itself beyond its hooks. cmd/pe asks
// for them instead of knowing schemes by name, so a new scheme is shown as soon as it has them.
type (
	// slopes: per-head linear bias slopes (ALiBi).
	slopes interface{ Slopes() []float64 }
	// rotary: the rotation frequencies of queries and keys and the logit factor (RoPE and its
	// context-extension variants, whose frequencies are not base^(-2i/d)).
	rotary interface {
		InvFreq() []float64
		AttentionFactor() float64
	}
	// lengthDependent: rotary frequencies that depend on the sequence length (dynamic NTK).
	lengthDependent interface{ InvFreqAt(n int) []float64 }
	// rotatingCode: an absolute code of (sin, cos) pairs at dims (2i, 2i+1) turning by k·ω_i
	// when the position moves by k (sinusoidal); Frequencies returns ω_i for a code of width dim.
	rotatingCode interface{ Frequencies(dim int) []float64 }
)

// report is what cmd/pe prints: the JSON object, and the data behind the CSV and the PNG.
type report struct {
	Scheme   string         `json:"scheme"`
	Options  map[string]any `json:"options"`
	Model    string         `json:"model,omitempty"`
	Kind     string         `json:"kind"`
	Len      int            `json:"len"`
	Dim      int            `json:"dim"`
	Heads    int            `json:"heads"`
	KVHeads  int            `json:"kv_heads"`
	HeadDim  int            `json:"head_dim"`
	Layer    int            `json:"layer"`
	Hooks    []string       `json:"hooks"`
	Table    [][]float32    `json:"table,omitempty"`   // [len, dim]: the code at positions 0..len-1
	Bias     [][][]float32  `json:"bias,omitempty"`    // [heads, len, len]: query i by key j
	Slopes   []float64      `json:"slopes,omitempty"`  // [heads]
	Buckets  [][]int        `json:"buckets,omitempty"` // [len, len]: query i by key j
	InvFreq  []float64      `json:"inv_freq,omitempty"`
	AttnFact *float64       `json:"attention_factor,omitempty"`
	// Scores are the logits [heads, len, len] that attention computes, before masking, when every
	// token has the same unit query and key (1,…,1)/sqrt(head_dim): the scheme's position kernel.
	Scores [][][]float32 `json:"scores,omitempty"`
	// Rotation is max |PE(pos+k) - M_k PE(pos)| over 0 <= pos < pos+k < len, M_k rotating each
	// pair (2i, 2i+1) of the code by k·ω_i.
	Rotation *float64 `json:"rotation_residual,omitempty"`
	// SSMax is the scalable softmax's factor, when the model has one; Scores then include it.
	SSMax *ssmaxReport `json:"ssmax,omitempty"`
}

// ssmaxReport is the scalable softmax of the shown layer: each query's logits are multiplied by
// s·ln n, n the keys it sees (i+1 for query i of a decoder, len for an encoder's).
type ssmaxReport struct {
	TrainLen int       `json:"train_len"` // L: an untrained s is 1/ln L
	S        []float64 `json:"s"`         // [heads]: the learned (or initial) s
	// Factor is s·ln(len) per head: the factor of a query that sees len keys (the last query
	// of a decoder, every query of an encoder); 1 at len = L for an untrained model.
	Factor []float64 `json:"factor"`
}

// hooks names the hook and introspection interfaces s implements.
func hooks(s positional.Scheme) []string {
	h := []string{}
	add := func(ok bool, name string) {
		if ok {
			h = append(h, name)
		}
	}
	_, in := s.(positional.Input)
	_, qk := s.(positional.QueryKey)
	_, rel := s.(positional.Relative)
	_, bias := s.(positional.Bias)
	_, scale := s.(positional.LogitScale)
	_, abs := s.(positional.Absolute)
	_, buck := s.(positional.Bucketed)
	_, lim := s.(positional.Limited)
	_, sc := s.(positional.Scores)
	_, ctxl := s.(positional.Contextual)
	add(in, "input")
	add(qk, "query_key")
	add(sc, "scores")
	add(rel, "relative")
	add(bias, "bias")
	add(ctxl, "contextual")
	add(scale, "logit_scale")
	add(abs, "absolute")
	add(buck, "bucketed")
	add(lim, "limited")
	return h
}

// inspect evaluates every view of the scheme that its interfaces offer, at positions 0..n-1.
func inspect(backend backends.Backend, st *setup, n, layer int) (rep *report, err error) {
	// Graph code reports errors by panicking (GoMLX's style), and so may a new scheme's bug:
	// either becomes a one-line error.
	defer func() {
		if r := recover(); r != nil {
			rep, err = nil, fmt.Errorf("%s: evaluating the scheme: %v", st.name, r)
		}
	}()
	a := st.arch
	kind := models.Encoder
	if a.Causal {
		kind = models.Decoder
	}
	rep = &report{
		Scheme: st.name, Options: st.options, Model: st.model, Kind: kind, Len: n, Dim: a.Dim,
		Heads: a.NumHeads, KVHeads: a.NumKVHeads, HeadDim: a.HeadDim, Layer: layer, Hooks: hooks(st.scheme),
	}
	s := st.scheme
	if sl, ok := s.(slopes); ok {
		rep.Slopes = sl.Slopes()
	}
	if r, ok := s.(rotary); ok {
		f := r.AttentionFactor()
		rep.InvFreq, rep.AttnFact = r.InvFreq(), &f
		if at, ok := s.(lengthDependent); ok {
			rep.InvFreq = at.InvFreqAt(n) // dynamic NTK: the frequencies at length -len
		}
	}
	if b, ok := s.(positional.Bucketed); ok {
		rep.Buckets = make([][]int, n)
		for i := range rep.Buckets {
			rep.Buckets[i] = make([]int, n)
			for j := range rep.Buckets[i] {
				rep.Buckets[i][j] = b.Bucket(i, j)
			}
		}
	}

	absolute, hasTable := s.(positional.Absolute)
	biasHook, hasBias := s.(positional.Bias)
	_, qk := s.(positional.QueryKey)
	_, rel := s.(positional.Relative)
	_, sc := s.(positional.Scores)
	// With SSMax, the scores are shown for every scheme: they are where the factor acts.
	hasScores := qk || rel || sc || st.ssmax != nil
	if st.ssmax != nil {
		rep.Hooks = append(rep.Hooks, "ssmax")
	}
	if !hasTable && !hasBias && !hasScores {
		return rep, nil
	}
	pos := make([]int32, n)
	for i := range pos {
		pos[i] = int32(i)
	}
	// Unchecked, as in the engine: loaded variables are reused, missing ones created.
	outs, err := context.ExecOnceN(backend, st.ctx.Checked(false), func(ctx *context.Context, p *Node) []*Node {
		pctx := ctx.In(models.Scope).In("positional")
		var nodes []*Node
		if hasTable {
			nodes = append(nodes, absolute.Code(pctx, p, a.Dim))
		}
		if hasBias {
			nodes = append(nodes, BroadcastToDims(biasHook.Bias(pctx, layer, p, p, a.NumHeads), 1, a.NumHeads, n, n))
		}
		if hasScores {
			logits := scores(pctx, s, a, layer, p)
			if st.ssmax != nil {
				// The layer's attention scope holds s, as in layers.Attention.
				logits = st.ssmax.Scale(ssmaxScope(ctx, layer), logits, visibleKeys(p, a.Causal))
			}
			nodes = append(nodes, logits)
		}
		for i, x := range nodes {
			nodes[i] = ConvertDType(x, dtypes.Float32)
		}
		return nodes
	}, [][]int32{pos})
	if err != nil {
		return nil, fmt.Errorf("%s: evaluating the scheme: %w", st.name, err)
	}
	next := func() []float32 {
		flat := tensors.MustCopyFlatData[float32](outs[0])
		outs = outs[1:]
		return flat
	}
	if hasTable {
		flat := next()
		rep.Table = reshape2(flat, n, a.Dim)
		if rc, ok := s.(rotatingCode); ok {
			r, err := rotationResidual(rep.Table, rc.Frequencies(a.Dim))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", st.name, err)
			}
			rep.Rotation = &r
		}
	}
	if hasBias {
		rep.Bias = reshape3(next(), a.NumHeads, n, n)
	}
	if hasScores {
		rep.Scores = reshape3(next(), a.NumHeads, n, n)
	}
	if st.ssmax != nil {
		if rep.SSMax, err = ssmaxOf(st, layer, n); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// ssmaxScope is the context scope of layer's attention, where SSMax keeps its s.
func ssmaxScope(ctx *context.Context, layer int) *context.Context {
	return ctx.In(models.Scope).In(models.LayerScope(layer)).In("attn")
}

// visibleKeys is which keys each query sees, [1, 1, n, n]: every key in an encoder, keys up to
// the query's own position in a decoder.
func visibleKeys(pos *Node, causal bool) *Node {
	n := pos.Shape().Dim(1)
	if !causal {
		return Ones(pos.Graph(), shapes.Make(dtypes.Bool, 1, 1, n, n))
	}
	return Reshape(LessOrEqual(ExpandAxes(pos, 1), ExpandAxes(pos, -1)), 1, 1, n, n)
}

// ssmaxOf reads s of the layer (loaded, or created by the evaluation at 1/ln L) and its factor
// at n keys.
func ssmaxOf(st *setup, layer, n int) (*ssmaxReport, error) {
	v := ssmaxScope(st.ctx, layer).GetVariable("ssmax")
	if v == nil {
		return nil, fmt.Errorf("%s: the model has ssmax but layer %d holds no s", st.name, layer)
	}
	value, err := v.Value()
	if err != nil {
		return nil, fmt.Errorf("%s: reading ssmax's s: %w", st.name, err)
	}
	s, err := tensors.CopyFlatData[float32](value)
	if err != nil {
		return nil, fmt.Errorf("%s: reading ssmax's s: %w", st.name, err)
	}
	rep := &ssmaxReport{TrainLen: st.ssmax.TrainLen}
	for _, x := range s {
		rep.S = append(rep.S, float64(x))
		rep.Factor = append(rep.Factor, float64(x)*math.Log(float64(n)))
	}
	return rep, nil
}

// scores runs attention's logit path (see layers.Attention) on a constant unit query and key:
// QueryKey, q·k (or the Scores hook), Relative logits, the logit scale, then the Bias. Returns [1, heads, n, n].
func scores(ctx *context.Context, s positional.Scheme, a positional.Arch, layer int, pos *Node) *Node {
	g := pos.Graph()
	n := pos.Shape().Dim(1)
	h, kvh, hd := a.NumHeads, a.NumKVHeads, a.HeadDim
	unit := func(heads int) *Node {
		return MulScalar(Ones(g, shapes.Make(dtypes.Float32, 1, heads, n, hd)), 1/math.Sqrt(float64(hd)))
	}
	q, k := unit(h), unit(kvh)
	if hook, ok := s.(positional.QueryKey); ok {
		q, k = hook.QueryKey(ctx, layer, q, k, pos, pos)
	}
	if group := h / kvh; group > 1 { // key/value head i/group serves query head i
		k = Reshape(BroadcastToDims(ExpandAxes(k, 2), 1, kvh, group, n, hd), 1, h, n, hd)
	}
	var logits *Node
	if hook, ok := s.(positional.Scores); ok {
		logits = hook.Scores(ctx, layer, q, k, pos, pos)
	} else {
		logits = Einsum("bhsd,bhtd->bhst", q, k)
	}
	if hook, ok := s.(positional.Relative); ok {
		logits = Add(logits, hook.RelativeLogits(ctx, layer, q, k, pos, pos))
	}
	scale := 1 / math.Sqrt(float64(hd))
	if hook, ok := s.(positional.LogitScale); ok {
		scale = hook.LogitScale(hd)
	}
	logits = MulScalar(logits, scale)
	if hook, ok := s.(positional.Bias); ok {
		logits = Add(logits, BroadcastToDims(hook.Bias(ctx, layer, pos, pos, h), 1, h, n, n))
	}
	return logits
}

// rotationResidual checks the sinusoidal code's defining property: for every offset k, one
// matrix M_k, the same for every position, maps PE(pos) to PE(pos+k). With (sin, cos) pairs,
// sin(a+b) = sin a cos b + cos a sin b and cos(a+b) = cos a cos b - sin a sin b.
func rotationResidual(table [][]float32, freqs []float64) (float64, error) {
	if len(table) == 0 || 2*len(freqs) != len(table[0]) {
		return 0, fmt.Errorf("rotation property: %d frequencies for a code of width %d", len(freqs), len(table[0]))
	}
	worst := 0.0
	for k := 1; k < len(table); k++ {
		for i, w := range freqs {
			c, s := math.Cos(float64(k)*w), math.Sin(float64(k)*w)
			for pos := 0; pos+k < len(table); pos++ {
				sinA, cosA := float64(table[pos][2*i]), float64(table[pos][2*i+1])
				worst = max(worst,
					math.Abs(float64(table[pos+k][2*i])-(sinA*c+cosA*s)),
					math.Abs(float64(table[pos+k][2*i+1])-(cosA*c-sinA*s)))
			}
		}
	}
	return worst, nil
}

func reshape2(flat []float32, rows, cols int) [][]float32 {
	for i := range flat {
		flat[i] += 0 // -0 (from negating a zero distance) prints as "-0" in JSON and CSV
	}
	out := make([][]float32, rows)
	for i := range out {
		out[i] = flat[i*cols : (i+1)*cols]
	}
	return out
}

func reshape3(flat []float32, a, b, c int) [][][]float32 {
	out := make([][][]float32, a)
	for i := range out {
		out[i] = reshape2(flat[i*b*c:(i+1)*b*c], b, c)
	}
	return out
}
