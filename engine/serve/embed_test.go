package serve

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/posformer/posformer/engine"
	"github.com/posformer/posformer/models/safetensors"
	"github.com/posformer/posformer/tokenizer"
)

// The shipped models, from this package's directory.
const (
	decoderPath = "../../weights/rope-decoder"
	encoderPath = "../../weights/sinusoidal-encoder"
)

func load(t *testing.T, path string) *engine.Engine {
	t.Helper()
	e, err := engine.Load(path, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// tokens encodes s with the shipped models' byte tokenizer.
func tokens(s string) []int {
	ids, _ := tokenizer.NewByte().Encode(s)
	return ids
}

// The hidden state the embeddings pool is the model's last one: multiplied by the (tied)
// embedding table read straight from the checkpoint file, it gives the logits the engine's
// full forward pass computes.
func TestHiddenStateGivesTheLogits(t *testing.T) {
	e := load(t, encoderPath)
	c := e.Model.Config
	if !c.TieEmbeddings || c.HeadTransform {
		t.Fatalf("the test needs a tied head without a transform; %s has tie %v, transform %v", encoderPath, c.TieEmbeddings, c.HeadTransform)
	}
	f, err := safetensors.Open(encoderPath + "/model.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	table, err := f.ReadFloat32("tok_embeddings.weight")
	if err != nil {
		t.Fatal(err)
	}
	rows := [][]int{tokens("for i := 0; i < n; i++ {"), tokens("x")}
	em := NewEmbedder(e, 1)
	h, err := em.Hidden(rows)
	if err != nil {
		t.Fatal(err)
	}
	logits, err := e.Forward(rows[:1], [][]int{span(0, len(rows[0]))})
	if err != nil {
		t.Fatal(err)
	}
	worst := 0.0
	for j, v := range h[0] {
		for tok := range c.VocabSize {
			dot := 0.0
			for k, x := range v {
				dot += float64(x) * float64(table[tok*c.Dim+k])
			}
			worst = max(worst, math.Abs(dot-float64(logits[0][j][tok])))
		}
	}
	if worst > 1e-3 {
		t.Errorf("hidden · tableᵀ differs from the logits by up to %g", worst)
	}
}

// An embedding is the mean of the input's hidden states, the same beside a longer input
// (padding does not leak in); with one request running and queue full, the next is refused
// with ErrBusy, and a waiting one gives up when its context ends.
func TestEmbed(t *testing.T) {
	e := load(t, encoderPath)
	em := NewEmbedder(e, 0)
	short, long := tokens("package main"), tokens("func main() { println(\"a longer input\") }")
	h, err := em.Hidden([][]int{short})
	if err != nil {
		t.Fatal(err)
	}
	vecs, err := em.Embed(context.Background(), [][]int{short, long})
	if err != nil {
		t.Fatal(err)
	}
	if len(vecs) != 2 || len(vecs[0]) != e.Model.Config.Dim {
		t.Fatalf("%d embeddings of %d values, want 2 of %d", len(vecs), len(vecs[0]), e.Model.Config.Dim)
	}
	for k, got := range vecs[0] {
		mean := 0.0
		for _, v := range h[0] {
			mean += float64(v[k])
		}
		mean /= float64(len(h[0]))
		if math.Abs(mean-float64(got)) > 1e-5 {
			t.Fatalf("component %d: %g, the mean of the input's hidden states alone is %g", k, got, mean)
		}
	}

	<-em.turn // a request runs
	ctx, cancel := context.WithCancel(context.Background())
	waited := make(chan error, 1)
	go func() {
		_, err := em.Embed(ctx, [][]int{short})
		waited <- err
	}()
	for em.waiting.Load() < 1 {
		time.Sleep(time.Millisecond)
	}
	if _, err := em.Embed(context.Background(), [][]int{short}); !errors.Is(err, ErrBusy) {
		t.Errorf("a request past the queue: %v, want ErrBusy", err)
	}
	cancel()
	if err := <-waited; !errors.Is(err, context.Canceled) {
		t.Errorf("the waiting request, cancelled: %v", err)
	}
	em.turn <- struct{}{}
}

// Rows the model cannot embed are an error naming the row, not a panic.
func TestHiddenRefusesBadRows(t *testing.T) {
	e := load(t, encoderPath)
	em := NewEmbedder(e, 1)
	vocab, limit := e.Model.Config.VocabSize, e.SequenceLimit()
	for _, c := range []struct {
		rows [][]int
		says string
	}{
		{[][]int{{1}, {}}, "input 1 is empty"},
		{[][]int{make([]int, limit+1)}, fmt.Sprintf("input 0 is %d tokens but the model takes at most %d", limit+1, limit)},
		{[][]int{{1, vocab}}, fmt.Sprintf("token id %d in input 0", vocab)},
	} {
		if _, err := em.Embed(context.Background(), c.rows); err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%d rows: %v, want an error saying %q", len(c.rows), err, c.says)
		}
	}
}
