package tokenizer

// Models of Hugging Face tokenizer.json files: they turn one pre-tokenized
// word into ids. Semantics follow the Rust `tokenizers` crate
// (src/models/bpe, wordpiece, wordlevel).

import (
	"errors"
	"fmt"
	"sync"
)

type model interface {
	// encode appends the ids of word to dst.
	encode(dst []int, word string) ([]int, error)
	// vocab maps every token of the model to its id.
	vocab() map[string]int
}

// bpe is byte-pair encoding (Sennrich et al. 2016): start from characters
// and repeatedly apply the lowest-ranked merge among adjacent pairs. Ties
// between equal ranks (the same pair at several places, as in "========")
// go to the leftmost pair, because merging one pair can consume a neighbour
// of the next: "= = =" becomes "== =", not "= ==".
type bpe struct {
	tokens       map[string]int
	merges       map[uint64]merge // key: left id << 32 | right id
	unk          string           // "" when the model has no unknown token
	fuseUnk      bool             // consecutive unknown characters become one unk
	byteFallback bool             // unknown characters become their <0xXX> byte tokens
	ignoreMerges bool             // a word already in the vocabulary is kept whole
	prefix       string           // continuing_subword_prefix, put before non-initial characters
	suffix       string           // end_of_word_suffix, put after the last character

	mu    sync.Mutex
	cache map[string][]int // words seen before; dropped when full
}

type merge struct{ rank, id int32 }

const bpeCacheSize = 10000

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

func (m *bpe) vocab() map[string]int { return m.tokens }

func (m *bpe) encode(dst []int, word string) ([]int, error) {
	if word == "" {
		return dst, nil
	}
	if m.ignoreMerges {
		if id, ok := m.tokens[word]; ok {
			return append(dst, id), nil
		}
	}
	m.mu.Lock()
	ids, ok := m.cache[word]
	m.mu.Unlock()
	if ok {
		return append(dst, ids...), nil
	}
	ids, err := m.mergeWord(word)
	if err != nil {
		return nil, err
	}
	if len(word) < 256 {
		m.mu.Lock()
		if len(m.cache) >= bpeCacheSize {
			clear(m.cache)
		}
		m.cache[word] = ids
		m.mu.Unlock()
	}
	return append(dst, ids...), nil
}

// symbol is one element of a word being merged, in a doubly linked list so
// merging is O(1); dead symbols were absorbed by their left neighbour.
type symbol struct {
	id         int32
	prev, next int32
	dead       bool
}

// mergeWord splits word into characters and applies merges, following
// Word::merge_all of the Rust crate.
func (m *bpe) mergeWord(word string) ([]int, error) {
	syms := make([]symbol, 0, len(word))
	add := func(id int) {
		n := int32(len(syms))
		syms = append(syms, symbol{id: int32(id), prev: n - 1, next: n + 1})
	}
	unkID, pendingUnk := -1, false
	flushUnk := func() {
		if pendingUnk {
			add(unkID)
			pendingUnk = false
		}
	}
	for i, r := range word {
		s := string(r)
		if i > 0 && m.prefix != "" {
			s = m.prefix + s
		}
		if i+len(string(r)) == len(word) && m.suffix != "" {
			s += m.suffix
		}
		if id, ok := m.tokens[s]; ok {
			flushUnk()
			add(id)
			continue
		}
		if m.byteFallback {
			if bytes, ok := m.byteTokens(s); ok {
				flushUnk()
				for _, id := range bytes {
					add(id)
				}
				continue
			}
		}
		if m.unk == "" {
			// No unknown token: the character is dropped, as in the
			// Rust crate.
			continue
		}
		id, ok := m.tokens[m.unk]
		if !ok {
			return nil, fmt.Errorf("unknown token %q is not in the vocabulary", m.unk)
		}
		if pendingUnk && !m.fuseUnk {
			flushUnk()
		}
		unkID, pendingUnk = id, true
	}
	flushUnk()
	if len(syms) == 0 {
		return nil, nil
	}
	syms[len(syms)-1].next = -1

	// A min-heap of candidate merges by (rank, position). Entries can go
	// stale when a neighbour merges first; they are checked when popped.
	var h mergeHeap
	for i := 0; i+1 < len(syms); i++ {
		if mg, ok := m.merges[pairKey(syms[i].id, syms[i+1].id)]; ok {
			h.push(candidate{mg.rank, int32(i), mg.id})
		}
	}
	for len(h) > 0 {
		c := h.pop()
		s := &syms[c.pos]
		if s.dead || s.next < 0 {
			continue
		}
		next := &syms[s.next]
		if mg, ok := m.merges[pairKey(s.id, next.id)]; !ok || mg.id != c.id {
			continue
		}
		s.id = c.id
		next.dead = true
		s.next = next.next
		if s.next >= 0 {
			syms[s.next].prev = c.pos
		}
		if s.prev >= 0 {
			if mg, ok := m.merges[pairKey(syms[s.prev].id, s.id)]; ok {
				h.push(candidate{mg.rank, s.prev, mg.id})
			}
		}
		if s.next >= 0 {
			if mg, ok := m.merges[pairKey(s.id, syms[s.next].id)]; ok {
				h.push(candidate{mg.rank, c.pos, mg.id})
			}
		}
	}
	ids := make([]int, 0, len(syms))
	for _, s := range syms {
		if !s.dead {
			ids = append(ids, int(s.id))
		}
	}
	return ids, nil
}

