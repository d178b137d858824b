package llama2c

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/posformer/posformer/layers"
	"github.com/posformer/posformer/layers/quant"
	"github.com/posformer/posformer/models"
	"github.com/posformer/posformer/models/regular"
)

// NormEps is the epsilon run.c adds inside every RMSNorm; the format has no field for it.
const NormEps = 1e-5

// RoPEBase is the base run.c's rotary frequencies use; the format has no field for it either.
const RoPEBase = 10000

// TokenizerName is what Config records as the tokenizer: llama2.c keeps it in a separate
// tokenizer.bin, given to cmd/infer with -z as run.c takes it.
const TokenizerName = "tokenizer.bin"

func init() {
	models.RegisterFormat(models.Format{Name: "llama2c", What: "a llama2.c .bin file", Detect: IsFile, Fallback: true,
		Load: LoadInto, WeightType: StoredWeightType})
}

// IsFile reports whether path names a llama2.c checkpoint rather than a checkpoint directory:
// a regular file, or a missing path ending in .bin (so that its error says so). Having no
// magic number in version 0, the format claims any file that no other format does.
func IsFile(path string) bool {
	info, err := os.Stat(path)
	if err != nil {
		return strings.HasSuffix(path, ".bin")
	}
	return !info.IsDir()
}

// StoredWeightType is the type a load keeps the matrices of the file at path in by default:
// q8_0 for a version-2 file (int8 groups of a multiple of 32), f32 otherwise.
func StoredWeightType(path string) quant.Type {
	if h, err := ReadHeaderFile(path); err == nil && h.Version == 2 && h.GroupSize%32 == 0 {
		return quant.Q8_0
	}
	return quant.F32
}

// Config is the model a header describes, in our terms.
func (h Header) Config() models.Config {
	cfg := models.Config{
		Kind: models.Decoder, VocabSize: h.VocabSize, Dim: h.Dim, NumLayers: h.NumLayers,
		NumHeads: h.NumHeads, NumKVHeads: h.NumKVHeads, HiddenDim: h.HiddenDim,
		FFN: "swiglu", Norm: "rmsnorm", NormEps: NormEps, Bias: false,
		TieEmbeddings: h.SharedClassifier, MaxSeqLen: h.SeqLen, TrainSeqLen: h.SeqLen,
		Tokenizer:  TokenizerName,
		Positional: map[string]any{"name": "rope", "layout": "interleaved", "base": float64(RoPEBase)},
	}
	cfg.Defaults()
	return cfg
}

// Load reads the llama2.c checkpoint at path into a model and a context holding its variables
// under the same names as our own checkpoints. Tensors are streamed one by one into their
// variables, so peak memory is the weights plus one small read buffer. Edits change the
// configuration first, for settings that leave the weights alone (RoPE scaling, say).
func Load(path string, backend backends.Backend, edits ...models.Edit) (*models.Model, *context.Context, error) {
	ctx := context.New()
	m, err := LoadInto(path, backend, ctx, edits...)
	if err != nil {
		return nil, nil, err
	}
	return m, ctx, nil
}

// LoadInto is Load into the given context: an inference context (layers.SetWeightType)
// receives its matrices in its weight type, converted as they are read.
func LoadInto(path string, backend backends.Backend, ctx *context.Context, edits ...models.Edit) (*models.Model, error) {
	if info, err := os.Stat(path); err == nil && info.IsDir() {
		return nil, fmt.Errorf("loading %s: is a directory, not a llama2.c .bin file", path)
	}
	f, err := regular.Open(path)
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", path, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", path, err)
	}
	rd, err := NewReader(bufio.NewReaderSize(f, chunkBytes), info.Size())
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", path, err)
	}
	m, err := load(rd, backend, ctx, edits)
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", path, err)
	}
	return m, nil
}

func load(rd *Reader, backend backends.Backend, ctx *context.Context, edits []models.Edit) (*models.Model, error) {
	cfg := rd.Header().Config()
	for _, edit := range edits {
		if err := edit(&cfg); err != nil {
			return nil, err
		}
	}
	m, err := models.New(cfg)
	if err != nil {
		return nil, err
	}
	// The model's own list of variables must be exactly the file's, name by name and shape by
	// shape; this catches a drift between this layout and the layers' scopes at load time.
	params, err := m.Params(backend)
	if err != nil {
		return nil, err
	}
	table := map[string]models.Source{}
	for _, e := range rd.Header().Layout() {
		if !e.Skip {
			table[e.Name] = models.Source{Name: e.Name, Shape: e.Shape}
		}
	}
	if err := models.MatchParams("the llama2.c layout", params, table); err != nil {
		return nil, err
	}

	for {
		e, err := rd.Next()
		if err == io.EOF {
			return m, nil
		}
		if err != nil {
			return nil, err
		}
		if e.Quant && rd.Header().GroupSize%32 == 0 && layers.MatrixType(ctx, e.Shape) == quant.Q8_0 {
			// Version 2 into a Q8_0 context: the stored int8 values, never widened.
			q, d := make([]int8, e.Numel()), make([]float32, e.Numel()/32)
			if err := rd.ReadBlocks(q, d); err != nil {
				return nil, err
			}
			if err := models.StoreQ8(ctx, backend, e.Name, e.Shape, q, d); err != nil {
				return nil, err
			}
			continue
		}
		// Straight into the backend's buffer (models.NewTensor), so a forward pass does not
		// copy the weights a second time.
		t, err := models.NewTensor(backend, e.Shape, rd.Read)
		if err != nil {
			return nil, err
		}
		if err := models.SetParam(ctx, backend, e.Name, t); err != nil {
			return nil, err
		}
	}
}
