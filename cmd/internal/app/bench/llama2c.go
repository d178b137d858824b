// Random llama2.c checkpoints: go run ./cmd/bench -make-llama2c, so that every speed figure
// can be reproduced without downloading a model, by this engine and by llama2.c's run.c alike.
//
//	go run ./cmd/bench -make-llama2c -dim 288 -hidden 768 -layers 6 -heads 6 -kv-heads 6 \
//	    -vocab 32000 -seq 256 -o rand15M.bin          # the stories15M shape
//	go run ./cmd/bench -make-llama2c -dim 64 -hidden 172 -layers 5 -heads 8 -kv-heads 4 \
//	    -vocab 512 -seq 512 -o rand260K.bin           # the stories260K shape
package bench

import (
	"flag"
	"fmt"

	"github.com/posformer/posformer/benchmarks/speed"
	"github.com/posformer/posformer/models"
	"github.com/posformer/posformer/models/llama2c"
)

// runMakeLlama2c is the -make-llama2c mode of cmd/bench.
func runMakeLlama2c(args []string) error {
	var (
		dim, hidden, layers, heads, kvHeads, vocab, seq, version int
		seed                                                     uint64
		std                                                      float64
		unshared                                                 bool
		out                                                      string
	)
	fs := flag.NewFlagSet("bench -make-llama2c", flag.ContinueOnError)
	fs.IntVar(&dim, "dim", 288, "model width")
	fs.IntVar(&hidden, "hidden", 768, "feed-forward width")
	fs.IntVar(&layers, "layers", 6, "transformer blocks")
	fs.IntVar(&heads, "heads", 6, "attention heads")
	fs.IntVar(&kvHeads, "kv-heads", 0, "key/value heads (0: as many as -heads)")
	fs.IntVar(&vocab, "vocab", 32000, "vocabulary size")
	fs.IntVar(&seq, "seq", 256, "context size (max_seq_len)")
	fs.IntVar(&version, "version", 0, "llama2.c file version: 0 (legacy, read by run.c), 1 (float32), 2 (Q8_0)")
	fs.Uint64Var(&seed, "seed", 1, "random seed")
	fs.Float64Var(&std, "std", 0.02, "standard deviation of the weights")
	fs.BoolVar(&unshared, "unshared", false, "a separate output head instead of the tied embedding")
	fs.StringVar(&out, "o", "", "file to write (required)")
	if help, err := parseMode(fs, "make-llama2c", args); help || err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("-make-llama2c: unexpected argument %q", fs.Arg(0))
	case out == "":
		return fmt.Errorf("-make-llama2c: give the file to write with -o FILE")
	case std <= 0:
		return fmt.Errorf("-make-llama2c: -std must be > 0, got %g", std)
	}
	if kvHeads == 0 {
		kvHeads = heads
	}
	cfg := speed.LlamaConfig(dim, hidden, layers, heads, kvHeads, vocab, seq)
	cfg.TieEmbeddings = !unshared
	return writeRandomLlama2c(out, cfg, seed, std, version)
}

// writeRandomLlama2c writes a llama2.c checkpoint of cfg with random weights (N(0, std²)
// matrices, norm weights near 1; see llama2c.RandomWeights).
func writeRandomLlama2c(path string, cfg models.Config, seed uint64, std float64, version int) error {
	w, err := llama2c.RandomWeights(cfg, seed, std)
	if err != nil {
		return fmt.Errorf("-make-llama2c: %w", err)
	}
	if err := llama2c.Write(path, cfg, w, version); err != nil {
		return fmt.Errorf("-make-llama2c: %w", err)
	}
	return nil
}
