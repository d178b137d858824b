package benchmarks

import (
	"testing"

	"github.com/posformer/posformer/benchmarks/corpus"
	"github.com/posformer/posformer/benchmarks/tasks"
	"github.com/posformer/posformer/engine"
	"github.com/posformer/posformer/models/quant"
)

// What quantization costs the shipped RoPE decoder: bits per byte on held-out Go source (the
// evaluation split, 64 windows of its 128-byte training length) with its matrices held as
// f32, bf16, q8_0 and q4_0. The bounds are the formats' promise: bf16 and Q8_0 keep 8 and 7
// significant bits, so the loss moves by well under 1%; Q4_0 (3 bits) may cost more but must
// stay within 10%.
//
//	go test ./benchmarks -run QuantizedBitsPerByte -v
func TestQuantizedBitsPerByte(t *testing.T) {
	root, err := corpus.GoRoot()
	if err != nil {
		t.Skipf("no Go source tree: %v", err)
	}
	c, err := corpus.Load(root, 1<<20)
	if err != nil {
		t.Skipf("no Go source tree: %v", err)
	}
	exs := tasks.LMExamples(c.Eval, 128, 64)
	bpb := map[quant.Type]float64{}
	for _, typ := range []quant.Type{quant.F32, quant.BF16, quant.Q8_0, quant.Q4_0} {
		e, err := engine.LoadAs("../weights/rope-decoder", "", 0, typ)
		if err != nil {
			t.Fatal(err)
		}
		var s tasks.Scores
		if err := tasks.Score(e, exs, 16, 128, &s, nil); err != nil {
			t.Fatal(err)
		}
		bpb[typ] = s.BitsPerToken() // one token is one byte
		t.Logf("%-5v %.4f bits per byte (%d bytes)", typ, bpb[typ], s.N)
	}
	for typ, bound := range map[quant.Type]float64{quant.BF16: 0.01, quant.Q8_0: 0.01, quant.Q4_0: 0.10} {
		if d := bpb[typ]/bpb[quant.F32] - 1; d > bound || d < -bound {
			t.Errorf("%v changes bits per byte by %+.2f%% (%.4f against %.4f); want within %.0f%%", typ, 100*d, bpb[typ], bpb[quant.F32], 100*bound)
		}
	}
}
