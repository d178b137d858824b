package gguf

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/posformer/posformer/layers/quant"
)

// sampleFile is a small file with every value type and every tensor type.
func sampleFile(t testing.TB) ([]KV, []Tensor) {
	t.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	kvs := []KV{
		{KeyArchitecture, String("llama")},
		{"test.u8", Value{Type: TypeUint8, V: uint8(200)}},
		{"test.i8", Value{Type: TypeInt8, V: int8(-7)}},
		{"test.u16", Value{Type: TypeUint16, V: uint16(65000)}},
		{"test.i16", Value{Type: TypeInt16, V: int16(-300)}},
		{"test.u32", Uint32(1 << 31)},
		{"test.i32", Int32(-1 << 30)},
		{"test.f32", Float32(1e-5)},
		{"test.bool", Bool(true)},
		{"test.string", String("héllo ▁ world")},
		{"test.u64", Uint64(1 << 50)},
		{"test.i64", Value{Type: TypeInt64, V: int64(-1 << 50)}},
		{"test.f64", Value{Type: TypeFloat64, V: math.Pi}},
		{"test.strings", Strings([]string{"a", "", "▁b"})},
		{"test.f32s", Float32s([]float32{1.5, -2, 0})},
		{"test.i32s", Int32s([]int32{1, -2, 3})},
		{"test.bools", Array(TypeBool, []bool{true, false})},
		{"test.u8s", Array(TypeUint8, []uint8{1, 2, 3})},
		{"test.nested", Values(TypeArray, []Value{Int32s([]int32{4}), Strings([]string{"x", "y"})})},
	}
	var ts []Tensor
	for i, typ := range []quant.Type{quant.F32, quant.F16, quant.BF16, quant.Q8_0, quant.Q4_0} {
		shape := []int{3, 64}
		if i == 0 {
			shape = []int{5} // a 1-D tensor, as norms are
		}
		n := 1
		for _, d := range shape {
			n *= d
		}
		vals := make([]float32, n)
		for j := range vals {
			vals[j] = float32(r.NormFloat64())
		}
		data, err := quant.Quantize(typ, vals)
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, Tensor{Name: "t." + typ.String(), Shape: shape, Type: typ, Data: data})
	}
	return kvs, ts
}