// byteTokens returns the ids of the <0xXX> tokens spelling s, if the
// vocabulary has all of them.
func (m *bpe) byteTokens(s string) ([]int, bool) {
	ids := make([]int, len(s))
	for i := 0; i < len(s); i++ {
		id, ok := m.tokens[fmt.Sprintf("<0x%02X>", s[i])]
		if !ok {
			return nil, false
		}
		ids[i] = id
	}
	return ids, true
}

type candidate struct {
	rank, pos, id int32
}

// mergeHeap is a binary min-heap ordered by rank, then position.
type mergeHeap []candidate

func (h mergeHeap) less(i, j int) bool {
	if h[i].rank != h[j].rank {
		return h[i].rank < h[j].rank
	}
	return h[i].pos < h[j].pos
}

func (h *mergeHeap) push(c candidate) {
	*h = append(*h, c)
	a := *h
	for i := len(a) - 1; i > 0; {
		p := (i - 1) / 2
		if !a.less(i, p) {
			break
		}
		a[i], a[p] = a[p], a[i]
		i = p
	}
}

func (h *mergeHeap) pop() candidate {
	a := *h
	top := a[0]
	n := len(a) - 1
	a[0] = a[n]
	a = a[:n]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && a.less(l, m) {
			m = l
		}
		if r < n && a.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		a[i], a[m] = a[m], a[i]
		i = m
	}
	*h = a
	return top
}

// wordPiece is BERT's greedy longest-match-first subword model (Wu et al.
// 2016; google-research/bert tokenization.py WordpieceTokenizer): pieces
// after the first carry the "##" prefix; a word with any unmatched part is
// a single unknown token.
type wordPiece struct {
	tokens   map[string]int
	unk      string
	prefix   string
	maxChars int
}

func (m *wordPiece) vocab() map[string]int { return m.tokens }

func (m *wordPiece) encode(dst []int, word string) ([]int, error) {
	unk := func() ([]int, error) {
		id, ok := m.tokens[m.unk]
		if !ok {
			return nil, fmt.Errorf("unknown token %q is not in the vocabulary", m.unk)
		}
		return append(dst, id), nil
	}
	if len([]rune(word)) > m.maxChars {
		return unk()
	}
	var ids []int
	for start := 0; start < len(word); {
		end, found := len(word), -1
		for start < end {
			sub := word[start:end]
			if start > 0 {
				sub = m.prefix + sub
			}
			if id, ok := m.tokens[sub]; ok {
				found = id
				break
			}
			// Shorten by one character, not one byte.
			end--
			for end > start && !isRuneStart(word[end]) {
				end--
			}
		}
		if found < 0 {
			return unk()
		}
		ids = append(ids, found)
		start = end
	}
	return append(dst, ids...), nil
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// wordLevel maps each whole word to an id.
type wordLevel struct {
	tokens map[string]int
	unk    string
}

func (m *wordLevel) vocab() map[string]int { return m.tokens }

func (m *wordLevel) encode(dst []int, word string) ([]int, error) {
	if id, ok := m.tokens[word]; ok {
		return append(dst, id), nil
	}
	if id, ok := m.tokens[m.unk]; ok {
		return append(dst, id), nil
	}
	return nil, errors.New("word " + fmt.Sprintf("%q", word) + " is not in the vocabulary and there is no unknown token")
}
