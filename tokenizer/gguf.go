package tokenizer

// Tokenizers stored in GGUF metadata (tokenizer.ggml.*, ggml's docs/gguf.md), built from the
// in-memory vocabulary, as llama.cpp's llama-vocab.cpp applies them:
//
//	"llama"  SentencePiece by scores (SPM): spaces become "▁", a "▁" is put before the text
//	         (add_space_prefix), the text is split into characters, and the adjacent pair whose
//	         concatenation is a token with the highest score is merged, leftmost on ties, until
//	         none is; a character that is no token becomes its "<0xXX>" byte tokens.
//	"gpt2"   byte-level BPE with ranked merges ("a b" strings), after the pre-tokenizer regex
//	         tokenizer.ggml.pre names; it runs on the tokenizer.json pipeline (HF).
//
// Token types: 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte. Control and
// unknown tokens are never produced from text (Encode's promise that text cannot smuggle in
// control tokens; llama.cpp could in principle merge into one), user-defined tokens are matched
// whole in the text first, as llama.cpp does.
//
// ToGGUF goes the other way, for cmd/export: posformer's byte tokenizer, llama2.c's
// tokenizer.bin and byte-level BPE tokenizer.json files as GGUF vocabularies.

import (
	"container/heap"
	"fmt"
	"strings"
	"unicode/utf8"
)

// GGUF token types (llama_token_type).
const (
	GGUFNormal      = 1
	GGUFUnknown     = 2
	GGUFControl     = 3
	GGUFUserDefined = 4
	GGUFUnused      = 5
	GGUFByte        = 6
)

// GGUFVocab is a vocabulary as GGUF metadata stores it.
type GGUFVocab struct {
	Model  string    // tokenizer.ggml.model: "llama" or "gpt2"
	Pre    string    // tokenizer.ggml.pre: the gpt2 pre-tokenizer ("" or "default": GPT-2's)
	Tokens []string  // tokenizer.ggml.tokens, by id
	Scores []float32 // tokenizer.ggml.scores (llama); nil: all equal
	Types  []int32   // tokenizer.ggml.token_type; nil: all normal
	Merges []string  // tokenizer.ggml.merges (gpt2), by rank
	// Special ids (-1: none).
	BOS, EOS, UNK, PAD int
	// AddSpacePrefix is tokenizer.ggml.add_space_prefix (llama; llama.cpp's default true).
	AddSpacePrefix bool
	// AddBOS is tokenizer.ggml.add_bos_token: a prompt starts with BOS. The tokenizer does not
	// add it itself (Encode never adds special tokens); callers read it here.
	AddBOS bool
}

// maxGGUFVocab bounds a vocabulary's size: ids are int32 in the BPE tables.
const maxGGUFVocab = 1 << 30

// NewGGUF builds the tokenizer a GGUF vocabulary describes.
func NewGGUF(v GGUFVocab) (Tokenizer, error) {
	n := len(v.Tokens)
	switch {
	case n == 0:
		return nil, fmt.Errorf("tokenizer.ggml.tokens is empty")
	case n > maxGGUFVocab:
		return nil, fmt.Errorf("tokenizer.ggml.tokens has %d tokens, more than %d", n, maxGGUFVocab)
	case v.Scores != nil && len(v.Scores) != n:
		return nil, fmt.Errorf("tokenizer.ggml.scores has %d entries for %d tokens", len(v.Scores), n)
	case v.Types != nil && len(v.Types) != n:
		return nil, fmt.Errorf("tokenizer.ggml.token_type has %d entries for %d tokens", len(v.Types), n)
	}
	for _, id := range []struct {
		name string
		id   int
	}{{"bos", v.BOS}, {"eos", v.EOS}, {"unknown", v.UNK}, {"padding", v.PAD}} {
		if id.id < -1 || id.id >= n {
			return nil, fmt.Errorf("tokenizer.ggml.%s_token_id %d is not a token (the vocabulary has %d)", id.name, id.id, n)
		}
	}
	switch v.Model {
	case "llama":
		return newSPM(v)
	case "gpt2":
		return newGGUFBPE(v)
	}
	return nil, fmt.Errorf("tokenizer.ggml.model %q is not supported (supported: llama, gpt2); pass a tokenizer with -z", v.Model)
}

