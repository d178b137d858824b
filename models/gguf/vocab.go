package gguf

import "fmt"

// Vocab is a file's tokenizer metadata (tokenizer.ggml.*). Its fields are those of
// tokenizer.GGUFVocab, so that each converts to the other (tokenizer.GGUFVocab(v)) without this
// package depending on the tokenizers.
type Vocab struct {
	Model  string // "llama", "gpt2"; "" when the file has no vocabulary
	Pre    string
	Tokens []string
	Scores []float32
	Types  []int32
	Merges []string
	// Special ids, -1 when absent.
	BOS, EOS, UNK, PAD int
	AddSpacePrefix     bool
	AddBOS             bool
}

// Keys of the tokenizer section.
const (
	keyTokModel  = "tokenizer.ggml.model"
	keyTokPre    = "tokenizer.ggml.pre"
	keyTokens    = "tokenizer.ggml.tokens"
	keyScores    = "tokenizer.ggml.scores"
	keyTypes     = "tokenizer.ggml.token_type"
	keyMerges    = "tokenizer.ggml.merges"
	keyBOS       = "tokenizer.ggml.bos_token_id"
	keyEOS       = "tokenizer.ggml.eos_token_id"
	keyUNK       = "tokenizer.ggml.unknown_token_id"
	keyPAD       = "tokenizer.ggml.padding_token_id"
	keyAddBOS    = "tokenizer.ggml.add_bos_token"
	keyAddPrefix = "tokenizer.ggml.add_space_prefix"
)

// maxTokenID bounds the ids a vocabulary without tokens names.
const maxTokenID = 1<<31 - 1

// ReadVocab reads a file's vocabulary. Absent keys take llama.cpp's defaults: a "llama"
// vocabulary adds BOS and a space prefix and has <unk>, <s>, </s> at 0, 1, 2; a "gpt2" one adds
// neither. A file without tokenizer.ggml.model, or with "no_vocab" or "none", has none (Model
// ""), though it may name BOS and EOS ids.
func ReadVocab(f *File) (Vocab, error) {
	v := Vocab{BOS: -1, EOS: -1, UNK: -1, PAD: -1}
	var errs []string
	get := func(key string, want ValueType, elem ValueType) (any, bool) {
		x, ok := f.Get(key)
		if !ok {
			return nil, false
		}
		if x.Type != want || (want == TypeArray && x.Elem != elem) {
			w := want.String()
			if want == TypeArray {
				w = "array of " + elem.String()
			}
			errs = append(errs, fmt.Sprintf("%s has type %v; want %s", key, typeDesc(x), w))
			return nil, false
		}
		return x.V, true
	}
	if s, ok := get(keyTokModel, TypeString, 0); ok {
		v.Model = s.(string)
	}
	if v.Model == "no_vocab" || v.Model == "none" {
		v.Model = ""
	}
	if v.Model == "" {
		// No tokens, but a model may still name its BOS and EOS (a llama2.c model's 1 and 2).
		for _, id := range []struct {
			key string
			dst *int
		}{{keyBOS, &v.BOS}, {keyEOS, &v.EOS}} {
			if x, ok := f.Get(id.key); ok {
				if n, ok := x.Uint(); ok && n <= maxTokenID {
					*id.dst = int(n)
				}
			}
		}
		if b, ok := get(keyAddBOS, TypeBool, 0); ok {
			v.AddBOS = b.(bool)
		}
		return v, nil
	}
	if s, ok := get(keyTokPre, TypeString, 0); ok {
		v.Pre = s.(string)
	}
	if x, ok := get(keyTokens, TypeArray, TypeString); ok {
		v.Tokens = x.([]string)
	} else if len(errs) == 0 {
		errs = append(errs, keyTokens+" is missing")
	}
	if x, ok := get(keyScores, TypeArray, TypeFloat32); ok {
		v.Scores = x.([]float32)
	}
	if x, ok := get(keyTypes, TypeArray, TypeInt32); ok {
		v.Types = x.([]int32)
	}
	if x, ok := get(keyMerges, TypeArray, TypeString); ok {
		v.Merges = x.([]string)
	}
	spm := v.Model == "llama"
	if spm {
		v.UNK, v.BOS, v.EOS = 0, 1, 2
	}
	for _, id := range []struct {
		key string
		dst *int
	}{{keyBOS, &v.BOS}, {keyEOS, &v.EOS}, {keyUNK, &v.UNK}, {keyPAD, &v.PAD}} {
		x, ok := f.Get(id.key)
		if !ok {
			continue
		}
		n, ok := x.Uint()
		if !ok || n >= uint64(len(v.Tokens)) {
			errs = append(errs, fmt.Sprintf("%s is %v; want a token id below %d", id.key, x, len(v.Tokens)))
			continue
		}
		*id.dst = int(n)
	}
	for _, p := range []*int{&v.BOS, &v.EOS, &v.UNK} {
		if *p >= len(v.Tokens) { // a default the vocabulary is too small for
			*p = -1
		}
	}
	v.AddBOS, v.AddSpacePrefix = spm, spm
	if b, ok := get(keyAddBOS, TypeBool, 0); ok {
		v.AddBOS = b.(bool)
	}
	if b, ok := get(keyAddPrefix, TypeBool, 0); ok {
		v.AddSpacePrefix = b.(bool)
	}
	if len(errs) > 0 {
		return Vocab{}, fmt.Errorf("%s", errs[0])
	}
	return v, nil
}

func typeDesc(v Value) string {
	if v.Type == TypeArray {
		return "array of " + v.Elem.String()
	}
	return v.Type.String()
}

// KVs is the vocabulary as metadata entries, for a writer.
func (v Vocab) KVs() []KV {
	if v.Model == "" {
		kvs := []KV{{keyTokModel, String("no_vocab")}}
		for _, id := range []struct {
			key string
			id  int
		}{{keyBOS, v.BOS}, {keyEOS, v.EOS}} {
			if id.id >= 0 {
				kvs = append(kvs, KV{id.key, Uint32(uint32(id.id))})
			}
		}
		return append(kvs, KV{keyAddBOS, Bool(v.AddBOS)})
	}
	kvs := []KV{{keyTokModel, String(v.Model)}}
	if v.Pre != "" {
		kvs = append(kvs, KV{keyTokPre, String(v.Pre)})
	}
	kvs = append(kvs, KV{keyTokens, Strings(v.Tokens)})
	if v.Scores != nil {
		kvs = append(kvs, KV{keyScores, Float32s(v.Scores)})
	}
	if v.Types != nil {
		kvs = append(kvs, KV{keyTypes, Int32s(v.Types)})
	}
	if v.Merges != nil || v.Model == "gpt2" {
		// llama.cpp refuses a gpt2 vocabulary without merges, even an empty list.
		kvs = append(kvs, KV{keyMerges, Strings(append([]string{}, v.Merges...))})
	}
	for _, id := range []struct {
		key string
		id  int
	}{{keyBOS, v.BOS}, {keyEOS, v.EOS}, {keyUNK, v.UNK}, {keyPAD, v.PAD}} {
		if id.id >= 0 {
			kvs = append(kvs, KV{id.key, Uint32(uint32(id.id))})
		}
	}
	kvs = append(kvs, KV{keyAddBOS, Bool(v.AddBOS)})
	if v.Model == "llama" {
		kvs = append(kvs, KV{keyAddPrefix, Bool(v.AddSpacePrefix)})
	}
	return kvs
}
