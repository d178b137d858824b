package tokenizer

// A byte-level BPE trainer: the algorithm of Hugging Face's BpeTrainer
// (tokenizers, src/models/bpe/trainer.rs) behind the GPT-2 ByteLevel
// pre-tokenizer, as ByteLevelBPETokenizer.train runs it.
//
//  1. Cut the text into words with GPT-2's split regex (gpt2Pattern, the one
//     the loader uses) and count each distinct word.
//  2. Spell every word as bytes in GPT-2's byte-to-unicode alphabet
//     (byteToRune): the vocabulary starts as the special tokens, then all 256
//     byte characters in code-point order, so any input can be encoded.
//  3. Repeatedly merge the most frequent adjacent pair of symbols (a pair's
//     count sums the counts of the words it occurs in) into a new token,
//     until the vocabulary holds the asked number of tokens or no pair is left.
//
// Ties between pairs of equal count go to the pair with the smaller
// (left id, right id), compared left id first: the order of the Rust crate's
// heap, so the same corpus gives the same merges here and there.
//
// A merge changes only the words that hold its pair, so pair counts are kept
// up to date incrementally: for each pair, the words it occurs in; after a
// merge, those words' pairs are counted out before and back in after. The
// most frequent pair comes from a max-heap whose entries may be stale (a count
// that only went down since it was pushed); a stale top is re-pushed with its
// current count, so what is popped with a current count is the true maximum.

