package safetensors

// FuzzSafetensorsHeader feeds arbitrary bytes to the header parser:
//
//	go test ./models/safetensors -run '^$' -fuzz FuzzSafetensorsHeader -fuzztime 60s
//
// It must never panic; a rejected file gives a one-line error, and an accepted
// one must describe tensors that lie inside the data section without
// overlapping, each readable as float32 when its dtype is a float type.

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

func FuzzSafetensorsHeader(f *testing.F) {
	path := filepath.Join(f.TempDir(), "seed.safetensors")
	err := Write(path, []Tensor{
		{Name: "a", Shape: []int{2, 2}, Data: []float32{1, 2, 3, 4}},
		{Name: "b", Shape: []int{3}, Data: []float32{5, 6, 7}, DType: "F16"},
		{Name: "c", Shape: []int{}, Data: []float32{8}, DType: "BF16"},
	}, map[string]string{"format": "pt"})
	if err != nil {
		f.Fatal(err)
	}
	valid, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(valid)
	f.Add(valid[:len(valid)-3])
	f.Add(valid[:8])
	f.Add([]byte{})
	raw := func(header string, data []byte) []byte {
		b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
		return append(append(b, header...), data...)
	}
	f.Add(raw(`{"x":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}}`, make([]byte, 8)))
	f.Add(raw(`{"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"y":{"dtype":"F32","shape":[1],"data_offsets":[2,6]}}`, make([]byte, 8)))
	// Tensors all at offset 0, and one inside another, as the GGUF reader refuses them too.
	f.Add(raw(`{"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"y":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, make([]byte, 4)))
	f.Add(raw(`{"x":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},"y":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, make([]byte, 16)))
	f.Add(raw(`{"x":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,0]}}`, nil))
	f.Add(raw(`{"__metadata__":{"k":1}}`, nil))
	f.Add(raw(`[]`, nil))

	f.Fuzz(func(t *testing.T, data []byte) {
		sf, err := OpenReader("fuzz.safetensors", bytes.NewReader(data), int64(len(data)))
		if err != nil {
			if msg := err.Error(); strings.Contains(msg, "\n") || msg == "" {
				t.Fatalf("error is not one line: %q", msg)
			}
			return
		}
		defer sf.Close()
		infos := sf.Infos()
		sort.Slice(infos, func(i, j int) bool { return infos[i].Begin < infos[j].Begin })
		dataSize := int64(len(data)) - sf.dataStart
		for i, info := range infos {
			if info.Begin < 0 || info.End < info.Begin || info.End > dataSize {
				t.Fatalf("tensor %q bytes [%d, %d) outside the %d-byte data section", info.Name, info.Begin, info.End, dataSize)
			}
			if i > 0 && info.Begin < infos[i-1].End {
				t.Fatalf("tensors %q and %q overlap", infos[i-1].Name, info.Name)
			}
			n := int64(1)
			for _, d := range info.Shape {
				n *= int64(d)
			}
			if n*dtypeSizes[info.DType] != info.End-info.Begin {
				t.Fatalf("tensor %q: shape %v of %s disagrees with %d bytes", info.Name, info.Shape, info.DType, info.End-info.Begin)
			}
			if got, ok := sf.Info(info.Name); !ok || got.Begin != info.Begin {
				t.Fatalf("Info(%q) = %+v, %v", info.Name, got, ok)
			}
			if isFloat(info.DType) {
				vals, err := sf.ReadFloat32(info.Name)
				if err != nil || int64(len(vals)) != n {
					t.Fatalf("ReadFloat32(%q): %d values, %v; want %d", info.Name, len(vals), err, n)
				}
			} else if _, err := sf.ReadFloat32(info.Name); err == nil {
				t.Fatalf("ReadFloat32(%q) of dtype %s succeeded", info.Name, info.DType)
			}
		}
	})
}
