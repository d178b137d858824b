package safetensors

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// rawFile assembles a safetensors file byte by byte so the reader is tested
// against the format itself rather than against our own writer.
func rawFile(t *testing.T, header string, data []byte) string {
	t.Helper()
	var b []byte
	b = binary.LittleEndian.AppendUint64(b, uint64(len(header)))
	b = append(b, header...)
	b = append(b, data...)
	path := filepath.Join(t.TempDir(), "raw.safetensors")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func u16s(vals ...uint16) []byte {
	var b []byte
	for _, v := range vals {
		b = binary.LittleEndian.AppendUint16(b, v)
	}
	return b
}

func sameFloats(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

func TestRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.safetensors")
	in := []Tensor{
		{Name: "w", Shape: []int{2, 3}, Data: []float32{1, -2, 3.5, 0, float32(math.Inf(-1)), 1e-40}},
		{Name: "b", Shape: []int{3}, Data: []float32{0.25, 0.5, 0.75}},
		{Name: "scale", Shape: []int{}, Data: []float32{42}},
		{Name: "empty", Shape: []int{0, 4}, Data: []float32{}},
	}
	meta := map[string]string{"format": "pt", "step": "7"}
	if err := Write(path, in, meta); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	var names []string
	for _, info := range f.Infos() {
		names = append(names, info.Name)
		if info.DType != "F32" {
			t.Errorf("%s: dtype %s, want F32", info.Name, info.DType)
		}
	}
	if want := []string{"b", "empty", "scale", "w"}; !reflect.DeepEqual(names, want) {
		t.Errorf("Infos names = %v, want %v", names, want)
	}
	if got := f.Metadata(); !reflect.DeepEqual(got, meta) {
		t.Errorf("Metadata = %v, want %v", got, meta)
	}
	for _, tt := range in {
		info, ok := f.Info(tt.Name)
		if !ok {
			t.Fatalf("Info(%q) missing", tt.Name)
		}
		if !reflect.DeepEqual(info.Shape, tt.Shape) {
			t.Errorf("%s: shape %v, want %v", tt.Name, info.Shape, tt.Shape)
		}
		if info.End-info.Begin != 4*int64(len(tt.Data)) {
			t.Errorf("%s: span %d bytes, want %d", tt.Name, info.End-info.Begin, 4*len(tt.Data))
		}
		got, err := f.ReadFloat32(tt.Name)
		if err != nil {
			t.Fatal(err)
		}
		if !sameFloats(got, tt.Data) {
			t.Errorf("%s: data %v, want %v", tt.Name, got, tt.Data)
		}
	}

	dst := make([]float32, 3)
	if err := f.ReadFloat32Into("b", dst); err != nil || !sameFloats(dst, in[1].Data) {
		t.Errorf("ReadFloat32Into(b) = %v, %v", dst, err)
	}
	if err := f.ReadFloat32Into("b", make([]float32, 4)); err == nil || !strings.Contains(err.Error(), `"b"`) {
		t.Errorf("ReadFloat32Into with wrong length: err = %v", err)
	}
	if _, err := f.ReadFloat32("nope"); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("ReadFloat32(nope): err = %v", err)
	}
	if _, ok := f.Info("nope"); ok {
		t.Error("Info(nope) found")
	}
}

func TestRoundTripEmptyMetadata(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.safetensors")
	if err := Write(path, []Tensor{{Name: "x", Shape: []int{1}, Data: []float32{3}}}, nil); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if m := f.Metadata(); m == nil || len(m) != 0 {
		t.Errorf("Metadata = %#v, want empty non-nil map", m)
	}
	if got, err := f.ReadFloat32("x"); err != nil || !sameFloats(got, []float32{3}) {
		t.Errorf("ReadFloat32(x) = %v, %v", got, err)
	}
}