func (v GGUFVocab) typeOf(id int) int32 {
	if v.Types == nil {
		return GGUFNormal
	}
	return v.Types[id]
}

// SPM is a GGUF "llama" vocabulary: SentencePiece merged by scores, as llama.cpp runs it.
type SPM struct {
	vocab    GGUFVocab
	ids      map[string]int // pieces text may produce: normal and user-defined tokens
	bytes    [256]int       // id of "<0xXX>", -1 when absent
	user     *addedSplitter // user-defined tokens, matched whole first
	specials Specials
}

func newSPM(v GGUFVocab) (*SPM, error) {
	t := &SPM{vocab: v, ids: map[string]int{}, user: newAddedSplitter()}
	for i := range t.bytes {
		t.bytes[i] = -1
	}
	for id, piece := range v.Tokens {
		switch typ := v.typeOf(id); {
		case typ == GGUFByte:
			b, ok := parseByteToken(piece)
			if !ok {
				return nil, fmt.Errorf("token %d %q has the byte type but is not <0xXX>", id, piece)
			}
			if t.bytes[b] < 0 {
				t.bytes[b] = id
			}
		case typ == GGUFUserDefined:
			t.user.add(piece, addedToken{id: id, content: piece})
			fallthrough
		case typ == GGUFNormal:
			if _, dup := t.ids[piece]; !dup && id != v.BOS && id != v.EOS && id != v.UNK && id != v.PAD {
				t.ids[piece] = id
			}
		}
	}
	t.specials = Specials{BOS: v.BOS, EOS: v.EOS, PAD: v.PAD, MASK: -1}
	return t, nil
}

// Vocab returns the vocabulary the tokenizer was built from.
func (t *SPM) Vocab() GGUFVocab { return t.vocab }

// VocabSize is the number of tokens.
func (t *SPM) VocabSize() int { return len(t.vocab.Tokens) }

// Special returns the file's BOS, EOS and padding ids.
func (t *SPM) Special() Specials { return t.specials }

// Encode turns text into ids, without BOS.
func (t *SPM) Encode(text string) ([]int, error) {
	ids := []int{}
	for _, seg := range t.user.split(text, true, false) {
		if seg.id >= 0 {
			ids = append(ids, seg.id)
			continue
		}
		var err error
		if ids, err = t.encodeFragment(ids, seg.s, seg.first); err != nil {
			return nil, err
		}
	}
	return ids, nil
}

// spmSymbol is a span of the text being merged, in a linked list; n = 0 marks a symbol
// absorbed by its left neighbour.
type spmSymbol struct {
	start, n   int
	prev, next int
}

// spmBigram is a candidate merge of symbols left and left's next, of merged length size.
type spmBigram struct {
	left, size int
	score      float32
}

type bigramHeap []spmBigram

