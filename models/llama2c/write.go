package llama2c

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"

	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/posformer/posformer/models"
	"github.com/posformer/posformer/models/atomicfile"
	"github.com/posformer/posformer/positional"
)

// DefaultGroupSize is export.py's starting Q8_0 group size, halved until it divides dim.
const DefaultGroupSize = 64

// HeaderFor returns the header of a version 0, 1 or 2 file holding a model of configuration
// cfg, or an error naming what llama2.c cannot represent (the format fixes everything but the
// sizes: a decoder, RMSNorm eps 1e-5, SwiGLU, no biases, interleaved RoPE of base 10000).
func HeaderFor(cfg models.Config, version int) (Header, error) {
	cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return Header{}, err
	}
	if version < 0 || version > 2 {
		return Header{}, fmt.Errorf("llama2.c version %d does not exist (valid: 0, 1, 2)", version)
	}
	s, err := cfg.Scheme()
	if err != nil {
		return Header{}, err
	}
	rope, ok := s.(*positional.RoPE)
	switch {
	case cfg.Kind != models.Decoder:
		return Header{}, fmt.Errorf("llama2.c holds decoders only; this model is a %s", cfg.Kind)
	case cfg.Norm != "rmsnorm" || cfg.NormEps != NormEps:
		return Header{}, fmt.Errorf("llama2.c fixes RMSNorm with eps %g; this model has %s eps %g", NormEps, cfg.Norm, cfg.NormEps)
	case cfg.FFN != "swiglu" || cfg.Bias:
		return Header{}, fmt.Errorf("llama2.c fixes a SwiGLU feed-forward without biases; this model has ffn %s, bias %v", cfg.FFN, cfg.Bias)
	case !ok || rope.Layout != "interleaved" || rope.Base != RoPEBase || rope.RotaryDims() != rope.HeadDim || rope.Scaling != nil || len(cfg.NoPELayers) > 0:
		return Header{}, fmt.Errorf("llama2.c fixes unscaled RoPE on interleaved pairs, base %d, every dimension and layer; this model has %v (nope_layers %v)", RoPEBase, cfg.Positional, cfg.NoPELayers)
	}
	h := Header{
		Version: version, Dim: cfg.Dim, HiddenDim: cfg.HiddenDim, NumLayers: cfg.NumLayers,
		NumHeads: cfg.NumHeads, NumKVHeads: cfg.NumKVHeads, VocabSize: cfg.VocabSize, SeqLen: cfg.MaxSeqLen,
		SharedClassifier: cfg.TieEmbeddings,
	}
	if version == 2 {
		h.GroupSize = DefaultGroupSize
		for h.Dim%h.GroupSize != 0 {
			h.GroupSize /= 2
		}
	}
	if err := h.validate(); err != nil {
		return Header{}, err
	}
	return h, nil
}