import (
	"bytes"
	"container/heap"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// EndOfText is the special token of trained byte-level vocabularies (GPT-2's):
// id 0, the BOS and EOS of models trained on them.
const EndOfText = "<|endoftext|>"

// BPEVocab is a trained byte-level BPE vocabulary. Its own Encode and Decode
// work on bytes: they are the reference the tokenizer.json it writes is
// checked against (TestTrainedJSONEncodesAsTrainer).
type BPEVocab struct {
	// Tokens are the token strings in id order, in GPT-2's byte alphabet:
	// the special tokens, the 256 byte characters, then one per new merge.
	Tokens []string
	// Merges are the learned merges in order (their rank), as the two
	// token strings joined.
	Merges [][2]string
	// Counts[i] is how often Merges[i]'s pair occurred when it was chosen.
	Counts []int64
	// Specials is how many of Tokens (the first ones) are special.
	Specials int

	ids   map[string]int32
	ranks map[uint64]merge // pair of ids -> rank and the id it merges into
	cache map[string][]int
}

// TrainBPE learns a byte-level BPE vocabulary of vocabSize tokens (EndOfText,
// the 256 bytes, and merges) from text. Training stops early if no pair of
// symbols is left to merge. The result depends on text and vocabSize alone.
func TrainBPE(text []byte, vocabSize int) (*BPEVocab, error) {
	specials := []string{EndOfText}
	if min := len(specials) + 256; vocabSize < min {
		return nil, fmt.Errorf("BPE vocabulary of %d tokens: want at least %d (the special token and the 256 bytes)", vocabSize, min)
	}
	if vocabSize > maxTokenID {
		return nil, fmt.Errorf("BPE vocabulary of %d tokens: want at most %d", vocabSize, maxTokenID)
	}
	counts, err := countWords(text)
	if err != nil {
		return nil, err
	}
	return trainWords(counts, specials, vocabSize), nil
}

// trainWords learns merges from counted words (as bytes) until the vocabulary holds vocabSize
// tokens or no pair is left.
func trainWords(counts map[string]int64, specials []string, vocabSize int) *BPEVocab {
	v := newBPEVocab(specials)
	t := newPairTrainer(v, counts)
	for len(v.Tokens) < vocabSize {
		pair, count, ok := t.best()
		if !ok {
			break
		}
		t.merge(pair, count)
	}
	return v
}

// newBPEVocab is the vocabulary before any merge: specials, then the byte
// alphabet in code-point order (the Rust trainer sorts its alphabet so).
func newBPEVocab(specials []string) *BPEVocab {
	v := &BPEVocab{Specials: len(specials), ids: map[string]int32{}, ranks: map[uint64]merge{}, cache: map[string][]int{}}
	for _, s := range specials {
		v.add(s)
	}
	alphabet := slices.Clone(byteToRune[:])
	slices.Sort(alphabet)
	for _, r := range alphabet {
		v.add(string(r))
	}
	return v
}

// add gives s the next id, or returns the id it has: two different merges
// can spell the same string ("a"+"bc", "ab"+"c"), and then share its id, as
// in the Rust trainer.
func (v *BPEVocab) add(s string) int32 {
	if id, ok := v.ids[s]; ok {
		return id
	}
	id := int32(len(v.Tokens))
	v.Tokens = append(v.Tokens, s)
	v.ids[s] = id
	return id
}

// byteID is the id of byte b's token.
func (v *BPEVocab) byteID(b byte) int32 { return v.ids[string(byteToRune[b])] }

// countWords cuts text into words (splitWords) and counts them. The chunks
// are counted in parallel (matching the regex is most of a training's time)
// and the counts summed, so the result does not depend on the cores.
func countWords(text []byte) (map[string]int64, error) {
	parts := make([]map[string]int64, 0)
	err := eachChunk(text, func(i int, chunk []byte) (func(), error) {
		counts := map[string]int64{}
		err := splitWords(chunk, func(w []byte) {
			counts[string(w)]++ // a lookup of a present word allocates no key
		})
		return func() { parts = append(parts, counts) }, err
	})
	if err != nil {
		return nil, err
	}
	total := map[string]int64{}
	for _, p := range parts {
		for w, n := range p {
			total[w] += n
		}
	}
	return total, nil
}

// chunkSize is the length after which chunks of a long text are cut (safeCut).
const chunkSize = 64 << 10

// eachChunk runs work on the chunks of text (cut as splitWords cuts long
// runs) on all cores, then calls the functions work returned in chunk
// order, one at a time: that is where results are gathered.
func eachChunk(text []byte, work func(i int, chunk []byte) (func(), error)) error {
	var chunks [][]byte
	for len(text) > 0 {
		n := safeCut(text, chunkSize)
		chunks = append(chunks, text[:n])
		text = text[n:]
	}
	type result struct {
		gather func()
		err    error
	}
	results := make([]result, len(chunks))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(chunks)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				g, err := work(i, chunks[i])
				results[i] = result{g, err}
			}
		}()
	}
	for i := range chunks {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, r := range results {
		if r.err != nil {
			return r.err
		}
		r.gather()
	}
	return nil
}

// splitWords calls visit with the words of text, in order, as GPT-2's
// regex cuts them. Text that is not valid UTF-8 (the regex is defined on
// characters) is cut into its valid runs, and each invalid byte is a word of
// its own, so any bytes round-trip; Hugging Face's tokenizers, and HF.Encode,
// replace such bytes by U+FFFD before splitting instead.
//
// Long runs are matched in chunks of about 64 KB (matching needs the run as
// characters), cut only where no match of the regex can cross: after a line
// break that sits between two printable ASCII characters, such as the one
// between a doc comment and its func. There the break is a match of its own
// in the whole text and in the chunk alike, so the words are the same.
func splitWords(text []byte, visit func(word []byte)) error {
	re, err := gpt2Regex()
	if err != nil {
		return err
	}
	for len(text) > 0 {
		n := validPrefix(text)
		if n == 0 {
			visit(text[:1])
			text = text[1:]
			continue
		}
		run := text[:n]
		text = text[n:]
		for len(run) > 0 {
			chunk := run[:safeCut(run, chunkSize)]
			run = run[len(chunk):]
			spans, err := re.find(string(chunk))
			if err != nil {
				return err
			}
			for _, s := range spans {
				visit(chunk[s[0]:s[1]])
			}
		}
	}
	return nil
}

