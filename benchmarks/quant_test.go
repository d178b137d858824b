package benchmarks

import (
	"fmt"
	"testing"

	"github.com/posformer/posformer/engine"
	"github.com/posformer/posformer/engine/train/corpus"
	"github.com/posformer/posformer/engine/train/tasks"
	"github.com/posformer/posformer/layers/quant"
)

// What quantization costs the shipped RoPE decoder: bits per byte on held-out Go source (the
// evaluation split, 64 windows of its 128-byte training length) with its matrices held as
// f32, bf16, q8_0 and q4_0, and q8_0 and q4_0 with int8 activations (backend cpu:actq8=true,
// scored by decoding, four windows per step: the decoding kernels, which a token at a time
// reaches; TestActQ8PrefillStaysClose in engine/cpu scores the prefill ones). The bounds are the formats' promise:
// bf16 and Q8_0 keep 8 and 7 significant bits, so the loss moves by well under 1%, and so do
// Q8_0 activations on top; Q4_0 (3 bits) may cost more but must stay within 10%.
//
//	go test ./benchmarks -run QuantizedBitsPerByte -v
func TestQuantizedBitsPerByte(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skips scoring held-out Go source with the shipped decoder under six weight and activation types (about 30 s); run it with go test ./benchmarks -run TestQuantizedBitsPerByte")
	}
	root, err := corpus.GoRoot()
	if err != nil {
		t.Skipf("no Go source tree: %v", err)
	}
	c, err := corpus.Load(root, 1<<20)
	if err != nil {
		t.Skipf("no Go source tree: %v", err)
	}
	exs := tasks.LMExamples(c.Eval, 128, 64)
	type row struct {
		typ   quant.Type
		actq8 bool
	}
	bpb := map[row]float64{}
	for _, r := range []row{{quant.F32, false}, {quant.BF16, false}, {quant.Q8_0, false}, {quant.Q4_0, false}, {quant.Q8_0, true}, {quant.Q4_0, true}} {
		backend, name := "cpu:actq8=false", r.typ.String()
		if r.actq8 {
			backend, name = "cpu:actq8=true", name+" actq8"
		}
		e, err := engine.LoadAs("../weights/rope-decoder", backend, 0, r.typ)
		if err != nil {
			t.Fatal(err)
		}
		var f tasks.Forwarder = e
		if r.actq8 {
			f = decoded{e}
		}
		var s tasks.Scores
		if err := tasks.Score(f, exs, 16, 128, &s, nil); err != nil {
			t.Fatal(err)
		}
		bpb[r] = s.BitsPerToken() // one token is one byte
		t.Logf("%-11s %.4f bits per byte (%d bytes)", name, bpb[r], s.N)
	}
	base := bpb[row{quant.F32, false}]
	for r, bound := range map[row]float64{{quant.BF16, false}: 0.01, {quant.Q8_0, false}: 0.01, {quant.Q4_0, false}: 0.10, {quant.Q8_0, true}: 0.01, {quant.Q4_0, true}: 0.10} {
		if d := bpb[r]/base - 1; d > bound || d < -bound {
			t.Errorf("%v (actq8 %v) changes bits per byte by %+.2f%% (%.4f against %.4f); want within %.0f%%", r.typ, r.actq8, 100*d, bpb[r], base, 100*bound)
		}
	}
}

// decoded scores rows by decoding them a token at a time, four rows per step: how a model runs
// when it generates, through actq8's decoding kernels.
type decoded struct{ e *engine.Engine }

func (d decoded) Forward(tokens, positions [][]int) ([][][]float32, error) {
	out := make([][][]float32, len(tokens))
	for r0 := 0; r0 < len(tokens); r0 += 4 {
		rows := tokens[r0:min(len(tokens), r0+4)]
		s := d.e.NewSession(len(rows))
		for j := range rows[0] {
			tok, pos := make([][]int, len(rows)), make([][]int, len(rows))
			for i := range rows {
				if len(rows[i]) != len(rows[0]) {
					return nil, fmt.Errorf("decoding rows of %d and %d tokens: want equal lengths", len(rows[0]), len(rows[i]))
				}
				tok[i], pos[i] = []int{rows[i][j]}, []int{positions[r0+i][j]}
			}
			l, err := s.Append(tok, pos)
			if err != nil {
				return nil, fmt.Errorf("decoding position %d: %w", j, err)
			}
			for i := range rows {
				out[r0+i] = append(out[r0+i], l[i][0])
			}
		}
		s.Close()
	}
	return out, nil
}