func encode(t testing.TB, kvs []KV, ts []Tensor) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := Encode(&buf, kvs, ts); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestRoundTrip(t *testing.T) {
	kvs, ts := sampleFile(t)
	for _, align := range []uint32{0, 8, 64} {
		meta := kvs
		if align != 0 {
			meta = append([]KV{{KeyAlignment, Uint32(align)}}, kvs...)
		}
		data := encode(t, meta, ts)
		f, err := Read(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatalf("alignment %d: %v", align, err)
		}
		if !reflect.DeepEqual(f.KV, meta) {
			t.Errorf("alignment %d: metadata read back differs:\n got %v\nwant %v", align, f.KV, meta)
		}
		want := int64(align)
		if align == 0 {
			want = DefaultAlignment
		}
		if f.Alignment != want {
			t.Errorf("alignment %d: read %d (want %d)", align, f.Alignment, want)
		}
		if f.DataOffset%f.Alignment != 0 {
			t.Errorf("data starts at %d, not aligned to %d", f.DataOffset, f.Alignment)
		}
		for _, w := range ts {
			info, ok := f.Tensor(w.Name)
			if !ok {
				t.Fatalf("tensor %s missing", w.Name)
			}
			if !reflect.DeepEqual(info.Shape(), w.Shape) || info.Type != w.Type || info.Offset%uint64(f.Alignment) != 0 {
				t.Errorf("%s: read %v %v at %d, wrote %v %v", w.Name, info.Shape(), info.Type, info.Offset, w.Shape, w.Type)
			}
			if got, err := f.ReadTensor(info); err != nil || !bytes.Equal(got, w.Data) {
				t.Errorf("%s: bytes differ after the round trip (%v)", w.Name, err)
			}
		}
	}
	// Dims are stored innermost first: a [3, 64] matrix is (64, 3) in the file.
	data := encode(t, nil, []Tensor{{Name: "m", Shape: []int{3, 32}, Type: quant.F32, Data: make([]byte, 3*32*4)}})
	f, err := Read(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(f.Tensors[0].Dims, []uint64{32, 3}) {
		t.Errorf("dims %v, want innermost first [32 3]", f.Tensors[0].Dims)
	}
}

// TestQuantizedViaGGUF stores random rows as Q8_0 and Q4_0 through a file and checks the
// values read back against each format's error bound (half a quantization step per value).
func TestQuantizedViaGGUF(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	vals := make([]float32, 8*64)
	for i := range vals {
		vals[i] = float32(r.NormFloat64())
	}
	for _, typ := range []quant.Type{quant.Q8_0, quant.Q4_0} {
		data, err := quant.Quantize(typ, vals)
		if err != nil {
			t.Fatal(err)
		}
		file := encode(t, nil, []Tensor{{Name: "w", Shape: []int{8, 64}, Type: typ, Data: data}})
		f, err := Read(bytes.NewReader(file), int64(len(file)))
		if err != nil {
			t.Fatal(err)
		}
		got, err := f.ReadFloat32(f.Tensors[0])
		if err != nil {
			t.Fatal(err)
		}
		levels := map[quant.Type]float64{quant.Q8_0: 127, quant.Q4_0: 8}[typ]
		for b := 0; b < len(vals)/32; b++ {
			amax := 0.0
			for _, v := range vals[32*b : 32*b+32] {
				amax = max(amax, math.Abs(float64(v)))
			}
			// One step is amax/levels (Q4_0's scale maps the extreme value to -8); allow the
			// half-float rounding of the scale on top of half a step.
			bound := amax/levels*0.5 + amax*1e-3
			if typ == quant.Q4_0 {
				bound = amax / levels * 1.01 // the value on the far side of 0 rounds one step coarser
			}
			for j := 32 * b; j < 32*b+32; j++ {
				if d := math.Abs(float64(got[j] - vals[j])); d > bound {
					t.Fatalf("%v: value %d is %v, was %v (error %g > %g)", typ, j, got[j], vals[j], d, bound)
				}
			}
		}
		// And the bytes are the quantizer's, unchanged by the file.
		raw, _ := f.ReadTensor(f.Tensors[0])
		if !bytes.Equal(raw, data) {
			t.Errorf("%v: bytes changed through the file", typ)
		}
	}
}

// rawFile builds a file byte by byte, so that a test can write what Encode refuses to.
type rawFile struct{ bytes.Buffer }

func (b *rawFile) u32(v uint32) *rawFile { binary.Write(b, binary.LittleEndian, v); return b }
func (b *rawFile) u64(v uint64) *rawFile { binary.Write(b, binary.LittleEndian, v); return b }
func (b *rawFile) str(s string) *rawFile { b.u64(uint64(len(s))); b.WriteString(s); return b }
func (b *rawFile) header(version uint32, tensors, kvs uint64) *rawFile {
	b.WriteString(Magic)
	return b.u32(version).u64(tensors).u64(kvs)
}
func (b *rawFile) tensor(name string, typ uint32, offset uint64, dims ...uint64) *rawFile {
	b.str(name).u32(uint32(len(dims)))
	for _, d := range dims {
		b.u64(d)
	}
	return b.u32(typ).u64(offset)
}
func (b *rawFile) pad(n int) *rawFile { b.Write(make([]byte, n)); return b }

func TestHostileInputs(t *testing.T) {
	good := encode(t, []KV{{KeyArchitecture, String("llama")}}, []Tensor{{Name: "w", Shape: []int{4, 32}, Type: quant.F32, Data: make([]byte, 4*32*4)}})
	withVersion := func(v uint32) []byte {
		b := bytes.Clone(good)
		binary.LittleEndian.PutUint32(b[4:], v)
		return b
	}
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "too short for a GGUF header"},
		{"magic", []byte("GGML\x03\x00\x00\x00"), `not a GGUF file: it starts with "GGML"`},
		{"unknown version", withVersion(7), "unsupported GGUF version 7"},
		{"version 1", withVersion(1), "unsupported GGUF version 1"},
		{"big-endian", withVersion(0x03000000), "big-endian"},
		{"truncated header", good[:12], "tensor_count needs 8 bytes"},
		{"truncated tensor", good[:len(good)-1], `tensor "w" [4 32] (f32, 512 bytes at data offset 0) ends past the end of the file`},
		{"truncated metadata", good[:66], `metadata "general.architecture": string length 5 exceeds the 2 bytes left`},
		{"tensor past end", new(rawFile).header(3, 1, 0).tensor("w", 0, 1<<40, 32).pad(64).Bytes(), `tensor "w" [32] (f32, 128 bytes at data offset 1099511627776) ends past the end of the file`},
		{"dims overflow", new(rawFile).header(3, 1, 0).tensor("w", 0, 0, 1<<32, 1<<32, 1<<32).Bytes(), `tensor "w": dimensions [4294967296 4294967296 4294967296] (innermost first): their product overflows`},
		{"size overflow", new(rawFile).header(3, 1, 0).tensor("w", 0, 0, 1<<30, 1<<30).Bytes(), `tensor "w": dimensions [1073741824 1073741824] of f32: the size overflows`},
		{"string longer than file", new(rawFile).header(3, 0, 1).u64(1 << 40).pad(16).Bytes(), "metadata entry 0: key string length 1099511627776 exceeds the 16 bytes left"},
		{"value string longer than file", new(rawFile).header(3, 0, 1).str("k").u32(uint32(TypeString)).u64(1 << 40).Bytes(), `metadata "k": string length 1099511627776 exceeds`},
		{"1e9 metadata entries", new(rawFile).header(3, 0, 1e9).pad(100).Bytes(), "metadata_kv_count 1000000000 cannot fit"},
		{"1e9 tensors", new(rawFile).header(3, 1e9, 0).pad(100).Bytes(), "tensor_count 1000000000 cannot fit"},
		{"1e9 array elements", new(rawFile).header(3, 0, 1).str("tokenizer.ggml.tokens").u32(uint32(TypeArray)).u32(uint32(TypeString)).u64(1e9).pad(100).Bytes(),
			`metadata "tokenizer.ggml.tokens": array of 1000000000 string elements needs at least 8000000000 bytes but the file has 100 left`},
		{"array count overflow", new(rawFile).header(3, 0, 1).str("k").u32(uint32(TypeArray)).u32(uint32(TypeUint64)).u64(1 << 62).Bytes(), `metadata "k": array of 4611686018427387904 uint64 elements`},
		{"unknown value type", new(rawFile).header(3, 0, 1).str("k").u32(99).pad(8).Bytes(), `metadata "k": unknown value type 99`},
		{"unknown array type", new(rawFile).header(3, 0, 1).str("k").u32(uint32(TypeArray)).u32(42).u64(0).Bytes(), `metadata "k": array of unknown value type 42`},
		{"bad bool", new(rawFile).header(3, 0, 1).str("k").u32(uint32(TypeBool)).pad(1).Bytes()[:0], "too short"},
		{"duplicate key", new(rawFile).header(3, 0, 2).str("k").u32(uint32(TypeUint8)).pad(1).str("k").u32(uint32(TypeUint8)).pad(1).Bytes(), `metadata key "k" appears twice`},
		{"bad alignment", new(rawFile).header(3, 0, 1).str(KeyAlignment).u32(uint32(TypeUint32)).u32(24).Bytes(), `"general.alignment" is 24 (uint32); want a uint32 power of two`},
		{"alignment type", new(rawFile).header(3, 0, 1).str(KeyAlignment).u32(uint32(TypeUint64)).u64(32).Bytes(), `"general.alignment" is 32 (uint64)`},
		{"deep arrays", deepArray(), "arrays nested deeper than 4"},
		{"unsupported type", new(rawFile).header(3, 1, 0).tensor("blk.0.attn_q.weight", 12, 0, 256, 4).pad(1024).Bytes(),
			`tensor "blk.0.attn_q.weight": type Q4_K, which posformer does not read (supported: F32, F16, BF16, Q8_0, Q4_0)`},
		{"unknown type id", new(rawFile).header(3, 1, 0).tensor("w", 77, 0, 32).pad(1024).Bytes(), `tensor "w": type unknown type 77`},
		{"too many dims", new(rawFile).header(3, 1, 0).tensor("w", 0, 0, 1, 1, 1, 1, 1).Bytes(), `tensor "w": has 5 dimensions (want 1 to 4)`},
		{"zero dim", new(rawFile).header(3, 1, 0).tensor("w", 0, 0, 4, 0).Bytes(), `tensor "w": dimension 1 is 0`},
		{"partial block", new(rawFile).header(3, 1, 0).tensor("w", 8, 0, 20, 2).pad(128).Bytes(), `tensor "w": rows of 20 values are not whole q8_0 blocks of 32`},
		{"misaligned offset", new(rawFile).header(3, 1, 0).tensor("w", 0, 4, 8).pad(128).Bytes(), `tensor "w": data offset 4 is not a multiple of the alignment 32`},
		{"duplicate tensor", new(rawFile).header(3, 2, 0).tensor("w", 0, 0, 8).tensor("w", 0, 32, 8).pad(128).Bytes(), `tensor "w" appears twice`},
		{"long name", new(rawFile).header(3, 1, 0).tensor(strings.Repeat("x", 64), 0, 0, 8).pad(128).Bytes(), "has 64 bytes (want 1 to 63)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Read(bytes.NewReader(c.data), int64(len(c.data)))
			if err == nil {
				t.Fatalf("read without error; want %q", c.want)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q\nwant it to contain %q", err, c.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans lines: %q", err)
			}
		})
	}
	// A bool other than 0 or 1 (the case above only checks a file cut before it).
	b := new(rawFile).header(3, 0, 1).str("k").u32(uint32(TypeBool)).Bytes()
	b = append(b, 2)
	if _, err := Read(bytes.NewReader(b), int64(len(b))); err == nil || !strings.Contains(err.Error(), `metadata "k": bool value is 2 (want 0 or 1)`) {
		t.Errorf("bool 2: %v", err)
	}
}