// gpt2Regex is the compiled split pattern of the ByteLevel pre-tokenizer.
func gpt2Regex() (regexMatcher, error) { return compileRegex(gpt2Pattern) }

// validPrefix is the length of the longest valid UTF-8 prefix of b.
func validPrefix(b []byte) int {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return len(b)
}

// safeCut is where to end the chunk that starts b: the first safe cut point
// at or after size bytes (see splitWords), or all of b if there is none.
func safeCut(b []byte, size int) int {
	printable := func(c byte) bool { return c > ' ' && c < 0x7f }
	for i := max(size, 2); i < len(b); i++ {
		if b[i-1] == '\n' && printable(b[i-2]) && printable(b[i]) {
			return i
		}
	}
	return len(b)
}

// EncodeLong encodes a long text with t in chunks cut as splitWords cuts
// them, on all cores: the regex of a pre-tokenizer works on the text as
// characters, so one call on 45 MB would hold it as runes and offsets (half
// a gigabyte), and encoding is mostly matching. For byte-level tokenizers
// with GPT-2's regex the ids are those of encoding the whole text at once
// (TestEncodeLongMatchesEncode); other tokenizers may differ at the cuts.
// t must be safe for concurrent use (HF, Byte are).
func EncodeLong(t Tokenizer, text []byte) ([]int, error) {
	var ids []int
	err := eachChunk(text, func(i int, chunk []byte) (func(), error) {
		part, err := t.Encode(string(chunk))
		return func() { ids = append(ids, part...) }, err
	})
	return ids, err
}

// pairTrainer holds the words and pair counts while merges are learned.
type pairTrainer struct {
	v      *BPEVocab
	words  []trainWord
	counts map[uint64]int64   // pair -> occurrences, weighted by word counts
	where  map[uint64][]int32 // pair -> words that hold (or once held) it
	heap   pairHeap
	seen   []int // seen[w] == step: word w was already updated at this step
	step   int
}

type trainWord struct {
	syms  []int32
	count int64
}

func newPairTrainer(v *BPEVocab, counts map[string]int64) *pairTrainer {
	t := &pairTrainer{v: v, counts: map[uint64]int64{}, where: map[uint64][]int32{}}
	// Sorted, so that the run is the same every time (the result would be
	// anyway: only counts and ids decide a merge).
	words := make([]string, 0, len(counts))
	for w := range counts {
		words = append(words, w)
	}
	slices.Sort(words)
	for i, w := range words {
		syms := make([]int32, len(w))
		for j := 0; j < len(w); j++ {
			syms[j] = v.byteID(w[j])
		}
		n := counts[w]
		t.words = append(t.words, trainWord{syms: syms, count: n})
		for j := 0; j+1 < len(syms); j++ {
			p := pairKey(syms[j], syms[j+1])
			t.counts[p] += n
			if ws := t.where[p]; len(ws) == 0 || ws[len(ws)-1] != int32(i) {
				t.where[p] = append(ws, int32(i))
			}
		}
	}
	t.seen = make([]int, len(t.words))
	for p, n := range t.counts {
		t.heap = append(t.heap, pairCount{pair: p, count: n})
	}
	heap.Init(&t.heap)
	return t
}

// best pops the most frequent pair; ok is false when none is left.
func (t *pairTrainer) best() (pair uint64, count int64, ok bool) {
	for t.heap.Len() > 0 {
		top := heap.Pop(&t.heap).(pairCount)
		now := t.counts[top.pair]
		if now == top.count && now > 0 {
			return top.pair, now, true
		}
		if now > 0 { // stale: its count went down since it was pushed
			heap.Push(&t.heap, pairCount{pair: top.pair, count: now})
		}
	}
	return 0, 0, false
}

