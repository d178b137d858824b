package train

// Training on BPE tokens (-bpe N, -tokenizer FILE) instead of bytes. The vocabulary is learned
// from the train split (tokenizer.TrainBPE) or taken from a tokenizer.json, written into the
// checkpoint folder as tokenizer.json and named in config.json, so every reader of the
// checkpoint (run, serve, export) loads it. Both splits are encoded once, up front; the
// sampler then draws windows of -seq tokens exactly as the byte path draws bytes.
//
// The eval loss stays in nats per token (what the optimizer minimizes); beside it, bits per
// byte: the eval windows' total nats over the bytes their targets decode to, over ln 2. For a
// byte model that is nats / ln 2, as before.

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"time"

	"github.com/posformer/posformer/models"
	"github.com/posformer/posformer/tokenizer"
)

// TokenizerFile is the tokenizer a BPE run keeps in its folder, named so in config.json.
const TokenizerFile = "tokenizer.json"

// BPELearnBytes caps the text -bpe learns its vocabulary from: the first 48 MiB of the train
// split (all of the Go tree's). Counting words is most of the time, and a vocabulary of a few
// thousand tokens is settled long before.
const BPELearnBytes = 48 << 20

// checkTokenFlags refuses -bpe and -tokenizer where they do not apply. Run calls it once the
// kind is known.
func checkTokenFlags(o Options) error {
	bpe := o.BPE > 0 || o.Tokenizer != ""
	flag := "-bpe"
	if o.Tokenizer != "" {
		flag = "-tokenizer"
	}
	switch {
	case o.BPE < 0:
		return fmt.Errorf("-bpe %d: want a vocabulary size (at least 257: the 256 bytes and %s), or 0 for bytes", o.BPE, tokenizer.EndOfText)
	case o.BPE > 0 && o.Tokenizer != "":
		return fmt.Errorf("-bpe and -tokenizer both choose the vocabulary; give one")
	case !bpe:
		return nil
	case o.Task != "":
		return fmt.Errorf("%s: the benchmark tasks (-task %s) are byte-level; drop %s", flag, o.Task, flag)
	case o.Kind != models.Decoder:
		return fmt.Errorf("%s trains decoders only; a -kind %s is byte-level (drop %s)", flag, o.Kind, flag)
	case o.BOS:
		return fmt.Errorf("%s: -bos puts the byte tokenizer's <s> first; drop -bos (a BPE sequence is a window of its text)", flag)
	case o.Init != "":
		return fmt.Errorf("%s with -init: a fine-tune keeps its checkpoint's tokenizer; drop %s", flag, flag)
	}
	return nil
}

// newVocabulary is the tokenizer.json a fresh run trains on (nil: bytes): learned from the
// train split with -bpe, or read from -tokenizer's file.
func newVocabulary(o Options, trainText []byte, logw io.Writer) ([]byte, error) {
	switch {
	case o.BPE > 0:
		text := trainText[:min(len(trainText), BPELearnBytes)]
		start := time.Now()
		v, err := tokenizer.TrainBPE(text, o.BPE)
		if err != nil {
			return nil, fmt.Errorf("-bpe: %w", err)
		}
		if len(v.Tokens) < o.BPE {
			// Refused rather than trained on fewer: -bpe N then always means N tokens, which
			// is what -resume checks the folder's tokenizer against.
			return nil, fmt.Errorf("-bpe %d: the train split has no pair left to merge at %d tokens; give more text or -bpe %d", o.BPE, len(v.Tokens), len(v.Tokens))
		}
		data, err := v.JSON()
		if err != nil {
			return nil, fmt.Errorf("-bpe: writing the vocabulary: %w", err)
		}
		fmt.Fprintf(logw, "train: learned %d BPE tokens (%d merges) from the first %.1f MB of the train split in %.1f s\n",
			len(v.Tokens), len(v.Merges), float64(len(text))/1e6, time.Since(start).Seconds())
		return data, nil
	case o.Tokenizer != "":
		data, err := os.ReadFile(o.Tokenizer)
		if err != nil {
			return nil, fmt.Errorf("-tokenizer: %w", err)
		}
		if _, err := tokenizer.ParseHF(data); err != nil {
			return nil, fmt.Errorf("-tokenizer %s: want a Hugging Face tokenizer.json: %w", o.Tokenizer, err)
		}
		return data, nil
	}
	return nil, nil
}

