package gguf_test

// Files that parse but describe no sane model: a norm epsilon that is not a small positive
// number, tensor data that overlap, a named pipe in place of the file. Each is refused with a
// one-line error before any weight is used.

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/posformer/posformer/engine"
	"github.com/posformer/posformer/models/gguf"
)

// exported writes configs()[name] with random weights as GGUF and returns its metadata and
// tensors.
func exported(t *testing.T, name string) ([]gguf.KV, []gguf.Tensor) {
	t.Helper()
	e := randomModel(t, configs()[name], 5)
	path := filepath.Join(t.TempDir(), name+".gguf")
	if err := gguf.Export(path, e.Model, e.Ctx, gguf.ExportOptions{}); err != nil {
		t.Fatal(err)
	}
	return readAll(t, path)
}

// loadBytes writes data as a .gguf file and loads it through the engine, as cmd/infer does.
func loadBytes(t *testing.T, data []byte) (string, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := engine.Load(path, "cpu", 0)
	return path, err
}

func encodeFile(t *testing.T, kvs []gguf.KV, ts []gguf.Tensor) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := gguf.Encode(&buf, kvs, ts); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func wantRefused(t *testing.T, what, path string, err error, wants ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: loaded without error", what)
		return
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "loading "+path+": ") || strings.Contains(msg, "\n") {
		t.Errorf("%s: error %q; want one line starting \"loading %s: \"", what, msg, path)
	}
	for _, w := range wants {
		if !strings.Contains(msg, w) {
			t.Errorf("%s: error %q does not mention %q", what, msg, w)
		}
	}
}

func TestNormEpsRefused(t *testing.T) {
	for name, key := range map[string]string{"llama-interleaved": "llama.attention.layer_norm_rms_epsilon", "gpt2": "gpt2.attention.layer_norm_epsilon"} {
		kvs, ts := exported(t, name)
		for _, c := range []struct {
			eps  float32
			want string
		}{
			{-1, key + " is -1: a norm epsilon must be positive, finite and at most 1"},
			{0, key + " is 0: a norm epsilon must be positive"},
			{2, key + " is 2: a norm epsilon must be positive, finite and at most 1"},
			{float32(math.NaN()), key + " is NaN (float32); want a finite number"},
			{float32(math.Inf(1)), key + " is +Inf (float32); want a finite number"},
		} {
			edited := append([]gguf.KV(nil), kvs...)
			found := false
			for i := range edited {
				if edited[i].Key == key {
					edited[i].Value, found = gguf.Float32(c.eps), true
				}
			}
			if !found {
				t.Fatalf("%s: the exporter wrote no %s", name, key)
			}
			path, err := loadBytes(t, encodeFile(t, edited, ts))
			wantRefused(t, name+" eps "+c.want, path, err, c.want)
		}
		// The file as written loads, with the epsilon it holds.
		path, err := loadBytes(t, encodeFile(t, kvs, ts))
		if err != nil {
			t.Fatalf("%s as written: %v", path, err)
		}
	}
}

// setOffsets rewrites the data offset of every tensor named in offsets in an encoded file.
func setOffsets(t *testing.T, data []byte, ts []gguf.Tensor, offsets map[string]uint64) []byte {
	t.Helper()
	data = bytes.Clone(data)
	for _, tensor := range ts {
		off, ok := offsets[tensor.Name]
		if !ok {
			continue
		}
		// A tensor info is the name's length and bytes, n_dims, the dims, the type, the offset.
		name := binary.LittleEndian.AppendUint64(nil, uint64(len(tensor.Name)))
		name = append(name, tensor.Name...)
		i := bytes.Index(data, name)
		if i < 0 {
			t.Fatalf("tensor info %s not found", tensor.Name)
		}
		at := i + len(name) + 4 + 8*len(tensor.Shape) + 4
		binary.LittleEndian.PutUint64(data[at:], off)
	}
	return data
}

func TestOverlappingModelRefused(t *testing.T) {
	kvs, ts := exported(t, "llama-interleaved")
	good := encodeFile(t, kvs, ts)
	f, err := gguf.Read(bytes.NewReader(good), int64(len(good)))
	if err != nil {
		t.Fatal(err)
	}
	infos := f.Tensors
	a, b, c := infos[0], infos[1], infos[2]
	if a.Offset != 0 || a.Bytes <= 64 || b.Bytes > a.Bytes-32 {
		t.Fatalf("the cases below want a first tensor at 0 that holds the second: %+v, %+v", a, b)
	}
	allAtZero := map[string]uint64{}
	for _, info := range infos {
		allAtZero[info.Name] = 0
	}
	for _, bad := range []struct {
		what    string
		offsets map[string]uint64
		wants   []string
	}{
		{"all at offset 0", allAtZero, []string{`tensor "` + b.Name + `" starts at data offset 0 but tensor "` + a.Name + `" before it ends at`, "overlapping it"}},
		{"one inside another", map[string]uint64{b.Name: a.Offset + 32}, []string{`tensor "` + b.Name + `" starts at data offset 32`, `tensor "` + a.Name + `" before it`, "overlapping it"}},
		{"out of order", map[string]uint64{b.Name: c.Offset, c.Name: b.Offset}, []string{`tensor "` + b.Name + `"`, `tensor "` + a.Name + `" before it`, "leaving a gap"}},
	} {
		path, err := loadBytes(t, setOffsets(t, good, ts, bad.offsets))
		wantRefused(t, bad.what, path, err, append(bad.wants, "GGUF tensor data must be contiguous and disjoint, in file order, as llama.cpp requires")...)
	}
	// Rewriting every offset to its own value leaves a file that loads: the refusals above are
	// the offsets', not the rewriting's.
	same := map[string]uint64{}
	for _, info := range infos {
		same[info.Name] = info.Offset
	}
	if path, err := loadBytes(t, setOffsets(t, good, ts, same)); err != nil {
		t.Errorf("%s, offsets unchanged: %v", path, err)
	}
}

// A named pipe called m.gguf is refused at once: opening it would block until a writer came.
func TestFIFORefused(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("named pipes are made with mkfifo(2) here")
	}
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := engine.Load(path, "cpu", 0)
		done <- err
	}()
	select {
	case err := <-done:
		wantRefused(t, "fifo", path, err, "is a named pipe (FIFO), not a regular file")
	case <-time.After(10 * time.Second):
		t.Fatal("loading a named pipe blocked")
	}
}
