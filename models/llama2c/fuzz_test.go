package llama2c

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
)

// FuzzHeader feeds arbitrary bytes to the header parser and the tensor reader: any input must
// give a header and tensors, or a one-line error, never a panic or an absurd allocation.
//
//	go test ./models/llama2c -run '^$' -fuzz FuzzHeader -fuzztime 60s -fuzzminimizetime 200x
//
// (Without -fuzzminimizetime, Go spends up to a minute minimizing each new input, during which
// it reports no executions: in this package's large instrumented binary that looked like a hang.)
func FuzzHeader(f *testing.F) {
	for version := range 3 {
		for _, tied := range []bool{true, false} {
			cfg := smallConfig(tied)
			cfg.NumLayers, cfg.VocabSize, cfg.MaxSeqLen = 1, 8, 4
			w, err := RandomWeights(cfg, 1, 0.3)
			if err != nil {
				f.Fatal(err)
			}
			path := f.TempDir() + "/seed.bin"
			if err := Write(path, cfg, w, version); err != nil {
				f.Fatal(err)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
			f.Add(data[:len(data)/2])
		}
	}
	f.Add([]byte("24ka"))
	f.Add(binary.LittleEndian.AppendUint32([]byte("24ka"), 2))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		check := func(err error) {
			if err != nil && (err.Error() == "" || strings.Contains(err.Error(), "\n")) {
				t.Fatalf("error is not one line: %q", err)
			}
		}
		readAll := func(size int64) error {
			rd, err := NewReader(bytes.NewReader(data), size)
			if err != nil {
				return err
			}
			for {
				e, err := rd.Next()
				if errors.Is(err, io.EOF) {
					return nil
				}
				if err != nil {
					return err
				}
				if int64(e.Numel()) > 4*size+1024 {
					t.Fatalf("header %+v passed the size check with a tensor %s of %d values in %d bytes", rd.Header(), e.Name, e.Numel(), size)
				}
				if err := rd.Read(make([]float32, e.Numel())); err != nil {
					return err
				}
			}
		}
		check(readAll(int64(len(data))))
		// A size that agrees with the header but not with the data (a file that shrank while
		// being read) exercises the short-read path.
		if h, err := ReadHeader(bytes.NewReader(data), -1); err == nil && h.FileSize() <= 4*int64(len(data))+1024 {
			check(readAll(h.FileSize()))
		} else {
			check(err)
		}
	})
}