// merge makes pair a token and rewrites every word that holds it.
func (t *pairTrainer) merge(pair uint64, count int64) {
	a, b := int32(pair>>32), int32(uint32(pair))
	v := t.v
	id := v.add(v.Tokens[a] + v.Tokens[b])
	if _, ok := v.ranks[pair]; !ok {
		v.ranks[pair] = merge{rank: int32(len(v.Merges)), id: id}
	}
	v.Merges = append(v.Merges, [2]string{v.Tokens[a], v.Tokens[b]})
	v.Counts = append(v.Counts, count)

	t.step++
	grown := map[uint64]bool{} // pairs with the new token: their counts went up
	for _, w := range t.where[pair] {
		if t.seen[w] == t.step {
			continue
		}
		t.seen[w] = t.step
		word := &t.words[w]
		if !holds(word.syms, a, b) {
			continue // it held the pair once, before an earlier merge
		}
		t.countPairs(word, -1)
		word.syms = mergePair(word.syms, a, b, id)
		t.countPairs(word, +1)
		for j := 0; j+1 < len(word.syms); j++ {
			if word.syms[j] == id || word.syms[j+1] == id {
				p := pairKey(word.syms[j], word.syms[j+1])
				grown[p] = true
				t.where[p] = append(t.where[p], w)
			}
		}
	}
	delete(t.where, pair)
	delete(t.counts, pair) // every occurrence was merged
	// In key order, so the heap (and a tie) never depends on map order.
	keys := make([]uint64, 0, len(grown))
	for p := range grown {
		keys = append(keys, p)
	}
	slices.Sort(keys)
	for _, p := range keys {
		if n := t.counts[p]; n > 0 {
			heap.Push(&t.heap, pairCount{pair: p, count: n})
		}
	}
}

// countPairs adds sign times the word's count to each of its pairs.
func (t *pairTrainer) countPairs(w *trainWord, sign int64) {
	for j := 0; j+1 < len(w.syms); j++ {
		p := pairKey(w.syms[j], w.syms[j+1])
		if t.counts[p] += sign * w.count; t.counts[p] == 0 {
			delete(t.counts, p)
		}
	}
}

func holds(syms []int32, a, b int32) bool {
	for j := 0; j+1 < len(syms); j++ {
		if syms[j] == a && syms[j+1] == b {
			return true
		}
	}
	return false
}

// mergePair replaces each occurrence of a b, left to right, by id: "a a a"
// with the pair (a, a) becomes "aa a", as the Rust trainer's Word::merge does.
func mergePair(syms []int32, a, b, id int32) []int32 {
	out := syms[:0]
	for j := 0; j < len(syms); j++ {
		if j+1 < len(syms) && syms[j] == a && syms[j+1] == b {
			out = append(out, id)
			j++
			continue
		}
		out = append(out, syms[j])
	}
	return out
}

// pairCount is a heap entry: a pair and its count when pushed.
type pairCount struct {
	pair  uint64
	count int64
}

// pairHeap is a max-heap by count, then by smaller pair (left id, then right id).
type pairHeap []pairCount