func TestWriteRawLayout(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.safetensors")
	in := []Tensor{
		{Name: "z", Shape: []int{2}, Data: []float32{1, 2}},
		{Name: "a", Shape: []int{}, Data: []float32{-1}},
	}
	if err := Write(path, in, map[string]string{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := binary.LittleEndian.Uint64(b[:8])
	dataStart := 8 + int(n)
	if dataStart%8 != 0 {
		t.Errorf("data starts at %d, not 8-byte aligned", dataStart)
	}
	header := b[8:dataStart]
	if trimmed := strings.TrimRight(string(header), " "); !strings.HasPrefix(trimmed, "{") || !strings.HasSuffix(trimmed, "}") {
		t.Errorf("header %q is not a space-padded JSON object", header)
	}

	var h map[string]json.RawMessage
	if err := json.Unmarshal(header, &h); err != nil {
		t.Fatalf("header is not JSON: %v", err)
	}
	var meta map[string]string
	if err := json.Unmarshal(h["__metadata__"], &meta); err != nil || meta["k"] != "v" {
		t.Errorf("__metadata__ = %s (%v)", h["__metadata__"], err)
	}
	type entry struct {
		DType       string  `json:"dtype"`
		Shape       []int   `json:"shape"`
		DataOffsets []int64 `json:"data_offsets"`
	}
	want := map[string]entry{
		"a": {"F32", []int{}, []int64{0, 4}}, // sorted by name: "a" comes first
		"z": {"F32", []int{2}, []int64{4, 12}},
	}
	for name, w := range want {
		var e entry
		if err := json.Unmarshal(h[name], &e); err != nil {
			t.Fatalf("entry %s: %v", name, err)
		}
		if !reflect.DeepEqual(e, w) {
			t.Errorf("entry %s = %+v, want %+v", name, e, w)
		}
	}
	if !strings.Contains(string(h["a"]), `"shape":[]`) {
		t.Errorf("scalar shape not encoded as []: %s", h["a"])
	}

	data := b[dataStart:]
	if len(data) != 12 {
		t.Fatalf("data section is %d bytes, want 12", len(data))
	}
	for i, w := range []float32{-1, 1, 2} {
		if got := math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:])); got != w {
			t.Errorf("data[%d] = %v, want %v", i, got, w)
		}
	}
	assertNoTmp(t, dir)
}

func TestDecodeHalfAndBFloat(t *testing.T) {
	f16 := u16s(0x3C00, 0xC000, 0x7BFF, 0x0001, 0x03FF, 0x0400, 0x7C00, 0xFC00, 0x0000, 0x8000, 0x3555)
	bf16 := u16s(0x3F80, 0xC040, 0x7F80, 0xFF80, 0x0001, 0x4049)
	f64 := binary.LittleEndian.AppendUint64(nil, math.Float64bits(-0.5))
	nan := u16s(0x7E00, 0x7FC0)
	i32 := binary.LittleEndian.AppendUint32(nil, 5)

	var data []byte
	data = append(data, f16...)  // [0, 22)
	data = append(data, bf16...) // [22, 34)
	data = append(data, nan...)  // [34, 38)
	data = append(data, f64...)  // [38, 46)
	data = append(data, i32...)  // [46, 50)
	header := `{"h":{"dtype":"F16","shape":[11],"data_offsets":[0,22]},` +
		`"b":{"dtype":"BF16","shape":[2,3],"data_offsets":[22,34]},` +
		`"hnan":{"dtype":"F16","shape":[1],"data_offsets":[34,36]},` +
		`"bnan":{"dtype":"BF16","shape":[],"data_offsets":[36,38]},` +
		`"d":{"dtype":"F64","shape":[1],"data_offsets":[38,46]},` +
		`"i":{"dtype":"I32","shape":[1],"data_offsets":[46,50]}}`
	f, err := Open(rawFile(t, header, data))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	inf := float32(math.Inf(1))
	wantH := []float32{
		1, -2, 65504,
		float32(math.Ldexp(1, -24)),    // smallest subnormal
		float32(math.Ldexp(1023, -24)), // largest subnormal
		float32(math.Ldexp(1, -14)),    // smallest normal
		inf, -inf, 0,
		float32(math.Copysign(0, -1)),  // -0 keeps its sign
		float32(math.Ldexp(1365, -12)), // 0x3555: 1.0101010101b * 2^-2 = 1365/4096 ≈ 1/3
	}
	got, err := f.ReadFloat32("h")
	if err != nil {
		t.Fatal(err)
	}
	if !sameFloats(got, wantH) {
		t.Errorf("F16 = %v, want %v", got, wantH)
	}

	wantB := []float32{1, -3, inf, -inf, float32(math.Ldexp(1, -133)), 3.140625}
	if got, err := f.ReadFloat32("b"); err != nil || !sameFloats(got, wantB) {
		t.Errorf("BF16 = %v (%v), want %v", got, err, wantB)
	}
	for _, name := range []string{"hnan", "bnan"} {
		got, err := f.ReadFloat32(name)
		if err != nil || len(got) != 1 || !math.IsNaN(float64(got[0])) {
			t.Errorf("%s = %v (%v), want [NaN]", name, got, err)
		}
	}
	if got, err := f.ReadFloat32("d"); err != nil || !sameFloats(got, []float32{-0.5}) {
		t.Errorf("F64 = %v (%v), want [-0.5]", got, err)
	}
	_, err = f.ReadFloat32("i")
	if err == nil || !strings.Contains(err.Error(), `"i"`) || !strings.Contains(err.Error(), "I32") {
		t.Errorf("ReadFloat32 of I32: err = %v, want error naming tensor and dtype", err)
	}
	if info, _ := f.Info("i"); info.DType != "I32" || info.Begin != 46 || info.End != 50 {
		t.Errorf("Info(i) = %+v", info)
	}
}