// Write stores weights (every tensor the model of cfg has, by checkpoint name) as a llama2.c
// file of the given version at path, atomically: through a temporary file in the same
// directory, synced and renamed. Version 2 quantizes each matrix to Q8_0 as export.py does.
func Write(path string, cfg models.Config, w Weights, version int) error {
	h, err := HeaderFor(cfg, version)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	for _, e := range h.Layout() {
		if e.Skip {
			continue
		}
		if v, ok := w[e.Name]; !ok || len(v) != e.Numel() {
			return fmt.Errorf("writing %s: tensor %s %v needs %d values, got %d", path, e.Name, e.Shape, e.Numel(), len(v))
		}
	}
	err = atomicfile.Write(path, func(f io.Writer) error {
		bw := bufio.NewWriterSize(f, chunkBytes)
		if err := encode(bw, h, w); err != nil {
			return err
		}
		return bw.Flush()
	})
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// encode writes the header and every tensor in h's layout.
func encode(out io.Writer, h Header, w Weights) error {
	var hdr []byte
	le := binary.LittleEndian
	params := []int{h.Dim, h.HiddenDim, h.NumLayers, h.NumHeads, h.NumKVHeads, h.VocabSize, h.SeqLen}
	if h.Version == 0 {
		if !h.SharedClassifier {
			params[5] = -params[5]
		}
	} else {
		hdr = le.AppendUint32(hdr, Magic)
		hdr = le.AppendUint32(hdr, uint32(h.Version))
	}
	for _, p := range params {
		hdr = le.AppendUint32(hdr, uint32(int32(p)))
	}
	if h.Version > 0 {
		shared := byte(0)
		if h.SharedClassifier {
			shared = 1
		}
		hdr = append(hdr, shared)
		if h.Version == 2 {
			hdr = le.AppendUint32(hdr, uint32(h.GroupSize))
		}
		hdr = append(hdr, make([]byte, versionedHeaderSize-len(hdr))...)
	}
	if _, err := out.Write(hdr); err != nil {
		return err
	}
	hs := h.Dim / h.NumHeads
	for _, e := range h.Layout() {
		var err error
		switch {
		case e.Skip:
			err = writeF32(out, ropeTable(h.SeqLen, hs, e.Name == "freq_cis_imag"))
		case e.Quant:
			q, scales := QuantizeQ80(w[e.Name], h.GroupSize)
			if _, err = out.Write(q); err == nil {
				err = writeF32(out, scales)
			}
		default:
			err = writeF32(out, w[e.Name])
		}
		if err != nil {
			return fmt.Errorf("tensor %s: %w", e.Name, err)
		}
	}
	return nil
}

func writeF32(out io.Writer, values []float32) error {
	buf := make([]byte, 0, min(4*len(values), chunkBytes))
	for _, v := range values {
		buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
		if len(buf) == cap(buf) {
			if _, err := out.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	_, err := out.Write(buf)
	return err
}

// ropeTable is the legacy freqs_cos (or freqs_sin) table [seqLen, headSize/2] that model.py
// precomputes and legacy_export writes: cos(t·θ_i), θ_i = 10000^(-2i/headSize). No reader uses
// it, but a version 0 file is not complete without it.
func ropeTable(seqLen, headSize int, sin bool) []float32 {
	out := make([]float32, 0, seqLen*headSize/2)
	for t := range seqLen {
		for i := range headSize / 2 {
			a := float64(t) * math.Pow(RoPEBase, -float64(2*i)/float64(headSize))
			if sin {
				out = append(out, float32(math.Sin(a)))
			} else {
				out = append(out, float32(math.Cos(a)))
			}
		}
	}
	return out
}

// QuantizeQ80 is export.py's quantize_q80: for each group of groupSize values, scale =
// max|w|/127 and q = round(w/scale) (half to even, as torch.round), so that w ≈ q·scale with
// an error of at most scale/2. An all-zero group gets scale 0 and zeros.
func QuantizeQ80(w []float32, groupSize int) (q []byte, scales []float32) {
	q = make([]byte, len(w))
	scales = make([]float32, len(w)/groupSize)
	for g := range scales {
		group := w[g*groupSize : (g+1)*groupSize]
		var wmax float32
		for _, v := range group {
			wmax = max(wmax, float32(math.Abs(float64(v))))
		}
		scale := wmax / 127
		scales[g] = scale
		if scale == 0 {
			continue
		}
		for i, v := range group {
			q[g*groupSize+i] = byte(int8(math.RoundToEven(float64(v / scale))))
		}
	}
	return q, scales
}

// FromContext collects the model variables of ctx (as models.Save does) for Write.
func FromContext(ctx *context.Context) (Weights, error) {
	w := Weights{}
	for v := range ctx.In(models.Scope).IterVariablesInScope() {
		value, err := v.Value()
		if err != nil {
			return nil, fmt.Errorf("reading variable %s: %w", v.ScopeAndName(), err)
		}
		data, err := tensors.CopyFlatData[float32](value)
		if err != nil {
			return nil, fmt.Errorf("reading variable %s: %w", v.ScopeAndName(), err)
		}
		name, _ := models.CheckpointTensor(v)
		w[name] = data
	}
	return w, nil
}

// RandomWeights draws weights for a model of configuration cfg, reproducibly for a seed:
// matrices and embeddings from N(0, std²), norm weights from 1 + N(0, 0.1²) (not exactly 1,
// so that two norms swapped by a reader change the outputs). For speed benchmarks and tests.
func RandomWeights(cfg models.Config, seed uint64, std float64) (Weights, error) {
	h, err := HeaderFor(cfg, 1)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(seed, 0x11a3a2c))
	w := Weights{}
	for _, e := range h.Layout() {
		v := make([]float32, e.Numel())
		for i := range v {
			if len(e.Shape) == 1 {
				v[i] = float32(1 + 0.1*rng.NormFloat64())
			} else {
				v[i] = float32(std * rng.NormFloat64())
			}
		}
		w[e.Name] = v
	}
	return w, nil
}
