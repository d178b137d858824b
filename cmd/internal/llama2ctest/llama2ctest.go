// Package llama2ctest writes small llama2.c files for the commands' tests: a model whose
// next-token distribution has a closed form, and a tokenizer.bin in run.c's format.
package llama2ctest

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/posformer/posformer/models"
	"github.com/posformer/posformer/models/llama2c"
)

// Dim and SeqLen are ConstantModel's width and seq_len.
const (
	Dim    = 8
	SeqLen = 16
)

// ConstantModel writes a llama2.c model (one layer, width Dim, seq_len SeqLen) whose next-token
// logits are the same after any token: every block's output projections are zero, so the final
// hidden state is the shared embedding e = (1, 0, ..., 0) after the final RMS norm, and the
// classifier scores only row target, with 1/sqrt(1/Dim + eps) > 0; every other logit is 0.
func ConstantModel(t testing.TB, vocab, target int) string {
	t.Helper()
	cfg := models.Config{Kind: models.Decoder, VocabSize: vocab, Dim: Dim, NumLayers: 1, NumHeads: 2, HiddenDim: 8,
		MaxSeqLen: SeqLen, Positional: map[string]any{"name": "rope", "layout": "interleaved"}}
	h, err := llama2c.HeaderFor(cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	w := llama2c.Weights{}
	for _, e := range h.Layout() {
		v := make([]float32, e.Numel())
		switch {
		case len(e.Shape) == 1: // norms
			for i := range v {
				v[i] = 1
			}
		case e.Name == "tok_embeddings.weight":
			for r := range vocab {
				v[r*Dim] = 1
			}
		case e.Name == "output.weight":
			v[target*Dim] = 1
		}
		w[e.Name] = v
	}
	path := filepath.Join(t.TempDir(), fmt.Sprintf("const%d.bin", target))
	if err := llama2c.Write(path, cfg, w, 0); err != nil {
		t.Fatal(err)
	}
	return path
}

// Tokenizer writes a tokenizer.bin of n tokens in run.c's format: llama2.c's specials (<unk>,
// <s>, </s>), the 256 byte pieces, then pieces, then fillers; token i scores −i.
func Tokenizer(t testing.TB, n int, pieces ...string) string {
	t.Helper()
	all := []string{"<unk>", "\n<s>\n", "\n</s>\n"}
	for b := range 256 {
		all = append(all, fmt.Sprintf("<0x%02X>", b))
	}
	all = append(all, pieces...)
	for len(all) < n {
		all = append(all, fmt.Sprintf("filler%d", len(all)))
	}
	out := binary.LittleEndian.AppendUint32(nil, 16)
	for i, p := range all {
		out = binary.LittleEndian.AppendUint32(out, math.Float32bits(-float32(i)))
		out = binary.LittleEndian.AppendUint32(out, uint32(len(p)))
		out = append(out, p...)
	}
	path := filepath.Join(t.TempDir(), "tokenizer.bin")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
