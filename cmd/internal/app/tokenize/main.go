// Package tokenize is the tokenize command (cmd/tokenize, posformer tokenize). It turns text into
// token ids and back, like llama.cpp's llama-tokenize: each line of standard input becomes one
// JSON array of ids on standard output, and with --decode each such array becomes a line of text
// again.
//
//	echo "Hello world" | go run ./cmd/tokenize -t tokenizer.json
//	echo "[9906, 1917]" | go run ./cmd/tokenize -t tokenizer.json --decode
//
// -t (or -z, run.c's name) accepts "byte", a Hugging Face tokenizer.json,
// GPT-2's vocab.json or encoder.json (with merges.txt or vocab.bpe beside
// it, or --merges), llama2.c's tokenizer.bin, or a directory holding one of
// them. Without --special, no BOS/EOS is added and special-token literals
// such as "<|begin_of_text|>" in the text are encoded as ordinary text; with
// it, they become their ids and the tokenizer's BOS/EOS are added (Hugging
// Face's defaults; for a tokenizer.bin, BOS first as run.c does). When
// decoding, --special keeps special tokens as text instead of dropping them.
package tokenize

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/posformer/posformer/cmd/internal/flaghelp"
	"github.com/posformer/posformer/tokenizer"
)

type options struct {
	tok, merges     string
	special, decode bool
}

// Main runs the command with args (the arguments after its name) and returns its exit
// status: 2 for a bad flag, 1 for a failure.
func Main(args []string) int {
	var o options
	fs := flag.NewFlagSet("tokenize", flag.ContinueOnError)
	// -z is llama2.c run.c's name for its tokenizer.bin.
	for _, name := range []string{"t", "tokenizer", "z"} {
		fs.StringVar(&o.tok, name, "", "tokenizer: byte, tokenizer.json, GPT-2 vocab.json/encoder.json, llama2.c tokenizer.bin, or a directory")
	}
	fs.StringVar(&o.merges, "merges", "", "GPT-2 merges.txt or vocab.bpe (default: found beside the vocab.json)")
	fs.BoolVar(&o.special, "special", false, "parse special-token literals and add BOS/EOS; with --decode, keep special tokens")
	fs.BoolVar(&o.decode, "decode", false, "read JSON arrays of ids, one per line, and print their text")
	// One-line errors below instead of the usage dump the flag package
	// prints on a bad flag; -h prints it on purpose.
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			fmt.Fprintln(os.Stderr, "usage: tokenize -t TOKENIZER [--special] [--decode] [--merges FILE] < input")
			fs.SetOutput(os.Stderr)
			flaghelp.PrintDefaults(fs)
			return 0
		}
		fmt.Fprintf(os.Stderr, "tokenize: %v (run with -h for the flags)\n", err)
		return 2
	}
	if len(fs.Args()) > 0 {
		fmt.Fprintf(os.Stderr, "tokenize: unexpected argument %q; text is read from standard input\n", fs.Args()[0])
		return 2
	}
	out := bufio.NewWriter(os.Stdout)
	err := run(o, os.Stdin, out)
	if ferr := out.Flush(); err == nil {
		err = ferr
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "tokenize:", err)
		return 1
	}
	return 0
}

func run(o options, in io.Reader, out io.Writer) error {
	tok, err := load(o)
	if err != nil {
		return err
	}
	r := bufio.NewReader(in)
	for n := 1; ; n++ {
		line, err := r.ReadString('\n')
		if err != nil && err != io.EOF {
			return fmt.Errorf("reading standard input: %w", err)
		}
		if line == "" && err == io.EOF {
			return nil
		}
		// One input line is one text: its line ending is not part of it.
		text := strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		if o.decode {
			err = decodeLine(tok, o, text, n, out)
		} else {
			err = encodeLine(tok, o, text, out)
		}
		if err != nil {
			return err
		}
	}
}

func load(o options) (tokenizer.Tokenizer, error) {
	switch {
	case o.tok == "":
		return nil, errors.New("no tokenizer: pass -t byte, -t tokenizer.json, -t vocab.json or -t tokenizer.bin")
	case o.merges != "":
		return tokenizer.LoadGPT2(o.tok, o.merges)
	}
	return tokenizer.Load(o.tok)
}

func encodeLine(tok tokenizer.Tokenizer, o options, text string, out io.Writer) error {
	ids, err := tokenizer.EncodeWith(tok, text, tokenizer.EncodeOptions{AddSpecial: o.special, ParseSpecial: o.special})
	if err != nil {
		return err
	}
	// "[1, 2, 3]", as llama-tokenize --ids prints: valid JSON and Python.
	var b strings.Builder
	b.WriteByte('[')
	for i, id := range ids {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(id))
	}
	b.WriteString("]\n")
	_, err = io.WriteString(out, b.String())
	return err
}

func decodeLine(tok tokenizer.Tokenizer, o options, line string, n int, out io.Writer) error {
	if strings.TrimSpace(line) == "" {
		return nil
	}
	var ids []int
	if err := json.Unmarshal([]byte(line), &ids); err != nil {
		return fmt.Errorf("line %d: want a JSON array of token ids such as [1, 2, 3], got %.40q", n, line)
	}
	for _, id := range ids {
		if id < 0 || id >= tok.VocabSize() {
			return fmt.Errorf("line %d: id %d is outside the vocabulary (0..%d)", n, id, tok.VocabSize()-1)
		}
	}
	_, err := io.WriteString(out, tokenizer.DecodeWith(tok, ids, tokenizer.DecodeOptions{KeepSpecial: o.special})+"\n")
	return err
}