// initVocabulary is the tokenizer file of the checkpoint in dir that a fine-tune starts from.
func initVocabulary(dir string, cfg models.Config) ([]byte, error) {
	data, err := os.ReadFile(cfg.TokenizerPath(dir))
	if err != nil {
		return nil, fmt.Errorf("-init %s: the checkpoint's tokenizer: %w", dir, err)
	}
	return data, nil
}

// resumedVocabulary checks -bpe and -tokenizer against the tokenizer of the checkpoint being
// resumed (its config's), and returns that tokenizer's file (nil: bytes).
func resumedVocabulary(o Options, cfg models.Config) ([]byte, error) {
	if cfg.Tokenizer == "byte" {
		if o.BPE > 0 || o.Tokenizer != "" {
			return nil, fmt.Errorf("resuming %s: it was trained on bytes; drop -bpe / -tokenizer", o.Out)
		}
		return nil, nil
	}
	path := cfg.TokenizerPath(o.Out)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("resuming: the checkpoint's tokenizer: %w", err)
	}
	tok, err := tokenizer.ParseHF(data)
	if err != nil {
		return nil, fmt.Errorf("resuming: the checkpoint's tokenizer %s: %w", path, err)
	}
	switch {
	case o.BPE > 0 && tok.VocabSize() != o.BPE:
		return nil, fmt.Errorf("resuming %s: its tokenizer has %d tokens, not -bpe %d; drop -bpe (the folder's %s is reused)", o.Out, tok.VocabSize(), o.BPE, cfg.Tokenizer)
	case o.Tokenizer != "":
		given, err := os.ReadFile(o.Tokenizer)
		if err != nil {
			return nil, fmt.Errorf("-tokenizer: %w", err)
		}
		if !bytes.Equal(given, data) {
			return nil, fmt.Errorf("resuming %s: -tokenizer %s differs from the %s it was trained with; drop -tokenizer", o.Out, o.Tokenizer, path)
		}
	}
	return data, nil
}

// tokenText is the two splits as token ids, and what converts the eval loss to bits per byte.
type tokenText struct {
	tok         tokenizer.Tokenizer
	train, eval []int32
	evalBytes   int // bytes of the held-out text
}

// encodeSplits encodes the train split and the held-out text with tok.
func encodeSplits(tok tokenizer.Tokenizer, train, eval []byte, logw io.Writer) (*tokenText, error) {
	start := time.Now()
	t := &tokenText{tok: tok, evalBytes: len(eval)}
	for _, s := range []struct {
		text []byte
		ids  *[]int32
	}{{train, &t.train}, {eval, &t.eval}} {
		ids, err := tokenizer.EncodeLong(tok, s.text)
		if err != nil {
			return nil, fmt.Errorf("encoding the text: %w", err)
		}
		*s.ids = make([]int32, len(ids))
		for i, id := range ids {
			(*s.ids)[i] = int32(id)
		}
	}
	fmt.Fprintf(logw, "train: encoded %.1f MB into %d train / %d held-out tokens (%.2f / %.2f bytes per token) in %.1f s\n",
		float64(len(train)+len(eval))/1e6, len(t.train), len(t.eval), float64(len(train))/float64(max(1, len(t.train))),
		float64(len(eval))/float64(max(1, len(t.eval))), time.Since(start).Seconds())
	return t, nil
}

// bitsPerByte is what turns a mean eval loss in nats per token into bits per byte: the
// windows' token count over the bytes their targets decode to, over ln 2.
func (t *tokenText) bitsPerByte(targets [][]int32) float64 {
	tokens, nbytes := 0, 0
	for _, row := range targets {
		ids := make([]int, len(row))
		for i, id := range row {
			ids[i] = int(id)
		}
		tokens += len(row)
		nbytes += len(t.tok.Decode(ids))
	}
	return float64(tokens) / float64(max(1, nbytes)) / math.Ln2
}

// unigramTokenLoss is unigramLoss over token ids: nats per token of the eval targets under the
// train split's token frequencies (add-one smoothed over the vocabulary).
func unigramTokenLoss(train []int32, vocab int, eval [][]int32) float64 {
	counts := make([]float64, vocab)
	for _, id := range train {
		if int(id) < vocab {
			counts[id]++
		}
	}
	total := float64(len(train)) + float64(vocab)
	sum, n := 0.0, 0
	for _, row := range eval {
		for _, id := range row {
			if int(id) < vocab {
				sum -= math.Log((counts[id] + 1) / total)
				n++
			}
		}
	}
	return sum / float64(max(n, 1))
}
