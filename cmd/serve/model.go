package main

// Loading what a server needs besides the engine: the tokenizer, the tokens that begin and end
// a sequence, and the chat template. Each checkpoint kind brings these its own way, as in
// cmd/infer: a checkpoint directory names its tokenizer in config.json (a Hugging Face one
// also carries tokenizer_config.json with its chat template), a GGUF file holds its
// vocabulary and template in its metadata, and a llama2.c .bin file needs its tokenizer.bin
// given with -z.

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/posformer/posformer/engine"
	"github.com/posformer/posformer/models"
	"github.com/posformer/posformer/models/gguf"
	"github.com/posformer/posformer/models/hf"
	"github.com/posformer/posformer/tokenizer"
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
	template     chatTemplate
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
	m := &model{e: e, name: o.alias, bos: -1}
	if m.name == "" {
		m.name = strings.TrimSuffix(filepath.Base(filepath.Clean(path)), filepath.Ext(path))
	}
	vocab := e.Model.Config.VocabSize
	var jinja string // the checkpoint's chat template, if it has one
	switch {
	case gguf.IsFile(path):
		if jinja, err = m.ggufTokenizer(path, o.tokenizer, vocab); err != nil {
			return nil, err
		}
	case engine.IsLlama2C(path):
		// run.c reads exactly vocab_size tokens, starts every sequence with BOS (1) and stops
		// when the model emits it again.
		if m.tok, err = tokenizer.LoadLlama2C(o.tokenizer, vocab); err != nil {
			return nil, fmt.Errorf("-z: %w", err)
		}
		m.addBOS, m.bos, m.stop = true, 1, []int{1}
	default:
		name := e.Model.Config.Tokenizer
		if o.tokenizer != "" {
			name = o.tokenizer
		} else if name != "byte" && !filepath.IsAbs(name) {
			name = filepath.Join(path, name)
		}
		if m.tok, err = tokenizer.Load(name); err != nil {
			return nil, fmt.Errorf("loading the tokenizer of %s: %w", path, err)
		}
		if eos := m.tok.Special().EOS; eos >= 0 {
			m.stop = []int{eos}
		}
		if hf.IsDir(path) {
			m.specialEmbed = true
			if jinja, err = hfChatTemplate(path); err != nil {
				return nil, err
			}
		}
	}
	if m.tok.VocabSize() > vocab {
		return nil, fmt.Errorf("the tokenizer has %d tokens but the model only %d; pass the model's own with -z", m.tok.VocabSize(), vocab)
	}
	m.template = pickTemplate(jinja)
	// A template's end-of-turn token (<|im_end|>, <|eot_id|>, ...) ends a reply too.
	for _, lit := range m.template.endOfTurn {
		if id, ok := m.specialID(lit); ok {
			m.stop = append(m.stop, id)
		}
	}
	return m, nil
}

// ggufTokenizer takes the tokenizer from the file's tokenizer.ggml.* keys, or from -z (which
// replaces it, as in cmd/infer), and returns the file's chat template ("" if none).
func (m *model) ggufTokenizer(path, override string, vocab int) (string, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return "", fmt.Errorf("loading %s: %w", path, err)
	}
	defer f.Close()
	v, err := gguf.ReadVocab(f)
	if err != nil {
		return "", fmt.Errorf("loading %s: %w", path, err)
	}
	jinja := ""
	if t, ok := f.Get("tokenizer.chat_template"); ok {
		jinja = t.String()
	}
	m.addBOS = v.AddBOS
	switch {
	case strings.HasSuffix(override, ".bin"):
		if m.tok, err = tokenizer.LoadLlama2C(override, vocab); err != nil {
			return "", fmt.Errorf("-z: %w", err)
		}
		m.addBOS = true
	case override != "":
		if m.tok, err = tokenizer.Load(override); err != nil {
			return "", fmt.Errorf("-z: %w", err)
		}
	case v.Model == "":
		return "", fmt.Errorf("%s has no vocabulary: pass a tokenizer with -z", path)
	default:
		if m.tok, err = tokenizer.NewGGUF(tokenizer.GGUFVocab(v)); err != nil {
			return "", fmt.Errorf("loading %s: %w", path, err)
		}
	}
	m.bos = m.tok.Special().BOS
	if m.bos < 0 {
		m.addBOS = false
	}
	if eos := m.tok.Special().EOS; eos >= 0 {
		m.stop = []int{eos}
	}
	return jinja, nil
}

// hfChatTemplate reads chat_template from a Hugging Face directory's tokenizer_config.json: a
// string, or a list of named templates of which "default" is the one used for chat.
func hfChatTemplate(dir string) (string, error) {
	data, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json"))
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading the chat template: %w", err)
	}
	var cfg struct {
		ChatTemplate json.RawMessage `json:"chat_template"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return "", fmt.Errorf("reading %s: %w", filepath.Join(dir, "tokenizer_config.json"), err)
	}
	var one string
	if json.Unmarshal(cfg.ChatTemplate, &one) == nil {
		return one, nil
	}
	var named []struct{ Name, Template string }
	if json.Unmarshal(cfg.ChatTemplate, &named) == nil {
		for _, t := range named {
			if t.Name == "default" {
				return t.Template, nil
			}
		}
	}
	return "", nil
}

// specialID is the id of a special-token literal such as "<|im_end|>", when the tokenizer has
// it as one token.
func (m *model) specialID(literal string) (int, bool) {
	ids, err := tokenizer.EncodeWith(m.tok, literal, tokenizer.EncodeOptions{ParseSpecial: true})
	if err != nil || len(ids) != 1 {
		return 0, false
	}
	return ids[0], true
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

// encodeChat renders messages with the chat template: its markers are parsed as special
// tokens, the messages' text is not (a user cannot smuggle in control tokens).
func (m *model) encodeChat(msgs []chatMessage) ([]int, error) {
	var ids []int
	for i, seg := range m.template.render(msgs) {
		part, err := tokenizer.EncodeWith(m.tok, seg.text, tokenizer.EncodeOptions{ParseSpecial: seg.special})
		if err != nil {
			return nil, fmt.Errorf("tokenizing the messages: %w", err)
		}
		// Templates that write BOS themselves (Llama 2 and 3, Gemma) must not get a second.
		if i == 0 && m.addBOS && !(len(part) > 0 && part[0] == m.bos) {
			ids = append(ids, m.bos)
		}
		ids = append(ids, part...)
	}
	return ids, nil
}
