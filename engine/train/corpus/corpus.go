// Package corpus provides a byte-level text corpus that every Go user
// already has on disk: the Go standard library's own source code.
//
// Using GOROOT/src means benchmarks need no downloads, and the split into
// training and evaluation text is a pure function of file paths, so two
// machines with the same Go version see exactly the same data.
package corpus

import (
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// fileSeparator follows every file in a split. A blank line keeps the end
// of one file from running straight into the "package" clause of the next.
const fileSeparator = "\n\n"

// GoRoot returns runtime.GOROOT() if it has a src directory, else the
// output of `go env GOROOT`; error if neither has src.
func GoRoot() (string, error) {
	// runtime.GOROOT is the path recorded at build time; it is wrong when
	// the binary was built elsewhere or with -trimpath, hence the fallback.
	if root := runtime.GOROOT(); root != "" && hasSrc(root) {
		return root, nil
	}
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return "", fmt.Errorf("running go env GOROOT: %w", err)
	}
	root := strings.TrimSpace(string(out))
	if !hasSrc(root) {
		return "", fmt.Errorf("no Go source found: %s has no src directory (check `go env GOROOT`)", filepath.Join(root, "src"))
	}
	return root, nil
}

func hasSrc(root string) bool {
	info, err := os.Stat(filepath.Join(root, "src"))
	return err == nil && info.IsDir()
}

// Corpus holds the training and evaluation text as raw bytes.
type Corpus struct {
	// Train and Eval are the files of each split concatenated in path
	// order, each file followed by "\n\n".
	Train, Eval []byte
	// TrainFiles and EvalFiles count the files (possibly the last one
	// truncated) that went into each split.
	TrainFiles, EvalFiles int
}

// IsEval reports whether the file at rel (a path relative to GOROOT/src,
// with '/' separators) belongs to the evaluation split.
//
// Hashing the path rather than, say, taking every tenth file keeps a
// file's split stable when files are added to or removed from GOROOT in a
// new Go release.
func IsEval(rel string) bool {
	h := fnv.New32a()
	h.Write([]byte(rel)) // Writes to a hash never fail.
	return h.Sum32()%10 == 0
}

// SourceFiles returns the paths, relative to root/src and with '/'
// separators, of the files Load would read, in lexical order. It reads no
// file contents, so it is cheap enough to run over the whole tree.
func SourceFiles(root string) ([]string, error) {
	var files []string
	err := walkSource(root, func(rel, _ string) error {
		files = append(files, rel)
		return nil
	})
	return files, err
}

// walkSource calls visit for every corpus file under root/src in lexical
// order. visit may return fs.SkipAll to stop early.
func walkSource(root string, visit func(rel, path string) error) error {
	src := filepath.Join(root, "src")
	if !hasSrc(root) {
		return fmt.Errorf("no Go source at %s (check `go env GOROOT`)", src)
	}
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			// testdata holds deliberately odd or broken code and vendor
			// holds third-party code; neither is the standard library.
			if name := d.Name(); path != src && (name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		name := d.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		return visit(filepath.ToSlash(rel), path)
	})
	if err != nil {
		return fmt.Errorf("walking %s: %w", src, err)
	}
	return nil
}

// Load reads every *.go file under root/src (skipping directories named
// testdata and vendor, and files ending in _test.go) in lexical path order
// and splits them by file with IsEval.
//
// maxBytes > 0 caps the size of each split: once a split is full it takes
// no more files, and the file that overflows it is truncated. Loading
// stops as soon as both splits are full, so small caps load quickly.
func Load(root string, maxBytes int) (*Corpus, error) {
	return load(root, maxBytes, false)
}

// LoadWritten is Load without the files marked as generated (a "// Code generated ... DO NOT
// EDIT." line, go.dev/s/generatedcode): tables and syscall stubs are two fifths of the tree's
// bytes, easy to predict and unlike the code people write, which the validation text holds
// (LoadHeldOut skips them too).
func LoadWritten(root string, maxBytes int) (*Corpus, error) {
	return load(root, maxBytes, true)
}

func load(root string, maxBytes int, skipGenerated bool) (*Corpus, error) {
	c := &Corpus{}
	full := func(b []byte) bool { return maxBytes > 0 && len(b) >= maxBytes }

	err := walkSource(root, func(rel, path string) error {
		split, count := &c.Train, &c.TrainFiles
		if IsEval(rel) {
			split, count = &c.Eval, &c.EvalFiles
		}
		if full(*split) {
			if full(c.Train) && full(c.Eval) {
				return fs.SkipAll
			}
			return nil // Skip reading a file nobody wants.
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("reading %s: %w", path, err)
		}
		if skipGenerated && generated(data) {
			return nil
		}
		*split = append(*split, data...)
		*split = append(*split, fileSeparator...)
		if maxBytes > 0 && len(*split) > maxBytes {
			*split = (*split)[:maxBytes]
		}
		*count++
		return nil
	})
	if err != nil {
		return nil, err
	}
	if c.TrainFiles+c.EvalFiles == 0 {
		return nil, errors.New("no .go files found under " + filepath.Join(root, "src"))
	}
	return c, nil
}