// TestFloat16AllValues cross-checks the bit-level conversion against the
// arithmetic definition of a half for every one of the 65536 encodings.
func TestFloat16AllValues(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		sign := 1.0
		if h&0x8000 != 0 {
			sign = -1
		}
		exp, mant := (h>>10)&0x1f, h&0x3ff
		var want float64
		switch {
		case exp == 0x1f && mant != 0:
			if got := float16ToFloat32(uint16(h)); !math.IsNaN(float64(got)) {
				t.Fatalf("%#04x -> %v, want NaN", h, got)
			}
			continue
		case exp == 0x1f:
			want = math.Inf(int(sign))
		case exp == 0:
			want = sign * math.Ldexp(float64(mant), -24)
		default:
			want = sign * math.Ldexp(float64(mant|0x400), exp-25)
		}
		if got := float16ToFloat32(uint16(h)); math.Float32bits(got) != math.Float32bits(float32(want)) {
			t.Fatalf("%#04x -> %v, want %v", h, got, want)
		}
	}
}

func TestTruncated(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.safetensors")
	in := []Tensor{
		{Name: "first", Shape: []int{4}, Data: []float32{1, 2, 3, 4}},
		{Name: "second", Shape: []int{2, 2}, Data: []float32{5, 6, 7, 8}},
	}
	if err := Write(path, in, nil); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, st.Size()-3); err != nil {
		t.Fatal(err)
	}
	_, err = Open(path)
	if err == nil {
		t.Fatal("Open of truncated file succeeded")
	}
	msg := err.Error()
	for _, want := range []string{"truncated", `"second"`, "[16, 32)", "holds only 29", path} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not mention %q", msg, want)
		}
	}
}

func TestOpenRejects(t *testing.T) {
	entry := func(name, dtype, shape string, begin, end int) string {
		return `"` + name + `":{"dtype":"` + dtype + `","shape":` + shape +
			`,"data_offsets":[` + itoa(begin) + `,` + itoa(end) + `]}`
	}
	data16 := make([]byte, 16)
	cases := []struct {
		name, header string
		data         []byte
		want         []string
	}{
		{"garbage header", `this is not json`, data16, []string{"not a JSON object"}},
		{"header is array", `[1,2,3]`, data16, []string{"not a JSON object"}},
		{"unknown dtype", `{` + entry("t", "Q4", "[4]", 0, 4) + `}`, data16, []string{`"t"`, "unknown dtype", "Q4"}},
		{"shape mismatch", `{` + entry("t", "F32", "[3]", 0, 16) + `}`, data16, []string{`"t"`, "needs 12 bytes"}},
		{"negative dim", `{` + entry("t", "F32", "[-1,4]", 0, 16) + `}`, data16, []string{`"t"`, "negative dimension"}},
		{"reversed offsets", `{` + entry("t", "U8", "[0]", 8, 4) + `}`, data16, []string{`"t"`, "out of order"}},
		{"overlap", `{` + entry("a", "F32", "[2]", 0, 8) + `,` + entry("b", "F32", "[2]", 4, 12) + `}`, data16, []string{`"a"`, `"b"`, "overlap"}},
		{"beyond data", `{` + entry("big", "F32", "[8]", 0, 32) + `}`, data16, []string{`"big"`, "truncated", "[0, 32)", "holds only 16"}},
		{"bad offsets", `{"t":{"dtype":"F32","shape":[1],"data_offsets":[0]}}`, data16, []string{`"t"`, "data_offsets"}},
		{"bad metadata", `{"__metadata__":{"k":1}}`, nil, []string{"__metadata__"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := rawFile(t, tc.header, tc.data)
			f, err := Open(path)
			if err == nil {
				f.Close()
				t.Fatal("Open succeeded")
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") {
				t.Errorf("error is not one line: %q", msg)
			}
			for _, want := range append(tc.want, path) {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not mention %q", msg, want)
				}
			}
		})
	}
}