// placed is a file of f32 vectors of the given lengths at the given data offsets, whatever
// they are, with data enough for the furthest; Encode only ever writes them contiguous.
func placed(lengths []uint64, offsets []uint64) []byte {
	b := new(rawFile).header(3, uint64(len(lengths)), 0)
	var end uint64
	for i, n := range lengths {
		b.tensor(string(rune('a'+i)), 0, offsets[i], n)
		end = max(end, offsets[i]+4*n)
	}
	b.pad(int(alignUp(int64(b.Len()), DefaultAlignment)) - b.Len())
	return b.pad(int(alignUp(int64(end), DefaultAlignment))).Bytes()
}

// overlapping are files whose tensor data overlap, are out of order or leave a gap, which
// llama.cpp refuses; each maps to the error Read gives.
func overlapping() map[string]struct {
	data []byte
	want string
} {
	type file = struct {
		data []byte
		want string
	}
	return map[string]file{
		"all at offset 0": {placed([]uint64{8, 16, 8}, []uint64{0, 0, 0}),
			`tensor "b" starts at data offset 0 but tensor "a" before it ends at 32 (32 bytes at 0, padded to the alignment 32), overlapping it`},
		"one inside another": {placed([]uint64{32, 8}, []uint64{0, 64}),
			`tensor "b" starts at data offset 64 but tensor "a" before it ends at 128 (128 bytes at 0, padded to the alignment 32), overlapping it`},
		"out of order": {placed([]uint64{8, 8, 8}, []uint64{0, 64, 32}),
			`tensor "b" starts at data offset 64 but tensor "a" before it ends at 32 (32 bytes at 0, padded to the alignment 32), leaving a gap of 32 bytes`},
		"first not at 0": {placed([]uint64{8, 8}, []uint64{32, 0}),
			`tensor "a" starts at data offset 32 but the first tensor must start at 0`},
	}
}

