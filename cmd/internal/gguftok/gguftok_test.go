package gguftok

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/posformer/posformer/models/gguf"
	"github.com/posformer/posformer/tokenizer"
)

// writeVocab writes a GGUF file holding the vocabulary v and the other keys, no tensors.
func writeVocab(t *testing.T, v gguf.Vocab, kvs ...gguf.KV) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "vocab.gguf")
	if err := gguf.Write(path, append(v.KVs(), kvs...), nil); err != nil {
		t.Fatal(err)
	}
	return path
}

// The file's own tokenizer, its specials and its chat template; -z in its place; and a file
// without a vocabulary, whose specials come from its keys.
func TestLoad(t *testing.T) {
	byteTok := tokenizer.NewByte()
	n := byteTok.VocabSize()
	v, err := tokenizer.ToGGUF(byteTok, n)
	if err != nil {
		t.Fatal(err)
	}
	v.AddBOS = false
	// Longer than a message would quote: the template must come back whole and unquoted.
	const jinja = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
	path := writeVocab(t, gguf.Vocab(v), gguf.KV{Key: "tokenizer.chat_template", Value: gguf.String(jinja)})

	l, err := Load(path, "", n)
	if err != nil {
		t.Fatal(err)
	}
	want := byteTok.Special()
	if l.Tok == nil || l.Tok.VocabSize() != n || l.BOS != want.BOS || l.EOS != want.EOS || l.AddBOS || l.ChatTemplate != jinja {
		t.Errorf("the file's own: %+v, want %d tokens, BOS %d, EOS %d, no BOS added, the template's markers", l, n, want.BOS, want.EOS)
	}
	if ids, _ := l.Tok.Encode("hi"); len(ids) != 2 || l.Tok.Decode(ids) != "hi" {
		t.Errorf("the file's byte vocabulary encodes \"hi\" as %v", ids)
	}

	l, err = Load(path, "byte", n)
	if err != nil || l.Tok == nil || l.BOS != want.BOS || l.AddBOS {
		t.Errorf("-z byte: %+v, %v", l, err)
	}
	if _, err := Load(path, filepath.Join(t.TempDir(), "missing.json"), n); err == nil || !strings.HasPrefix(err.Error(), "-z: ") {
		t.Errorf("-z of a missing file: %v, want an error naming -z", err)
	}

	bare := writeVocab(t, gguf.Vocab{BOS: 1, EOS: 2, UNK: -1, PAD: -1, AddBOS: true})
	l, err = Load(bare, "", 300)
	if err != nil || l.Tok != nil || l.BOS != 1 || l.EOS != 2 || !l.AddBOS || l.ChatTemplate != "" {
		t.Errorf("no vocabulary: %+v, %v; want no tokenizer, BOS 1, EOS 2, BOS added", l, err)
	}

	missing := filepath.Join(t.TempDir(), "missing.gguf")
	if _, err := Load(missing, "", n); err == nil || !strings.Contains(err.Error(), "loading "+missing) {
		t.Errorf("missing file: %v", err)
	}
}