func TestOpenRejectsBadLength(t *testing.T) {
	dir := t.TempDir()
	write := func(b []byte) string {
		p := filepath.Join(dir, "f")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		name string
		file []byte
		want string
	}{
		{"short", []byte{1, 2, 3}, "shorter than"},
		{"header beyond file", binary.LittleEndian.AppendUint64(nil, 100), "larger than"},
		{"absurd header", binary.LittleEndian.AppendUint64(nil, 1<<40), "exceeds"},
	}
	for _, tc := range cases {
		p := write(tc.file)
		_, err := Open(p)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: err = %v, want mention of %q and the path", tc.name, err, tc.want)
		}
	}
	if _, err := Open(filepath.Join(dir, "missing")); err == nil {
		t.Error("Open of missing file succeeded")
	}
}

func TestWriteRejects(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.safetensors")
	cases := []struct {
		name    string
		tensors []Tensor
		want    string
	}{
		{"length mismatch", []Tensor{{Name: "x", Shape: []int{2, 2}, Data: []float32{1, 2, 3}}}, `"x"`},
		{"duplicate", []Tensor{{Name: "x", Shape: []int{1}, Data: []float32{1}}, {Name: "x", Shape: []int{1}, Data: []float32{2}}}, "duplicate"},
		{"negative dim", []Tensor{{Name: "x", Shape: []int{-1}, Data: nil}}, "negative"},
		{"reserved name", []Tensor{{Name: "__metadata__", Shape: []int{}, Data: []float32{1}}}, "reserved"},
	}
	for _, tc := range cases {
		err := Write(path, tc.tensors, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want mention of %q", tc.name, err, tc.want)
		}
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("failed Write created %s (stat err %v)", path, err)
	}
	assertNoTmp(t, dir)
}

func TestWriteMissingDir(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, "no", "such", "dir", "m.safetensors")
	if err := Write(path, []Tensor{{Name: "x", Shape: []int{1}, Data: []float32{1}}}, nil); err == nil {
		t.Fatal("Write into missing directory succeeded")
	}
	var left []string
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if p != root {
			left = append(left, p)
		}
		return nil
	})
	if len(left) != 0 {
		t.Errorf("Write left files behind: %v", left)
	}
}

func TestWriteReplacesAtomically(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.safetensors")
	if err := Write(path, []Tensor{{Name: "old", Shape: []int{1}, Data: []float32{1}}}, nil); err != nil {
		t.Fatal(err)
	}
	// A failing Write must leave the previous file intact.
	if err := Write(path, []Tensor{{Name: "bad", Shape: []int{2}, Data: []float32{1}}}, nil); err == nil {
		t.Fatal("bad Write succeeded")
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := f.Info("old"); !ok {
		t.Error("failed Write clobbered the existing file")
	}
	f.Close()

	if err := Write(path, []Tensor{{Name: "new", Shape: []int{1}, Data: []float32{2}}}, nil); err != nil {
		t.Fatal(err)
	}
	f, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, ok := f.Info("new"); !ok {
		t.Error("successful Write did not replace the file")
	}
	assertNoTmp(t, dir)
}

// TestLargeTensorChunks exercises the chunked read path, where a tensor spans
// several scratch buffers.
func TestLargeTensorChunks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.safetensors")
	n := chunkBytes/4*2 + 123
	data := make([]float32, n)
	for i := range data {
		data[i] = float32(i) * 0.5
	}
	if err := Write(path, []Tensor{{Name: "big", Shape: []int{n}, Data: data}}, nil); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := f.ReadFloat32("big")
	if err != nil {
		t.Fatal(err)
	}
	if !sameFloats(got, data) {
		t.Error("large tensor did not round-trip")
	}
}

func assertNoTmp(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("leftover temp file %s", e.Name())
		}
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