func TestOverlappingTensorsRefused(t *testing.T) {
	for name, c := range overlapping() {
		t.Run(name, func(t *testing.T) {
			_, err := Read(bytes.NewReader(c.data), int64(len(c.data)))
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "contiguous and disjoint, in file order, as llama.cpp requires") {
				t.Fatalf("error %v\nwant it to contain %q", err, c.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans lines: %q", err)
			}
		})
	}
	// The same tensors laid out as Encode and llama.cpp lay them out read, with their bytes.
	for _, lengths := range [][]uint64{{8, 16, 8}, {32, 8}, {1, 8, 3}} {
		offsets := make([]uint64, len(lengths))
		for i := 1; i < len(lengths); i++ {
			offsets[i] = uint64(alignUp(int64(offsets[i-1]+4*lengths[i-1]), DefaultAlignment))
		}
		data := placed(lengths, offsets)
		f, err := Read(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatalf("contiguous tensors %v at %v: %v", lengths, offsets, err)
		}
		for i, info := range f.Tensors {
			if info.Offset != offsets[i] || info.Bytes != int64(4*lengths[i]) {
				t.Errorf("tensor %s: %d bytes at %d; want %d at %d", info.Name, info.Bytes, info.Offset, 4*lengths[i], offsets[i])
			}
		}
	}
}