func (h bigramHeap) Len() int { return len(h) }
func (h bigramHeap) Less(i, j int) bool {
	return h[i].score > h[j].score || (h[i].score == h[j].score && h[i].left < h[j].left)
}
func (h bigramHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *bigramHeap) Push(x any)   { *h = append(*h, x.(spmBigram)) }
func (h *bigramHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func (t *SPM) encodeFragment(ids []int, text string, first bool) ([]int, error) {
	if text == "" {
		return ids, nil
	}
	s := strings.ReplaceAll(text, " ", "▁")
	if first && t.vocab.AddSpacePrefix {
		s = "▁" + s
	}
	var syms []spmSymbol
	for i := 0; i < len(s); {
		_, size := utf8.DecodeRuneInString(s[i:])
		syms = append(syms, spmSymbol{start: i, n: size, prev: len(syms) - 1, next: len(syms) + 1})
		i += size
	}
	syms[len(syms)-1].next = -1
	h := &bigramHeap{}
	try := func(left, right int) {
		if left < 0 || right < 0 {
			return
		}
		text := s[syms[left].start : syms[right].start+syms[right].n]
		if id, ok := t.ids[text]; ok {
			heap.Push(h, spmBigram{left: left, size: len(text), score: t.score(id)})
		}
	}
	for i := 1; i < len(syms); i++ {
		try(i-1, i)
	}
	for h.Len() > 0 {
		b := heap.Pop(h).(spmBigram)
		l := &syms[b.left]
		if l.n == 0 || l.next < 0 || l.n+syms[l.next].n != b.size {
			continue // one side was merged since this pair was queued
		}
		r := &syms[l.next]
		l.n += r.n
		r.n = 0
		l.next = r.next
		if r.next >= 0 {
			syms[r.next].prev = b.left
		}
		try(l.prev, b.left)
		try(b.left, l.next)
	}
	for i := 0; i >= 0; i = syms[i].next {
		piece := s[syms[i].start : syms[i].start+syms[i].n]
		if id, ok := t.ids[piece]; ok {
			ids = append(ids, id)
			continue
		}
		// Only a single character can be no token: merges make tokens.
		for j := 0; j < len(piece); j++ {
			switch {
			case t.bytes[piece[j]] >= 0:
				ids = append(ids, t.bytes[piece[j]])
			case t.vocab.UNK >= 0:
				ids = append(ids, t.vocab.UNK)
			default:
				return nil, fmt.Errorf("encoding: %q is no token and the vocabulary has neither byte tokens nor an unknown token", piece)
			}
		}
	}
	return ids, nil
}

func (t *SPM) score(id int) float32 {
	if t.vocab.Scores == nil {
		return 0
	}
	return t.vocab.Scores[id]
}

// Decode joins the pieces of ids, "▁" as a space and byte tokens as their byte, without the
// space the prefix put before the first piece. Control, unknown and unused tokens are dropped.
func (t *SPM) Decode(ids []int) string {
	var b []byte
	first := true
	for _, id := range ids {
		if id < 0 || id >= len(t.vocab.Tokens) || id == t.specials.BOS || id == t.specials.EOS || id == t.specials.PAD {
			continue
		}
		piece := t.vocab.Tokens[id]
		switch t.vocab.typeOf(id) {
		case GGUFByte:
			if v, ok := parseByteToken(piece); ok {
				b = append(b, v)
			}
		case GGUFNormal, GGUFUserDefined:
			piece = strings.ReplaceAll(piece, "▁", " ")
			if first && t.vocab.AddSpacePrefix {
				piece = strings.TrimPrefix(piece, " ")
			}
			b = append(b, piece...)
		default:
			continue
		}
		first = false
	}
	return string(b)
}

// GGUFBPE is a GGUF "gpt2" vocabulary: byte-level BPE on the tokenizer.json pipeline, which
// keeps the vocabulary it came from (for re-export).
type GGUFBPE struct {
	*HF
	vocab GGUFVocab
}

// Vocab returns the vocabulary the tokenizer was built from.
func (t *GGUFBPE) Vocab() GGUFVocab { return t.vocab }

// Pre-tokenizer regexes of tokenizer.ggml.pre (llama.cpp's llama-vocab.cpp names, the patterns
// of the models' tokenizer.json files).
const (
	llama3Pattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	qwen2Pattern  = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

// ggufPre maps tokenizer.ggml.pre values to their regex.
var ggufPre = map[string]string{
	"": gpt2Pattern, "default": gpt2Pattern, "gpt-2": gpt2Pattern, "gpt2": gpt2Pattern,
	"llama-bpe": llama3Pattern, "llama3": llama3Pattern, "qwen2": qwen2Pattern,
}

func newGGUFBPE(v GGUFVocab) (*GGUFBPE, error) {
	pattern, ok := ggufPre[v.Pre]
	if !ok {
		return nil, fmt.Errorf("tokenizer.ggml.pre %q is not supported (supported: default, gpt-2, llama-bpe, qwen2); pass the model's tokenizer.json with -z", v.Pre)
	}
	re, err := compileRegex(pattern)
	if err != nil {
		return nil, err
	}
	vocab := make(map[string]int, len(v.Tokens))
	var added []addedToken
	for id, tok := range v.Tokens {
		if _, dup := vocab[tok]; !dup {
			vocab[tok] = id
		}
		switch v.typeOf(id) {
		case GGUFControl:
			added = append(added, addedToken{id: id, content: tok, special: true})
		case GGUFUserDefined:
			added = append(added, addedToken{id: id, content: tok})
		}
	}
	pairs := make([][2]string, len(v.Merges))
	for i, m := range v.Merges {
		// A token never starts with a space here (bytes are spelled as characters), so the
		// pair splits at the first space after the first character.
		j := strings.IndexByte(m[min(1, len(m)):], ' ') + 1
		if j <= 0 || j >= len(m)-1 {
			return nil, fmt.Errorf("tokenizer.ggml.merges[%d] %q is not two tokens separated by a space", i, m)
		}
		pairs[i] = [2]string{m[:j], m[j+1:]}
	}
	table, err := mergeTable(vocab, pairs, "")
	if err != nil {
		return nil, fmt.Errorf("tokenizer.ggml.merges: %w", err)
	}
	h := &HF{
		pre:     byteLevelPre{re: re},
		model:   &bpe{tokens: vocab, merges: table, cache: map[string][]int{}},
		decoder: byteLevelDec{},
	}
	if err := h.setVocab(added); err != nil {
		return nil, err
	}
	// The file names its special tokens; setVocab could only guess them from their spelling.
	h.specials.BOS, h.specials.EOS, h.specials.PAD = v.BOS, v.EOS, v.PAD
	for _, id := range []int{v.BOS, v.EOS, v.PAD} {
		if id >= 0 {
			h.special[id] = true
		}
	}
	return &GGUFBPE{HF: h, vocab: v}, nil
}

// ToGGUF describes t as a GGUF vocabulary of exactly n tokens (the model's embedding rows;
// llama.cpp wants one token per row): the byte tokenizer, llama2.c's tokenizer.bin,
// byte-level BPE tokenizer.json files (GPT-2, Llama 3, Qwen2 pre-tokenizers) and the
// tokenizers NewGGUF builds. A vocabulary shorter than n is padded with unused tokens
// "[PADi]", as llama.cpp's convert pads.
func ToGGUF(t Tokenizer, n int) (GGUFVocab, error) {
	var v GGUFVocab
	switch t := t.(type) {
	case *SPM:
		v = cloneVocab(t.vocab)
	case *GGUFBPE:
		v = cloneVocab(t.vocab)
	case *Byte:
		// Every byte its own token and no merges: byte-level BPE encodes text as its bytes.
		v = GGUFVocab{Model: "gpt2", Pre: "gpt-2", BOS: byteBOS, EOS: byteEOS, UNK: -1, PAD: bytePAD}
		for b := range 256 {
			v.Tokens = append(v.Tokens, byteLevelEncode(string([]byte{byte(b)})))
			v.Types = append(v.Types, GGUFNormal)
		}
		v.Tokens = append(v.Tokens, "<s>", "</s>", "<pad>", MaskLiteral)
		v.Types = append(v.Types, GGUFControl, GGUFControl, GGUFControl, GGUFControl)
	case *Llama2C:
		v = GGUFVocab{Model: "llama", BOS: llama2cBOS, EOS: llama2cEOS, UNK: llama2cUNK, PAD: -1, AddSpacePrefix: true, AddBOS: true}
		for id, piece := range t.pieces {
			typ := int32(GGUFNormal)
			switch {
			case id == llama2cUNK:
				piece, typ = "<unk>", GGUFUnknown
			case id == llama2cBOS:
				piece, typ = "<s>", GGUFControl
			case id == llama2cEOS:
				piece, typ = "</s>", GGUFControl
			default:
				if _, ok := parseByteToken(piece); ok {
					typ = GGUFByte
				} else {
					piece = strings.ReplaceAll(piece, " ", "▁")
				}
			}
			v.Tokens = append(v.Tokens, piece)
			v.Scores = append(v.Scores, t.scores[id])
			v.Types = append(v.Types, typ)
		}
	case *HF:
		var err error
		if v, err = hfToGGUF(t); err != nil {
			return GGUFVocab{}, err
		}
	default:
		return GGUFVocab{}, fmt.Errorf("a %T tokenizer cannot be written as a GGUF vocabulary", t)
	}
	if len(v.Tokens) > n {
		return GGUFVocab{}, fmt.Errorf("the tokenizer has %d tokens but the model's embedding only %d rows", len(v.Tokens), n)
	}
	for i := len(v.Tokens); i < n; i++ {
		v.Tokens = append(v.Tokens, fmt.Sprintf("[PAD%d]", i))
		if v.Scores != nil {
			v.Scores = append(v.Scores, 0)
		}
		if v.Types == nil {
			v.Types = make([]int32, i)
			for j := range v.Types {
				v.Types[j] = GGUFNormal
			}
		}
		v.Types = append(v.Types, GGUFUnused)
	}
	return v, nil
}

func cloneVocab(v GGUFVocab) GGUFVocab {
	v.Tokens = append([]string(nil), v.Tokens...)
	if v.Scores != nil {
		v.Scores = append([]float32(nil), v.Scores...)
	}
	if v.Types != nil {
		v.Types = append([]int32(nil), v.Types...)
	}
	v.Merges = append([]string(nil), v.Merges...)
	return v
}

// hfToGGUF describes a byte-level BPE tokenizer.json (no normalizer, a byte-level pre-tokenizer
// whose regex llama.cpp knows by name, byte-level decoding) as a "gpt2" vocabulary.
func hfToGGUF(h *HF) (GGUFVocab, error) {
	m, ok := h.model.(*bpe)
	_, bl := h.decoder.(byteLevelDec)
	if !ok || !bl || h.normalizer != nil || m.byteFallback || m.prefix != "" || m.suffix != "" {
		return GGUFVocab{}, fmt.Errorf("only byte-level BPE tokenizer.json files (GPT-2, Llama 3, Qwen2 style) can be written as GGUF vocabularies; this one is not")
	}
	pattern, err := bytePattern(h.pre)
	if err != nil {
		return GGUFVocab{}, err
	}
	pre := ""
	for name, p := range map[string]string{"gpt-2": gpt2Pattern, "llama-bpe": llama3Pattern, "qwen2": qwen2Pattern} {
		if p == pattern {
			pre = name
		}
	}
	if pre == "" {
		return GGUFVocab{}, fmt.Errorf("the tokenizer's pre-tokenizer regex %q has no tokenizer.ggml.pre name llama.cpp knows", pattern)
	}
	v := GGUFVocab{Model: "gpt2", Pre: pre, BOS: h.specials.BOS, EOS: h.specials.EOS, UNK: -1, PAD: h.specials.PAD}
	v.Tokens = make([]string, h.vocabSize)
	v.Types = make([]int32, h.vocabSize)
	for id := range v.Tokens {
		tok, ok := h.idToToken[id]
		switch {
		case !ok:
			tok, v.Types[id] = fmt.Sprintf("[PAD%d]", id), GGUFUnused
		case h.special[id]:
			v.Types[id] = GGUFControl
		case m.tokens[tok] != id || !inVocab(m, tok):
			v.Types[id] = GGUFUserDefined // an added token that is not a model token
		default:
			v.Types[id] = GGUFNormal
		}
		v.Tokens[id] = tok
	}
	merges := make([]string, len(m.merges))
	for key, mg := range m.merges {
		a, b := int(int32(key>>32)), int(int32(uint32(key)))
		merges[mg.rank] = h.idToToken[a] + " " + h.idToToken[b]
	}
	for _, s := range merges {
		if s != "" {
			v.Merges = append(v.Merges, s)
		}
	}
	if h.post != nil {
		if ids := h.post([]int{}); len(ids) > 0 && ids[0] == v.BOS {
			v.AddBOS = true
		}
	}
	return v, nil
}

func inVocab(m *bpe, tok string) bool { _, ok := m.tokens[tok]; return ok }

// bytePattern is the split regex of a byte-level pre-tokenizer: ByteLevel with its regex, or
// Split(regex, isolated) followed by ByteLevel without one.
func bytePattern(p preTokenizer) (string, error) {
	regex := func(m matcher) (string, bool) {
		r, ok := m.(regexMatcher)
		if !ok {
			return "", false
		}
		return r.re.String(), true
	}
	switch p := p.(type) {
	case byteLevelPre:
		if s, ok := regex(p.re); ok && !p.addPrefixSpace {
			return s, nil
		}
	case sequencePre:
		if len(p) == 2 {
			sp, ok1 := p[0].(splitPre)
			bl, ok2 := p[1].(byteLevelPre)
			if ok1 && ok2 && bl.re == nil && !bl.addPrefixSpace && sp.behavior == isolated && !sp.invert {
				if s, ok := regex(sp.m); ok {
					return s, nil
				}
			}
		}
	}
	return "", fmt.Errorf("the tokenizer's pre-tokenizer is not a byte-level split llama.cpp knows (GPT-2, Llama 3 or Qwen2 regex)")
}