// Sampler draws training windows reproducibly: the same data and seed
// always give the same sequence of batches.
type Sampler struct {
	data []byte
	rng  *rand.Rand
}

// NewSampler returns a Sampler over data seeded with seed.
func NewSampler(data []byte, seed int64) *Sampler {
	return &Sampler{data: data, rng: newRNG(seed)}
}

// newRNG is a sampler's generator. PCG's output is specified exactly, so
// batches stay the same across Go releases, unlike the unspecified default
// source.
func newRNG(seed int64) *rand.Rand { return rand.New(rand.NewPCG(uint64(seed), 0)) }

// Batch returns batch windows of seqLen+1 consecutive bytes each, as int32
// token ids 0..255, starting at uniformly random offsets. inputs holds the
// first seqLen bytes of each window and targets the last seqLen, so
// targets[i][j] == inputs[i][j+1]. Both have shape [batch][seqLen].
//
// Batch panics if data is shorter than seqLen+1 bytes: that is a setup
// mistake, not something a training loop can recover from.
func (s *Sampler) Batch(batch, seqLen int) (inputs, targets [][]int32) {
	return sample(s.data, s.rng, batch, seqLen)
}

// TokenSampler is Sampler over token ids (a text encoded by a tokenizer):
// the same draws, windows of seqLen+1 tokens.
type TokenSampler struct {
	ids []int32
	rng *rand.Rand
}

// NewTokenSampler returns a TokenSampler over ids seeded with seed.
func NewTokenSampler(ids []int32, seed int64) *TokenSampler {
	return &TokenSampler{ids: ids, rng: newRNG(seed)}
}

// Batch is Sampler.Batch over the ids.
func (s *TokenSampler) Batch(batch, seqLen int) (inputs, targets [][]int32) {
	return sample(s.ids, s.rng, batch, seqLen)
}

func sample[T byte | int32](data []T, rng *rand.Rand, batch, seqLen int) (inputs, targets [][]int32) {
	if seqLen <= 0 || len(data) < seqLen+1 {
		panic(fmt.Sprintf("corpus: cannot draw windows of %d+1 tokens from %d", seqLen, len(data)))
	}
	inputs = make([][]int32, batch)
	targets = make([][]int32, batch)
	for i := range batch {
		// The largest valid start leaves exactly seqLen+1 tokens.
		start := rng.IntN(len(data) - seqLen)
		inputs[i], targets[i] = window(data[start : start+seqLen+1])
	}
	return inputs, targets
}

// Windows cuts data into consecutive windows of seqLen+1 bytes for
// evaluation. Window k starts at k*seqLen, so consecutive windows share one
// byte and every byte after the first is predicted exactly once.
//
// With max > 0 and more windows than max, it returns max windows spread evenly from the
// text's start to its end instead of the first max: a held-out text is documents one after
// another, and its first windows would be its first two or three files, too few to judge a
// model by (a licence header and one package's style).
func Windows(data []byte, seqLen, max int) (inputs, targets [][]int32) {
	return windows(data, seqLen, max)
}

// TokenWindows is Windows over token ids: windows of seqLen+1 tokens.
func TokenWindows(ids []int32, seqLen, max int) (inputs, targets [][]int32) {
	return windows(ids, seqLen, max)
}

func windows[T byte | int32](data []T, seqLen, max int) (inputs, targets [][]int32) {
	if seqLen <= 0 {
		panic(fmt.Sprintf("corpus: window length %d must be positive", seqLen))
	}
	n := 0
	if len(data) > seqLen {
		n = (len(data) - 1) / seqLen
	}
	starts := make([]int, n)
	for k := range starts {
		starts[k] = k * seqLen
	}
	if max > 0 && n > max {
		starts = spread(len(data)-seqLen-1, max)
	}
	inputs = make([][]int32, len(starts))
	targets = make([][]int32, len(starts))
	for k, start := range starts {
		inputs[k], targets[k] = window(data[start : start+seqLen+1])
	}
	return inputs, targets
}

// spread returns n starts from 0 to last, evenly spaced (n >= 2; a single one is 0).
func spread(last, n int) []int {
	starts := make([]int, n)
	for k := 1; k < n; k++ {
		starts[k] = k * last / (n - 1)
	}
	return starts
}

// window turns seqLen+1 tokens into an input row and the same row shifted
// left by one, which is what next-token prediction trains against.
func window[T byte | int32](w []T) (input, target []int32) {
	// Separate arrays, so a caller editing one row cannot corrupt the other.
	input = make([]int32, len(w)-1)
	target = make([]int32, len(w)-1)
	for i := range input {
		input[i] = int32(w[i])
		target[i] = int32(w[i+1])
	}
	return input, target
}