// deepArray is a value of arrays nested five deep.
func deepArray() []byte {
	b := new(rawFile).header(3, 0, 1).str("k").u32(uint32(TypeArray))
	for range 5 {
		b.u32(uint32(TypeArray)).u64(1)
	}
	return b.u32(uint32(TypeUint8)).u64(0).pad(16).Bytes()
}

func TestEncodeRefuses(t *testing.T) {
	for _, c := range []struct {
		kvs  []KV
		ts   []Tensor
		want string
	}{
		{[]KV{{"k", Value{Type: TypeUint32, V: "x"}}}, nil, `metadata "k": a uint32 value holds string`},
		{[]KV{{"k", Uint32(1)}, {"k", Uint32(2)}}, nil, "repeated"},
		{[]KV{{"k", Array(TypeInt32, []float32{1})}}, nil, "an array of int32 holds []float32"},
		{nil, []Tensor{{Name: "w", Shape: []int{2, 20}, Type: quant.Q8_0, Data: nil, Fill: func() ([]byte, error) { return nil, nil }}}, "not whole q8_0 blocks"},
		{nil, []Tensor{{Name: "w", Shape: []int{2, 32}, Type: quant.F32, Data: make([]byte, 3)}}, "takes 256 bytes; got 3"},
		{nil, []Tensor{{Name: "w", Shape: []int{1, 1, 1, 1, 1}, Type: quant.F32, Data: make([]byte, 4)}}, "5 dimensions"},
	} {
		err := Encode(new(bytes.Buffer), c.kvs, c.ts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Encode: %v; want %q", err, c.want)
		}
	}
}

