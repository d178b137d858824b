package tokenizer

// GPT-2's original tokenizer files, as OpenAI released them (encoder.json +
// vocab.bpe, encoder.py) and as Hugging Face hosts them (vocab.json +
// merges.txt): a byte-level BPE with the GPT-2 split regex, no normalizer,
// and "<|endoftext|>" as the one special token. They run on the same
// pipeline as tokenizer.json files.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// LoadGPT2 loads a GPT-2 vocabulary (vocab.json or encoder.json: token ->
// id) and its merges (merges.txt or vocab.bpe: one "a b" pair per line,
// after a "#version" header).
func LoadGPT2(vocabPath, mergesPath string) (*HF, error) {
	h, err := loadGPT2(vocabPath, mergesPath)
	if err != nil {
		return nil, fmt.Errorf("loading GPT-2 tokenizer %s + %s: %w", vocabPath, mergesPath, err)
	}
	return h, nil
}

func loadGPT2(vocabPath, mergesPath string) (*HF, error) {
	data, err := readFile(vocabPath)
	if err != nil {
		return nil, err
	}
	var vocab map[string]int
	if err := json.Unmarshal(data, &vocab); err != nil {
		return nil, fmt.Errorf("%s: want a JSON object of token ids: %w", vocabPath, err)
	}
	if err := checkVocab(vocab); err != nil {
		return nil, fmt.Errorf("%s: %w", vocabPath, err)
	}
	mergeData, err := readFile(mergesPath)
	if err != nil {
		return nil, err
	}
	pairs, err := parseMergesText(mergeData)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", mergesPath, err)
	}
	table, err := mergeTable(vocab, pairs, "")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", mergesPath, err)
	}
	re, err := compileRegex(gpt2Pattern)
	if err != nil {
		return nil, err
	}
	h := &HF{
		pre:     byteLevelPre{re: re},
		model:   &bpe{tokens: vocab, merges: table, cache: map[string][]int{}},
		decoder: byteLevelDec{},
	}
	var added []addedToken
	if id, ok := vocab["<|endoftext|>"]; ok {
		added = append(added, addedToken{id: id, content: "<|endoftext|>", special: true})
	}
	if err := h.setVocab(added); err != nil {
		return nil, err
	}
	return h, nil
}

// parseMergesText reads merges.txt: an optional "#version" line, then one
// pair per line, as encoder.py's `bpe_data.split("\n")[1:-1]` does.
func parseMergesText(data []byte) ([][2]string, error) {
	var pairs [][2]string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), "\r")
		if (n == 1 && strings.HasPrefix(line, "#version")) || strings.TrimSpace(line) == "" {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			return nil, fmt.Errorf("line %d %q: want two tokens separated by a space", n, line)
		}
		pairs = append(pairs, [2]string{f[0], f[1]})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return pairs, nil
}

// looksLikeVocab reports whether a JSON object is a GPT-2 vocabulary:
// non-empty, with a number for every token.
func looksLikeVocab(top map[string]json.RawMessage) bool {
	if len(top) == 0 {
		return false
	}
	for _, v := range top {
		if len(v) == 0 || !(v[0] == '-' || (v[0] >= '0' && v[0] <= '9')) {
			return false
		}
	}
	return true
}

// findMerges looks for the merges file that goes with a GPT-2 vocabulary:
// merges.txt (Hugging Face's name) or vocab.bpe (OpenAI's) beside it.
func findMerges(vocabPath string) (string, error) {
	dir := filepath.Dir(vocabPath)
	for _, name := range []string{"merges.txt", "vocab.bpe"} {
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("loading GPT-2 vocabulary %s: no merges.txt or vocab.bpe beside it; pass the merges file explicitly (cmd/tokenize --merges FILE)", vocabPath)
}
