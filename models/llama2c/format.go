// Package llama2c reads and writes the checkpoints of Andrej Karpathy's llama2.c
// (github.com/karpathy/llama2.c): a Llama-2 decoder (RMSNorm with eps 1e-5, SwiGLU, no biases,
// RoPE on interleaved pairs with base 10000, grouped-query attention) stored as one flat
// little-endian file. Three layouts exist, all written by llama2.c's export.py:
//
//	version 0 (legacy_export, read by run.c)   28-byte header: int32 dim, hidden_dim, n_layers,
//	    n_heads, n_kv_heads, vocab_size (negative: the classifier is not the token embedding),
//	    seq_len; then float32 token embedding, attention norms, wq, wk, wv, wo, FFN norms, w1,
//	    w2, w3, final norm, two unused RoPE tables [seq_len, head_size/2] (cos, sin), and the
//	    classifier when unshared.
//	version 1 (version1_export)                256-byte header: uint32 magic "ak42" (0x616b3432),
//	    int32 version, the seven int32 above (vocab_size positive), a shared-classifier byte,
//	    zeros; then float32 attention norms, FFN norms, final norm, token embedding, wq, wk, wv,
//	    wo, w1, w2, w3 and the classifier when unshared.
//	version 2 (version2_export, read by runq.c) the same header plus an int32 group size at
//	    byte 37; float32 norms first, then each matrix in version 1's order as int8 values
//	    followed by one float32 scale per group of group-size values (Q8_0: w ≈ q·scale).
//
// Every matrix is stored [out, in], row-major, as PyTorch's nn.Linear keeps it, which is also
// how our layers store "weight". A kind of tensor is stored for all layers before the next
// kind (all wq, then all wk, ...). Reading streams tensor by tensor straight into place, so a
// load holds the weights once; version 2 is dequantized on the way in.
package llama2c

import (
	"fmt"
	"math/bits"

	"github.com/posformer/posformer/models"
)

// Magic is "ak42" read as a little-endian uint32: the first field of versions 1 and 2.
const Magic = 0x616b3432

// Sizes of the two header layouts, in bytes.
const (
	legacyHeaderSize    = 7 * 4
	versionedHeaderSize = 256
)

// Header is what a checkpoint's header says about the model.
type Header struct {
	Version                   int // 0 (legacy), 1 (float32) or 2 (int8 Q8_0)
	Dim, HiddenDim, NumLayers int
	NumHeads, NumKVHeads      int
	VocabSize                 int // always positive here; version 0 stores the sign separately
	SeqLen                    int
	SharedClassifier          bool // the output head is the token embedding
	GroupSize                 int  // version 2: values per quantization scale
}

// HeaderSize is the number of bytes before the first tensor.
func (h Header) HeaderSize() int64 {
	if h.Version == 0 {
		return legacyHeaderSize
	}
	return versionedHeaderSize
}

// Entry is one tensor of a file, in file order.
type Entry struct {
	Name  string // our checkpoint name (models.TensorName), e.g. "layer_0.attn.wq.weight"
	Shape []int
	Quant bool // int8 values, then one float32 scale per group (version 2)
	Skip  bool // the legacy RoPE tables: present in version 0, never used (run.c recomputes RoPE)
}

// Numel is the number of values in the tensor.
func (e Entry) Numel() int {
	n := 1
	for _, d := range e.Shape {
		n *= d
	}
	return n
}

// bytes is the tensor's size in the file.
func (e Entry) bytes(groupSize int) int64 {
	n := int64(e.Numel())
	if e.Quant {
		return n + 4*(n/int64(groupSize))
	}
	return 4 * n
}