// FuzzRead feeds Read arbitrary bytes, seeded with files the writer makes: it must return an
// error or a file whose every tensor reads back, none overlapping the one before, and never
// panic or allocate past the input. The overlapping files TestOverlappingTensorsRefused
// refuses are seeds too.
func FuzzRead(f *testing.F) {
	kvs, ts := sampleFile(f)
	f.Add(encode(f, kvs, ts))
	f.Add(encode(f, append([]KV{{KeyAlignment, Uint32(8)}}, kvs[:3]...), ts[3:]))
	f.Add(encode(f, []KV{{KeyArchitecture, String("gpt2")}}, nil))
	f.Add(deepArray())
	for _, c := range overlapping() {
		f.Add(c.data)
	}
	// Norm epsilons Config must refuse (TestNormEpsRefused loads whole models with them).
	for _, eps := range []float32{-1, 0, float32(math.NaN()), float32(math.Inf(1))} {
		f.Add(encode(f, []KV{{KeyArchitecture, String("llama")}, {"llama.attention.layer_norm_rms_epsilon", Float32(eps)}}, nil))
		f.Add(encode(f, []KV{{KeyArchitecture, String("gpt2")}, {"gpt2.attention.layer_norm_epsilon", Float32(eps)}}, nil))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := Read(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error spans lines: %q", err)
			}
			return
		}
		for i, info := range g.Tensors {
			if i > 0 && info.Offset < g.Tensors[i-1].Offset+uint64(g.Tensors[i-1].Bytes) {
				t.Fatalf("tensor %s at %d overlaps %s (%d bytes at %d)", info.Name, info.Offset, g.Tensors[i-1].Name, g.Tensors[i-1].Bytes, g.Tensors[i-1].Offset)
			}
			if info.Bytes > int64(len(data)) {
				t.Fatalf("tensor %s claims %d bytes in a file of %d", info.Name, info.Bytes, len(data))
			}
			if _, err := g.ReadFloat32(info); err != nil {
				t.Fatalf("tensor %s passed Read but does not read: %v", info.Name, err)
			}
		}
		if cfg, err := Config(g); err == nil && !(cfg.NormEps > 0 && cfg.NormEps <= 1) { // neither may any metadata panic
			t.Fatalf("Config accepted a norm epsilon of %v", cfg.NormEps)
		}
		ReadVocab(g)
	})
}

func TestVocabRoundTrip(t *testing.T) {
	for _, v := range []Vocab{
		{Model: "llama", Tokens: []string{"<unk>", "<s>", "</s>", "▁a"}, Scores: []float32{0, 0, 0, -1}, Types: []int32{2, 3, 3, 1},
			BOS: 1, EOS: 2, UNK: 0, PAD: -1, AddSpacePrefix: false, AddBOS: true},
		{Model: "gpt2", Pre: "llama-bpe", Tokens: []string{"a", "b", "ab"}, Merges: []string{"a b"}, BOS: -1, EOS: 2, UNK: -1, PAD: 0},
		{Model: "gpt2", Tokens: []string{"a"}, Merges: []string{}, BOS: -1, EOS: -1, UNK: -1, PAD: -1},
		{BOS: 1, EOS: 2, UNK: -1, PAD: -1, AddBOS: true}, // no vocabulary, but its specials
	} {
		data := encode(t, v.KVs(), nil)
		f, err := Read(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		got, err := ReadVocab(f)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, v) {
			t.Errorf("vocabulary read back:\n got %+v\nwant %+v", got, v)
		}
	}
	// llama.cpp's defaults for a llama vocabulary that names nothing.
	data := encode(t, []KV{{keyTokModel, String("llama")}, {keyTokens, Strings([]string{"<unk>", "<s>", "</s>"})}}, nil)
	f, _ := Read(bytes.NewReader(data), int64(len(data)))
	if v, _ := ReadVocab(f); v.BOS != 1 || v.EOS != 2 || v.UNK != 0 || !v.AddBOS || !v.AddSpacePrefix {
		t.Errorf("defaults %+v", v)
	}
	for _, c := range []struct {
		kvs  []KV
		want string
	}{
		{[]KV{{keyTokModel, String("llama")}, {keyTokens, Int32s([]int32{1})}}, "tokenizer.ggml.tokens has type array of int32; want array of string"},
		{[]KV{{keyTokModel, String("llama")}}, "tokenizer.ggml.tokens is missing"},
		{[]KV{{keyTokModel, String("gpt2")}, {keyTokens, Strings([]string{"a"})}, {keyEOS, Uint32(5)}}, "tokenizer.ggml.eos_token_id is 5; want a token id below 1"},
	} {
		data := encode(t, c.kvs, nil)
		f, _ := Read(bytes.NewReader(data), int64(len(data)))
		if _, err := ReadVocab(f); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ReadVocab: %v; want %q", err, c.want)
		}
	}
}