func (h pairHeap) Len() int { return len(h) }
func (h pairHeap) Less(i, j int) bool {
	if h[i].count != h[j].count {
		return h[i].count > h[j].count
	}
	return h[i].pair < h[j].pair
}
func (h pairHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *pairHeap) Push(x any)   { *h = append(*h, x.(pairCount)) }
func (h *pairHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// Encode turns bytes into ids: each word of splitWords starts as its bytes
// and takes the merge of lowest rank among its adjacent pairs, the leftmost
// of equal ones, until none applies. It is written apart from the loader's
// BPE (models.go) so that each checks the other.
func (v *BPEVocab) Encode(text []byte) ([]int, error) {
	var ids []int
	err := splitWords(text, func(w []byte) {
		if cached, ok := v.cache[string(w)]; ok {
			ids = append(ids, cached...)
			return
		}
		syms := make([]int32, len(w))
		for j := range w {
			syms[j] = v.byteID(w[j])
		}
		for {
			best, at := merge{rank: -1}, -1
			for j := 0; j+1 < len(syms); j++ {
				if m, ok := v.ranks[pairKey(syms[j], syms[j+1])]; ok && (at < 0 || m.rank < best.rank) {
					best, at = m, j
				}
			}
			if at < 0 {
				break
			}
			syms = append(syms[:at+1], syms[at+2:]...)
			syms[at] = best.id
		}
		word := make([]int, len(syms))
		for j, s := range syms {
			word[j] = int(s)
		}
		if len(v.cache) < 1<<16 {
			v.cache[string(w)] = word
		}
		ids = append(ids, word...)
	})
	return ids, err
}

// Decode turns ids back into the bytes they spell; special tokens and
// unknown ids spell nothing.
func (v *BPEVocab) Decode(ids []int) []byte {
	var out []byte
	for _, id := range ids {
		if id >= v.Specials && id < len(v.Tokens) {
			out = byteLevelBytes(out, v.Tokens[id])
		}
	}
	return out
}

// JSON is the vocabulary as a Hugging Face tokenizer.json: a BPE model with
// its vocab and merges, the ByteLevel pre-tokenizer (GPT-2's regex, no
// prefix space) and decoder, and the special tokens as added tokens. HF
// (LoadHF) and Hugging Face's own tokenizers load it.
func (v *BPEVocab) JSON() ([]byte, error) {
	type added struct {
		ID         int    `json:"id"`
		Content    string `json:"content"`
		SingleWord bool   `json:"single_word"`
		Lstrip     bool   `json:"lstrip"`
		Rstrip     bool   `json:"rstrip"`
		Normalized bool   `json:"normalized"`
		Special    bool   `json:"special"`
	}
	var addedTokens []added
	for id := range v.Specials {
		addedTokens = append(addedTokens, added{ID: id, Content: v.Tokens[id], Special: true})
	}
	// The vocab in id order (a Go map would be written sorted by token),
	// so the file reads as the vocabulary grew.
	var vocab bytes.Buffer
	vocab.WriteString("{")
	for id, tok := range v.Tokens {
		k, err := json.Marshal(tok)
		if err != nil {
			return nil, err
		}
		if id > 0 {
			vocab.WriteString(",")
		}
		fmt.Fprintf(&vocab, "\n      %s: %d", k, id)
	}
	vocab.WriteString("\n    }")
	merges := make([]string, len(v.Merges))
	for i, m := range v.Merges {
		// Byte-level tokens never hold a space (it is spelled "Ġ"), so the
		// older "left right" form is unambiguous and every reader takes it.
		if strings.Contains(m[0], " ") || strings.Contains(m[1], " ") {
			return nil, errors.New("a merge holds a space")
		}
		merges[i] = m[0] + " " + m[1]
	}
	mergesJSON, err := json.MarshalIndent(merges, "    ", "  ")
	if err != nil {
		return nil, err
	}
	addedJSON, err := json.MarshalIndent(addedTokens, "  ", "  ")
	if err != nil {
		return nil, err
	}
	byteLevel := `{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true}`
	var out bytes.Buffer
	fmt.Fprintf(&out, `{
  "version": "1.0",
  "truncation": null,
  "padding": null,
  "added_tokens": %s,
  "normalizer": null,
  "pre_tokenizer": %s,
  "post_processor": %s,
  "decoder": %s,
  "model": {
    "type": "BPE",
    "dropout": null,
    "unk_token": null,
    "continuing_subword_prefix": null,
    "end_of_word_suffix": null,
    "fuse_unk": false,
    "byte_fallback": false,
    "ignore_merges": false,
    "vocab": %s,
    "merges": %s
  }
}
`, addedJSON, byteLevel, byteLevel, byteLevel, vocab.String(), mergesJSON)
	return out.Bytes(), nil
}