// validate checks the header's arithmetic, so that every shape derived from it is consistent,
// and that the file it describes could exist (fuzzed headers claim absurd sizes). It works
// on kinds of tensor, never expanding the per-layer list that n_layers could make huge.
func (h Header) validate() error {
	switch {
	case h.Dim < 1 || h.HiddenDim < 1 || h.NumLayers < 1 || h.SeqLen < 1 || h.VocabSize < 1:
		return fmt.Errorf("header has dim=%d hidden_dim=%d n_layers=%d vocab_size=%d seq_len=%d; all must be >= 1 (is this a llama2.c .bin file?)",
			h.Dim, h.HiddenDim, h.NumLayers, h.VocabSize, h.SeqLen)
	case h.NumHeads < 1 || h.NumKVHeads < 1:
		return fmt.Errorf("header has n_heads=%d n_kv_heads=%d; both must be >= 1", h.NumHeads, h.NumKVHeads)
	case h.Dim%h.NumHeads != 0:
		return fmt.Errorf("header has dim=%d, not a multiple of n_heads=%d", h.Dim, h.NumHeads)
	case h.NumHeads%h.NumKVHeads != 0:
		return fmt.Errorf("header has n_heads=%d, not a multiple of n_kv_heads=%d", h.NumHeads, h.NumKVHeads)
	case (h.Dim/h.NumHeads)%2 != 0:
		return fmt.Errorf("header has head size %d (dim %d / n_heads %d); RoPE needs an even head size", h.Dim/h.NumHeads, h.Dim, h.NumHeads)
	case h.Version == 2 && h.GroupSize < 1:
		return fmt.Errorf("header has group size %d; version 2 needs >= 1", h.GroupSize)
	}
	const limit = 1 << 60 // bytes; no file is larger, and sums below it cannot overflow int64
	mul := func(a, b uint64) uint64 {
		hi, lo := bits.Mul64(a, b)
		if hi != 0 || lo > limit {
			return limit + 1
		}
		return lo
	}
	total := uint64(h.HeaderSize())
	for _, g := range h.groups() {
		n := uint64(1)
		for _, d := range g.shape {
			n = mul(n, uint64(d))
		}
		if g.quant && n <= limit && n%uint64(h.GroupSize) != 0 {
			what := g.name
			if g.perLayer {
				what = "each layer's " + g.name
			}
			return fmt.Errorf("group size %d does not divide the %d values of %s", h.GroupSize, n, what)
		}
		size := mul(n, 4)
		if g.quant {
			size = n + mul(n/uint64(h.GroupSize), 4)
		}
		total += mul(size, uint64(g.count))
		if total > limit {
			return fmt.Errorf("header describes a model (dim=%d hidden_dim=%d n_layers=%d vocab_size=%d) larger than any file can be",
				h.Dim, h.HiddenDim, h.NumLayers, h.VocabSize)
		}
	}
	return nil
}

// group is one kind of tensor: count of them (one per layer, or one) stored one after another.
type group struct {
	name                  string // our tensor name (models' names.go), within a block for per-layer kinds
	shape                 []int
	count                 int
	quant, skip, perLayer bool
}

// groups lists the kinds of tensor in file order.
func (h Header) groups() []group {
	dim, hidden, hs := h.Dim, h.HiddenDim, h.Dim/h.NumHeads
	kvDim := hs * h.NumKVHeads
	layer := func(name string, shape ...int) group {
		return group{name: name, shape: shape, count: h.NumLayers, perLayer: true}
	}
	tok := group{name: models.TokEmbeddings, shape: []int{h.VocabSize, dim}, count: 1}
	final := group{name: models.NormWeight, shape: []int{dim}, count: 1}
	attnNorm, ffnNorm := layer(models.AttnNormWeight, dim), layer(models.FFNNormWeight, dim)
	attn := []group{layer(models.AttnQWeight, dim, dim), layer(models.AttnKWeight, kvDim, dim),
		layer(models.AttnVWeight, kvDim, dim), layer(models.AttnOutWeight, dim, dim)}
	ffn := []group{layer(models.FFNGateWeight, hidden, dim), layer(models.FFNDownWeight, dim, hidden), layer(models.FFNUpWeight, hidden, dim)}
	var out []group
	switch h.Version {
	case 0:
		out = append(append(append([]group{tok, attnNorm}, attn...), ffnNorm), ffn...)
		out = append(out, final,
			group{name: "freq_cis_real", shape: []int{h.SeqLen, hs / 2}, count: 1, skip: true},
			group{name: "freq_cis_imag", shape: []int{h.SeqLen, hs / 2}, count: 1, skip: true})
	default:
		out = append(append([]group{attnNorm, ffnNorm, final, tok}, attn...), ffn...)
	}
	if !h.SharedClassifier {
		out = append(out, group{name: models.OutputWeight, shape: []int{h.VocabSize, dim}, count: 1})
	}
	if h.Version == 2 {
		for i := range out {
			out[i].quant = len(out[i].shape) == 2
		}
	}
	return out
}

// walk calls fn with each tensor in file order until fn returns false.
func (h Header) walk(fn func(Entry) bool) {
	for _, g := range h.groups() {
		for l := range g.count {
			name := g.name
			if g.perLayer {
				name = models.LayerTensor(l, g.name)
			}
			if !fn(Entry{Name: name, Shape: g.shape, Quant: g.quant, Skip: g.skip}) {
				return
			}
		}
	}
}

// Layout lists the file's tensors in the order they are stored.
func (h Header) Layout() []Entry {
	var out []Entry
	h.walk(func(e Entry) bool { out = append(out, e); return true })
	return out
}

// FileSize is the exact size of a file with this header.
func (h Header) FileSize() int64 {
	total := h.HeaderSize()
	for _, g := range h.groups() {
		total += int64(g.count) * Entry{Shape: g.shape, Quant: g.quant}.bytes(h.GroupSize)
	}
	return total
}
