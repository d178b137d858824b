package server

// Loading what a server needs besides the engine: the tokenizer, the tokens that begin and end
// a sequence, and the chat template. Each checkpoint kind brings these its own way, as in
// cmd/infer: a checkpoint directory names its tokenizer in config.json (a Hugging Face one
// also carries tokenizer_config.json with its chat template), a GGUF file holds its
// vocabulary and template in its metadata, and a llama2.c .bin file needs its tokenizer.bin
// given with -z.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/posformer/posformer/cmd/internal/gguftok"
	"github.com/posformer/posformer/cmd/internal/templateflag"
	"github.com/posformer/posformer/engine"
	"github.com/posformer/posformer/models"
	"github.com/posformer/posformer/models/gguf"
	"github.com/posformer/posformer/models/hf"
	"github.com/posformer/posformer/tokenizer"
	"github.com/posformer/posformer/tokenizer/chat"
)

// model is a loaded checkpoint with everything the endpoints need to turn text into tokens
// and back.
type model struct {
	e    *engine.Engine
	tok  tokenizer.Tokenizer
	name string // the id /v1/models lists and responses carry
	// addBOS puts bos before every prompt (GGUF files that ask for it, llama2.c as run.c).
	addBOS bool
	bos    int
	// stop ends generation when sampled (not part of the output): the tokenizer's EOS, or
	// BOS for llama2.c checkpoints (run.c stops there).
	stop []int
	// specialEmbed adds the tokenizer's special tokens around an embedding input
	// ([CLS] ... [SEP] for BERT), as Hugging Face's sentence encoders are run.
	specialEmbed bool
	template     chat.Template
	// path is the checkpoint as given with -m; bosText and eosText are the BOS and EOS tokens'
	// text ("" when the tokenizer has none), as /props and the chat template see them.
	path             string
	bosText, eosText string
}

// encoder reports whether the model is bidirectional (served through /v1/embeddings only).
func (m *model) encoder() bool { return !m.e.Model.Config.Causal() }

// loadModel opens o.model with the flags' backend, context size, weight type and RoPE edits.
func loadModel(o *options) (*model, error) {
	t, err := o.weightType()
	if err != nil {
		return nil, err
	}
	path := o.model
	switch {
	case gguf.IsFile(path):
	case engine.IsLlama2C(path):
		if o.tokenizer == "" {
			return nil, fmt.Errorf("%s is a llama2.c checkpoint, which carries no tokenizer: pass its tokenizer.bin with -z", path)
		}
	default:
		if _, err := os.Stat(filepath.Join(path, models.ConfigFile)); err != nil {
			return nil, fmt.Errorf("no model at %s (want a directory with %s, a GGUF file or a llama2.c .bin file); pass -m", path, models.ConfigFile)
		}
	}
	e, err := engine.LoadAs(path, o.backend, o.ctxSize, t, o.edits()...)
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", path, err)
	}
	if err := o.cache.Apply(e); err != nil {
		return nil, err
	}
	m := &model{e: e, name: o.alias, bos: -1, path: path}
	if m.name == "" {
		m.name = strings.TrimSuffix(filepath.Base(filepath.Clean(path)), filepath.Ext(path))
	}
	vocab := e.Model.Config.VocabSize
	var jinja string // the checkpoint's chat template, if it has one
	eos := -1        // the EOS token's id, for its text
	switch {
	case gguf.IsFile(path):
		if jinja, err = m.ggufTokenizer(path, o.tokenizer, vocab); err != nil {
			return nil, err
		}
		if len(m.stop) > 0 {
			eos = m.stop[0]
		}
	case engine.IsLlama2C(path):
		// run.c reads exactly vocab_size tokens, starts every sequence with BOS (1) and stops
		// when the model emits it again.
		if m.tok, err = tokenizer.LoadLlama2C(o.tokenizer, vocab); err != nil {
			return nil, fmt.Errorf("-z: %w", err)
		}
		m.addBOS, m.bos, m.stop = true, 1, []int{1}
	default:
		name := e.Model.Config.TokenizerPath(path)
		if o.tokenizer != "" {
			name = o.tokenizer
		}
		if m.tok, err = tokenizer.Load(name); err != nil {
			return nil, fmt.Errorf("loading the tokenizer of %s: %w", path, err)
		}
		if eos = m.tok.Special().EOS; eos >= 0 {
			m.stop = []int{eos}
		}
		if hf.IsDir(path) {
			m.specialEmbed = true
			if jinja, err = chat.HFTemplate(path); err != nil {
				return nil, err
			}
			if m.bosText, m.eosText, err = chat.HFTokens(path); err != nil {
				return nil, err
			}
		}
	}
	if m.bosText == "" && m.eosText == "" {
		bos := m.bos
		if bos < 0 {
			bos = m.tok.Special().BOS
		}
		m.bosText, m.eosText = tokenText(m.tok, bos), tokenText(m.tok, eos)
	}
	if m.tok.VocabSize() > vocab {
		return nil, fmt.Errorf("the tokenizer has %d tokens but the model only %d; pass the model's own with -z", m.tok.VocabSize(), vocab)
	}
	if m.template, err = templateflag.Template(o.chatTemplate, jinja, m.bosText, m.eosText); err != nil {
		return nil, fmt.Errorf("--%s: %w", templateflag.Name, err)
	}
	// A template's end-of-turn token (<|im_end|>, <|eot_id|>, ...) ends a reply too.
	m.stop = append(m.stop, m.template.EndOfTurnIDs(m.tok)...)
	return m, nil
}

// tokenText is the text of token id with its special markup ("" for -1).
func tokenText(tok tokenizer.Tokenizer, id int) string {
	if id < 0 || id >= tok.VocabSize() {
		return ""
	}
	return tokenizer.DecodeWith(tok, []int{id}, tokenizer.DecodeOptions{KeepSpecial: true})
}

// ggufTokenizer takes the tokenizer from the file's tokenizer.ggml.* keys, or from -z (which
// replaces it, as in cmd/infer), and returns the file's chat template ("" if none).
func (m *model) ggufTokenizer(path, override string, vocab int) (string, error) {
	l, err := gguftok.Load(path, override, vocab)
	if err != nil {
		return "", err
	}
	if l.Tok == nil {
		return "", fmt.Errorf("%s has no vocabulary: pass a tokenizer with -z", path)
	}
	m.tok, m.bos = l.Tok, l.BOS
	m.addBOS = l.AddBOS && m.bos >= 0
	if l.EOS >= 0 {
		m.stop = []int{l.EOS}
	}
	return l.ChatTemplate, nil
}

// encodePrompt turns a completion prompt into tokens, as cmd/infer does (plus BOS where the
// checkpoint asks for it).
func (m *model) encodePrompt(text string) ([]int, error) {
	ids, err := m.tok.Encode(text)
	if err != nil {
		return nil, fmt.Errorf("tokenizing the prompt: %w", err)
	}
	if m.addBOS {
		ids = append([]int{m.bos}, ids...)
	}
	return ids, nil
}

// encodeChat renders messages with the chat template (chat.Template.Encode), the assistant's
// turn opened, with BOS where the checkpoint asks for it.
func (m *model) encodeChat(msgs []chat.Message) ([]int, error) {
	return m.encodeChatWith(msgs, chat.Options{AddGenerationPrompt: true})
}

func (m *model) encodeChatWith(msgs []chat.Message, o chat.Options) ([]int, error) {
	bos := -1
	if m.addBOS {
		bos = m.bos
	}
	return m.template.EncodeWith(m.tok, msgs, bos, o)
}
